"""Command-line tools and the composition root: ``smpyrun``, ``smpy predict|replay|platform|plot``."""
