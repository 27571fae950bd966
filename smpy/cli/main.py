"""``smpy``: the umbrella command. ``smpy run ...`` (or ``smpy -np ...``) is smpyrun."""

from __future__ import annotations

import sys

from smpy.cli import smpyrun


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "run":
        return smpyrun.main(args[1:], prog="smpy run")
    return smpyrun.main(args, prog="smpy")


if __name__ == "__main__":
    sys.exit(main())
