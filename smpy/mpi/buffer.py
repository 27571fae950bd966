"""``MPI.buffer``, Alloc_mem/Free_mem, Get_address and address arithmetic."""

from __future__ import annotations

__all__: list[str] = []
