"""``MPI.buffer``, buffer acquisition (PEP 3118, DLPack, CUDA array interface), Alloc_mem /
Free_mem, Get_address and address arithmetic.

Buffer acquisition follows mpi4py's ``PyMPI_GetBuffer``: the Python buffer protocol first; if
that fails (no buffer interface, or a read-only buffer where a writable one is needed), DLPack
(``__dlpack__``/``__dlpack_device__``: the capsule's ``DLManagedTensor[Versioned]`` is read
with ctypes, the data pointer taken as is, the capsule released on return and never consumed), then the
CUDA array interface (``__cuda_array_interface__['data']`` is a raw pointer). As in mpi4py the
pointer is used directly: the suite's fake GPU arrays live in host memory, and every rank of
smpy runs in this one process, so a raw address is valid memory (viewed through ctypes).

``MPI.buffer`` (alias ``MPI.memory``) is mpi4py's byte-buffer object. Python 3.11 cannot give a
pure-Python class the buffer protocol, so it is a 1-d ``uint8`` numpy array subclass whose
attribute and item semantics are mpi4py's (``address``, ``obj``, ``nbytes``, ``readonly``,
integer items, unit-step slices that are buffers again, ``release()``...).
"""

from __future__ import annotations

import ctypes
import operator
import sys
import warnings
from typing import Any

import numpy as np

from smpy.mpi.args import intargs
from smpy.mpi.sentinels import BOTTOM
from smpy.runtime import errors

__all__ = ["buffer", "memory", "Alloc_mem", "Free_mem", "Get_address", "Aint_add", "Aint_diff",
           "BSEND_OVERHEAD"]

#: MPICH's MPI_BSEND_OVERHEAD
BSEND_OVERHEAD = 96

# DLPack device types that are CPU-accessible (kDLCPU, kDLCUDAHost, kDLROCMHost, managed)
_KDLCPU = 1
_LITTLE = sys.byteorder == "little"
_CPU_KINDS = (0, 1, 3, 11, 13)
_KDLCUDA = 2
_READONLY_FLAG = 1  # DLPACK_FLAG_BITMASK_READ_ONLY


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_uint), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _DLVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedVersioned(ctypes.Structure):
    _fields_ = [("version", _DLVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", _DLTensor)]


_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_C_SIZES = {"char": 1, "short": ctypes.sizeof(ctypes.c_short), "int": ctypes.sizeof(ctypes.c_int),
            "long": ctypes.sizeof(ctypes.c_long), "longlong": ctypes.sizeof(ctypes.c_longlong),
            "float": 4, "double": 8, "longdouble": ctypes.sizeof(ctypes.c_longdouble)}


def _int_format(signed: bool, nbytes: int) -> str | None:
    for ch, name in (("b", "char"), ("h", "short"), ("i", "int"), ("l", "long"),
                     ("q", "longlong")):
        if _C_SIZES[name] == nbytes:
            return ch if signed else ch.upper()
    return None


def _float_format(nbytes: int) -> str | None:
    return {2: "e", 4: "f", 8: "d", _C_SIZES["longdouble"]: "g"}.get(nbytes)


def _complex_format(nbytes: int) -> str | None:
    f = {4: "e", 8: "f", 16: "d", 2 * _C_SIZES["longdouble"]: "g"}.get(nbytes)
    return None if f is None else "Z" + f


def _raw(addr: int, nbytes: int, readonly: bool, keep: object = None) -> memoryview:
    """A byte memoryview of ``nbytes`` at address ``addr`` (``keep`` stays referenced)."""
    if nbytes <= 0 or not addr:
        mv = memoryview(bytearray())
    else:
        arr = (ctypes.c_ubyte * nbytes).from_address(addr)
        if keep is not None:
            arr._smpy_keep = keep  # type: ignore[attr-defined]
        mv = memoryview(arr).cast("B")
    return mv.toreadonly() if readonly else mv


def _dlpack_buffer(obj: Any, readonly: bool) -> tuple[memoryview, str, int]:
    """mpi4py's ``Py_GetDLPackBuffer``: (bytes, format, device kind); NotImplementedError if
    ``obj`` has no DLPack support."""
    try:
        dlpack = obj.__dlpack__
        dlpack_device = obj.__dlpack_device__
    except AttributeError:
        raise NotImplementedError("dlpack: missing support") from None
    device_type, device_id = dlpack_device()
    device_type = operator.index(device_type)  # C ints in mpi4py: TypeError otherwise
    operator.index(device_id)
    versioned = True
    name = b"dltensor_versioned"
    try:
        if device_type == _KDLCPU:
            capsule = dlpack(max_version=(1, 0), copy=False)
        else:
            capsule = dlpack(stream=-1, max_version=(1, 0), copy=False)
    except TypeError:
        versioned = False
        name = b"dltensor"
        capsule = dlpack() if device_type == _KDLCPU else dlpack(stream=-1)
    try:
        addr, size, fmt, is_readonly = _dlpack_info(capsule, name, versioned, readonly)
        err = None
    except BufferError as exc:
        err = str(exc)
    # the capsule dies here, as mpi4py releases it right after the MPI call (the producer's
    # deleter runs at once, not at some later garbage collection); the view keeps ``obj``
    del capsule
    if err is not None:
        raise BufferError(err)
    mem = _raw(addr, size, readonly or is_readonly, obj)
    return mem, fmt, int(device_type)


def _dlpack_info(capsule: Any, name: bytes, versioned: bool, readonly: bool
                 ) -> tuple[int, int, str, bool]:
    """(address, nbytes, format, readonly) of the tensor in a DLPack capsule."""
    if not _capsule_valid(capsule, name):
        raise BufferError("dlpack: invalid capsule object")
    ptr = _capsule_pointer(capsule, name)
    is_readonly = False
    if versioned:
        managed_v = _DLManagedVersioned.from_address(ptr)
        if managed_v.version.major < 1:
            raise BufferError("dlpack: unexpected version")
        t = managed_v.dl_tensor
        is_readonly = bool(managed_v.flags & _READONLY_FLAG)
    else:
        t = _DLManaged.from_address(ptr).dl_tensor
    ndim = t.ndim
    if ndim < 0:
        raise BufferError("dlpack: number of dimensions is negative")
    if ndim > 0 and not t.shape:
        raise BufferError("dlpack: shape is NULL")
    shape = [t.shape[i] for i in range(ndim)]
    if any(s < 0 for s in shape):
        raise BufferError("dlpack: shape item is negative")
    strides = [t.strides[i] for i in range(ndim)] if t.strides else None
    if strides is not None and any(s < 0 for s in strides):
        raise BufferError("dlpack: strides item is negative")
    if not (_contig(shape, strides, 1, "C") or _contig(shape, strides, 1, "F")):
        raise BufferError("dlpack: buffer is not contiguous")
    if is_readonly and not readonly:
        raise BufferError("dlpack: buffer is not writable")
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    size = 1
    for s in shape:
        size *= s
    size *= (bits * lanes + 7) // 8
    fmt: str | None = None
    if lanes != 1:
        if code == 2 and lanes == 2:
            fmt = _complex_format(2 * bits // 8)
    elif code == 6 and bits == 8:
        fmt = "?"
    elif code == 0 and bits % 8 == 0:
        fmt = _int_format(True, bits // 8)
    elif code == 1 and bits % 8 == 0:
        fmt = _int_format(False, bits // 8)
    elif code == 2 and bits % 8 == 0:
        fmt = _float_format(bits // 8)
    elif code == 5 and bits % 8 == 0:
        fmt = _complex_format(bits // 8)
    return (t.data or 0) + t.byte_offset, size, fmt or "B", is_readonly


def _contig(shape: list[int], strides: list[int] | None, unit: int, order: str) -> bool:
    """Whether ``strides`` (in units of ``unit`` elements) describe a contiguous array."""
    if strides is None:
        return order != "F" or len(shape) <= 1
    size = unit
    idx = range(len(shape)) if order == "F" else range(len(shape) - 1, -1, -1)
    for i in idx:
        if shape[i] > 1 and size != strides[i]:
            return False
        size *= shape[i]
    return True


def _typed(value: Any, cls: type, what: str, optional: bool = False) -> Any:
    """mpi4py's typed Cython locals: TypeError unless ``value`` is a ``cls`` (or None)."""
    if (value is None and optional) or isinstance(value, cls):
        return value
    raise TypeError(f"Expected {cls.__name__}, got {type(value).__name__} ({what})")


def _cai_buffer(obj: Any, readonly: bool, need_format: bool = True
                ) -> tuple[memoryview, str, int]:
    """mpi4py's ``Py_GetCAIBuffer`` (CUDA array interface)."""
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        raise NotImplementedError("missing CUDA array interface") from None
    _typed(cai, dict, "__cuda_array_interface__")
    data = _typed(cai["data"], tuple, "data")
    typestr = _typed(cai["typestr"], str, "typestr")
    shape = _typed(cai["shape"], tuple, "shape")
    strides = _typed(cai.get("strides"), tuple, "strides", True)
    descr = _typed(cai.get("descr"), list, "descr", True)
    mask = cai.get("mask")
    dev_ptr, ro = data
    size = 1
    for s in shape:
        size *= s
    if dev_ptr is None and size == 0:
        dev_ptr = 0
    byteorder, kind, itemsize = typestr[0:1], typestr[1:2], int(typestr[2:])
    fmt: str | None = None
    if kind == "b" and itemsize == 1:
        fmt = "?"
    elif kind in "iu":
        fmt = _int_format(kind == "i", itemsize)
    elif kind == "f":
        fmt = _float_format(itemsize)
    elif kind == "c":
        fmt = _complex_format(itemsize)
    if need_format:
        native = "<" if _LITTLE else ">"
        if byteorder in "<>" and byteorder != native:
            raise BufferError(f"__cuda_array_interface__: typestr {typestr!r} "
                              f"with non-native byte order")
        if byteorder not in "<>|":
            raise BufferError(f"__cuda_array_interface__: typestr {typestr!r} "
                              f"with unrecognized byte order")
    if mask is not None:
        raise BufferError("__cuda_array_interface__: cannot handle masked arrays")
    if size < 0:
        raise BufferError(f"__cuda_array_interface__: buffer with negative size "
                          f"(shape:{shape}, size:{size})")
    if strides is not None:
        st = list(strides)
        if not (_contig(list(shape), [s for s in st], itemsize, "C")
                or _contig(list(shape), [s for s in st], itemsize, "F")):
            raise BufferError(f"__cuda_array_interface__: buffer is not contiguous "
                              f"(shape:{shape}, strides:{tuple(strides)}, itemsize:{itemsize})")
    if ro and not readonly:
        raise BufferError("__cuda_array_interface__: buffer is not writable")
    if descr is not None and (len(descr) != 1 or descr[0] != ("", typestr)):
        warnings.warn("__cuda_array_interface__: ignoring 'descr' key", RuntimeWarning,
                      stacklevel=2)
    mem = _raw(int(dev_ptr), size * itemsize, bool(ro) or readonly, obj)
    return mem, fmt or "B", _KDLCUDA


def _empty_view(m: memoryview) -> memoryview:
    """A zero-length byte view of the empty buffer ``m`` (its address and writability kept
    when numpy understands its format)."""
    try:
        flat = np.asarray(m).reshape(0).view(np.uint8)
    except (TypeError, ValueError):
        empty = memoryview(bytearray())
        return empty.toreadonly() if m.readonly else empty
    return memoryview(flat)


def acquire(obj: Any, readonly: bool, need_format: bool = True
            ) -> tuple[memoryview, str, int]:
    """``obj``'s memory (mpi4py's ``PyMPI_GetBuffer``): a C- or Fortran-contiguous byte view,
    its element format, and its kind (0: buffer protocol, else the DLPack device type).
    Writable unless ``readonly``."""
    try:
        m = memoryview(obj)
        if not readonly and m.readonly:
            raise BufferError(_not_writable_msg(obj))
        fmt = m.format
        if m.nbytes == 0 and m.ndim != 1:  # memoryview cannot cast a view with zeros in its shape
            return _empty_view(m), fmt, 0
        if m.c_contiguous:
            return (m if fmt == "B" and m.ndim == 1 else m.cast("B")), fmt, 0
        if m.f_contiguous:  # a Fortran-order array: flat view in memory order (no copy)
            flat = np.asarray(m).ravel(order="K")
            return memoryview(flat.view(np.uint8)), fmt, 0
        raise BufferError("memoryview: underlying buffer is not contiguous"
                          if isinstance(obj, memoryview) else "buffer is not contiguous")
    except (TypeError, BufferError) as exc:
        first = exc
    try:
        return _dlpack_buffer(obj, readonly)
    except NotImplementedError:
        pass
    try:
        return _cai_buffer(obj, readonly, need_format)
    except NotImplementedError:
        pass
    if isinstance(first, TypeError):
        raise TypeError(f"a bytes-like object is required, not '{type(obj).__name__}'") from None
    raise first


def _not_writable_msg(obj: object) -> str:
    if isinstance(obj, memoryview):
        return "memoryview: underlying buffer is not writable"
    return "Object is not writable."


def _address_of(mem: memoryview) -> int:
    if mem.nbytes == 0 and (mem.obj is None or (isinstance(mem.obj, (bytes, bytearray)) and not mem.obj)):
        return 0
    arr = np.frombuffer(mem, np.uint8)
    return int(arr.__array_interface__["data"][0])


# -- MPI.buffer -----------------------------------------------------------------------------
class buffer(np.ndarray):  # noqa: N801 - mpi4py's name
    """Buffer."""

    _smpy_obj: Any
    _smpy_ro: bool
    _smpy_addr: int
    _smpy_len: int
    _smpy_kind: int

    def __new__(cls, *args: Any) -> buffer:
        if len(args) > 1:
            raise TypeError(f"buffer() takes at most 1 argument ({len(args)} given)")
        if not args:
            return cls._make(memoryview(bytearray()), None, False, 0, address=0)
        obj = args[0]
        mem, _, kind = acquire(obj, True, False)
        ro = mem.readonly
        if not ro and kind == 0:
            ro = memoryview(obj).readonly
        return cls._make(mem, obj, ro, kind)

    @classmethod
    def _make(cls, mem: memoryview, obj: Any, readonly: bool, kind: int = 0,
              address: int | None = None) -> buffer:
        if readonly and not mem.readonly:
            mem = mem.toreadonly()
        self = np.ndarray.__new__(cls, (mem.nbytes,), np.uint8, buffer=mem)
        self._smpy_obj = obj
        self._smpy_ro = bool(readonly)
        self._smpy_addr = _address_of(mem) if address is None else address
        self._smpy_len = mem.nbytes
        self._smpy_kind = kind
        return self

    def __array_finalize__(self, obj: Any) -> None:
        if obj is None or not isinstance(obj, buffer):
            return
        self._smpy_obj = getattr(obj, "_smpy_obj", None)
        self._smpy_ro = getattr(obj, "_smpy_ro", False)
        self._smpy_addr = 0
        self._smpy_len = 0
        self._smpy_kind = 0

    @staticmethod
    def allocate(nbytes: int, clear: bool = False) -> buffer:
        """Buffer allocation."""
        size = operator.index(nbytes)
        if size < 0:
            raise ValueError("expecting non-negative size")
        ob = bytearray(size)  # always zeroed (clear or not)
        mem = memoryview(ob)
        addr = _address_of(mem) if size else id(ob)
        return buffer._make(mem, ob, False, 0, address=addr)

    @staticmethod
    def frombuffer(obj: Any, readonly: bool = False) -> buffer:
        """Buffer from buffer-like object."""
        if obj is None:
            raise TypeError("a bytes-like object is required, not 'NoneType'")
        mem, _, kind = acquire(obj, bool(readonly), False)
        return buffer._make(mem, obj, bool(readonly), kind)

    @staticmethod
    def fromaddress(address: int, nbytes: int, readonly: bool = False) -> buffer:
        """Buffer from address and size in bytes."""
        addr = operator.index(address) if address is not None else 0
        size = operator.index(nbytes)
        if size < 0:
            raise ValueError("expecting non-negative buffer length")
        if size > 0 and addr == 0:
            raise ValueError("expecting non-NULL address")
        mem = _raw(addr, size, bool(readonly))
        return buffer._make(mem, None, bool(readonly), 0, address=addr)

    # -- properties ---------------------------------------------------------------------------
    @property
    def address(self) -> int:
        """Buffer address."""
        return self._smpy_addr

    @property
    def obj(self) -> Any:
        """Object exposing buffer."""
        return self._smpy_obj

    @property
    def nbytes(self) -> int:  # type: ignore[override]
        """Buffer size (in bytes)."""
        return self._smpy_len

    @property
    def readonly(self) -> bool:
        """Buffer is read-only."""
        return self._smpy_ro

    @property
    def format(self) -> str:
        """Format of each element."""
        return "B"

    @property
    def itemsize(self) -> int:  # type: ignore[override]
        """Size (in bytes) of each element."""
        return 1

    # -- memoryview methods -------------------------------------------------------------------
    def _check_cpu(self) -> None:
        if self._smpy_kind not in _CPU_KINDS:
            raise BufferError("buffer is not CPU-accessible")

    def _mem(self) -> memoryview:
        m = memoryview(np.ndarray.view(self, np.ndarray))[:self._smpy_len]
        return m.toreadonly() if self._smpy_ro else m

    def cast(self, format: str, shape: Any = ...) -> memoryview:  # noqa: A002
        """Cast to a ``memoryview`` with new format or shape."""
        self._check_cpu()
        if shape is Ellipsis:
            return self._mem().cast(format)
        return self._mem().cast(format, shape)

    def tobytes(self, order: str | None = None) -> bytes:  # type: ignore[override]
        """Return the data in the buffer as a byte string."""
        self._check_cpu()
        return self._mem().tobytes()

    def toreadonly(self) -> buffer:
        """Return a readonly version of the buffer object."""
        return buffer._make(self._mem(), self._smpy_obj if self._smpy_obj is not None else self,
                            True, self._smpy_kind, address=self._smpy_addr)

    def release(self) -> None:
        """Release the underlying buffer exposed by the buffer object."""
        self._smpy_obj = None
        self._smpy_ro = False
        self._smpy_addr = 0
        self._smpy_len = 0
        self._smpy_kind = 0

    # -- sequence interface -------------------------------------------------------------------
    def __len__(self) -> int:
        return self._smpy_len

    def __bool__(self) -> bool:
        return self._smpy_len > 0

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return self is other

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return self is not other

    __hash__ = object.__hash__  # type: ignore[assignment]

    def __iter__(self) -> Any:
        for i in range(self._smpy_len):
            yield self[i]

    def __repr__(self) -> str:
        return f"<smpy.MPI.buffer object at {id(self):#x}>"

    __str__ = __repr__

    def _slice(self, item: slice) -> tuple[int, int]:
        start, stop, step = item.indices(self._smpy_len)
        if step != 1:
            raise IndexError("slice with step not supported")
        return start, max(start, stop)

    def __getitem__(self, item: Any) -> Any:
        self._check_cpu()
        n = self._smpy_len
        if isinstance(item, slice):
            start, stop = self._slice(item)
            mem = self._mem()[start:stop]
            return buffer._make(mem, self, self._smpy_ro, self._smpy_kind,
                                address=self._smpy_addr + start if stop > start else
                                self._smpy_addr + start)
        if not hasattr(type(item), "__index__"):
            raise TypeError("index must be integer or slice")
        try:
            i = operator.index(item)
        except OverflowError:
            raise IndexError("index out of range") from None
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("index out of range")
        return int(np.ndarray.__getitem__(self, i))

    def __setitem__(self, item: Any, value: Any) -> None:
        self._check_cpu()
        if self._smpy_ro:
            raise TypeError("buffer is read-only")
        n = self._smpy_len
        if isinstance(item, slice):
            start, stop = self._slice(item)
            target = np.ndarray.view(self, np.ndarray)
            if not isinstance(value, np.ndarray) and hasattr(type(value), "__index__"):
                target[start:stop] = operator.index(value) & 0xFF
                return
            mem, _, _ = acquire(value, True)
            if mem.nbytes != stop - start:
                raise ValueError("slice length does not match buffer")
            target[start:stop] = np.frombuffer(mem, np.uint8).copy()
            return
        if not hasattr(type(item), "__index__"):
            raise TypeError("index must be integer or slice")
        i = operator.index(item)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("index out of range")
        np.ndarray.__setitem__(self, i, operator.index(value) & 0xFF)

    def __delitem__(self, item: Any) -> None:
        raise NotImplementedError("Subscript deletion not supported by smpy.MPI.buffer")

    def __reduce__(self) -> Any:
        return (buffer._unpickle, (self.tobytes(), self._smpy_ro))

    @staticmethod
    def _unpickle(data: bytes, readonly: bool) -> buffer:
        ob = bytearray(data)
        return buffer._make(memoryview(ob), ob, readonly)


memory = buffer  # mpi4py's backward-compatibility alias


# -- memory allocation and addresses ------------------------------------------------------------
@intargs
def Alloc_mem(size: int, info: Any = None) -> buffer:
    """Allocate memory for message passing and remote memory access."""
    n = operator.index(size)
    if n < 0:
        errors.raise_error(errors.ERR_ARG, f"MPI_Alloc_mem: Invalid size argument, value is {n}")
    return buffer.allocate(n)


def Free_mem(mem: buffer) -> None:
    """Free memory allocated with ``Alloc_mem``."""
    if not isinstance(mem, buffer):
        raise TypeError(f"Argument 'mem' has incorrect type (expected buffer, got "
                        f"{type(mem).__name__})")
    mem.release()


def Get_address(location: Any) -> int:
    """Get the address of a location in memory."""
    if location is None or location is BOTTOM:
        return 0
    if isinstance(location, buffer):
        return location.address
    mem, _, _ = acquire(location, True, False)
    return _address_of(mem)


def Aint_add(base: int, disp: int) -> int:
    """Return the sum of base address and displacement."""
    return operator.index(base) + operator.index(disp)


def Aint_diff(addr1: int, addr2: int) -> int:
    """Return the difference between absolute addresses."""
    return operator.index(addr1) - operator.index(addr2)
