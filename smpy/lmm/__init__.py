"""Linear max-min fair sharing solver (pure; no simulation or MPI vocabulary)."""

from smpy.lmm.maxmin import Constraint, System, Variable

__all__ = ["Constraint", "System", "Variable"]
