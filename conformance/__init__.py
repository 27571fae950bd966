"""Conformance harness: mpi4py's own test suite under smpy, compared with real MPICH.

See ``conformance/README.md``; entry point ``python conformance/run_suite.py``.
"""
