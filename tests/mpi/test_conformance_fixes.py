"""Fixes found with mpi4py's own test suite (conformance/): small programs run under smpy,
asserting what real mpi4py 4.1.2 on MPICH does."""

from __future__ import annotations

import textwrap
from pathlib import Path

import smpy


def run_prog(tmp_path: Path, source: str, np: int = 2) -> list[str]:
    """Run ``source`` under smpy on ``np`` ranks; each rank's output (the run must succeed)."""
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    res = smpy.run(str(prog), np=np, capture=True)
    assert res.status == "ok", (res.message, [res.rank_output(r) for r in range(np)])
    return [res.rank_output(r) for r in range(np)]


def test_zero_size_multidim_buffers_intercomm(tmp_path: Path) -> None:
    """A (k, 0) longdouble array is an empty buffer (memoryview cannot cast it to bytes and
    numpy's __dlpack__ refuses longdouble): inter-communicator Alltoallv/Allgather with it."""
    out = run_prog(tmp_path, """
        import numpy as np
        from mpi4py import MPI
        w = MPI.COMM_WORLD
        color = w.rank % 2
        local = w.Split(color, w.rank)
        inter = local.Create_intercomm(0, w, 1 - color, 0)
        rsize = inter.Get_remote_size()
        res = []
        for tc in "gdG":
            s = np.full((rsize, color), 5, tc)
            r = np.full((rsize, 1 - color), -1, tc)
            inter.Alltoallv(s, r)
            inter.Allgather(np.full(color, 7, tc), np.full((rsize, 1 - color), -1, tc))
            res.append(r.real.astype(float).tolist())
        b = MPI.buffer(np.zeros((3, 0), "g"))
        print(w.rank, res, len(b), b.readonly)
    """)
    assert out[0] == "0 [[[5.0]], [[5.0]], [[5.0]]] 0 False\n"
    assert out[1] == "1 [[[]], [[]], [[]]] 0 False\n"


def test_warnings_filters_per_rank(tmp_path: Path) -> None:
    """Each rank has its own warnings filters: one rank's catch_warnings()/simplefilter is not
    in force while another rank runs, and an 'ignore' seen by one rank does not silence the
    warning (through the shared per-module registry) for a rank that turns it into an error."""
    out = run_prog(tmp_path, """
        import warnings
        from mpi4py import MPI
        w = MPI.COMM_WORLD
        def warn():
            warnings.warn("boom", UserWarning)
        res = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore" if w.rank == 0 else "error")
            for _ in range(3):
                w.Barrier()  # the other rank runs with its own filters in between
                try:
                    warn()
                    res.append("ignored")
                except UserWarning:
                    res.append("raised")
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            w.Barrier()
            if w.rank == 1:
                warn()
            w.Barrier()
        print(w.rank, res, len(log))
    """)
    assert out[0] == "0 ['ignored', 'ignored', 'ignored'] 0\n"
    assert out[1] == "1 ['raised', 'raised', 'raised'] 1\n"


def test_user_op_buffers_slots_and_pickling(tmp_path: Path) -> None:
    """As mpi4py: a user op's function gets MPI.buffer objects (slice assignment takes any
    buffer of the same byte length); 32 live user ops per process; ops from fromint() can be
    neither pickled nor called; a copy of a predefined op pickles to an equal new object."""
    out = run_prog(tmp_path, """
        import array, pickle
        from mpi4py import MPI
        w = MPI.COMM_WORLD
        seen = []
        def mysum(a, b, dt):
            seen.append(type(a).__name__)
            x, y = array.array("i", bytes(a)), array.array("i", bytes(b))
            b[:] = array.array("i", [i + j for i, j in zip(x, y)])
        op = MPI.Op.Create(mysum, True)
        r = array.array("i", [0, 0])
        w.Allreduce([array.array("i", [w.rank + 1, 10]), MPI.INT], [r, MPI.INT], op)
        ops = [MPI.Op.Create(mysum) for _ in range(31)]
        try:
            MPI.Op.Create(mysum)
        except RuntimeError as e:
            full = str(e)
        clone = MPI.Op.fromint(op.toint())
        errs = []
        for f in (lambda: pickle.dumps(clone), lambda: clone(1, 2)):
            try:
                f()
            except ValueError as e:
                errs.append(str(e))
        for o in ops:
            o.Free()
        again = MPI.Op.Create(mysum)
        again.Free()
        op.Free()
        cp = pickle.loads(pickle.dumps(MPI.Op(MPI.MAX)))
        same = pickle.loads(pickle.dumps(MPI.MAX))
        print(w.rank, r.tolist(), sorted(set(seen)), full, errs, cp == MPI.MAX,
              cp is MPI.MAX, same is MPI.MAX)
    """)
    for rank in (0, 1):
        assert out[rank] == (
            f"{rank} [3, 20] ['buffer'] cannot create too many user-defined reduction "
            "operations ['cannot pickle user-defined reduction operation', 'cannot call "
            "user-defined operation'] True False True\n")


def test_per_rank_submodule_through_shared_parent(tmp_path: Path) -> None:
    """``from mpi4py.util import pkl5`` (an attribute of the shared ``mpi4py.util`` package)
    gives each rank its own copy of the per-rank module, as ``import mpi4py.util.pkl5``."""
    out = run_prog(tmp_path, """
        import sys
        from mpi4py import MPI
        w = MPI.COMM_WORLD
        for _ in range(w.rank):
            w.Barrier()  # the ranks import one after the other
        from mpi4py.util import pkl5
        pkl5._bigmpi.mark = w.rank
        for _ in range(w.size - w.rank):
            w.Barrier()
        from mpi4py.util import pkl5 as again
        import mpi4py.util
        print(w.rank, pkl5._bigmpi.mark, again is pkl5, mpi4py.util.pkl5 is pkl5,
              sys.modules["mpi4py.util.pkl5"] is pkl5)
    """, np=3)
    assert out == [f"{r} {r} True True True\n" for r in range(3)]


def test_stdout_stderr_rebinding_per_rank(tmp_path: Path) -> None:
    """A rank that rebinds sys.stdout/sys.stderr (to a StringIO, then back to
    sys.__stdout__/sys.__stderr__) does so for itself only: the other ranks' output stays
    captured."""
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import io, sys
        from mpi4py import MPI
        w = MPI.COMM_WORLD
        if w.rank == 0:
            sys.stdout, sys.stderr = obuf, ebuf = io.StringIO(), io.StringIO()
        w.Barrier()
        print("out", w.rank)
        print("err", w.rank, file=sys.stderr)
        w.Barrier()
        if w.rank == 0:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
            print("captured:", repr(obuf.getvalue()), repr(ebuf.getvalue()))
        w.Barrier()
        print("end", w.rank, sys.stdout is sys.__stdout__, sys.stderr is sys.__stderr__)
    """))
    res = smpy.run(str(prog), np=2, capture=True)
    assert res.status == "ok", res.message
    assert res.rank_output(0) == "captured: 'out 0\\n' 'err 0\\n'\nend 0 True True\n"
    assert res.rank_output(0, "stderr") == ""
    assert res.rank_output(1) == "out 1\nend 1 True True\n"
    assert res.rank_output(1, "stderr") == "err 1\n"


def test_object_model(tmp_path: Path) -> None:
    """mpi4py's object model: handles are weak-referenceable and unhashable, constructors
    type-check their argument, copies of null/predefined handles pickle to the subclass and
    free() nullifies them (module constants stay), Win is unorderable."""
    out = run_prog(tmp_path, """
        import copy, operator, pickle, weakref
        from mpi4py import MPI
        res = []
        for obj in (MPI.Status(), MPI.REQUEST_NULL, MPI.SESSION_NULL, MPI.MESSAGE_NULL,
                    MPI.WIN_NULL, MPI.DATATYPE_NULL):
            r = [type(obj).__name__, weakref.ref(obj)() is obj]
            for f in (hash, operator.lt, lambda o: type(o)(1234), lambda o: type(o)(MPI.OP_NULL)):
                try:
                    f(obj) if f is hash or f.__name__ == "<lambda>" else f(obj, obj)
                    r.append("ok")
                except TypeError:
                    r.append("TypeError")
            cls = type("My" + type(obj).__name__, (type(obj),), {"__module__": "__main__"})
            globals()[cls.__name__] = cls
            r.append([type(c(cls(obj))).__name__ for c in
                      (copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o)))])
            res.append(r)
        print(res)
        st = MPI.Status()
        st.source, st.tag, st.count = 3, 7, 12
        st2 = pickle.loads(pickle.dumps(st))
        print(st2.source, st2.tag, st2.Get_count(), st2 == st)
        frees = []
        for const in (MPI.INT, MPI.SUM, MPI.MESSAGE_NO_PROC):
            clon = type(const)(const)
            const.free()
            clon.free()
            frees.append((bool(const), bool(clon)))
        print(frees)
    """, np=1)
    r = ("['TypeError', 'TypeError', 'TypeError', 'TypeError', ['{0}', '{0}', '{0}']]")
    expect = [f"['{n}', True, " + r.format("My" + n)[1:] for n in
              ("Status", "Request", "Session", "Message", "Win", "Datatype")]
    assert out[0].splitlines() == [
        "[" + ", ".join(expect) + "]",
        "3 7 12 True",
        "[(True, False), (True, False), (True, False)]",
    ]


def test_reduce_scatter_message_checks(tmp_path: Path) -> None:
    """Reduce_scatter checks counts and datatypes as mpi4py (ValueError before any MPI call)."""
    out = run_prog(tmp_path, """
        from mpi4py import MPI
        sbuf, rbuf = bytearray(16), bytearray(16)
        msgs = []
        for s, r, c in (([sbuf, 1, MPI.INT], [rbuf, 1, MPI.FLOAT], [1]),
                        ([sbuf, 2, MPI.INT], [rbuf, 1, MPI.INT], [1]),
                        ([sbuf, 2, MPI.INT], [rbuf, 1, MPI.INT], [2]),
                        (MPI.IN_PLACE, [rbuf, 1, MPI.INT], [2]),
                        ([sbuf, 2, MPI.INT], [rbuf, 2, MPI.INT], [1, 1])):
            for call in (MPI.COMM_SELF.Reduce_scatter, MPI.COMM_SELF.Ireduce_scatter):
                try:
                    call(s, r, c)
                    msgs.append("ok")
                except ValueError as e:
                    msgs.append(str(e))
        print(msgs[::2] == msgs[1::2])
        print("\\n".join(msgs[::2]))
    """, np=1)
    assert out[0] == (
        "True\nmismatch in send and receive MPI datatypes\n"
        "mismatch in send count 2 and sum(counts) 1\n"
        "mismatch in receive count 1 and counts[0] 2\n"
        "mismatch in receive count 1 and sum(counts) 2\n"
        "expecting 1 items, got 2\n")
