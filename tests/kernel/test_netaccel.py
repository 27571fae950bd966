"""The compiled twin of the network model's per-message path (smpy/network/_netaccel.c)
against its Python reference: ``NetworkModel.communicate``, ``Flow._release`` and
``_work_done``, ``SharedActivity._start_bandwidth_phase`` and ``SharingModel.update``, run on
the same scenarios both ways, every figure and field compared. Whole programs both ways (ring,
ping-pong, stencil, Allreduce, failures) are in tests/kernel/test_accel.py, which now runs
these twins too; a replay both ways is at the end.

Skipped only when the accelerator cannot be built here (no C compiler or no Python headers).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smpy.kernel import accel
from smpy.kernel.activity import Activity, RateActivity
from smpy.kernel.engine import Engine
from smpy.kernel.sharing import SharedActivity, SharingModel
from smpy.lmm import System
from smpy.network.links import Link, Sharing
from smpy.network.model import NAMED_MODELS, Flow, NetworkConfig, NetworkModel
from smpy.storage.model import IoOp
from smpy.support.piecewise import Piecewise
from tests.accel_twins import both as _both
from tests.accel_twins import needs_accel

ROOT = Path(__file__).resolve().parents[2]
pytestmark = needs_accel



def _config(model: str = "SMPI", **kw) -> NetworkConfig:
    lat, bw, S, gamma = NAMED_MODELS[model]
    return NetworkConfig(name=model, lat_factor=Piecewise.parse_factors(lat), bw_factor=Piecewise.parse_factors(bw),
                         weight_S=S, tcp_gamma=gamma, **kw)


def _fields(f: Flow) -> dict:
    names = [n for c in (Activity, RateActivity, SharedActivity, Flow) for n in c.__slots__ if n != "__weakref__"]
    out = {}
    for n in names:
        v = getattr(f, n, "<unset>")
        if n in ("engine", "model"):
            v = type(v).__name__
        elif n in ("var", "_lat_event", "_done_event"):
            v = None if v is None else (type(v).__name__, getattr(v, "time", None), getattr(v, "cancelled", None))
        elif n == "uses":
            v = [(c.id, a) for c, a in v]
        elif n == "route":
            v = [lnk.name for lnk in v]
        elif n in ("waiters", "callbacks"):
            v = None if v is None else len(v)
        out[n] = (type(v).__name__, repr(v))
    return out


def _heap(engine: Engine) -> list:
    return [(t, s, ev.time, getattr(ev.fn, "__name__", repr(ev.fn)), ev.cancelled) for t, s, ev in sorted(engine._heap)]


def _scenario(model_name: str, crosstraffic: bool):
    """Flows sharing links, the same route and size again, a zero-latency route, a fat pipe,
    a 0-byte flow, an unhashable route, a cancel in each phase, a signal listener: every
    flow's fields right after communicate, the heap, then every end date and rate."""
    e = Engine()
    links = [Link("a", 1.25e9, 5e-5), Link("b", 1.25e9, 5e-5), Link("c", 1e9, 0.0),
             Link("fat", 1e10, 1e-6, sharing=Sharing.FATPIPE), Link("back", 1.25e9, 5e-5)]
    a, b, c, fat, back = links
    net = NetworkModel(e, links, _config(model_name, crosstraffic=crosstraffic))
    log: list = []
    starts = [((a, b), 1e6, (back,)), ((a, b), 1e6, (back,)), ((a,), 8.0, ()), ((c,), 3e5, ()), ((fat, a), 7e4, ()),
              ((b,), 0.0, ()), ([a, c], 1024.0, [b]), ((a, b), 65536, (back,)), ((a, b), 65536, (back,))]
    flows = []
    snap = []
    for i, (route, size, rev) in enumerate(starts):
        f = net.communicate(route, size, rev) if rev or i % 2 else net.communicate(route, size)
        f.add_callback(lambda fl, i=i: log.append((i, e.now, fl.state)))
        flows.append(f)
        snap.append(_fields(f))
    snap.append(_heap(e))
    e.schedule(1e-5, flows[1].cancel)  # in its latency phase
    e.schedule(3e-4, flows[0].cancel)  # in its bandwidth phase
    later = []

    def more():
        net.on_flow_start.connect(lambda f: log.append(("start", f.size)))
        net.on_flow_end.connect(lambda f: log.append(("end", f.size, e.now)))
        later.append(net.communicate((a, b), 1e6, (back,)))
        later.append(net.communicate((a, b), 1e6, (back,)))

    e.schedule(2e-4, more)
    rates: list = []
    e.on_time_advance.connect(lambda old, new: rates.append([(fl.rate, fl.remaining) for fl in flows + later]))
    e.run()
    ends = [(f.state, f.finish_time, f.remaining, f.last_update, f.var) for f in flows + later]
    return repr((snap, log, rates, ends, e.now, e.rounds, e.events_processed, net.dirty))


@pytest.mark.parametrize("model", ["SMPI", "LV08", "CM02", "raw"])
@pytest.mark.parametrize("crosstraffic", [True, False])
def test_network_model_matches_python(model, crosstraffic):
    pure, fast = _both(lambda: _scenario(model, crosstraffic))
    assert pure == fast
    assert "'start'" in pure and "'end'" in pure


def test_tracked_flows_and_link_failure_match_python():
    def go():
        e = Engine()
        links = {n: Link(n, 1e6, 1e-3) for n in ("l1", "l2", "l3")}
        net = NetworkModel(e, list(links.values()), _config("SMPI"))
        first = [net.communicate((links["l1"], links["l2"]), 2e6), net.communicate((links["l3"],), 2e6)]
        net.track_flows()
        flows = first + [net.communicate((links["l2"], links["l3"]), 2e6), net.communicate((links["l1"],), 2e6)]
        e.schedule(1.0, net.fail_link, links["l2"])
        late: list = []
        e.schedule(1.5, lambda: late.append(net.communicate((links["l1"], links["l2"]), 1e3)))
        e.run()
        return repr([(f.state, f.finish_time, str(f.exception)) for f in flows + late])

    pure, fast = _both(go)
    assert pure == fast and "link l2 failed" in pure


def test_factors_not_cached_and_unknown_sizes_match_python():
    def go():
        e = Engine()
        lnk, zero = Link("l", 1e8, 1e-5), Link("z", 1e8, 0.0)  # zero: no latency phase
        cfg = NetworkConfig(name="custom", lat_factor=lambda s: 1.5, bw_factor=lambda s: 0.5 if s > 100 else 0.75)
        net = NetworkModel(e, [lnk, zero], cfg)
        sizes = [10, 10.0, 1000, 5000.5, 0, 0.0]
        flows = [net.communicate((lnk,), s) for s in sizes] + [net.communicate((zero,), s) for s in sizes]
        e.run()
        return repr([(f.finish_time, f.latency, f.rate_factor, type(f.size)) for f in flows])

    pure, fast = _both(go)
    assert pure == fast


def test_sharing_life_of_other_models_matches_python():
    """SharedActivity's phase and SharingModel.update serve the storage model too."""
    class Model(SharingModel):
        def __init__(self, engine):
            super().__init__(engine, System())
            self.c = self.system.constraint(100.0)
            engine.add_model(self)

    def go():
        e = Engine()
        m = Model(e)
        acts = []
        for amount, lat, factor in ((100.0, 0.0, 1.0), (300.0, 1.0, 0.5), (0.0, 0.5, 1.0), (200, 0.25, 2.0)):
            act = SharedActivity(m, amount, uses=((m.c, 1.0),), rate_factor=factor)
            act.start(lat)
            acts.append(act)
        e.schedule(2.0, acts[1].cancel)
        e.run()
        return repr([(a.state, a.finish_time, a.remaining, a.var) for a in acts])

    pure, fast = _both(go)
    assert pure == fast


def test_twins_are_swapped_and_back():
    from smpy.runtime.world import World

    py = {"communicate": NetworkModel.__dict__["communicate"], "_release": Flow.__dict__["_release"],
          "_work_done": Flow.__dict__["_work_done"],
          "_start_bandwidth_phase": SharedActivity.__dict__["_start_bandwidth_phase"],
          "update": SharingModel.__dict__["update"], "transfer": World.__dict__["transfer"]}
    owners = {"communicate": NetworkModel, "_release": Flow, "_work_done": Flow,
              "_start_bandwidth_phase": SharedActivity, "update": SharingModel, "transfer": World}
    assert accel.use(True)
    try:
        for name, cls in owners.items():
            assert type(cls.__dict__[name]).__name__ == "method_descriptor", name
        assert IoOp._start_bandwidth_phase is SharedActivity.__dict__["_start_bandwidth_phase"]
    finally:
        accel.use(False)
    for name, cls in owners.items():
        assert cls.__dict__[name] is py[name]


def test_errors_propagate_the_same_way():
    def go():
        e = Engine()
        lnk = Link("l", 1e8, 1e-5)
        net = NetworkModel(e, [lnk], _config("SMPI"))
        out = []
        for bad in ([{}], "x"):
            try:
                net.communicate((lnk,), bad)
            except TypeError as exc:
                out.append(str(exc))
        try:
            net.communicate((lnk,), 10.0, (), 5)
        except TypeError as exc:
            out.append(str(exc).split("(")[-1])
        return out

    pure, fast = _both(go)
    assert pure == fast and len(pure) == 3


def _bare_world(e):
    """A World with just what transfer reads: 3 hosts, 3 links, host i's route through link i."""
    from types import SimpleNamespace

    from smpy.runtime.world import World

    links = [Link(f"l{i}", 1e9, 1e-6) for i in range(3)]
    hosts = [SimpleNamespace(index=i, name=f"h{i}") for i in range(3)]
    w = World.__new__(World)
    w.messages, w.bytes_sent, w._route_cache = 0, 0, {}
    w.platform = SimpleNamespace(route=lambda a, b: [links[a.index], links[b.index]])
    w.net = NetworkModel(e, links, _config("SMPI"))
    return w, links, hosts


def test_world_transfer_matches_python():
    def go():
        e = Engine()
        w, links, hosts = _bare_world(e)
        flows = [w.transfer(hosts[0], hosts[1], 100), w.transfer(hosts[1], hosts[0], 50.5),
                 w.transfer(hosts[0], hosts[1], 100), w.transfer(hosts[2], hosts[2], 0),
                 w.transfer(hosts[1], dst=hosts[2], nbytes=7)]
        errs = []
        for bad in ((hosts[0],), (hosts[0], hosts[1], 1, 2)):
            try:
                w.transfer(*bad)
            except TypeError as exc:
                errs.append(type(exc).__name__)
        e.run()
        return repr((w.messages, w.bytes_sent, sorted(w._route_cache), errs,
                     [(_fields(f), f.finish_time) for f in flows]))

    pure, fast = _both(go)
    assert pure == fast and pure.startswith("(5, 257.5, [(0, 1), (1, 0), (1, 2), (2, 1), (2, 2)], ['TypeError', 'TypeError']")


def test_communicate_reads_a_changed_route_entry():
    """The compiled communicate remembers the route figures it read with the route dict's
    version: an entry replaced, an equal route in another tuple, are read as Python reads them."""
    def go():
        e = Engine()
        fast, slow = Link("fast", 1e10, 1e-7), Link("slow", 1e8, 1e-4)
        net = NetworkModel(e, [fast, slow], _config("SMPI"))
        r1, r2 = (fast,), (slow,)
        lat = [net.communicate(r1, 100.0).latency, net.communicate(r1, 100.0).latency,
               net.communicate(r2, 100.0).latency]
        net._routes[r1] = net._routes[r2]
        lat.append(net.communicate(r1, 100.0).latency)
        lat.append(net.communicate(tuple([fast]), 100.0).latency)  # equal, another tuple: the same entry
        e.run()
        return lat

    pure, fast_ = _both(go)
    assert pure == fast_ and pure[0] == pure[1] < pure[2] == pure[3] == pure[4]


def test_world_transfer_reads_a_changed_route_cache():
    """The compiled transfer remembers the routes it read with the cache dict's version: a route
    replaced in the cache, a new cache dict, are read afresh, as Python reads them."""
    def go():
        e = Engine()
        w, links, hosts = _bare_world(e)
        first = w.transfer(hosts[0], hosts[1], 10).route
        again = w.transfer(hosts[0], hosts[1], 10).route
        w._route_cache[(0, 1)] = (links[2],)
        replaced = w.transfer(hosts[0], hosts[1], 10).route
        w._route_cache = {}
        fresh = w.transfer(hosts[0], hosts[1], 10).route
        e.run()
        names = [[lnk.name for lnk in r] for r in (first, again, replaced, fresh)]
        return names, again is first, fresh is first, fresh == first

    pure, fast = _both(go)
    assert pure == fast == ([["l0", "l1"], ["l0", "l1"], ["l2"], ["l0", "l1"]], True, False, True)


# -- replays both ways ---------------------------------------------------------------------------
RING_TRACE = "".join(f"{r} init\n" for r in range(4)) + "".join(
    (f"{r} send {(r + 1) % 4} 0 {n}\n{r} recv {(r - 1) % 4} 0 {n}\n" if r == 0 else
     f"{r} recv {(r - 1) % 4} 0 {n}\n{r} send {(r + 1) % 4} 0 {n}\n")
    for n in (1, 0, 100000, 3) for r in range(4)) + "".join(
    f"{r} isend {(r + 1) % 4} 5 12 3\n{r} irecv {(r - 1) % 4} 5 12 3\n{r} waitall\n{r} allreduce 7 1e6 1\n"
    f"{r} compute 1e6\n{r} bcast 9 0 2\n{r} sendRecv 4 {(r + 1) % 4} 4 {(r - 1) % 4} 1 1\n{r} finalize\n"
    for r in range(4))


def _replay(trace: Path, mode: str, tmp_path: Path) -> tuple[str, dict]:
    out = tmp_path / f"replay-{mode}.json"
    done = subprocess.run([sys.executable, "-m", "smpy", "replay", "-q", f"--cfg=smpy/accel:{mode}",
                           "--json", str(out), str(trace)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    res = json.loads(out.read_text())
    assert res.pop("accelerated") == (mode == "on")
    assert set(res.pop("accel_parts").values()) <= {"on"}  # {} when off
    for k in ("wall_s", "cpu_s", "peak_rss_bytes", "config"):
        res.pop(k)
    return done.stdout, res


def test_replay_the_same_both_ways(tmp_path):
    trace = tmp_path / "ring.txt"
    trace.write_text(RING_TRACE)
    pure, fast = _replay(trace, "off", tmp_path), _replay(trace, "on", tmp_path)
    assert pure[0] == fast[0] and "simulation time" in pure[0]
    assert json.dumps(pure[1], sort_keys=True) == json.dumps(fast[1], sort_keys=True)
    assert pure[1]["messages"] > 16
