"""CPU model: hosts, cores and pstates; executions share a host's cores (see :mod:`smpy.cpu.model`)."""
