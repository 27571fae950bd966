"""The compiled message parsing's byte views (smpy/mpi/_callaccel.c, ``byte_mem``) against the
Python reference (smpy/mpi/msgspec.py): for an exact numpy array the compiled parser takes the
buffer export itself and makes the byte memoryview from it, without ``memoryview(a)`` and its
``cast("B")``; the view it gives must be the one Python's gives in everything a program or the
runtime can see (layout, flags, owner, contents, writes, the array's reference count and the
export's lifetime), and the payload of a whole contiguous message the same bytes.

Skipped only when the accelerator cannot be built here.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

from tests.accel_twins import both as _both
from tests.accel_twins import needs_accel

pytestmark = needs_accel



def _view(m):
    """Everything a memoryview shows."""
    return (m.format, m.itemsize, m.ndim, m.shape, m.strides, m.suboffsets, m.nbytes, m.readonly,
            m.c_contiguous, m.f_contiguous, m.contiguous, m.tobytes(), m.tolist(), type(m.obj).__name__)


def _arrays():
    a = np.arange(12.0)
    ro = np.arange(4, dtype=np.int32)
    ro.flags.writeable = False
    one = np.arange(10, dtype=np.uint8)[::5][:1]  # one byte, stride 5: C-contiguous, no cast
    return {
        "float64": a, "2d": np.arange(12.0).reshape(3, 4), "uint8": np.arange(6, dtype=np.uint8),
        "uint8_strided_one": one, "int32_ro": ro, "0d": np.array(3.5), "big_endian": np.arange(5, dtype=">i4"),
        "complex": np.arange(4, dtype=np.complex128), "record": np.zeros(3, dtype=[("x", "i4"), ("y", "f8")]),
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)), "strided": a[::2], "empty": np.zeros(0),
        "bool": np.array([True, False, True]), "3d": np.arange(24, dtype=np.int16).reshape(2, 3, 4),
    }


def _forms(a):
    from smpy.mpi import datatype as D

    return {"bare": a, "pair": [a, D.BYTE], "tuple": (a, D.BYTE), "counted": [a, 1, D.BYTE]}


@pytest.mark.parametrize("name", sorted(_arrays()))
@pytest.mark.parametrize("form", ["bare", "pair", "tuple", "counted"])
@pytest.mark.parametrize("recv", [False, True])
def test_byte_views_match_python(name, form, recv):
    from smpy.mpi import msgspec

    def go():
        a = _arrays()[name]
        spec = _forms(a)[form]
        base = sys.getrefcount(a)
        try:
            s = (msgspec.parse_recv if recv else msgspec.parse_send)(spec)
        except Exception as exc:  # noqa: BLE001 - the outcome compared both ways
            return ("error", type(exc).__name__, str(exc))  # (the Python frames hold the array a while)
        m = s.mem
        out = [_view(m), m.obj is a, s.obj is a, s.offset, s.count, s.datatype.name, sys.getrefcount(a) - base]
        if not m.readonly and m.nbytes:  # a write through the view lands in the array
            m[0] = 0xA5
            out.append(a.tobytes()[:1] if a.flags.c_contiguous else None)
        out.append(bytes(m[1:3]) if m.nbytes > 2 else None)  # a view of the view
        del m, s
        gc.collect()
        out.append(sys.getrefcount(a) - base)  # the export released with the view
        return out

    py, c = _both(go)
    assert py == c
    if name == "float64" and form == "bare":
        assert py[0][:5] == ("B", 1, 1, (96,), (1,)) and py[1] and py[6] >= 1 and py[-1] == 0


def test_the_export_holds_the_array_until_the_view_is_released():
    """While the byte view lives the array cannot be resized (numpy sees a reference); after
    ``release()`` or the view's end it can, both ways."""
    from smpy.mpi import datatype as D
    from smpy.mpi import msgspec

    def go():
        a = np.arange(8.0)
        s = msgspec.parse_send([a, D.DOUBLE])
        try:
            a.resize(16)
            held = "resized"
        except ValueError as exc:
            held = str(exc)[:40]
        s.mem.release()
        try:
            s.mem.tobytes()
            after = "readable"
        except ValueError as exc:
            after = str(exc)
        mem = s.mem
        del s
        del mem
        gc.collect()
        a.resize(16, refcheck=True)
        return held, after, a.shape

    py, c = _both(go)
    assert py == c
    assert py[0] != "resized" and py[1].startswith("operation forbidden") and py[2] == (16,)


def test_byte_view_of_a_view_outlives_the_message():
    """A slice of the byte view keeps the array's buffer alive after the BufSpec and the view
    are gone (the managed buffer holds the export), and reads the current bytes."""
    from smpy.mpi import datatype as D
    from smpy.mpi import msgspec

    def go():
        a = np.arange(4.0)
        s = msgspec.parse_recv([a, D.DOUBLE])
        part = s.mem[8:16]
        del s
        gc.collect()
        a[1] = 42.0
        return bytes(part), part.obj is a, part.format, part.readonly

    py, c = _both(go)
    assert py == c and py[0] == np.float64(42.0).tobytes() and py[1]


def test_ndarray_subclass_takes_the_memoryview_path():
    """Only an exact ndarray takes the export path; a subclass, a memoryview and bytes go
    through memoryview() as before, with the same results."""
    from smpy.mpi import datatype as D
    from smpy.mpi import msgspec

    class Sub(np.ndarray):
        pass

    def go():
        a = np.arange(6.0)
        out = []
        for spec in (a.view(Sub), [a.view(Sub), D.DOUBLE], [memoryview(a), 6, D.DOUBLE], [bytearray(8), 8, D.BYTE]):
            try:
                s = msgspec.parse_recv(spec)
            except Exception as exc:  # noqa: BLE001 - the outcome compared both ways
                out.append(("error", type(exc).__name__, str(exc)))
                continue
            out.append((_view(s.mem), s.count))
        return out

    py, c = _both(go)
    assert py == c


def test_ring_payload_is_the_same_both_ways(tmp_path):
    """A whole ring both ways (numpy arrays with a datatype, bare bytearrays): the same output,
    result and simulated times."""
    import json

    from smpy.cli import launch

    prog = tmp_path / "ring.py"
    prog.write_text(
        "import numpy as np\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\nr, n = c.Get_rank(), c.Get_size()\n"
        "t = np.zeros(2)\nb = bytearray(4)\nfor lap in range(3):\n"
        "    if r == 0:\n        t[1] = lap\n        c.Send([t, MPI.DOUBLE], dest=1, tag=7)\n"
        "        c.Recv([t, MPI.DOUBLE], source=n - 1, tag=7)\n        c.Send(b, dest=1)\n        c.Recv(b, source=n - 1)\n"
        "        print(lap, t.tolist(), bytes(b).hex())\n"
        "    else:\n        c.Recv([t, MPI.DOUBLE], source=r - 1, tag=7)\n        t[0] += 1\n"
        "        c.Send([t, MPI.DOUBLE], dest=(r + 1) % n, tag=7)\n        c.Recv(b, source=r - 1)\n"
        "        b[r % 4] += 1\n        c.Send(b, dest=(r + 1) % n)\n")
    outs = []
    for mode in ("off", "on"):
        res = launch.run(str(prog), np=4, capture=True, echo=False,
                         cfg={"smpi/simulate-computation": "no", "smpi/wtime": "0", "smpy/accel": mode})
        assert res.accelerated == (mode == "on")
        d = res.to_json()
        for k in ("wall_s", "cpu_s", "peak_rss_bytes", "accelerated", "accel_parts", "config"):
            d.pop(k)
        outs.append(("".join(t for _, _, t in res.output), json.dumps(d, sort_keys=True, default=str)))
    assert outs[0] == outs[1]
    assert "2 [9.0, 2.0] 00030303" in outs[0][0]


@pytest.mark.parametrize("case", ["whole", "part", "offset", "released", "format_d", "bytearray", "bool_offset",
                                  "empty", "past_end"])
def test_pack_message_of_the_whole_buffer_borrows_its_view(case):
    """pack_message of a whole contiguous buffer returns the spec's own byte view (no slice),
    both ways; anything else the slice, or the same error."""
    from smpy.mpi.msgspec import BufSpec
    from smpy.runtime import packing
    from smpy.runtime.datatype import PREDEFINED

    def go():
        arr = np.arange(4.0)
        mem = memoryview(arr).cast("B")
        spec = BufSpec(arr, mem, 0, 4, PREDEFINED["DOUBLE"])
        if case == "part":
            spec.count = 3
        elif case == "offset":
            spec.offset, spec.count = 8, 3
        elif case == "released":
            mem.release()
        elif case == "format_d":
            spec.mem = memoryview(arr)
        elif case == "bytearray":
            spec.mem = bytearray(arr.tobytes())
        elif case == "bool_offset":
            spec.offset = False
        elif case == "empty":
            spec.count = 0
        elif case == "past_end":
            spec.count = 5
        try:
            out = packing.pack_message(spec)
        except Exception as exc:  # noqa: BLE001 - the outcome compared both ways
            return "error", type(exc).__name__, str(exc)
        return type(out).__name__, out is spec.mem, bytes(out)

    py, c = _both(go)
    assert py == c
    if case in ("whole", "format_d"):
        assert py[1] and py[2] == np.arange(4.0).tobytes()
    if case in ("part", "offset", "bytearray", "bool_offset", "past_end"):
        assert not py[1]
    if case == "released":
        assert py[0] == "error" and py[1] == "ValueError"
