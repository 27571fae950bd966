"""A batch job whose ranks compute argv[1] simulated seconds (smpy.execute), then sleep
argv[2] seconds (tests/test_batch_energy.py)."""

import sys

import smpy

smpy.execute(float(sys.argv[1]))
smpy.sleep(float(sys.argv[2]))
