"""The direct calls of the compiled per-message path (smpy/support/_cext.h ``call_direct`` and
``green_switch0``; docs/performance.md, "The ring's last C frames"): a compiled function calls
the next one's C code directly when it is a builtin of flags METH_FASTCALL | METH_KEYWORDS,
and switches greenlets through greenlet's C API when the greenlet is an exact
``greenlet.greenlet``; anything else (a Python function put in place of a compiled one, a
greenlet subclass with its own ``switch``) is called as before. Each case both ways, the same
results."""

from __future__ import annotations

import greenlet
import pytest

from smpy.cli import launch
from smpy.kernel import accel, actors
from smpy.kernel.activity import Sleep, Trigger
from smpy.kernel.actors import Actor
from smpy.kernel.engine import Engine
from smpy.runtime import p2p
from tests.accel_twins import both as _both
from tests.accel_twins import needs_accel

pytestmark = needs_accel

EXACT = {"smpi/simulate-computation": "no", "smpi/wtime": "0"}


class LoggedGreenlet(greenlet.greenlet):
    """A greenlet whose ``switch`` is its own: the compiled switch must call it."""

    log: list = []

    def switch(self, *args, **kwargs):
        LoggedGreenlet.log.append(("switch", len(args), len(kwargs)))
        return super().switch(*args, **kwargs)


def _program(e, log):
    def waiter(name, delay):
        t = Trigger(e, name)
        e.schedule(delay, t.fire)
        actors.block_on(t)
        log.append((name, e.now))
        actors.block_on(Sleep(e, 0.5))
        log.append((name, "slept", e.now))

    return [Actor(e, n, waiter, (n, d)) for n, d in (("a", 1.0), ("b", 0.25), ("c", 2.0))]


def test_a_greenlet_subclass_as_the_maestro_keeps_its_switch():
    # the maestro (every actor's parent) a LoggedGreenlet: block_on's actor.glet.parent.switch()
    # is the subclass's method both ways
    def go():
        LoggedGreenlet.log = []
        e = Engine()
        log = []

        def maestro():
            for a in _program(e, log):
                a.start()
            e.run()

        g = LoggedGreenlet(maestro)
        g.switch()
        return log, LoggedGreenlet.log[:], e.now, e.abort_reason

    a, b = _both(go)
    assert a == b and a[3] is None
    # the first switch into the maestro, then one per block (2 per actor)
    assert a[1].count(("switch", 0, 0)) == 1 + 6 and a[2] == 2.5


def test_an_actor_greenlet_subclass_keeps_its_switch():
    # the actor's own greenlet a LoggedGreenlet: Actor._resume's self.glet.switch() is the
    # subclass's method both ways
    def go():
        LoggedGreenlet.log = []
        e = Engine()
        log = []
        acts = _program(e, log)
        for a in acts:
            a.start()
        acts[1].glet = LoggedGreenlet(Actor._main, parent=acts[1].glet.parent)
        e.run()
        return log, LoggedGreenlet.log[:], e.now, e.abort_reason

    a, b = _both(go)
    assert a == b and a[3] is None and a[2] == 2.5
    # its start (given the actor: run is Actor._main) and two resumes
    assert a[1] == [("switch", 1, 0), ("switch", 0, 0), ("switch", 0, 0)]


RECV = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r = comm.Get_rank()
buf = np.zeros(2)
for i in range(3):
    if r == 0:
        comm.Send(np.full(2, float(i)), dest=1, tag=i)
    else:
        comm.Recv(buf, source=0, tag=i)
        print("got", buf.tolist())
"""


@pytest.mark.parametrize("replaced", ["block_on", "wait"])
def test_a_python_function_put_in_place_of_a_compiled_one_is_called(tmp_path, monkeypatch, replaced):
    # p2p.wait and p2p.block_on are read from p2p's module dict at each call: a Python wrapper
    # put there is called by the compiled Recv / wait (not the compiled function directly)
    prog = tmp_path / "recv.py"
    prog.write_text(RECV)
    outs = {}
    for mode in ("off", "on"):
        calls = []
        real = getattr(p2p, replaced)

        def wrapper(*args, _real=real, _calls=calls, **kwargs):
            _calls.append(len(args))
            return _real(*args, **kwargs)

        monkeypatch.setattr(p2p, replaced, wrapper)
        try:
            res = launch.run(str(prog), np=2, capture=True, echo=False, cfg={**EXACT, "smpy/accel": mode})
        finally:
            monkeypatch.undo()
        assert res.accelerated == (mode == "on")
        outs[mode] = ("".join(t for _, _, t in res.output), repr(res.makespan_s), res.messages, len(calls) > 0)
    assert outs["off"] == outs["on"]
    assert "got [2.0, 2.0]" in outs["on"][0] and outs["on"][3]


def test_the_switch_goes_through_the_c_api_when_it_can():
    # the compiled kernel found greenlet's C API (else every switch would take the method call)
    mod = accel.load()
    assert mod is not None
    assert accel.use(True)
    try:
        e = Engine()
        log = []
        for a in _program(e, log):
            a.start()
        e.run()
    finally:
        accel.use(False)
    assert log[-1] == ("c", "slept", 2.5)
    assert mod.green_api() is True
