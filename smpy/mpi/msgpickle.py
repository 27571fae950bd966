"""``MPI.Pickle`` / ``MPI.pickle``: the serialiser of the lowercase (object) API.

Semantics of mpi4py 4.1.2's ``Pickle``:

* ``dumps``/``loads`` default to :mod:`pickle`'s; ``PROTOCOL`` defaults to
  ``pickle.HIGHEST_PROTOCOL`` (or ``$MPI4PY_PICKLE_PROTOCOL``) only when ``dumps`` is
  pickle's own, otherwise it stays ``None`` and ``dumps(obj)`` is called without a protocol;
* ``dumps_oob`` pickles with protocol ``max(PROTOCOL, 5)`` and takes out of band every buffer of
  at least ``THRESHOLD`` bytes (default 256 KiB, ``$MPI4PY_PICKLE_THRESHOLD``), returned as
  ``MPI.buffer`` objects; smaller ones stay in band.

``MPI.pickle`` is per process (per simulated rank), as in real MPI: a rank that
reconfigures it (``MPI.pickle.__init__(dill.dumps, dill.loads)``) changes only its own.
"""

from __future__ import annotations

import os
import pickle as _pickle
from collections.abc import Callable, Iterable
from typing import Any

from smpy.kernel.actors import current_actor
from smpy.mpi.buffer import buffer
from smpy.runtime.world import Process

_DUMPS = _pickle.dumps
_LOADS = _pickle.loads
_PROTOCOL: int = int(os.environ.get("MPI4PY_PICKLE_PROTOCOL", _pickle.HIGHEST_PROTOCOL))
_THRESHOLD: int = int(os.environ.get("MPI4PY_PICKLE_THRESHOLD", 1024**2 // 4))


def _as_buffer(view: memoryview) -> Any:
    """An ``MPI.buffer`` over ``view`` (the view itself when it cannot be one)."""
    try:
        return buffer(view)
    except (TypeError, ValueError):
        return view


class Pickle:
    """Pickle/unpickle Python objects."""

    __slots__ = ("_dumps", "_loads", "_protocol", "_threshold")

    def __init__(self, dumps: Callable[..., bytes] | None = None, loads: Callable[..., Any] | None = None,
                 protocol: int | None = None, threshold: int | None = None) -> None:
        if dumps is None:
            dumps = _DUMPS
        if loads is None:
            loads = _LOADS
        if protocol is None and dumps is _DUMPS:
            protocol = _PROTOCOL
        self._dumps = dumps
        self._loads = loads
        self._protocol = protocol
        self._threshold = _THRESHOLD if threshold is None else threshold

    @property
    def PROTOCOL(self) -> int | None:
        """Protocol version."""
        return self._protocol

    @PROTOCOL.setter
    def PROTOCOL(self, protocol: int | None) -> None:
        if protocol is None and self._dumps is _DUMPS:
            protocol = _PROTOCOL
        self._protocol = protocol

    @property
    def THRESHOLD(self) -> int:
        """Out-of-band threshold."""
        return self._threshold

    @THRESHOLD.setter
    def THRESHOLD(self, threshold: int | None) -> None:
        self._threshold = _THRESHOLD if threshold is None else threshold

    def dumps(self, obj: Any) -> bytes:
        """Serialize object to pickle data stream."""
        if self._protocol is not None:
            return self._dumps(obj, self._protocol)
        return self._dumps(obj)

    def loads(self, data: Any) -> Any:
        """Deserialize object from pickle data stream."""
        return self._loads(data)

    def dumps_oob(self, obj: Any) -> tuple[bytes, list]:
        """Serialize object to pickle data stream and out-of-band buffers."""
        protocol = max(_PROTOCOL if self._protocol is None else self._protocol, 5)
        buffers: list = []
        threshold = self._threshold

        def callback(pb: Any) -> bool:
            view = pb.raw()
            if view.nbytes >= threshold:
                buffers.append(_as_buffer(view))
                return False
            return True

        data = self._dumps(obj, protocol, buffer_callback=callback)
        return data, buffers

    def loads_oob(self, data: Any, buffers: Iterable[Any]) -> Any:
        """Deserialize object from pickle data stream and out-of-band buffers."""
        return self._loads(data, buffers=buffers)


class _PerProcessPickle(Pickle):
    """``MPI.pickle``: one serialiser state per MPI process. Programs reconfigure it in
    place (``MPI.pickle.__init__(dill.dumps, dill.loads)``, ``MPI.pickle.PROTOCOL = 4``);
    in real MPI that changes only the calling process, so each simulated rank has its own
    :class:`Pickle` (kept on the rank's process), and outside the ranks a default one."""

    __slots__ = ()
    _KEY = "smpy.mpi.pickle"

    def _mine(self) -> Pickle:
        actor = current_actor()
        proc = None if actor is None else actor.data
        if not isinstance(proc, Process):
            return _DEFAULT
        state = proc.attrs.get(self._KEY)
        if state is None:
            state = proc.attrs[self._KEY] = Pickle()
        return state

    def __init__(self, dumps: Callable[..., bytes] | None = None, loads: Callable[..., Any] | None = None,
                 protocol: int | None = None, threshold: int | None = None) -> None:
        if current_actor() is not None:
            self._mine().__init__(dumps, loads, protocol, threshold)  # type: ignore[misc]

    @property
    def PROTOCOL(self) -> int | None:
        """Protocol version."""
        return self._mine().PROTOCOL

    @PROTOCOL.setter
    def PROTOCOL(self, protocol: int | None) -> None:
        self._mine().PROTOCOL = protocol

    @property
    def THRESHOLD(self) -> int:
        """Out-of-band threshold."""
        return self._mine().THRESHOLD

    @THRESHOLD.setter
    def THRESHOLD(self, threshold: int | None) -> None:
        self._mine().THRESHOLD = threshold

    def dumps(self, obj: Any) -> bytes:
        """Serialize object to pickle data stream."""
        return self._mine().dumps(obj)

    def loads(self, data: Any) -> Any:
        """Deserialize object from pickle data stream."""
        return self._mine().loads(data)

    def dumps_oob(self, obj: Any) -> tuple[bytes, list]:
        """Serialize object to pickle data stream and out-of-band buffers."""
        return self._mine().dumps_oob(obj)

    def loads_oob(self, data: Any, buffers: Iterable[Any]) -> Any:
        """Deserialize object from pickle data stream and out-of-band buffers."""
        return self._mine().loads_oob(data, buffers)


_DEFAULT = Pickle()
pickle: Pickle = _PerProcessPickle()
