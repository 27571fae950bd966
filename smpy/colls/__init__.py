"""Collective operations built on the internal point-to-point runtime (never the facade)."""
