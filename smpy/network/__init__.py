"""Network model: links, routing through zones and topologies, flow-level transfers (see :mod:`smpy.network.model`)."""
