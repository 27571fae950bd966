"""The compiled accelerator of the per-message path (smpy/kernel/_accel.c) against its
Python reference: each compiled function alone, then whole runs both ways, whose outputs,
traces and figures must be the same bytes.

Skipped only when the accelerator cannot be built here (no C compiler or no Python headers;
CI installs a compiler, so it runs there).
"""

from __future__ import annotations

import heapq
import json
import mmap
from pathlib import Path

import numpy as np
import pytest

import smpy
from smpy.cli import launch
from smpy.kernel import accel, actors
from smpy.kernel.activity import FAILED, Activity, ActivityFailed, Sleep, Trigger
from smpy.kernel.actors import Actor, ActorKilled
from smpy.kernel.engine import DeadlockError, Engine, Event
from smpy.mpi.comm import Comm
from smpy.support.internal import SmpyInternalError
from tests.accel_twins import MOD, needs_accel
from tests.accel_twins import both as _both

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
TWINS = ROOT / "benchmarks" / "speed" / "twins.py"
CLUSTER64 = ROOT / "examples" / "platforms" / "cluster64.yaml"
EXACT = {"smpi/simulate-computation": "no", "smpi/wtime": "0"}

pytestmark = needs_accel


@pytest.fixture
def compiled():
    """The compiled objects in place for one test, the Python ones afterwards."""
    assert accel.use(True)
    try:
        yield
    finally:
        accel.use(False)


def _pure():
    return {"run": Engine.__dict__["run"], "schedule": Engine.__dict__["schedule"],
            "_finish": Activity.__dict__["_finish"], "_resume": Actor.__dict__["_resume"],
            "block_on": actors.block_on}


# -- the swap --------------------------------------------------------------------------------
def test_use_swaps_every_reference_and_back():
    from smpy.runtime import p2p

    pure = _pure()
    assert not accel.active()
    assert accel.use(True) and accel.active()
    try:
        assert Engine.__dict__["run"] is not pure["run"]
        assert type(Engine.__dict__["schedule"]).__name__ == "method_descriptor"
        assert Activity.__dict__["_finish"] is not pure["_finish"]
        assert actors.block_on is MOD.block_on and p2p.block_on is MOD.block_on
        assert type(Comm.__dict__["Send"]).__name__ == "MpiCall"
        assert Comm.Send.__name__ == "Send" and Comm.Send.__wrapped__ is not None
        assert Comm.__dict__["Send"].python_wrapper.__smpy_call__[1] == "MPI_Send"
        from smpy.runtime import p2p as _p2p
        from smpy.shim.isolation import RankContext
        assert type(RankContext.__dict__["switch_in"]).__name__ == "method_descriptor"
        assert type(RankContext.__dict__["switch_out"]).__name__ == "method_descriptor"
        assert type(_p2p.isend).__name__ == "builtin_function_or_method"
    finally:
        accel.use(False)
    assert _pure() == pure and p2p.block_on is pure["block_on"]
    from smpy.shim.isolation import RankContext
    assert type(RankContext.__dict__["switch_in"]).__name__ == "function"
    assert type(p2p.isend).__name__ == "function"
    assert type(Comm.__dict__["Send"]).__name__ == "function"


# -- each compiled function against its reference ----------------------------------------------

def _heap(engine):
    return [(t, s, ev.time, getattr(ev.fn, "__name__", ev.fn), ev.args, ev.cancelled) for t, s, ev in sorted(engine._heap)]


@pytest.mark.parametrize("delay", [0.25, -1.0, 0.0, 3, -2, np.float64(0.5), True])
def test_schedule_matches_python(delay):
    def go():
        e = Engine()
        e.now = 1.5
        e.schedule(0.1, print)
        ev = e.schedule(delay, print, 1, "x")
        return _heap(e), type(ev.time), e._seq

    a, b = _both(go)
    assert a == b


def test_schedule_of_an_integer_clock_matches_python():
    def go():
        e = Engine()
        e.now = 2  # an int clock (the generic arithmetic path)
        e.schedule(1, print)
        e.schedule(-3, print)
        return [(t, type(t)) for t, _, _ in sorted(e._heap)]

    a, b = _both(go)
    assert a == b == [(2.0, float), (3, int)]


def test_schedule_refuses_what_python_refuses(compiled):
    e = Engine()
    with pytest.raises(TypeError):
        e.schedule(0.1)
    with pytest.raises(TypeError):
        e.schedule(0.1, print, x=1)
    with pytest.raises(TypeError):
        e.schedule("soon", print)


def test_finish_matches_python():
    def go():
        e = Engine()
        e.now = 4.0
        log = []
        act = Activity(e)
        act.add_callback(lambda a: log.append(("cb1", a.state, a.finish_time)))
        act.add_callback(lambda a: (log.append(("cb2", a.callbacks)), a.add_callback(lambda b: log.append("late"))))
        a1, a2, a3 = (Actor(e, f"a{i}", print) for i in range(3))
        a1.waiting_for = act
        a2.waiting_for = None  # woken by someone else already: not appended
        a3.waiting_for = [act]
        act.waiters = [a1, a2, a3]
        act._finish()
        act._finish()  # at most once
        return log, act.state, act.finish_time, act.callbacks, act.waiters, [a.name for a in e._ready], \
            [a.waiting_for for a in (a1, a2, a3)]

    a, b = _both(go)
    assert a == b
    assert a[0][0] == ("cb1", 1, 4.0) and a[0][-1] == "late" and a[5] == ["a0", "a2"]


def test_add_callback_matches_python():
    def go():
        e = Engine()
        log = []
        act = Activity(e)
        act.add_callback(lambda a: log.append(("first", a.state)))   # callbacks None -> a list
        first = act.callbacks
        act.add_callback(lambda a: log.append(("second", a.state)))  # appended to that list
        n_before = len(act.callbacks)
        act._finish()
        act.add_callback(lambda a: log.append(("done", a.state)))    # done: called at once
        failed = Activity(e)
        failed._fail(RuntimeError("x"))
        failed.add_callback(lambda a: log.append(("failed", a.state, str(a.exception))))
        err = None
        try:
            failed.add_callback(lambda a: 1 / 0)
        except ZeroDivisionError as exc:
            err = str(exc)
        return log, type(first).__name__, n_before, act.callbacks, err

    a, b = _both(go)
    assert a == b
    assert a[0] == [("first", 1), ("second", 1), ("done", 1), ("failed", 2, "x")] and a[1] == "list"
    assert a[2] == 2 and a[4] == "division by zero"


def test_finish_propagates_a_callback_error(compiled):
    e = Engine()
    act = Trigger(e)
    act.add_callback(lambda a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        act.fire()
    assert act.state == 1 and act.callbacks is None


def _program(e, log):
    """Actors that sleep, wait for triggers, fail, are killed, block on done activities."""
    trig = Trigger(e, "the trigger")
    bad = Trigger(e, "bad")

    def sleeper(n):
        for i in range(n):
            actors.block_on(Sleep(e, 0.5 + i))
            log.append((actors.current_actor().name, e.now))
        trig.fire()
        done = Trigger(e)
        done.fire()
        assert actors.block_on(done) is done  # no switch when already done
        bad._fail(ValueError("boom"))

    def waiter():
        actors.block_on(trig, label="waiting for the trigger")
        log.append(("waiter", e.now))
        try:
            actors.block_on(bad)
        except ValueError as exc:
            log.append(("waiter-failed", str(exc)))
        t = Trigger(e)
        t.state = FAILED
        try:
            actors.block_on(t)
        except ActivityFailed as exc:
            log.append(("activity-failed", str(exc)))

    def stuck():
        actors.block_on(Trigger(e, "never fired"), "the stuck one")

    for name, fn, args in (("s", sleeper, (3,)), ("w", waiter, ()), ("x", stuck, ())):
        Actor(e, name, fn, args).start()


class _Ctx:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def switch_in(self):
        self.log.append(("in", self.name, actors.current_actor()))

    def switch_out(self):
        self.log.append(("out", self.name, actors.current_actor()))


def test_run_block_on_and_resume_match_python():
    def go():
        e = Engine()
        log = []
        _program(e, log)
        for a in e.actors:
            a.context = _Ctx(log, a.name)
        seen = []
        e.on_time_advance.connect(lambda old, new: seen.append((old, new)))
        e.schedule_daemon(0.7, lambda: log.append(("daemon", e.now)))
        ev = e.schedule(0.2, log.append, "cancelled")
        ev.cancelled = True
        with pytest.raises(DeadlockError) as err:
            e.run()
        return log, seen, str(err.value), e.now, e.rounds, e.events_processed

    a, b = _both(go)
    assert a == b
    assert "x: the stuck one" in a[2] and ("waiter-failed", "boom") in a[0]
    assert ("activity-failed", "trigger") in a[0] and ("daemon", 0.7) in a[0]


def test_run_until_and_stop_match_python():
    def go():
        e = Engine()
        log = []
        _program(e, log)
        e.run(until=1.0)
        first = (e.now, list(log))
        e.run(1.7)
        mid = (e.now, list(log))
        e.abort(RuntimeError("stop"))
        e.run()
        return first, mid, e.now, e.rounds, e.abort_reason.args

    a, b = _both(go)
    assert a == b and a[0][0] == 1.0


def _logged(name, log):
    """A property standing for the Engine slot ``name``, logging its reads and writes."""
    def fget(self):
        v = self.__dict__["_" + name]
        log.append(("get", name, v))
        return v

    def fset(self, v):
        log.append(("set", name, v))
        self.__dict__["_" + name] = v

    return property(fget, fset)


def test_engine_slots_follow_the_class_as_python():
    """The compiled loop reads an Engine's slots at their offsets: a subclass that makes them
    properties, and the Engine class itself given a property after the setup (its version tag
    changes), are read and written through the properties, in Python's order."""
    def sub():
        log = []

        class Logged(Engine):
            now = _logged("now", log)
            rounds = _logged("rounds", log)

        e = Logged()
        e.__dict__["_now"], e.__dict__["_rounds"] = 0.0, 0
        _program(e, log)
        with pytest.raises(DeadlockError):
            e.run()
        return log

    def patched():
        log = []
        saved = Engine.__dict__["events_processed"]
        Engine.events_processed = _logged("events_processed", log)
        try:
            e = Engine()
            _program(e, log)
            with pytest.raises(DeadlockError):
                e.run()
        finally:
            Engine.events_processed = saved
        e2 = Engine()  # the slot again once the class is restored
        e2.schedule(1.0, log.append, "after")
        e2.run()
        return log, e2.events_processed, e2.rounds

    for go in (sub, patched):
        a, b = _both(go)
        assert a == b
    assert ("set", "rounds", 1) in sub() and ("get", "now", 0.0) in sub()
    log, n, r = patched()
    assert ("set", "events_processed", 1) in log and log[-1] == "after" and (n, r) == (1, 1)


def test_method_calls_follow_the_class_as_python(compiled):
    """_cext.h's method cache (call_method0/1): a method of a class without instance dicts is
    remembered per class and name, until the class changes; a subclass, an instance with a
    __dict__ and a replaced method are called as Python calls them."""
    log = []

    class Model:
        __slots__ = ("dirty", "tag")

        def __init__(self, tag):
            self.dirty, self.tag = True, tag

        def update(self):
            log.append(("update", self.tag))
            self.dirty = False

    class Sub(Model):
        __slots__ = ()

        def update(self):
            log.append(("sub", self.tag))
            self.dirty = False

    class WithDict:
        def __init__(self):
            self.dirty = True

        def update(self):
            log.append(("class", None))
            self.dirty = False

    def tick(e, models):
        for m in models:
            m.dirty = True
        e.schedule(1.0, lambda: None)
        e.run()

    class SlotDict:  # slots and a __dict__ (not a managed one)
        __slots__ = ("dirty", "__dict__")

        def __init__(self):
            self.dirty = True

        def update(self):
            log.append(("slotdict", None))
            self.dirty = False

    e = Engine()
    a, b, c, d = Model("a"), Sub("b"), WithDict(), SlotDict()
    c.update = lambda: (log.append(("instance", None)), setattr(c, "dirty", False))
    for m in (a, b, c, d):
        e.add_model(m)
    tick(e, (a, b, c, d))
    tick(e, (a, b, c, d))
    d.update = lambda: (log.append(("own", None)), setattr(d, "dirty", False))
    Model.update = lambda self: (log.append(("patched", self.tag)), setattr(self, "dirty", False))
    tick(e, (a, b, d))
    del d.update
    tick(e, (d,))
    assert log == ([("update", "a"), ("sub", "b"), ("instance", None), ("slotdict", None)] * 2
                   + [("patched", "a"), ("sub", "b"), ("own", None), ("slotdict", None)])


def test_run_refuses_bad_arguments(compiled):
    with pytest.raises(TypeError):
        Engine().run(1.0, 2.0)
    with pytest.raises(TypeError):
        Engine().run(stop=1.0)


def test_block_on_outside_an_actor_and_when_killed(compiled):
    e = Engine()
    with pytest.raises(SmpyInternalError, match="outside of an actor"):
        actors.block_on(Trigger(e))
    with pytest.raises(TypeError):
        actors.block_on()
    log = []

    def victim():
        try:
            actors.block_on(Trigger(e, "forever"))
        finally:
            log.append("unwound")
            try:
                actors.block_on(Trigger(e))
            except ActorKilled:
                log.append("no wait once killed")

    v = Actor(e, "v", victim).start()

    def killer():
        actors.block_on(Sleep(e, 1.0))
        actors.kill(v)

    Actor(e, "k", killer).start()
    e.run()
    assert log == ["unwound", "no wait once killed"] and v.killed and v.end_time == 1.0


def test_resume_runs_switch_out_when_the_actor_raises(compiled):
    e = Engine()
    log = []

    def bad():
        raise KeyError("k")

    a = Actor(e, "bad", bad)
    a.context = _Ctx(log, "bad")
    a.start()
    e.run()
    assert isinstance(e.abort_reason, KeyError) and [x[0] for x in log] == ["in", "out"]
    assert log[1][2] is None  # _current cleared before switch_out


def test_heap_stays_a_heapq_heap(compiled):
    e = Engine()
    for d in (0.5, 0.1, 0.3, 0.1, 0.9):
        e.schedule(d, print)
    copy = list(e._heap)
    heapq.heapify(copy)
    assert copy == e._heap


# -- the MPI facade's wrapper ------------------------------------------------------------------
CALLS = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
buf = np.zeros(3)
if r == 0:
    comm.Send([np.arange(3.0), MPI.DOUBLE], dest=np.int64(1), tag=np.int32(5))   # coerced by keyword
    comm.Send([np.arange(3.0), MPI.DOUBLE], np.int64(1), 6)                        # coerced by position
    comm.send({"a": 1}, 1, tag=7)
else:
    st = MPI.Status()
    comm.Recv(buf, source=0, tag=5, status=st)
    print(r, buf.tolist(), st.Get_source(), st.Get_tag())
    comm.Recv(buf, 0, 6)
    print(r, comm.recv(source=0, tag=7))
comm.Set_errhandler(MPI.ERRORS_RETURN)
try:
    comm.Send(buf, dest=99)
except MPI.Exception as e:
    print(r, "error class", e.Get_error_class())
comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
print(r, comm.allreduce(r), MPI.Wtime() > 0, comm.Send.__name__)
MPI.Finalize()
print(r, MPI.Is_finalized())
try:
    comm.Barrier()
except Exception as e:
    print(r, type(e).__name__, str(e).splitlines()[0])
"""


def _run(tmp_path, mode, program, np_, *args, platform=None, cfg=None, trace=False, name="prog.py"):
    if isinstance(program, str) and "\n" in program:
        path = tmp_path / name
        path.write_text(program)
        program = path
    out = {}
    tr = tmp_path / f"trace-{mode}.json" if trace else None
    res = launch.run(str(program), np=np_, args=list(args), platform=platform, capture=True, echo=False,
                     cfg={**EXACT, **(cfg or {}), "smpy/accel": mode}, trace=str(tr) if tr else None)
    assert res.accelerated == (mode == "on")
    out["summary"] = [ln for ln in res.summary().splitlines() if "emulation wall time" not in ln]
    d = res.to_json()
    for k in ("wall_s", "cpu_s", "peak_rss_bytes", "accelerated", "accel_parts", "config"):
        d.pop(k)
    out["result"] = json.dumps(d, sort_keys=True, default=str)
    out["output"] = res.output
    if tr is not None:
        out["trace"] = tr.read_bytes()
    return out


def _same(tmp_path, *a, **kw):
    pure = _run(tmp_path, "off", *a, **kw)
    fast = _run(tmp_path, "on", *a, **kw)
    assert pure["result"] == fast["result"]
    assert pure["summary"] == fast["summary"]
    assert pure["output"] == fast["output"]
    assert pure.get("trace") == fast.get("trace")
    return pure


def test_facade_calls_the_same_both_ways(tmp_path):
    out = _same(tmp_path, CALLS, 2)
    text = "".join(t for _, _, t in out["output"])
    assert "1 [0.0, 1.0, 2.0] 0 5" in text and "1 {'a': 1}" in text and "error class 6" in text
    assert "0 1 True Send" in text and "0 True\n" in text and "1 MPIException Other MPI error" in text


SENDRECV = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
a = np.arange(4.0) + r
b = np.zeros(4)
if r == 0:
    comm.Send(a, 1)                                   # positional dest, default tag
    comm.Send([a, MPI.DOUBLE], 1, 3)                  # positional tag
    comm.Send(buf=a, dest=1, tag=4)                   # every argument by keyword
    comm.Send(np.arange(8.0), dest=1, tag=5)          # longer than the receive buffer
    for bad in ({"dest": 1, "colour": 2}, {}):
        try:
            comm.Send(a, **bad)
        except TypeError as exc:
            print("TypeError", str(exc).split("(")[0].split(" got")[0][:40])
else:
    comm.Recv(b, 0)
    print("got", b.tolist())
    st = MPI.Status()
    comm.Recv([b, MPI.DOUBLE], MPI.ANY_SOURCE, 3, st)   # positional status
    print("status", st.Get_source(), st.Get_tag(), st.Get_count(MPI.DOUBLE))
    comm.Recv(buf=b, source=0, tag=4, status=st)
    print("kw", b.tolist(), st.Get_tag())
    try:
        comm.Recv(b, source=0, tag=5)
    except MPI.Exception as exc:
        print("truncated", exc.Get_error_class() == MPI.ERR_TRUNCATE)
    try:
        comm.Recv(b, 0, 1, None, 9)
    except TypeError:
        print("TypeError too many")
"""


def test_send_recv_bodies_the_same_both_ways(tmp_path):
    from smpy.mpi.comm import Comm

    out = _same(tmp_path, SENDRECV, 2)
    text = "".join(t for _, _, t in out["output"])
    assert "got [0.0, 1.0, 2.0, 3.0]" in text and "status 0 3 4" in text and "kw [0.0, 1.0, 2.0, 3.0] 4" in text
    assert "truncated True" in text and text.count("TypeError") == 3
    assert accel.use(True)
    try:
        assert "compiled" in repr(Comm.__dict__["Send"]) and Comm.__dict__["Send"].__class__.__name__ == "MpiCall"
    finally:
        accel.use(False)


# -- whole runs both ways ------------------------------------------------------------------------
@pytest.mark.parametrize("pattern,np_,n", [("ring", 16, "3"), ("pingpong", 4, "1"), ("stencil", 16, "2"),
                                           ("allreduce", 8, "2")])
def test_twins_the_same_both_ways(tmp_path, pattern, np_, n):
    out = _same(tmp_path, TWINS, np_, pattern, n, platform=str(CLUSTER64), trace=True)
    assert f"{pattern}_{n} " in "".join(t for _, _, t in out["output"])


@pytest.mark.parametrize("case", ["allreduce", "alltoallv", "scan", "gatherv", "bcast"])
def test_collectives_the_same_both_ways(tmp_path, case):
    out = _same(tmp_path, PROGRAMS / "colls.py", 5, case, trace=True)
    assert json.loads(out["result"])["status"] == "ok"
    assert "FAIL" not in "".join(t for _, _, t in out["output"])


def test_deadlock_report_the_same_both_ways(tmp_path):
    out = _same(tmp_path, PROGRAMS / "deadlock_recv.py", 2)
    assert json.loads(out["result"])["status"] == "deadlock"


def test_exception_report_the_same_both_ways(tmp_path):
    # rank 2 raises and ends alone, the others wait for it in a barrier (as under mpiexec)
    out = _same(tmp_path, PROGRAMS / "fault_exception.py", 4)
    assert json.loads(out["result"])["status"] == "deadlock"
    assert "ZeroDivisionError" in json.loads(out["result"])["message"]
    # smpy/abort-on-exception: the run aborts at the exception
    out = _same(tmp_path, PROGRAMS / "fault_exception.py", 4, cfg={"smpy/abort-on-exception": "yes"})
    assert json.loads(out["result"])["status"] == "error"
    assert "ZeroDivisionError" in json.loads(out["result"])["message"]


LOOP = """
from mpi4py import MPI
import smpy
comm = MPI.COMM_WORLD
for it in range(20):
    smpy.sleep(0.1)
    comm.allreduce(comm.rank)
print("done", comm.rank)
"""


def test_host_failure_the_same_both_ways(tmp_path):
    out = _same(tmp_path, LOOP, 8, cfg={"smpy/fail": "node-3@0.55s"})
    res = json.loads(out["result"])
    assert res["status"] == "failed" and res["lost_ranks"]


def test_ulfm_shrink_the_same_both_ways(tmp_path):
    out = _same(tmp_path, ROOT / "examples" / "faults" / "ulfm_shrink.py", 4,
                cfg={"smpy/fail": "node-2@0.35s", "smpy/auto-cleanup": "no"})
    res = json.loads(out["result"])
    assert res["status"] == "ok" and res["failures"]
    assert "after 1 shrink(s)" in "".join(t for _, _, t in out["output"])


def test_accel_on_without_a_build_is_one_clear_line(monkeypatch):
    monkeypatch.setattr(accel, "_tried", True)
    monkeypatch.setattr(accel, "_module", None)
    monkeypatch.setattr(accel, "_why", "no C compiler (set CC, or install cc/gcc/clang)")
    with pytest.raises(ValueError, match=r"^smpy/accel:on: the compiled accelerator is not available: no C compiler"):
        smpy.run(str(PROGRAMS / "colls.py"), np=2, capture=True, echo=False, cfg={"smpy/accel": "on"})
    res = smpy.run(str(TWINS), np=2, args=["ring", "1"], capture=True, echo=False, cfg={**EXACT, "smpy/accel": "auto"})
    assert res.status == "ok" and not res.accelerated


def test_a_partial_accelerator_is_named_in_the_summary():
    res = launch.RunResult(script="x.py", np=2, platform="p", hosts_used=1, status="ok", exit_code=0,
                           makespan_s=1.0, mpi_calls=0, messages=0, bytes_sent=0, wall_s=0.0, events=0,
                           accelerated=True, accel_parts={"accel": "on", "callaccel": "the build of _callaccel.c failed: x"})
    line = next(ln for ln in res.summary().splitlines() if "emulation wall time" in ln)
    assert line.endswith("(0 events, accelerator on, but callaccel off: the build of _callaccel.c failed: x)")
    res.accel_parts["callaccel"] = "on"
    assert "but" not in res.summary()


def test_env_var_gives_the_mode(monkeypatch):
    monkeypatch.setenv("SMPY_ACCEL", "off")
    res = smpy.run(str(TWINS), np=2, args=["ring", "1"], capture=True, echo=False, cfg=EXACT)
    assert not res.accelerated and "accelerator off" in res.summary()
    monkeypatch.setenv("SMPY_ACCEL", "on")
    res = smpy.run(str(TWINS), np=2, args=["ring", "1"], capture=True, echo=False, cfg=EXACT)
    assert res.accelerated and "accelerator on" in res.summary()
    assert {"accel", "callaccel", "p2paccel", "switchaccel"} <= set(res.accel_parts)
    assert set(res.accel_parts.values()) == {"on"}
    assert res.to_json()["accel_parts"] == res.accel_parts
    res = smpy.run(str(TWINS), np=2, args=["ring", "1"], capture=True, echo=False, cfg={**EXACT, "smpy/accel": "off"})
    assert not res.accelerated and res.accel_parts == {}
    monkeypatch.setenv("SMPY_ACCEL", "fast")
    with pytest.raises(ValueError, match="SMPY_ACCEL='fast': expected one of auto, on, off"):
        smpy.run(str(TWINS), np=2, args=["ring", "1"], capture=True, echo=False, cfg=EXACT)


# -- the point-to-point posting (smpy/runtime/_p2paccel.c) ---------------------------------------
def _p2p_setup(**world_kw):
    from types import SimpleNamespace

    from smpy.runtime.comm import Mailbox

    engine = Engine()
    engine.now = 3.25
    hosts = [SimpleNamespace(name=f"h{i}") for i in range(3)]
    world = SimpleNamespace(engine=engine, ft=None, detached_thresh=65536, tracer=None, ti=None,
                            eager_thresh=0, transfers=[], **world_kw)
    procs = [SimpleNamespace(world=world, rank=r, host=hosts[r], o_send=None, o_isend=None, o_recv=None)
             for r in range(3)]
    world.processes = procs
    boxes = [[Mailbox() for _ in range(3)], [Mailbox() for _ in range(3)]]
    comm = SimpleNamespace(revoked=False, rank_of={0: 0, 1: 1, 2: 2}, rgroup=[0, 1, 2], boxes=boxes,
                           sboxes=boxes, rsize=3)

    world.flows = []

    def transfer(src, dst, n):
        flow = Trigger(engine, "flow")
        world.transfers.append((src.name, dst.name, n))
        world.flows.append(flow)
        return flow

    world.transfer = transfer
    return procs, comm, world


def _state(obj):
    from smpy.runtime.p2p import Request, SendRequest

    names = [n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ()) if n not in ("__weakref__",)]
    out = {}
    for n in names:
        v = getattr(obj, n, "<unset>")
        if isinstance(v, (Request, SendRequest)):
            v = ("request", v.kind, v.peer, v.tag)
        elif isinstance(v, Engine):
            v = "engine"
        elif isinstance(v, list):
            v = [("request", x.kind, x.peer, x.tag) if isinstance(x, Request) else type(x).__name__ for x in v]
        elif not isinstance(v, (int, float, str, bytes, type(None))):
            v = type(v).__name__
        out[n] = (type(v).__name__, v)
    return out


def _p2p_script(p2p, detached_thresh=65536, eager_thresh=0):
    from types import SimpleNamespace

    """Sends and receives in both orders, wildcards, a detached and a rendezvous send, a
    wait; the state of every request and queue afterwards."""
    procs, comm, world = _p2p_setup()
    world.detached_thresh, world.eager_thresh = detached_thresh, eager_thresh
    world.ft = SimpleNamespace(transfer_failed=lambda call, exc, *ranks: RuntimeError(f"{call}: {exc}"), detected=False)
    a, b, c = procs
    reqs = [
        p2p.irecv(b, comm, 0, 0, 5, None, "MPI_Irecv"),                  # posted first
        p2p.isend(a, comm, 0, b"x" * 8, 8, 1, 5, "MPI_Isend"),            # matches it
        p2p.isend(a, comm, 0, b"y" * 100000, 100000, 2, 9, call="MPI_Send", blocking=True),  # unexpected, rendezvous
        p2p.isend(c, comm, 0, memoryview(b"z" * 4), 4, 2, 1),             # to itself, detached
        p2p.irecv(c, comm, 0, -2, -1),                                    # ANY_SOURCE, ANY_TAG: the first
        p2p.irecv(c, comm, 1, 0, 9, None, call="MPI_Recv"),               # another channel: posted
        p2p.isend(b, comm, 1, b"w", 1, 0, 3, sync=True),                  # synchronous
        p2p.isend(a, comm, 0, b"", 0, -1, 0),                             # PROC_NULL (Python path)
        p2p.irecv(a, comm, 0, -1, 0),
    ]
    done = p2p.wait(a, reqs[-1])
    assert done is reqs[-1]
    boxes = [(ch, r, _state_list(box)) for ch, row in enumerate(comm.boxes) for r, box in enumerate(row)]
    posted = [_state(r) for r in reqs]
    world.flows[-1]._fail(RuntimeError("link down")) if len(world.flows) > 2 else None
    for f in world.flows:  # the transfers end: _arrived, _deliver (a failed one: _transfer_failed)
        world.engine.now += 0.5
        f.fire()
    late = p2p.irecv(b, comm, 1, 2, 3)  # matches nothing
    return posted, boxes, list(world.transfers), [_state(r) for r in reqs], _state(late)


def _state_list(box):
    return [[(x.kind, x.peer, x.tag) for x in q] for q in (box.posted, box.unexpected)]


@pytest.mark.parametrize("detached,eager", [(65536, 0), (0, 0), (65536, 1 << 30)])
def test_p2p_posting_matches_python(detached, eager):
    from smpy.runtime import p2p

    def go():
        return _p2p_script(p2p, detached, eager)

    a, b = _both(go)
    assert a == b
    states = a[0]
    assert states[0]["state"] == ("int", 0) and states[1]["match"][1][0] == "request"
    assert states[3]["detached"] == ("bool", detached > 4) and states[4]["match"][1][0] == "request"
    assert len(a[2]) == (3 if eager else 2)  # eager: the unexpected rendezvous send's transfer starts too


def test_p2p_functions_are_swapped(compiled):
    from smpy.runtime import p2p

    assert type(p2p.isend).__name__ == "builtin_function_or_method"
    assert type(p2p.irecv).__name__ == type(p2p.wait).__name__ == "builtin_function_or_method"
    procs, comm, world = _p2p_setup()
    with pytest.raises(TypeError):
        p2p.isend(procs[0], comm, 0, b"", 0, 1, 0, bogus=1)  # the Python function's own error
    with pytest.raises(AttributeError):
        p2p.isend(object(), comm, 0, b"", 0, 1, 0)


def _arrival(p2p):
    """A send matched by a posted receive: its flow's callback, called as the flow calls it."""
    procs, comm, world = _p2p_setup()
    a, b, _c = procs
    recv = p2p.irecv(b, comm, 0, 0, 5)
    send = p2p.isend(a, comm, 0, b"x" * 8, 8, 1, 5)
    flow = world.flows[-1]
    (cb,) = flow.callbacks
    before = (send.arrived, recv.state)
    cb(flow)
    return cb, before, (send.arrived, recv.state, bytes(recv.payload) if recv.payload is not None else None)


def test_arrival_callback_is_called_as_the_partial():
    """The compiled _start_transfer hands the flow a compiled partial(_arrived, send): the same
    arrival, delivery and state as the Python partial."""
    from smpy.runtime import p2p

    (pcb, *pyth), (ccb, *comp) = _both(lambda: _arrival(p2p))
    assert type(pcb).__name__ == "partial" and type(ccb).__name__ == "arrived_callback"
    assert pyth == comp and comp[0] == (False, 0) and comp[1][:2] == (True, 1)
    with pytest.raises(TypeError):
        ccb(None, bogus=1)
    with pytest.raises(TypeError):
        pcb(None, bogus=1)


# -- the receive-buffer copy (_copy_in, _detach in smpy/runtime/_p2paccel.c) --------------------
def _copy_case(case):
    """One _copy_in or _detach of a case; the receive's fields, the memory, the error."""
    from types import SimpleNamespace

    from smpy.runtime import copies, p2p
    from smpy.runtime.datatype import PREDEFINED

    procs, comm, _world = _p2p_setup()
    dbl, byte = PREDEFINED["DOUBLE"], PREDEFINED["BYTE"]
    arr = bytearray(range(40))
    mem = memoryview(arr)
    data = memoryview(bytes(range(100, 116)))  # a borrowed payload of 16 bytes
    n, dt, off = 16, dbl, 8
    if case == "bytes":
        data = bytes(data)
    elif case == "odd":  # a partial last element
        data, n = data[:13], 13
    elif case == "truncate":
        n = 48
    elif case == "past_end":
        off = 32
    elif case == "negative_offset":
        off = -8
    elif case == "readonly":
        mem = memoryview(bytes(40))
    elif case == "format_d":
        mem = memoryview(np.zeros(5)).cast("B").cast("d")
    elif case == "payload_d":
        data = memoryview(np.arange(2.0))
    elif case == "released":
        mem = memoryview(bytearray(40))
        mem.release()
    elif case == "empty":
        data, n = b"", 0
    elif case == "byte_type":
        dt = byte
    elif case == "vector":
        from smpy.runtime.datatype import create_vector
        dt = create_vector(dbl, 2, 1, 2)
    elif case == "detach_nobuf":  # a borrowed bytearray: copied into bytes that wait
        data = memoryview(bytearray(data))
    send = p2p.SendRequest(procs[0], comm, 0, "MPI_Send", 1, 5)
    recv = p2p.RecvRequest(procs[1], comm, 0, "MPI_Recv", 0, 5)
    send.payload, send.nbytes = data, n
    cap = n if case != "truncate" else 16
    recv.buf = None if case in ("no_buf", "detach_nobuf") else SimpleNamespace(nbytes=cap, datatype=dt, mem=mem, offset=off)
    send.match = recv
    ledger = copies.start() if case == "ledger" else None
    try:
        (p2p._detach(send) if case.startswith("detach") else p2p._copy_in(send, recv))
        err = None
    except Exception as e:  # noqa: BLE001 - the error is compared both ways
        err = (type(e).__name__, str(e))
    finally:
        if ledger is not None:
            copies.stop()
    landed = send.payload is p2p._LANDED
    out = bytes(arr) if case not in ("readonly", "format_d", "released") else None
    pay = recv.payload if not isinstance(recv.payload, memoryview) else ("mv", bytes(recv.payload))
    return recv.nbytes, recv.error, pay, out, err, landed, type(send.payload).__name__


@pytest.mark.parametrize("case", ["memoryview", "bytes", "odd", "truncate", "past_end", "negative_offset",
                                  "readonly", "format_d", "payload_d", "released", "empty", "byte_type",
                                  "vector", "no_buf", "ledger", "detach", "detach_nobuf"])
def test_copy_in_and_detach_match_python(case):
    a, b = _both(lambda: _copy_case(case))
    assert a == b
    if case in ("memoryview", "bytes", "detach", "ledger"):
        assert a[3][8:24] == bytes(range(100, 116)) and a[0] == 16 and a[4] is None
    if case == "detach":
        assert a[5]  # the payload landed in the receive buffer
    if case == "detach_nobuf":
        assert not a[5] and a[6] == "bytes"  # copied into bytes that wait
    if case in ("past_end", "readonly", "released"):
        assert a[4] is not None  # the Python code's error, raised both ways


@pytest.mark.parametrize("case", ["contiguous", "owned", "owned_false", "vector", "offset", "empty", "ledger"])
def test_pack_message_matches_python(case):
    from smpy.mpi.msgspec import BufSpec
    from smpy.runtime import copies, packing
    from smpy.runtime.datatype import PREDEFINED, create_vector

    def go():
        arr = np.arange(8.0)
        dt = PREDEFINED["DOUBLE"]
        spec = BufSpec(arr, memoryview(arr).cast("B"), 0, 4, dt)
        args = (spec,)
        if case == "owned":
            args = (spec, True)
        elif case == "owned_false":
            args = (spec, False)
        elif case == "vector":
            spec.datatype, spec.count = create_vector(dt, 2, 1, 2), 2
        elif case == "offset":
            spec.offset = 16
        elif case == "empty":
            spec.count = 0
        ledger = copies.start() if case == "ledger" else None
        try:
            out = packing.pack_message(*args)
        finally:
            if ledger is not None:
                copies.stop()
        arr[:] = -1.0  # a borrowed payload sees the change, a packed one does not
        return type(out).__name__, bytes(out), len(out)

    a, b = _both(go)
    assert a == b
    if case in ("contiguous", "owned_false", "ledger"):
        assert a[0] == "memoryview" and a[1] == np.full(4, -1.0).tobytes()
    if case == "owned":
        assert a[0] == "bytes" and a[1] == np.arange(4.0).tobytes()
    if case == "offset":
        assert a[2] == 32 and a[1] == np.full(4, -1.0).tobytes()


def test_copy_in_is_compiled(compiled):
    from smpy.mpi import comm
    from smpy.runtime import p2p, packing

    assert type(p2p._copy_in).__name__ == type(p2p._detach).__name__ == "builtin_function_or_method"
    assert type(packing.pack_message).__name__ == type(comm.pack_message).__name__ == "builtin_function_or_method"


# -- the rank contexts' switch hooks (smpy/shim/_switchaccel.c) ----------------------------------
def test_switch_hooks_compiled_pass_the_isolation_test(compiled):
    import importlib.util

    from smpy.shim.isolation import RankContext

    assert type(RankContext.__dict__["switch_in"]).__name__ == "method_descriptor"
    spec = importlib.util.spec_from_file_location("_iso_tests", ROOT / "tests" / "test_isolation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.test_switch_hooks_swap_per_rank_modules_a_rank_may_lack()


def _switch_twins(fake_sys, fake_warnings, monkeypatch):
    """(Python, compiled) switch hooks reading ``fake_sys`` and ``fake_warnings`` instead of
    the real modules (the compiled ones set up again with the real modules afterwards)."""
    import sys
    import warnings

    from smpy.shim import isolation as iso
    from smpy.support import cext

    mod, why = cext.load(ROOT / "smpy" / "shim" / "_switchaccel.c", "smpy.shim._switchaccel")
    if mod is None:
        pytest.skip(why)
    monkeypatch.setattr(iso, "sys", fake_sys)
    monkeypatch.setattr(iso, "warnings", fake_warnings)
    monkeypatch.setattr(iso, "_streams", None)
    c_in, c_out = mod.setup(iso.__dict__, iso.RankContext, fake_sys, fake_warnings)
    py = (iso.RankContext.__dict__["switch_in"], iso.RankContext.__dict__["switch_out"])
    return py, (c_in, c_out), lambda: mod.setup(iso.__dict__, iso.RankContext, sys, warnings)


def test_switch_hooks_read_and_write_instance_dicts_as_python(monkeypatch):
    """_cext.h's cached_get/cached_set on objects with a __dict__ (a module, a plain
    instance): the dict first, as the generic getattr, until the class gains a data
    descriptor of that name (then that, as Python does); a name only on the class is found."""
    import types

    from smpy.shim import isolation as iso

    class W:  # a warnings module stand-in: a plain instance
        defaultaction = "default"  # on the class only: not in the instance's dict

    sets = []
    fake_sys = types.ModuleType("fake_sys")
    w = W()
    py, cc, restore = _switch_twins(fake_sys, w, monkeypatch)
    def check(sw_in, sw_out, tag, props):
        fake_sys.modules, fake_sys.argv = {"__main__": types.ModuleType("__main__")}, ["old"]
        w.__dict__.update(filters=[("ignore", tag)], showwarning=print, _showwarnmsg_impl=len)
        ctx = iso.RankContext(0, types.ModuleType("__main__"), ["prog", tag], 0, None)
        sw_out(ctx)
        assert ctx.warn_filters == ([("prop",)] if props else [("ignore", tag)])
        assert ctx.warn_show is (str if props else print)
        assert ctx.warn_impl is len and ctx.warn_default == W.defaultaction
        assert ctx.main is fake_sys.modules["__main__"]
        ctx.warn_filters, ctx.warn_show = [("error", tag)], repr
        sw_in(ctx)
        assert fake_sys.argv == ["prog", tag] and fake_sys.__dict__["argv"] is ctx.argv
        if not props:
            assert w.filters == [("error", tag)] and w.showwarning is repr
        assert iso.state.ctx is ctx
        iso.state.ctx = None

    try:
        for hooks, tag in ((py, "py"), (cc, "c"), (cc, "c2")):
            check(*hooks, tag, False)
        assert not sets
        # the class gains data descriptors: both ways now read and write through them
        W.filters = property(lambda self: [("prop",)], lambda self, v: sets.append(("filters", v)))
        W.showwarning = property(lambda self: str, lambda self, v: sets.append(("show", v)))
        for hooks, tag in ((py, "py"), (cc, "c")):
            check(*hooks, tag, True)
        assert sets == [("filters", [("error", "py")]), ("show", repr), ("filters", [("error", "c")]), ("show", repr)]
    finally:
        restore()


def test_switch_hooks_set_the_heap_owner_cell_as_python(monkeypatch):
    """The compiled hooks store the owner into a ctypes.c_int cell's buffer directly (taken
    once per cell); the cell reads what Python's ``cell.value = owner`` gives, for another
    cell, an owner beyond int's range, and a c_int subclass whose ``value`` is its own."""
    import ctypes
    import types

    from smpy.shim import isolation as iso

    class W:
        defaultaction = "default"

    sets = []

    class Logged(ctypes.c_int):  # not c_int itself: the attribute protocol, as in Python
        value = property(lambda self: -1, lambda self, v: sets.append(v))

    fake_sys, w = types.ModuleType("fake_sys"), W()
    w.__dict__.update(filters=[], showwarning=print, _showwarnmsg_impl=len)
    py, cc, restore = _switch_twins(fake_sys, w, monkeypatch)

    def run(sw_in, sw_out):
        got = []
        for cell, owner in ((ctypes.c_int(5), 3), (ctypes.c_int(0), 9), (ctypes.c_int(0), 2**31 + 5),
                            (ctypes.c_int(0), -(2**31)), (Logged(0), 4)):
            fake_sys.modules, fake_sys.argv = {"__main__": types.ModuleType("__main__")}, ["p"]
            ctx = iso.RankContext(0, types.ModuleType("__main__"), ["p"], 0, None)
            ctx.heap_cell, ctx.heap_owner = cell, owner
            for _ in range(2):  # the cell's address is reused on the second switch
                sw_in(ctx)
                got.append(cell.value)
                sw_out(ctx)
                got.append(cell.value)
            iso.state.ctx = None
        return got

    try:
        want = run(*py)
        assert want[:4] == [3, 0, 3, 0] and want[8] == ctypes.c_int(2**31 + 5).value
        assert run(*cc) == want
        assert sets == [4, 0, 4, 0] * 2
    finally:
        restore()


def test_switch_hooks_set_the_thread_local_context_as_python(monkeypatch):
    """The compiled hooks store ``state.ctx`` into the running thread's dict of the
    threading.local directly once found: another thread still sees its own value (None, then
    its own context), and a data descriptor ``ctx`` given to the class later is used, both
    as Python does."""
    import threading
    import types

    from smpy.shim import isolation as iso

    class W:
        defaultaction = "default"

    fake_sys, w = types.ModuleType("fake_sys"), W()
    w.__dict__.update(filters=[], showwarning=print, _showwarnmsg_impl=len)
    py, cc, restore = _switch_twins(fake_sys, w, monkeypatch)

    def ctx_of(tag):
        fake_sys.modules, fake_sys.argv = {"__main__": types.ModuleType("__main__")}, ["p"]
        return iso.RankContext(0, types.ModuleType("__main__"), [tag], 0, None)

    def run(sw_in, sw_out):
        seen = []
        a = ctx_of("a")
        sw_in(a)
        sw_out(a)
        sw_in(a)  # the dict found on the first set: reused now
        seen.append(iso.state.ctx is a)

        def other():
            seen.append(iso.state.ctx)  # this thread's own: None
            b = ctx_of("b")
            sw_in(b)
            seen.append(iso.state.ctx is b)
            sw_out(b)
            seen.append(iso.state.ctx)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        seen.append(iso.state.ctx is a)  # untouched by the other thread
        sw_out(a)
        seen.append(iso.state.ctx)
        return seen

    sets = []
    try:
        for hooks in (py, cc):
            assert run(*hooks) == [True, None, True, None, True, None]
        # a data descriptor on the class: both ways go through it
        type(iso.state).ctx = property(lambda self: "p", lambda self, v: sets.append(v))
        made = []
        for hooks in (py, cc):
            made.append(ctx_of("a"))
            hooks[0](made[-1])
            hooks[1](made[-1])
            assert iso.state.ctx == "p"
        assert sets == [made[0], None, made[1], None]
    finally:
        type(iso.state).ctx = None
        iso.state.ctx = None
        restore()


def test_switch_out_saves_the_warnings_state_as_python(monkeypatch):
    """switch_out saves the warnings state into the rank unless it is in place already (the
    compiled hooks skip the saving while the warnings module's dict keeps the version
    switch_in left and the rank still holds the four objects): a rank that changes nothing,
    one that rebinds ``showwarning``, one that changes its filters in place, a context whose
    own field was changed meanwhile, and a context switched out that was not switched in
    end with the same fields both ways."""
    import types

    from smpy.shim import isolation as iso

    fake_sys, w = types.ModuleType("fake_sys"), types.ModuleType("fake_warnings")
    py, cc, restore = _switch_twins(fake_sys, w, monkeypatch)

    def fields(ctx):
        return [ctx.warn_filters, ctx.warn_show, ctx.warn_impl, ctx.warn_default]

    def run(sw_in, sw_out):
        fake_sys.modules, fake_sys.argv = {"__main__": types.ModuleType("__main__")}, ["p"]
        w.__dict__.update(filters=[("default",)], showwarning=print, _showwarnmsg_impl=len,
                          defaultaction="default")
        a = iso.RankContext(0, types.ModuleType("__main__"), ["a"], 0, None)
        b = iso.RankContext(1, types.ModuleType("__main__"), ["b"], 0, None)
        a.warn_filters, a.warn_show = [("ignore",)], repr
        got = []
        sw_in(a)
        sw_out(a)  # nothing changed
        got.append([x is y for x, y in zip(fields(a), [a.warn_filters, repr, len, "default"])])
        sw_in(a)
        w.showwarning = str  # the rank rebinds it
        sw_out(a)
        got.append(a.warn_show is str)
        sw_in(a)
        w.filters.append(("error",))  # in place: the same list
        sw_out(a)
        got.append((a.warn_filters, a.warn_filters is w.filters))
        sw_in(a)
        a.warn_impl = hash  # the context's own field changed meanwhile
        sw_out(a)
        got.append(a.warn_impl is len)
        sw_in(a)
        sw_out(b)  # another context: it takes what is in force
        got.append([x is y for x, y in zip(fields(b), fields(a))])
        sw_out(a)  # switched out again without a switch in
        got.append(fields(a) == fields(b))
        iso.state.ctx = None
        return got

    try:
        want = run(*py)
        assert want == [[True] * 4, True, ([("ignore",), ("error",)], True), True, [True] * 4, True]
        assert run(*cc) == want
    finally:
        restore()


STREAMS = """
import sys, io, warnings, asyncio
from mpi4py import MPI
import pkl5user
r = MPI.COMM_WORLD.Get_rank()
if r == 1:
    warnings.simplefilter("error")
    sys.stdout = io.StringIO()   # the rank rebinds its stream
pkl5user.count += r
MPI.COMM_WORLD.Barrier()
async def main():
    await asyncio.sleep(0)
    return r
got = asyncio.run(main())
MPI.COMM_WORLD.Barrier()
text = sys.stdout.getvalue() if r == 1 else ""
sys.stdout = sys.__stdout__ if r == 1 else sys.stdout
print(r, got, pkl5user.count, sys.argv[1:], warnings.filters[0][0] if r == 1 else "-", len(text))
try:
    warnings.warn("w")
    print(r, "no error")
except UserWarning:
    print(r, "warning raised")
"""


@pytest.mark.parametrize("case", ["globals", "random", "argv", "imports"])
def test_isolation_programs_the_same_both_ways(tmp_path, case):
    out = _same(tmp_path, PROGRAMS / "isolation.py", 3, case)
    assert json.loads(out["result"])["status"] == "ok"


def test_streams_warnings_asyncio_the_same_both_ways(tmp_path):
    (tmp_path / "pkl5user.py").write_text("from mpi4py.util import pkl5\ncount = 100\n")
    out = _same(tmp_path, STREAMS, 3, "a", "b")
    text = "".join(t for _, _, t in out["output"])
    assert "0 0 100 ['a', 'b'] - 0" in text and "1 warning raised" in text and "2 no error" in text


@pytest.mark.parametrize("rate,remaining,last", [(2.0, 10.0, 0.5), (0.0, 10.0, 0.5), (3.0, 1e-12, 1.0),
                                                 (5.0, 4.0, 2.0), (7, 10.0, 0.25), (1.5, 0.0, 0.0),
                                                 (1.5, 24, 0.0), (1.5, 24, 2.0), (0.3, 2**60, 1.0)])
def test_set_rate_matches_python(rate, remaining, last):
    from smpy.kernel.activity import RateActivity

    def go():
        e = Engine()
        e.now = 2.0
        a = RateActivity(e, 10.0 if isinstance(remaining, float) else 24)
        a.remaining, a.last_update, a.rate = remaining, last, 1.25
        a._set_rate(rate)
        first = a._done_event
        a._set_rate(rate * 2)
        out = (a.remaining, type(a.remaining), a.last_update, a.rate, first.cancelled if first else None, _heap(e))
        a._finish()
        a._set_rate(9.0)  # done: no effect
        return out, a.rate, type(a.rate)

    a, b = _both(go)
    assert repr(a) == repr(b)


def test_set_rate_calls_an_instance_schedule_as_python():
    """The compiled _set_rate runs the compiled Engine.schedule directly, unless the engine has a
    ``schedule`` of its own (an instance attribute), which it then calls, as Python does."""
    from smpy.kernel.activity import RateActivity

    def go(own):
        e = Engine()
        calls = []
        if own:
            e.schedule = lambda delay, fn: calls.append((delay, fn.__name__))
        a = RateActivity(e, 10.0)
        a._set_rate(4.0)
        return calls, _heap(e)

    for own in (False, True):
        a, b = _both(lambda own=own: go(own))
        assert a == b
        assert (a[0], len(a[1])) == (([(2.5, "_work_done")], 0) if own else ([], 1))


# -- message parsing (smpy/mpi/_callaccel.c: msgspec.parse_send / parse_recv) ---------------------
def _specs():
    from smpy.mpi import datatype as D

    a = np.arange(12.0)
    ro = np.arange(4, dtype=np.int32)
    ro.flags.writeable = False
    return [
        a, [a, D.DOUBLE], (a, D.DOUBLE), [a, D.INT], [a, D.BYTE], a.reshape(3, 4), a[::2], [a[::2], D.DOUBLE],
        np.zeros(0), [np.zeros(0), D.DOUBLE], ro, [ro, D.INT], np.arange(6, dtype=np.uint8), bytearray(b"abcd"),
        b"xyz", [a, 3, D.DOUBLE], [a, (2, 3), D.DOUBLE], [a, D.DATATYPE_NULL], np.zeros(3, dtype=[("x", "i4")]),
        np.arange(5, dtype=">i4"), [a, D.DOUBLE, 1], None, [None, D.INT], np.arange(4, dtype=np.complex128),
        [np.arange(5.0), D.DOUBLE],
        # [buffer, count, Datatype] (the OSU demos' form): fits, empty, out of bounds, read-only,
        # not contiguous, 2-d, not an int count, negative, huge, no buffer, other buffer types
        [mmap.mmap(-1, 16), 5, D.BYTE], [bytearray(b"abcdef"), 6, D.BYTE], [b"xyz", 2, D.BYTE],
        [a, 0, D.DOUBLE], [a, 13, D.DOUBLE], [a, 2, D.INT], [a.reshape(3, 4), 4, D.DOUBLE],
        [a[::2], 2, D.DOUBLE], [a, True, D.DOUBLE], [a, -1, D.DOUBLE], [a, 2**70, D.DOUBLE],
        [np.zeros(0), 0, D.DOUBLE], [memoryview(a), 12, D.DOUBLE], [None, 0, D.INT], [ro, 4, D.INT],
        (a, 6, D.DOUBLE), [a, 3, D.DATATYPE_NULL], [object(), 1, D.BYTE],
    ]


def _parsed(fn, spec, **kw):
    try:
        s = fn(spec, **kw)
    except Exception as exc:  # noqa: BLE001 - the outcome compared both ways
        return ("error", type(exc).__name__, str(exc))
    mem = s.mem
    return (type(s).__name__, s.obj is spec or (isinstance(spec, (list, tuple)) and s.obj is spec[0]),
            None if mem is None else (mem.format, mem.nbytes, mem.readonly, bytes(mem)),
            s.offset, s.count, id(s.datatype), type(s.offset).__name__, type(s.count).__name__)


@pytest.mark.parametrize("blocks", [None, 1, 2, 3])
def test_parse_messages_match_python(blocks):
    from smpy.mpi import msgspec

    def go():
        kw = {} if blocks is None else {"blocks": blocks}
        return [(_parsed(msgspec.parse_send, s, **kw), _parsed(msgspec.parse_recv, s, **kw)) for s in _specs()]

    a, b = _both(go)
    assert a == b
    assert a[0][0][4] == 12 and a[1][0][4] == 12 or blocks and blocks > 1
    assert any(x[1][0] == "error" for x in a)  # the read-only array cannot receive


def test_parse_functions_are_swapped(compiled):
    from smpy.mpi import msgspec
    from smpy.mpi.comm import msgspec as used

    assert type(msgspec.parse_send).__name__ == "builtin_function_or_method" and used.parse_recv is msgspec.parse_recv


# -- the facade's point-to-point helpers (Comm._send, Comm._irecv, COMM_WORLD._impl) -------------
FACADE = """
import numpy as np
from mpi4py import MPI
w = MPI.COMM_WORLD
r, n = w.Get_rank(), w.Get_size()
d = w.Dup()
buf = np.zeros(4)
for comm in (w, d):
    if r == 0:
        comm.Send([np.arange(4.0), MPI.DOUBLE], dest=1, tag=3)
        comm.Send(np.arange(4.0) + 1, 1, 4)
        comm.Send(buf, dest=MPI.PROC_NULL)
        comm.Ssend([np.ones(2), MPI.DOUBLE], dest=2 % n, tag=0)
    elif r == 1:
        st = MPI.Status()
        comm.Recv(buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
        print(r, buf.tolist(), st.source, st.tag)
        comm.Recv(buf, 0, 4)
        print(r, buf.tolist())
        comm.Recv(buf, MPI.PROC_NULL)
    if r == 2 % n:
        comm.Recv(buf[:2], source=0, tag=0)
        print(r, "ssend", buf[:2].tolist())
    comm.Barrier()
w.Set_errhandler(MPI.ERRORS_RETURN)
for bad in (dict(dest=n), dict(dest=0, tag=-5), dict(dest=-7)):
    try:
        w.Send(buf, **bad)
    except MPI.Exception as e:
        print(r, "send error", e.Get_error_class())
try:
    w.Recv(buf, source=n + 3)
except MPI.Exception as e:
    print(r, "recv error", e.Get_error_class())
print(r, w.sendrecv(r, dest=(r + 1) % n, source=(r - 1) % n), type(w)._impl is not None)
"""


def test_facade_helpers_the_same_both_ways(tmp_path):
    out = _same(tmp_path, FACADE, 3)
    text = "".join(t for _, _, t in out["output"])
    assert "1 [0.0, 1.0, 2.0, 3.0] 0 3" in text and "1 [1.0, 2.0, 3.0, 4.0]" in text
    assert "2 ssend [1.0, 1.0]" in text and text.count("send error 6") == 6 and text.count("send error 4") == 3
    assert text.count("recv error 6") == 3 and "0 2 True" in text


def test_facade_helpers_are_swapped(compiled):
    from smpy.mpi.comm import _WorldComm

    assert type(Comm.__dict__["_send"]).__name__ == "method_descriptor"
    assert type(Comm.__dict__["_irecv"]).__name__ == "method_descriptor"
    assert type(_WorldComm.__dict__["_impl"].fget).__name__ == "builtin_function_or_method"


# -- the default run: the compute bursts timed around every call ---------------------------------
def test_measured_calls_flush_the_burst_in_the_compiled_wrapper(tmp_path, monkeypatch):
    """With computation measured (the default), the compiled wrapper flushes the burst before
    an outermost call (Timing.flush, translated) and restarts it after, as _call._hooked does.
    On a fake CPU clock (2 us per read, so that every burst is simulated): the same calls, the
    same clock reads, the same outputs and the same simulated end both ways, and no _hooked
    frame and no Timing.flush frame when compiled."""
    from smpy.mpi import _call
    from smpy.timing import bench
    from smpy.timing.bench import Timing

    counts = {"flush": 0, "hooked": 0, "clock": 0}
    flush, hooked = Timing.flush, _call._hooked

    def counting_flush(self, proc, mark=True):  # type: ignore[no-untyped-def]
        counts["flush"] += 1
        return flush(self, proc, mark)

    def counting_hooked(*a, **kw):  # type: ignore[no-untyped-def]
        counts["hooked"] += 1
        return hooked(*a, **kw)

    def clock() -> float:
        counts["clock"] += 1
        return counts["clock"] * 2e-6

    monkeypatch.setattr(Timing, "flush", counting_flush)
    monkeypatch.setattr(_call, "_hooked", counting_hooked)
    monkeypatch.setattr(bench, "_thread_time", clock)
    monkeypatch.setattr(_call, "_thread_time", clock)
    path = tmp_path / "calls.py"
    path.write_text(CALLS)
    got, flushes = {}, {}
    for mode in ("off", "on"):
        counts.update(flush=0, hooked=0, clock=0)
        res = smpy.run(str(path), np=2, capture=True, echo=False, cfg={"smpy/accel": mode})
        assert res.status == "ok" and res.accelerated == (mode == "on")
        assert all(r.measured_compute_s > 0 for r in res.ranks)
        got[mode] = (res.mpi_calls, counts["clock"], res.output, res.makespan_s)
        flushes[mode] = counts["flush"]
        assert (counts["hooked"] == 0) == (mode == "on")
    assert got["off"] == got["on"]
    assert flushes["on"] < flushes["off"] - 10  # the wrapper's flushes are compiled
    assert got["on"][1] > 20


NONBLOCKING = """
import numpy as np
from mpi4py import MPI
w = MPI.COMM_WORLD
r, n = w.Get_rank(), w.Get_size()
peer = 1 - r
s = np.arange(6.0) + 10 * r
big = np.zeros(8)
got = [np.zeros(6) for _ in range(4)]
reqs = [w.Irecv(got[0], peer, 1), w.Irecv(buf=got[1], source=peer, tag=2), w.Irecv(got[2]), w.Irecv([got[3], MPI.DOUBLE], peer)]
reqs += [w.Isend(s, peer, 1), w.Isend(buf=s, dest=peer, tag=2), w.Isend([s, 6, MPI.DOUBLE], peer), w.Isend(s, peer, tag=0)]
print(r, MPI.Request.Waitall(reqs), [float(g.sum()) for g in got], all(q == MPI.REQUEST_NULL for q in reqs))
reqs = (w.Irecv(got[0], peer, 5), MPI.REQUEST_NULL, w.Isend(s, peer, 5))
print(r, MPI.Request.Waitall(reqs), reqs[0] == MPI.REQUEST_NULL)
st = [MPI.Status() for _ in range(2)]
reqs = [w.Irecv(got[1], peer, 6), w.Isend(s, peer, 6)]
MPI.Request.Waitall(reqs, st)
print(r, st[0].Get_source(), st[0].Get_tag(), st[0].Get_count(MPI.DOUBLE))
q = w.Irecv(got[2], peer, 7)
MPI.Request.Waitall([q, q, w.Isend(s, peer, 7)])
print(r, "twice", got[2].sum())
w.Set_errhandler(MPI.ERRORS_RETURN)
for bad in ((s, 99), (s, peer, -5)):
    try:
        w.Isend(*bad)
    except MPI.Exception as e:
        print(r, "isend error", e.Get_error_class())
try:
    w.Irecv(got[0], 99)
except MPI.Exception as e:
    print(r, "irecv error", e.Get_error_class())
reqs = [w.Irecv(got[3], peer, 8), w.Isend(big, peer, 8)]    # 8 doubles into 6: truncated
try:
    MPI.Request.Waitall(reqs)
except MPI.Exception as e:
    print(r, "waitall error", e.Get_error_class())
p = w.Send_init(s, peer, 9)
q = w.Recv_init(got[0], peer, 9)
MPI.Prequest.Startall([p, q])
MPI.Request.Waitall([p, q, w.Isend(s, peer, 10), w.Irecv(got[1], peer, 10)])
print(r, "persistent", got[0].sum(), p != MPI.REQUEST_NULL)
print(r, MPI.Request.Waitall(requests=[w.Isend(s, MPI.PROC_NULL), w.Irecv(got[1], MPI.PROC_NULL)]))
print(r, type(w.Isend(s, MPI.PROC_NULL)).__name__, w.Isend(s, np.int64(peer), 11).Wait(), w.Irecv(got[0], peer, 11).Wait())
"""


def test_nonblocking_bodies_the_same_both_ways(tmp_path):
    """Isend, Irecv (compiled bodies and Comm._isend) and Request.Waitall (compiled body) give
    what the Python path gives: outputs, statuses, errors, simulated times."""
    out = _same(tmp_path, NONBLOCKING, 2)
    text = "".join(t for _, _, t in out["output"])
    assert "0 True [75.0, 75.0, 75.0, 75.0] True" in text and "1 True [15.0, 15.0, 15.0, 15.0] True" in text
    assert "0 1 6 6" in text and "0 twice 75.0" in text and text.count("isend error 6") == 2
    assert text.count("isend error 4") == 2 and text.count("irecv error 6") == 2
    assert text.count("waitall error 17") == 2 and "0 persistent 75.0 True" in text
    assert text.count("Request True True") == 2


def test_nonblocking_bodies_are_in_place(compiled):
    from smpy.mpi.request import Request

    assert type(Comm.__dict__["_isend"]).__name__ == "method_descriptor"
    assert "compiled" in repr(Request.__dict__["Waitall"].__func__)


def test_plain_waitall_completes_in_c(tmp_path, monkeypatch):
    """A Waitall of plain requests, none failed, completes without request._complete_all on
    the compiled path (the Python path calls it once per Waitall); a failed one still uses it."""
    from smpy.mpi import request

    calls = []
    real = request._complete_all
    monkeypatch.setattr(request, "_complete_all", lambda *a: calls.append(1) or real(*a))
    prog = tmp_path / "w.py"
    prog.write_text("import numpy as np\nfrom mpi4py import MPI\nw = MPI.COMM_WORLD\nb = np.zeros(4)\n"
                    "for i in range(5):\n"
                    "    MPI.Request.Waitall([w.Irecv(b, 1 - w.rank, i), w.Isend(np.ones(4), 1 - w.rank, i)])\n"
                    "w.Set_errhandler(MPI.ERRORS_RETURN)\n"
                    "try:\n"
                    "    MPI.Request.Waitall([w.Irecv(b[:2], 1 - w.rank, 9), w.Isend(b, 1 - w.rank, 9)])\n"
                    "except MPI.Exception as e:\n"
                    "    print(e.Get_error_class())\n")
    got = {}
    for mode in ("off", "on"):
        calls.clear()
        res = smpy.run(str(prog), np=2, capture=True, echo=False, cfg={"smpy/accel": mode})
        assert res.status == "ok" and res.rank_output(0).strip() == "17"
        got[mode] = len(calls)
    assert got == {"off": 12, "on": 2}


# -- the heap's compaction (engine.py, *Compaction*) ---------------------------------------------
def _compaction_run():
    """Schedule 30 000 events, cancelling most as the models do, then run: the order the live
    ones ran in, the heap's largest size, and its size after the last push."""
    eng = Engine()
    ran: list[int] = []
    peak = 0
    live = []
    for i in range(30_000):
        ev = eng.schedule((i * 7919) % 1000 * 1e-3, ran.append, i)  # equal times: seq order
        if i % 10:
            ev.cancelled = True
        else:
            live.append(i)
        peak = max(peak, len(eng._heap))
    size = len(eng._heap)
    eng.run()
    return ran, live, peak, size


@pytest.mark.parametrize("on", [False, True])
def test_compaction_drops_cancelled_events_and_keeps_the_order(on):
    if on:
        assert accel.use(True)
    try:
        ran, live, peak, size = _compaction_run()
    finally:
        if on:
            accel.use(False)
    # the live events ran, in (time, seq) order, whatever the compactions did
    assert ran == sorted(live, key=lambda i: ((i * 7919) % 1000 * 1e-3, i))
    # the heap never held all 30 000 entries: it was compacted at 8192, then at twice the rest
    assert peak <= 8193 and size < 8193
    assert peak > 8000


def test_compaction_is_the_same_in_both_paths():
    pure, comp = _both(_compaction_run)
    assert comp == pure


# -- the event heap -------------------------------------------------------------------------
class _Cmp:
    """A third item compared by value (two entries with equal time and seq)."""

    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v < other.v


@pytest.mark.parametrize("seed", range(6))
def test_heap_push_and_pop_match_heapq(seed):
    """The compiled engine's heap push and pop move the same objects to the same places as
    heapq's: float times (shared objects, equal ones, -0.0 and 0.0, NaN), int times, seqs
    beyond 64 bits, equal (time, seq) pairs, a list subclass."""
    import heapq
    import random

    rnd = random.Random(seed)
    nan = float("nan")
    times = [0.5, 1.0, 1.0 + 0.0, -0.0, 0.0, nan, float("nan"), 3, 2.5, float("inf")]
    seqs = [1, 2, 3, 2**70, 2**70 + 1, -5, 7]
    for heap_type in (list, type("Sub", (list,), {})):
        a, b = heap_type(), heap_type()
        for step in range(400):
            if rnd.random() < 0.55 or not a:
                item = (rnd.choice(times), rnd.choice(seqs), _Cmp(rnd.random()))
                heapq.heappush(a, item)
                MOD.heap_push(b, item)
            else:
                x, y = heapq.heappop(a), MOD.heap_pop(b)
                assert x is y, (seed, step)
            assert len(a) == len(b) and all(p is q for p, q in zip(a, b)), (seed, step)
    with pytest.raises(IndexError):
        MOD.heap_pop([])
    with pytest.raises(TypeError):
        MOD.heap_push([(1.0, 1, object())], (1.0, 1, object()))  # object() < object(), as heapq raises


def test_events_reused_leave_nothing_behind():
    """Event memory is kept for reuse once the compiled module is set up: an event released
    releases what it held at once (its callback and arguments), a reused one starts with the
    fields it is given, cycles through events are collected, and subclasses of Event are
    made and released as usual."""
    import gc
    import weakref

    class Arg:
        pass

    def go():
        e = Engine()
        out = []
        arg = Arg()
        gone = weakref.ref(arg)
        ev = e.schedule(1.0, lambda a: out.append(type(a).__name__), arg)
        del arg
        assert gone() is not None
        e.run()
        del ev
        assert gone() is None  # the event, run and dropped, released its arguments
        evs = [e.schedule(float(i), out.append, i) for i in range(50)]
        for ev in evs[::2]:
            ev.cancelled = True
        del evs, ev
        cyc = e.schedule(60.0, out.append, "cycle")
        cyc.args = (cyc,)  # a cycle through an event
        cyc.cancelled = True
        del cyc
        e.run()
        gc.collect()

        class Sub(Event):
            __slots__ = ("extra",)

        s = Sub(2.0, out.append, ("sub",))
        s.extra = Arg()
        w = weakref.ref(s.extra)
        del s
        assert w() is None
        fresh = e.schedule(0.5, out.append, "fresh")
        fields = (fresh.time - e.now, fresh.fn == out.append, fresh.args, fresh.cancelled)
        return out, fields, e.events_processed

    a, b = _both(go)
    assert a == b
    assert a[0] == ["Arg"] + list(range(1, 50, 2)) and a[1] == (0.5, True, ("fresh",), False)
