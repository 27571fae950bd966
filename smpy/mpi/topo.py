"""Topocomm, Cartcomm, Graphcomm, Distgraphcomm, Compute_dims and neighbour collectives."""

from __future__ import annotations

__all__: list[str] = []
