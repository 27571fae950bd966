"""``MPI.pickle``: the serialiser of the lowercase (object) API, like mpi4py's ``Pickle``."""

from __future__ import annotations

import pickle as _pickle
from collections.abc import Callable
from typing import Any


class Pickle:
    """Pickle/unpickle Python objects for the lowercase communication methods."""

    THRESHOLD = 262144  # mpi4py's default out-of-band threshold (bytes)

    def __init__(self, dumps: Callable[..., bytes] = _pickle.dumps, loads: Callable[..., Any] = _pickle.loads,
                 protocol: int | None = None) -> None:
        self._dumps = dumps
        self._loads = loads
        self.PROTOCOL = _pickle.HIGHEST_PROTOCOL if protocol is None else protocol

    def dumps(self, obj: Any) -> bytes:
        return self._dumps(obj, self.PROTOCOL)

    def loads(self, data: bytes) -> Any:
        return self._loads(data)

    def dumps_oob(self, obj: Any) -> tuple[bytes, list]:
        bufs: list = []
        data = self._dumps(obj, self.PROTOCOL, buffer_callback=bufs.append) if self.PROTOCOL >= 5 \
            else self._dumps(obj, self.PROTOCOL)
        return data, [b.raw() for b in bufs]

    def loads_oob(self, data: bytes, buffers: list) -> Any:
        return self._loads(data, buffers=buffers)


pickle = Pickle()
