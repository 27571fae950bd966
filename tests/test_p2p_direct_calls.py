"""The point-to-point path's direct calls and inline steps (docs/performance.md, "The
point-to-point path's calls, made directly"): the compiled isend, _pair, _arrived, _detach,
Send and Recv call the next compiled function's C code when the name they read (the p2p or
packing module's global, the class's method) is still that compiled function, and the receive's
``buf.nbytes`` is computed in C while the buffer spec's property is msgspec's own. Each test
puts something else in place (a Python wrapper, a property of its own, a getter whose code is
replaced) and checks that the compiled path calls it, with the same output as the Python
path."""

from __future__ import annotations

import pytest

from smpy.cli import launch
from smpy.mpi import msgspec
from smpy.runtime import p2p, packing
from tests.accel_twins import needs_accel

pytestmark = needs_accel

EXACT = {"smpi/simulate-computation": "no", "smpi/wtime": "0"}

RING = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r, n = comm.Get_rank(), comm.Get_size()
tok = np.zeros(2)
for lap in range(3):
    if r == 0:
        comm.Send([tok, MPI.DOUBLE], dest=1, tag=7)
        comm.Recv([tok, MPI.DOUBLE], source=n - 1, tag=7)
    else:
        comm.Recv([tok, MPI.DOUBLE], source=r - 1, tag=7)
        tok[0] += 1
        tok[1] = r
        comm.Send([tok, MPI.DOUBLE], dest=(r + 1) % n, tag=7)
    print(r, lap, tok.tolist(), MPI.Wtime())
"""


@pytest.fixture(autouse=True, scope="module")
def _compiled_in_place_once(tmp_path_factory):
    # the compiled parts' first installation takes the module globals as the Python functions
    # to swap: done before any test puts a wrapper there
    _run(tmp_path_factory.mktemp("warm"), "on")


def _run(tmp_path, mode):
    prog = tmp_path / "ring.py"
    prog.write_text(RING)
    res = launch.run(str(prog), np=4, capture=True, echo=False, cfg={**EXACT, "smpy/accel": mode})
    assert res.accelerated == (mode == "on")
    return "".join(t for _, _, t in res.output), repr(res.makespan_s), res.messages


@pytest.mark.parametrize("name", ["_pair", "_start_transfer", "_detach", "_copy_in", "_deliver", "isend", "irecv"])
def test_a_python_function_in_place_of_a_compiled_one_is_called(tmp_path, monkeypatch, name):
    outs, calls = {}, {}
    for mode in ("off", "on"):
        log = []
        real = getattr(p2p, name)

        def wrapper(*args, _real=real, _log=log, **kwargs):
            _log.append(len(args))
            return _real(*args, **kwargs)

        monkeypatch.setattr(p2p, name, wrapper)
        try:
            outs[mode] = _run(tmp_path, mode)
        finally:
            monkeypatch.undo()
        calls[mode] = len(log)
    assert outs["off"] == outs["on"]
    assert calls["on"] > 0 and calls["on"] == calls["off"]


def test_a_python_pack_message_is_called(tmp_path, monkeypatch):
    # comm.pack_message (packing.pack_message, compiled) read by the compiled Send: a wrapper
    # there is called
    from smpy.mpi import comm as comm_mod

    outs, calls = {}, {}
    for mode in ("off", "on"):
        log = []

        def wrapper(*args, _log=log, **kwargs):
            _log.append(len(args))
            return packing.pack_message(*args, **kwargs)

        monkeypatch.setattr(comm_mod, "pack_message", wrapper)
        try:
            outs[mode] = _run(tmp_path, mode)
        finally:
            monkeypatch.undo()
        calls[mode] = len(log)
    assert outs["off"] == outs["on"] and calls["on"] == calls["off"] > 0


def _counting_nbytes(log):
    def nbytes(self):
        log.append(1)
        return self.count * self.datatype.size

    return nbytes


def test_a_buffer_spec_property_of_its_own_is_called(tmp_path, monkeypatch):
    # BufSpec.nbytes replaced by another property: the compiled _copy_in reads it (not the
    # product made in C), as many times as the Python _copy_in
    outs, calls = {}, {}
    for mode in ("off", "on"):
        log = []
        monkeypatch.setattr(msgspec.BufSpec, "nbytes", property(_counting_nbytes(log)))
        try:
            outs[mode] = _run(tmp_path, mode)
        finally:
            monkeypatch.undo()
        calls[mode] = len(log)
    assert outs["off"] == outs["on"]
    assert calls["on"] == calls["off"] > 0


def _logged_nbytes(self, _log=None):
    _log.append(1)
    return self.count * self.datatype.size


def test_a_getter_whose_code_is_replaced_is_called(tmp_path):
    # the same property and getter, the getter's __code__ replaced: the compiled _copy_in calls
    # it (the code is checked, not only the function)
    outs, calls = {}, {}
    fget = msgspec.BufSpec.__dict__["nbytes"].fget
    code, defaults = fget.__code__, fget.__defaults__
    for mode in ("off", "on"):
        log: list = []
        fget.__code__, fget.__defaults__ = _logged_nbytes.__code__, (log,)
        try:
            outs[mode] = _run(tmp_path, mode)
        finally:
            fget.__code__, fget.__defaults__ = code, defaults
        calls[mode] = len(log)
    assert outs["off"] == outs["on"]
    assert calls["on"] == calls["off"] > 0


SIZES = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r = comm.Get_rank()
for n, dt, mt in ((1, np.uint8, MPI.BYTE), (3, np.float64, MPI.DOUBLE), (1000, np.int32, MPI.INT),
                  (70000, np.uint8, MPI.BYTE), (5, np.float64, MPI.DOUBLE)):
    if r == 0:
        comm.Send([np.arange(n, dtype=dt), mt], dest=1, tag=n)
    else:
        buf = np.zeros(n + 2, dtype=dt)  # larger than the message: buf.nbytes > the message's
        st = MPI.Status()
        comm.Recv([buf, mt], source=0, tag=n, status=st)
        print(n, int(buf.sum()), st.Get_count(mt), MPI.Wtime())
"""


def _both_ways(tmp_path, name, text, np_):
    """The program run on the Python path and the compiled one: {mode: (output, makespan)},
    the two the same."""
    prog = tmp_path / name
    prog.write_text(text)
    outs = {}
    for mode in ("off", "on"):
        res = launch.run(str(prog), np=np_, capture=True, echo=False, cfg={**EXACT, "smpy/accel": mode})
        assert res.accelerated == (mode == "on")
        outs[mode] = ("".join(t for _, _, t in res.output), repr(res.makespan_s))
    assert outs["off"] == outs["on"]
    return outs


def test_receive_buffers_of_several_sizes(tmp_path):
    # the receive buffer's nbytes made in C (count * size) for counts and sizes of several
    # magnitudes, a buffer larger than the message: the same output both ways
    outs = _both_ways(tmp_path, "sizes.py", SIZES, 2)
    assert "70000 " in outs["on"][0]


TWO_COMMS = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r, n = comm.Get_rank(), comm.Get_size()
rev = comm.Split(0, key=n - r)  # the same ranks in reverse order: another rank_of
buf = np.zeros(1)
for i in range(4):
    for c in (comm, rev, rev, comm):
        me, size = c.Get_rank(), c.Get_size()
        if me == 0:
            c.Send([np.full(1, float(i * 10 + r)), MPI.DOUBLE], dest=1, tag=i)
        elif me == 1:
            st = MPI.Status()
            c.Recv([buf, MPI.DOUBLE], source=0, tag=i, status=st)
            print(r, me, i, buf[0], st.Get_source(), MPI.Wtime())
        c.Barrier()
"""


def test_rank_lookups_in_two_communicators(tmp_path):
    # comm.rank_of[proc.rank] read in C (a table of (dict, key) -> value with the dict's
    # version) for two communicators whose dicts map the same ranks differently, in turn
    outs = _both_ways(tmp_path, "two.py", TWO_COMMS, 3)
    assert outs["on"][0].count("\n") == 16
