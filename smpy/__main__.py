import sys

from smpy.cli.smpyrun import main

sys.exit(main(prog="python -m smpy"))
