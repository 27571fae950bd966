"""Time-independent (TI) traces: reading SMPI's format and replaying it (``smpy replay``)."""
