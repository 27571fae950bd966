"""Storage model: disks that file reads and writes share (see :mod:`smpy.storage.model`)."""

from smpy.storage.model import DEFAULT_DISK, Disk, IoOp, StorageModel

__all__ = ["DEFAULT_DISK", "Disk", "IoOp", "StorageModel"]
