"""Buffer-spec parsing (smpy.mpi.msgspec) against real mpi4py on MPICH.

Every recipe below is evaluated twice: by real mpi4py (a send of the spec to self on
``COMM_SELF``, or a receive into it) in a subprocess, and by ``parse_send``/``parse_recv``.
The bytes sent, the bytes landing in the receive buffer, and the exception type and message
must agree. Vector specs are checked with ``Gatherv`` under ``mpiexec -n 3``.
"""

from __future__ import annotations

import array
import ctypes
import json
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
from realmpi import require_mpiexec, require_real_mpi4py

from smpy.mpi import msgspec
from smpy.mpi.datatype import PREDEFINED_DATATYPES
from smpy.mpi.sentinels import BOTTOM, BUFFER_AUTOMATIC, IN_PLACE
from smpy.runtime.errors import ERR_BUFFER, ERR_COUNT, MPIException

# -- recipes ---------------------------------------------------------------------------------
SEND_RECIPES = [
    "np.arange(10.0)", "np.arange(10, dtype='i')", "np.arange(6.).reshape(2, 3)",
    "np.asfortranarray(np.arange(6.).reshape(2, 3))", "np.arange(12.).reshape(3, 4).T",
    "b'abcd'", "bytearray(b'abcdefgh')", "memoryview(b'abcdefgh')",
    "memoryview(bytearray(16)).cast('d')", "memoryview(bytearray(range(16))).cast('B', (4, 4))",
    "array.array('d', [1, 2])", "array.array('i', [1, 2, 3])", "array.array('b', [1, 2])",
    "array.array('u', 'ab')", "(ctypes.c_double * 3)(1, 2, 3)", "(ctypes.c_int * 3)(1, 2, 3)",
    "(ctypes.c_long * 2)(1, 2)", "(ctypes.c_bool * 3)(1, 0, 1)", "np.float64(3.0)",
    "np.array(3.0)", "np.ones(3, bool)", "np.arange(3) * (1 + 2j)", "np.ones(3, np.complex64)",
    "np.arange(3, dtype=np.uint64)", "np.arange(3, dtype=np.int8)", "np.arange(3, dtype=np.uint8)",
    "np.arange(3, dtype=np.float16)", "np.arange(3, dtype=np.longlong)", "np.arange(3, dtype='<f8')",
    "np.arange(3, dtype='>f8')", "np.zeros(3, dtype=[('a', 'f8'), ('b', 'i4')])",
    "np.zeros(2, 'S3')", "np.zeros(2, 'U3')", "np.zeros(2, object)", "np.zeros(0)", "b''",
    "[np.arange(10.0), MPI.DOUBLE]", "[np.arange(10.0), 'd']", "[np.arange(10.0), 3]",
    "[np.arange(10.0), (3, 2)]", "[np.arange(10.0), [3, 2]]", "[np.arange(10.0), 3, MPI.DOUBLE]",
    "[np.arange(10.0), (3, 2), MPI.DOUBLE]", "[np.arange(10.0), [3, 2], MPI.DOUBLE]",
    "[np.arange(10.0), 3, 2, MPI.DOUBLE]", "(np.arange(10.0), MPI.DOUBLE)",
    "(np.arange(10.0), 4, 1, 'd')", "[np.arange(10.0), None, 2, MPI.DOUBLE]",
    "[np.arange(10.0), 2, None, MPI.DOUBLE]", "[np.arange(10.0), 4, 8, MPI.BYTE]",
    "[np.arange(10.0), 3, MPI.FLOAT]", "[np.arange(10.0), MPI.INT]", "[np.arange(10.0), (None, 2), MPI.DOUBLE]",
    "[np.arange(10.0), np.int32(2), MPI.DOUBLE]", "[np.arange(10.0), True, MPI.DOUBLE]",
    "[np.arange(10.0), (0, 10), MPI.DOUBLE]", "[np.arange(10.0), 0, MPI.DOUBLE]",
    "[bytearray(8), 2, 'i']", "[bytearray(8), 'i']", "[bytearray(8), 'B']",
    "[np.arange(4.0), MPI.DOUBLE_INT]", "[np.zeros(2, 'd,i'), 1, MPI.DOUBLE_INT]",
    "[np.arange(8, dtype='h'), MPI.SHORT_INT]", "[np.arange(4.0), 2, MPI.INT_INT]",
    "[None, MPI.DOUBLE]", "[None, 0, MPI.DOUBLE]", "[MPI.BOTTOM, 0, MPI.INT]",
    "[None, 'd']", "MPI.IN_PLACE", "[MPI.IN_PLACE, 0, MPI.INT]",
    # errors
    "[np.arange(10.0), 1, 2, 3, 4]", "[np.arange(10.0)]", "[]", "5", "'abc'", "{}", "None",
    "np.arange(10.0)[::2]", "np.zeros((4, 4))[:, :2]", "memoryview(bytearray(16))[::2]",
    "[np.arange(10.0), -1, MPI.DOUBLE]", "[np.arange(10.0), (1, -1), MPI.DOUBLE]",
    "[np.arange(10.0), (1, 11), MPI.DOUBLE]", "[np.arange(10.0), 1.5, MPI.DOUBLE]",
    "[np.arange(10.0), 'zz']", "[np.arange(10.0), 2, 5]", "[5, MPI.INT]", "['abc', MPI.INT]",
    "[np.arange(10.0), (2,), MPI.DOUBLE]", "[np.arange(10.0), (2, 1, 1), MPI.DOUBLE]",
    "[np.arange(10.0), '2', MPI.DOUBLE]", "[np.arange(10.0), 1, 1.0, MPI.DOUBLE]",
    "[np.arange(10.0), MPI.DATATYPE_NULL]", "[np.arange(10.0), 1, MPI.DATATYPE_NULL]",
    "[np.arange(10.0), 'd', MPI.DOUBLE]", "[None, 3, MPI.DOUBLE]", "[MPI.BOTTOM, 1, MPI.INT]",
    "MPI.BOTTOM", "[bytearray(7), 'i']", "[np.zeros(2, 'd,i'), MPI.DOUBLE_INT]",
    "[np.arange(10.0), (1, 2), MPI.DATATYPE_NULL]", "[b'abc', (1, 1), MPI.DATATYPE_NULL]",
]

RECV_RECIPES = [
    "np.zeros(10)", "np.zeros(5, 'i')", "bytearray(10)", "[bytearray(16), MPI.INT]",
    "[np.zeros(10), (3, 2), MPI.DOUBLE]", "[np.zeros(10), 3, 4, MPI.DOUBLE]",
    "[np.zeros(10), (0, 10), MPI.DOUBLE]", "np.zeros((3, 4)).T", "np.asfortranarray(np.zeros((2, 3)))",
    "np.zeros((2, 3))", "[np.zeros(4), MPI.DOUBLE_INT]", "[np.zeros(6), 2, MPI.SHORT_INT]",
    "memoryview(bytearray(12)).cast('i')", "array.array('d', [0, 0, 0])", "(ctypes.c_int * 3)()",
    "[None, 0, MPI.INT]", "[np.zeros(10), 4, 'f']",
    # errors
    "b'abcd'", "np.frombuffer(b'abcdefgh')", "memoryview(bytearray(8)).toreadonly()",
    "np.zeros(10)[::2]", "memoryview(bytearray(16))[::2]", "None", "[None, 1, MPI.INT]",
    "[b'abcd', MPI.INT]", "[np.frombuffer(bytes(16)), 1, 1, MPI.DOUBLE]",
]

#: recipes where smpy deliberately differs: mpi4py lets MPI read/write past the buffer
OUT_OF_BOUNDS = {
    "[np.arange(10.0), 20, MPI.DOUBLE]": "message: count 20 out of bounds, number of datatype entries 10",
    "[np.arange(10.0), 11]": "message: count 11 out of bounds, number of datatype entries 10",
    "[np.arange(10.0), (8, 3), MPI.DOUBLE]": "message: count 8 out of bounds, number of datatype entries 7",
    "[np.zeros(2, 'd,i'), 2, MPI.DOUBLE_INT]": "message: count 2 out of bounds, number of datatype entries 1",
}


def _ns_smpy() -> types.SimpleNamespace:
    ns = types.SimpleNamespace(**PREDEFINED_DATATYPES)
    ns.BOTTOM, ns.IN_PLACE, ns.BUFFER_AUTOMATIC = BOTTOM, IN_PLACE, BUFFER_AUTOMATIC
    return ns


def _env() -> dict[str, object]:
    return {"np": np, "array": array, "ctypes": ctypes, "MPI": _ns_smpy()}


def _err(exc: BaseException) -> list[object]:
    if isinstance(exc, MPIException):
        return ["MPI.Exception", exc.Get_error_class()]
    return [type(exc).__name__, str(exc)]


def _base_bytes(obj: object) -> str:
    if obj is None or obj is BOTTOM or obj is IN_PLACE:
        return ""
    return np.asarray(memoryview(obj)).tobytes(order="A").hex()  # type: ignore[arg-type]


def _smpy_send(expr: str) -> list[object]:
    try:
        spec = msgspec.parse_send(eval(expr, _env()))
        return ["ok", spec.datatype.pack(spec.mem, spec.offset, spec.count).hex()]
    except Exception as exc:  # noqa: BLE001 - compared with mpi4py's
        return _err(exc)


def _smpy_recv(expr: str, pattern: bytes) -> list[object]:
    try:
        obj = eval(expr, _env())
        spec = msgspec.parse_recv(obj)
    except Exception as exc:  # noqa: BLE001
        return _err(exc)
    cap = spec.nbytes
    spec.datatype.unpack(pattern[:cap], spec.mem, spec.offset, spec.count)
    base = obj[0] if isinstance(obj, (list, tuple)) else obj
    return ["ok", cap, _base_bytes(base)]


# -- the real side ----------------------------------------------------------------------------
REAL_SCRIPT = textwrap.dedent(r'''
    import array, ctypes, json, re, sys
    import numpy as np
    from mpi4py import MPI
    recipes = json.loads(sys.argv[1])
    c = MPI.COMM_SELF
    pattern = bytes((7 * i + 3) % 251 for i in range(4096))

    def err(e):
        if isinstance(e, MPI.Exception):
            return ["MPI.Exception", e.Get_error_class()]
        return [type(e).__name__, str(e)]

    def base_bytes(obj):
        if obj is None or obj is MPI.BOTTOM or obj is MPI.IN_PLACE:
            return ""
        return np.asarray(memoryview(obj)).tobytes(order="A").hex()

    def send(expr):
        try:
            r = c.Isend(eval(expr), 0, 7)
        except Exception as e:
            return err(e)
        buf = bytearray(4096)
        st = MPI.Status()
        c.Recv([buf, MPI.BYTE], 0, 7, st)
        r.Wait()
        return ["ok", bytes(buf[:st.Get_count(MPI.BYTE)]).hex()]

    def recv(expr):
        try:
            r = c.Irecv(eval(expr), 0, 9)
        except Exception as e:
            return err(e)
        s = c.Isend([pattern, MPI.BYTE], 0, 9)
        cap = None
        try:
            r.Wait()
            cap = 4096
        except MPI.Exception as e:  # truncated: MPICH names the buffer size
            m = re.search(r"(\d+) bytes received but buffer size is (\d+)", str(e))
            cap = int(m.group(1)) if int(m.group(2)) == 4096 else int(m.group(2))
        s.Wait()
        obj = eval(expr)
        r = c.Irecv(obj, 0, 10)
        c.Send([pattern[:cap], MPI.BYTE], 0, 10)
        r.Wait()
        base = obj[0] if isinstance(obj, (list, tuple)) else obj
        return ["ok", cap, base_bytes(base)]

    out = {"send": {e: send(e) for e in recipes["send"]},
           "recv": {e: recv(e) for e in recipes["recv"]}}
    json.dump(out, sys.stdout)
''')

PATTERN = bytes((7 * i + 3) % 251 for i in range(4096))


def _run_real(script: str, payload: object, np_ranks: int | None = None) -> object:
    require_real_mpi4py()
    cmd = [sys.executable, "-c", script, json.dumps(payload)]
    if np_ranks is not None:
        cmd = [require_mpiexec(), "-n", str(np_ranks), *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the real mpi4py reference script timed out")
    if proc.returncode != 0:
        pytest.fail(f"the real mpi4py reference script failed:\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def real() -> dict[str, dict[str, list[object]]]:
    return _run_real(REAL_SCRIPT, {"send": SEND_RECIPES + list(OUT_OF_BOUNDS),
                                   "recv": RECV_RECIPES})  # type: ignore[return-value]


@pytest.mark.slow
@pytest.mark.parametrize("expr", SEND_RECIPES)
def test_send_spec_like_mpi4py(real: dict[str, dict[str, list[object]]], expr: str) -> None:
    assert _smpy_send(expr) == real["send"][expr]


@pytest.mark.parametrize("expr", RECV_RECIPES)
def test_recv_spec_like_mpi4py(real: dict[str, dict[str, list[object]]], expr: str) -> None:
    assert _smpy_recv(expr, PATTERN) == real["recv"][expr]


@pytest.mark.parametrize("expr", list(OUT_OF_BOUNDS))
def test_count_beyond_buffer_raises(real: dict[str, dict[str, list[object]]], expr: str) -> None:
    # real MPI happily reads past the buffer: a garbage message, which smpy refuses
    assert real["send"][expr][0] == "ok"
    assert _smpy_send(expr) == ["ValueError", OUT_OF_BOUNDS[expr]]


# -- vector specs -------------------------------------------------------------------------------
#: (recv spec on root, elements sent by ranks 0..2)
VECTOR_RECIPES = [
    ("o", [4, 4, 4]), ("o[:11]", [4, 4, 3]), ("[o, [1, 2, 3]]", [1, 2, 3]),
    ("[o, 2]", [2, 2, 2]), ("[o, ([1, 2, 3], [6, 0, 2])]", [1, 2, 3]),
    ("[o, [1, 2, 3], [6, 0, 2], MPI.DOUBLE]", [1, 2, 3]),
    ("[o, ([1, 2, 3], [6, 0, 2]), MPI.DOUBLE]", [1, 2, 3]),
    ("[o, [1, 2, 3], MPI.DOUBLE]", [1, 2, 3]), ("[o, 2, 4, MPI.DOUBLE]", [2, 2, 2]),
    ("[o, (2, 4), MPI.DOUBLE]", [2, 2, 2]), ("[o, MPI.DOUBLE]", [4, 4, 4]), ("[o, 'd']", [4, 4, 4]),
    ("[o, None, None, MPI.DOUBLE]", [4, 4, 4]), ("[o, None, [0, 4, 8], MPI.DOUBLE]", [4, 4, 4]),
    ("[o, np.array([1, 2, 3]), MPI.DOUBLE]", [1, 2, 3]),
    ("[o, (np.array([1, 2, 3]), np.array([0, 1, 3])), MPI.DOUBLE]", [1, 2, 3]),
    ("[o, (1, 2, 3)]", [1, 2, 3]), ("[o, [[1, 2, 3], [6, 0, 2]]]", [1, 2, 3]),
    ("[o, [1, 2], MPI.DOUBLE]", [1, 2, 3]), ("[o, [1, 2, 3], [0, 1], MPI.DOUBLE]", [1, 2, 3]),
    ("[o, 1, 2, 3, 4]", [4, 4, 4]), ("[o, [1.0, 1, 1], MPI.DOUBLE]", [1, 1, 1]),
    ("[o.view('B')[:13], MPI.DOUBLE]", [4, 4, 4]), ("5", [4, 4, 4]), ("[o, [1, 2, 3], 'd']", [1, 3, 3]),
]

VECTOR_SCRIPT = textwrap.dedent(r'''
    import json, sys
    import numpy as np
    from mpi4py import MPI
    recipes = json.loads(sys.argv[1])
    r = MPI.COMM_WORLD.rank
    out = {}
    for expr, sendn in recipes:
        c = MPI.COMM_WORLD.Dup()
        send = np.full(sendn[r], 10.0 * (r + 1)) + np.arange(sendn[r])
        o = np.full(12, -1.0)
        try:
            c.Gatherv(send, eval(expr) if r == 0 else None, root=0)
            res = ["ok", o.tolist()]
        except MPI.Exception as e:
            res = ["MPI.Exception", e.Get_error_class()]
        except Exception as e:
            res = [type(e).__name__, str(e)]
        out[expr] = res
        c.Barrier()
    if r == 0:
        json.dump(out, sys.stdout)
''')


def _smpy_gatherv(expr: str, sendn: list[int]) -> list[object]:
    o = np.full(12, -1.0)
    env = _env()
    env["o"] = o
    try:
        vec = msgspec.parse_vector(eval(expr, env), 3, False)
    except Exception as exc:  # noqa: BLE001
        return _err(exc)
    dt = vec.datatype
    for i, n in enumerate(sendn):
        data = (np.full(n, 10.0 * (i + 1)) + np.arange(n)).tobytes()
        if len(data) > vec.counts[i] * dt.size:
            return ["MPI.Exception", 17 if i else 14]  # MPICH: ERR_IN_STATUS, own block TRUNCATE
        dt.unpack(data, vec.mem, vec.offset(i), vec.counts[i])
    return ["ok", o.tolist()]


@pytest.fixture(scope="module")
def real_vectors() -> dict[str, list[object]]:
    return _run_real(VECTOR_SCRIPT, VECTOR_RECIPES, np_ranks=3)  # type: ignore[return-value]


@pytest.mark.slow
@pytest.mark.parametrize(("expr", "sendn"), VECTOR_RECIPES)
def test_vector_spec_like_mpi4py(real_vectors: dict[str, list[object]], expr: str,
                                 sendn: list[int]) -> None:
    assert _smpy_gatherv(expr, sendn) == real_vectors[expr]


def test_vector_spec_forms() -> None:
    a = np.zeros(12)
    v = msgspec.parse_vector(a, 5, True)
    assert v.counts == [3, 3, 2, 2, 2] and v.displs == [0, 3, 6, 8, 10]
    v = msgspec.parse_vector([a, (2, 3), "d"], 4, True)
    assert v.counts == [2] * 4 and v.displs == [0, 3, 6, 9] and v.offset(2) == 48
    v = msgspec.parse_vector([None, 0, 0, PREDEFINED_DATATYPES["INT"]], 3, True)
    assert v.counts == [0, 0, 0] and v.mem.nbytes == 0
    with pytest.raises(ValueError, match=r"block 1 \(count 2, displacement 11\) out of bounds"):
        msgspec.parse_vector([a, [2, 2], [0, 11], "d"], 2, True)
    with pytest.raises(MPIException) as info:
        msgspec.parse_vector([a, [2, -1], "d"], 2, True)
    assert info.value.Get_error_class() == ERR_COUNT
    with pytest.raises(MPIException) as info:
        msgspec.parse_vector([None, [1, 0], "d"], 2, True)
    assert info.value.Get_error_class() == ERR_BUFFER
    with pytest.raises(BufferError, match="not writable"):
        msgspec.parse_vector(b"abcdefgh", 2, False)


# -- smpy-specific behaviour --------------------------------------------------------------------
def test_in_place_and_null_specs() -> None:
    s = msgspec.parse_send(IN_PLACE)
    assert s.in_place and s.count == 0 and s.nbytes == 0
    assert msgspec.is_in_place(IN_PLACE) and msgspec.is_in_place(None)
    assert not msgspec.is_in_place(np.zeros(1)) and not msgspec.parse_send(np.zeros(1)).in_place
    n = msgspec.null_spec()
    assert n.count == 0 and n.datatype.name == "MPI_BYTE" and n.mem.nbytes == 0
    assert msgspec.BOTTOM is BOTTOM and msgspec.IN_PLACE is IN_PLACE


def test_spec_fields() -> None:
    a = np.arange(10.0)
    s = msgspec.parse_recv([a, (3, 2), "d"])
    assert (s.obj is a, s.offset, s.count, s.nbytes, s.mem.format, s.mem.nbytes) == \
        (True, 16, 3, 24, "B", 80)
    s.datatype.unpack(np.array([7.0, 8.0, 9.0]).tobytes(), s.mem, s.offset, s.count)
    assert a.tolist() == [0, 1, 7, 8, 9, 5, 6, 7, 8, 9]
    s = msgspec.parse_send(np.zeros((4, 4)), blocks=2)
    assert s.count == 8
    with pytest.raises(ValueError, match="not a multiple of required number of blocks 3"):
        msgspec.parse_send(np.zeros(4), blocks=3)
    with pytest.raises(ValueError, match="count 3 x 2 blocks out of bounds"):
        msgspec.parse_send([np.zeros(4), 3, "d"], blocks=2)
    f = np.asfortranarray(np.zeros((2, 3)))
    s = msgspec.parse_recv(f)
    s.datatype.unpack(np.arange(6.0).tobytes(), s.mem, 0, 6)
    assert f.ravel(order="F").tolist() == [0, 1, 2, 3, 4, 5]


def test_sentinels() -> None:
    import pickle

    assert repr(BOTTOM) == "BOTTOM" and repr(IN_PLACE) == "IN_PLACE"
    assert int(BOTTOM) == 0 and int(IN_PLACE) == -1 and int(BUFFER_AUTOMATIC) == -2
    assert not BOTTOM and IN_PLACE and BUFFER_AUTOMATIC
    assert BOTTOM == 0 and IN_PLACE == -1 and IN_PLACE != 0 and BOTTOM != IN_PLACE
    assert hash(IN_PLACE) == hash(-1)
    assert pickle.loads(pickle.dumps(IN_PLACE)) is IN_PLACE
    assert type(IN_PLACE)() is IN_PLACE


@pytest.mark.parametrize("readonly", [True, False])
@pytest.mark.parametrize("expr", [
    "[mmap.mmap(-1, 64), 16, MPI.BYTE]", "[mmap.mmap(-1, 64), 0, MPI.BYTE]", "[mmap.mmap(-1, 64), 65, MPI.BYTE]",
    "[bytearray(16), 2, MPI.DOUBLE]", "[bytearray(16), 3, MPI.DOUBLE]", "[b'abcdefgh', 8, MPI.BYTE]",
    "[np.arange(6.).reshape(2, 3), 6, MPI.DOUBLE]", "[np.arange(6.).reshape(2, 3).T, 6, MPI.DOUBLE]",
    "[np.arange(6.), 2, MPI.DATATYPE_NULL]", "[np.arange(6.), 2, MPI.DOUBLE.Create_contiguous(2)]",
    "[np.arange(6.), 2, MPI.DOUBLE.Create_contiguous(2).Commit()]", "[np.arange(6.), 2, MPI.DOUBLE.Create_contiguous(4).Commit()]",
    "[np.zeros(0), 0, MPI.DOUBLE]", "[None, 0, MPI.DOUBLE]", "[None, 1, MPI.DOUBLE]",
    "(np.arange(10, dtype='i'), 5, MPI.INT)", "[memoryview(bytearray(32)).cast('d', (2, 2)), 4, MPI.DOUBLE]",
])
def test_the_counted_form_parses_as_the_general_path(monkeypatch, expr: str, readonly: bool) -> None:
    """``[buffer, count, MPI.Datatype]`` takes msgspec._counted; the result or the error is the
    general path's (msgspec._simple with the fast path off)."""
    import mmap

    def parse(fast: bool) -> object:
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(msgspec, "_counted", lambda *a: None)
            try:
                s = msgspec._simple(eval(expr, {**_env(), "mmap": mmap}), readonly, 1)
            except Exception as exc:  # noqa: BLE001 - the error itself is compared
                return type(exc).__name__, str(exc)
            return (s.mem.nbytes, s.mem.format, s.mem.ndim, s.mem.readonly, s.offset, s.count, s.datatype.name,
                    type(s.obj).__name__)

    assert parse(True) == parse(False)
