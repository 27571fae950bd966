"""The compiled switch hooks' stores made in place (smpy/shim/_switchaccel.c, _cext.h's
dict_batch_set; docs/performance.md, "Switch hooks: stores in place"): on CPython 3.11 an
existing entry of ``sys.__dict__``, ``sys.modules``, ``warnings.__dict__`` and the thread-local
dict of ``state`` gets the new value directly, and the dict a version of the global counter never
given out before. Each test runs the Python hooks (the reference) and the compiled ones on the
same situations and compares; several fail if one of the shortcut's guards is removed (the key
checked at the remembered index, the version given, the untracked dict, the module snapshots
following outside changes)."""

from __future__ import annotations

import ctypes
import gc
import sys
import types
import warnings
from pathlib import Path

import pytest

from smpy.cli import launch
from tests.accel_twins import needs_accel

pytestmark = needs_accel

ROOT = Path(__file__).resolve().parents[1]
#: the offset of ma_version_tag in a dict (CPython 3.11: refcount, type, ma_used)
VERSION_OFFSET = 3 * ctypes.sizeof(ctypes.c_ssize_t)


def _version(d: dict) -> int:
    return ctypes.c_uint64.from_address(id(d) + VERSION_OFFSET).value


def _module():
    from smpy.support import cext

    mod, why = cext.load(ROOT / "smpy" / "shim" / "_switchaccel.c", "smpy.shim._switchaccel")
    if mod is None:
        pytest.skip(why)
    return mod


@pytest.fixture
def twins(monkeypatch):
    """(Python, compiled) hooks over a fake ``sys`` and ``warnings`` (exact modules, as the real
    ones), and the fake modules; the compiled hooks set up again with the real ones afterwards."""
    from smpy.shim import isolation as iso

    mod = _module()
    fake_sys, fake_w = types.ModuleType("fake_sys"), types.ModuleType("fake_warnings")
    fake_w.__dict__.update(filters=[("default",)], showwarning=print, _showwarnmsg_impl=len,
                           defaultaction="default")
    monkeypatch.setattr(iso, "sys", fake_sys)
    monkeypatch.setattr(iso, "warnings", fake_w)
    monkeypatch.setattr(iso, "_streams", [])
    c_in, c_out = mod.setup(iso.__dict__, iso.RankContext, fake_sys, fake_w)
    py = (iso.RankContext.__dict__["switch_in"], iso.RankContext.__dict__["switch_out"])
    try:
        yield {"py": py, "c": (c_in, c_out)}, fake_sys, fake_w
    finally:
        iso.state.ctx = None
        mod.setup(iso.__dict__, iso.RankContext, sys, warnings)


def _ctx(tag, main=None):
    from smpy.shim import isolation as iso

    ctx = iso.RankContext(0, main or types.ModuleType("__main__"), ["prog", tag], 0, None)
    ctx.warn_filters = [("default",)]
    return ctx


def test_the_layout_and_the_counter_are_found():
    """On CPython 3.11 (Linux) the table layout checks out and the version counter is found, so
    the tests below exercise the stores in place (and not only the fallback)."""
    state = _module().inplace_state()
    if sys.version_info[:2] != (3, 11):
        assert state is None
        return
    assert state[0] == 1
    if sys.platform.startswith("linux"):
        assert state[1] in (0, 1)  # (0: a stripped libpython: the private dict's store)


@pytest.mark.parametrize("counter", [True, False])
def test_each_store_gives_its_dict_a_version_never_seen(twins, counter):
    """Every dict a switch changes gets a version above any given out before it (a dict made
    just before the switch has a smaller one), and a new one at every switch, whether the fresh
    versions come from the counter or from a store into a private dict. Without the version set
    by the store, the caches keyed by (dict, version) would read the replaced values."""
    hooks, fake_sys, fake_w = twins
    mod = _module()
    was = mod.use_counter(counter)
    try:
        _versions_never_seen(hooks, fake_sys, fake_w)
    finally:
        mod.use_counter(was)


def _versions_never_seen(hooks, fake_sys, fake_w):
    for way, (sw_in, sw_out) in hooks.items():
        fake_sys.modules, fake_sys.argv = {"__main__": types.ModuleType("__main__")}, ["old"]
        dicts = {"sys": fake_sys.__dict__, "modules": fake_sys.modules, "warnings": fake_w.__dict__}
        seen = {k: {_version(d)} for k, d in dicts.items()}
        for tag in ("a", "b", "c"):
            ctx = _ctx(tag)
            before = _version({})
            kept = _version(fake_w.__dict__)
            sw_in(ctx)
            for k in ("sys", "modules"):
                v = _version(dicts[k])
                assert v > before and v not in seen[k], (way, tag, k)
                seen[k].add(v)
            # the rank's filters are equal to those in force but another list: stored too
            assert fake_w.filters is ctx.warn_filters and _version(fake_w.__dict__) != kept
            assert fake_sys.argv is ctx.argv and fake_sys.modules["__main__"] is ctx.main
            sw_out(ctx)


def test_stores_find_the_entry_after_the_table_changed(twins):
    """The entry of "__main__" is found again after the table changed between switches: another
    dict with the key elsewhere, the key deleted and added back, the table grown, an equal str
    that is not the same object as the key (kept as the key, as PyDict_SetItem keeps it), a
    table with a key that is not a str; no other entry changes. (Writing at the index remembered
    from the last switch without checking its key overwrites "x" here.)"""
    hooks, fake_sys, _ = twins
    results = {}
    for way, (sw_in, sw_out) in hooks.items():
        got = []
        key = "".join(["__ma", "in__"])  # equal to "__main__", another object
        layouts = [
            lambda m: {"__main__": m, "x": 1, "y": 2},
            lambda m: {"x": 1, "y": 2, "__main__": m},
            lambda m: {"y": 2, "__main__": m, "x": 1},
            lambda m, key=key: {key: m, "x": 1, "y": 2},
            lambda m: {1: "one", "x": 1, "__main__": m, "y": 2},
        ]
        for i, make in enumerate(layouts * 2):
            ctx = _ctx(str(i))
            modules = fake_sys.modules = make(types.ModuleType("old"))
            sw_in(ctx)
            got.append((list(modules), modules["__main__"] is ctx.main, modules["x"], modules["y"]))
            assert any(k is key for k in modules) == (make is layouts[3])
            sw_out(ctx)
            # the same dict changed while the rank ran: the key deleted and added back
            # elsewhere, then the table grown
            del modules["__main__"]
            modules["z"] = 3
            modules["__main__"] = ctx.main
            sw_in(_ctx("again"))
            got.append((list(modules), modules["x"], modules["z"]))
            sw_out(ctx)
            modules.update((f"k{j}", j) for j in range(300))
            other = _ctx("grown")
            sw_in(other)
            got.append((modules["__main__"] is other.main, modules["k7"], len(modules)))
            sw_out(other)
        results[way] = got
    assert results["py"] == results["c"]


def test_an_untracked_dict_is_tracked_after_the_store(twins):
    """A dict the collector does not track (it holds no container) is tracked once a module is
    stored into it, as PyDict_SetItem does; a store in place would leave it untracked."""
    hooks, fake_sys, _ = twins
    for sw_in, sw_out in hooks.values():
        fake_sys.modules = modules = {"__main__": "not a module", "a": "b"}
        assert not gc.is_tracked(modules)
        ctx = _ctx("t")
        sw_in(ctx)
        assert gc.is_tracked(modules) and modules["__main__"] is ctx.main
        sw_out(ctx)


def test_module_reads_follow_changes_made_outside_the_hooks(twins, monkeypatch):
    """The hooks remember what ``sys`` and ``warnings`` held (with their dicts' versions) and
    move that along with their own stores; a change made by Python code in between (a rank
    rebinding ``sys.stdout``, ``sys.argv`` or ``showwarning``, the same dict changed and
    changed back) is seen at the next switch, both ways."""
    from smpy.shim import isolation as iso

    hooks, fake_sys, fake_w = twins
    out, err, mine = object(), object(), object()
    monkeypatch.setattr(iso, "_streams", [out, err])
    results = {}
    for way, (sw_in, sw_out) in hooks.items():
        fake_sys.modules, fake_sys.argv = {"__main__": types.ModuleType("__main__")}, ["old"]
        fake_sys.stdout, fake_sys.stderr = out, err
        fake_w.showwarning = print
        a, b = _ctx("a"), _ctx("b")
        got = []
        sw_in(a)
        fake_sys.stdout = mine  # the rank rebinds its stream
        fake_sys.argv = ["replaced"]  # and sys.argv (not saved: the next switch in resets it)
        sw_out(a)
        got.append((fake_sys.stdout is out, a.stdout is mine))
        sw_in(b)
        got.append((fake_sys.stdout is out, fake_sys.argv is b.argv))
        fake_w.showwarning = repr  # rank b rebinds showwarning
        sw_out(b)
        got.append(b.warn_show is repr)
        sw_in(a)
        got.append((fake_sys.stdout is mine, fake_sys.argv is a.argv, fake_w.showwarning is print))
        # changed and changed back while the rank ran: the versions moved, the values are those
        fake_sys.stdout = err
        fake_sys.stdout = mine
        sw_out(a)
        got.append((a.stdout is mine, fake_sys.stdout is out))
        sw_in(b)
        got.append((fake_sys.stdout is out, fake_w.showwarning is repr))
        sw_out(b)
        results[way] = got
    assert results["py"] == results["c"]
    assert results["c"] == [(True, True), (True, True), True, (True, True, True), (True, True), (True, True)]


def test_isolation_globals_read_again_once_rebound(twins, monkeypatch):
    """The isolation module's globals the hooks read at every switch (``_streams``,
    ``_private_names``, ``state``, ...) are remembered with its dict's version: a global rebound
    between two switches is read again."""
    from smpy.shim import isolation as iso

    hooks, fake_sys, _ = twins
    for sw_in, sw_out in hooks.values():
        monkeypatch.setattr(iso, "_streams", [])
        fake_sys.modules, fake_sys.argv = {"__main__": types.ModuleType("__main__")}, ["old"]
        fake_sys.stdout = fake_sys.stderr = None
        ctx = _ctx("a")
        sw_in(ctx)
        sw_out(ctx)
        assert fake_sys.stdout is None
        out, err = object(), object()
        monkeypatch.setattr(iso, "_streams", [out, err])
        sw_in(ctx)
        assert fake_sys.stdout is out and fake_sys.stderr is err
        sw_out(ctx)


def test_per_rank_modules_stored_in_place_as_python(twins):
    """The per-rank modules put into ``sys.modules`` at each switch in (one group of stores with
    ``__main__``): the right module under the right name when the rank's dict lists them in
    another order than the last rank's, when one is missing, when a module becomes per rank
    between switches, and when ``sys.modules``'s key is an equal str of its own."""
    from smpy.shim import isolation as iso

    hooks, fake_sys, _ = twins
    results = {}
    try:
        for way, (sw_in, sw_out) in hooks.items():
            iso._private_names.clear()
            iso._getter_cache[:] = [0, (), None]
            iso._private_names.update(("pa", "pb"))
            key = "".join(["p", "b"])
            mods = {n: [types.ModuleType(f"{n}{r}") for r in range(3)] for n in ("pa", "pb", "pc")}
            fake_sys.modules = modules = {"__main__": types.ModuleType("m"), "pa": None, key: None}
            r = [_ctx(str(i)) for i in range(3)]
            r[0].modules.update(pa=mods["pa"][0], pb=mods["pb"][0])
            r[1].modules.update(pb=mods["pb"][1], pa=mods["pa"][1])  # another order
            r[2].modules.update(pa=mods["pa"][2])  # no pb
            got = []
            for step in range(6):
                ctx = r[step % 3]
                sw_in(ctx)
                got.append(sorted((n, getattr(m, "__name__", m)) for n, m in modules.items() if n != "__main__"))
                if step == 3:  # rank 0 imports a module that becomes per rank
                    iso._private_names.add("pc")
                    modules["pc"] = mods["pc"][0]
                sw_out(ctx)
            got.append([sorted(c.modules) for c in r])
            results[way] = got
    finally:
        iso._private_names.clear()
        iso._getter_cache[:] = [0, (), None]
    assert results["py"] == results["c"]


def test_the_thread_local_context_stored_in_place_is_per_thread(twins):
    """``state.ctx`` stored into the main thread's dict of the local (in place once found): a
    thread sees None throughout, and its own context once it switches one in; the main thread's
    value is untouched by it."""
    import threading

    from smpy.shim import isolation as iso

    hooks, fake_sys, _ = twins
    for sw_in, sw_out in hooks.values():
        fake_sys.modules, fake_sys.argv = {"__main__": types.ModuleType("__main__")}, ["old"]
        a, b = _ctx("a"), _ctx("b")
        seen = []
        sw_in(a)
        sw_out(a)
        sw_in(a)

        def other(seen=seen, sw_in=sw_in, sw_out=sw_out, b=b):
            seen.append(iso.state.ctx)
            sw_in(b)
            seen.append(iso.state.ctx is b)
            sw_out(b)
            seen.append(iso.state.ctx)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        seen.append(iso.state.ctx is a)
        sw_out(a)
        seen.append(iso.state.ctx)
        assert seen == [None, True, None, True, None]


# -- whole programs, both ways --------------------------------------------------------------
PROGRAM = """
import sys, threading, types
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
it = iter(sys.__dict__)           # an iterator over sys's dict held across switches (sys.argv
first = next(it)                  # stored at each): no size change
keys = sys.modules.keys()         # and a view of sys.modules's keys
comm.Barrier()
rest = sum(1 for _ in it) if "__main__" in keys else 0
if r == 1:
    sys.argv = ["replaced", str(r)]   # a rank replacing sys.argv (reset at its next switch in)
    sys.modules["added_by_1"] = types.ModuleType("added_by_1")   # a module added between switches
comm.Barrier()
seen = []
t = threading.Thread(target=lambda: seen.append(list(sys.argv)))  # a thread reading sys.argv
t.start()
t.join()
comm.Barrier()
print(r, rest > 0, sys.argv[1:], seen[0][1:], "added_by_1" in sys.modules, sys.modules["__main__"].r == r)
"""


def test_programs_the_same_both_ways(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    outs = {}
    for mode in ("off", "on"):
        res = launch.run(str(prog), np=3, args=["x", "y"], capture=True, echo=False,
                         cfg={"smpi/simulate-computation": "no", "smpy/accel": mode})
        assert res.status == "ok" and res.accelerated == (mode == "on")
        outs[mode] = sorted("".join(t for _, _, t in res.output).splitlines())
    assert outs["off"] == outs["on"]
    assert outs["on"] == [f"{r} True ['x', 'y'] ['x', 'y'] True True" for r in range(3)]
