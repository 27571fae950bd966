"""``smpy``: the umbrella command. ``smpy run ...`` (or ``smpy -np ...``) is smpyrun; ``smpy predict``
sweeps rank counts, platforms and parameters; ``smpy calibrate``, ``platform``, ``plot``, ``replay``."""

from __future__ import annotations

import gc
import sys

from smpy.cli import smpyrun

CALIBRATE = {"host-speed": "smpy.calibrate.host_speed", "network": "smpy.calibrate.network",
             "compute": "smpy.calibrate.compute", "power": "smpy.calibrate.power",
             "memory": "smpy.calibrate.memory", "storage": "smpy.calibrate.storage",
             "node": "smpy.calibrate.node"}


#: the subcommands that are not an emulation
COMMANDS = ("plot", "replay", "platform", "calibrate", "predict", "batch")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in COMMANDS:
        gc.enable()  # off only for an emulation's start-up (smpy.cli._exit.run)
    if args and args[0] == "run":
        return smpyrun.main(args[1:], prog="smpy run")
    if args and args[0] == "plot":
        from smpy.cli import plot_cmd
        return plot_cmd.main(args[1:], prog="smpy plot")
    if args and args[0] == "replay":
        from smpy.cli import replay_cmd
        return replay_cmd.main(args[1:], prog="smpy replay")
    if args and args[0] == "platform":
        from smpy.cli import platform_cmd
        return platform_cmd.main(args[1:], prog="smpy platform")
    if args and args[0] == "batch":
        from smpy.cli import batch
        return batch.main(args[1:], prog="smpy batch")
    if args and args[0] == "predict":
        from smpy.cli import predict_cmd
        return predict_cmd.main(args[1:], prog="smpy predict")
    if args and args[0] == "calibrate":
        if len(args) < 2 or args[1] not in CALIBRATE:
            print(f"usage: smpy calibrate {{{','.join(CALIBRATE)}}} [options]", file=sys.stderr)
            return 2
        import importlib
        return importlib.import_module(CALIBRATE[args[1]]).main(args[2:])
    return smpyrun.main(args, prog="smpy")


def cli() -> None:
    """Console-script entry point: :func:`main`, then a fast exit (smpy.cli._exit)."""
    from smpy.cli._exit import run

    if not (sys.argv[1:2] and sys.argv[1] in COMMANDS):  # an emulation, as smpyrun
        from smpy.cli import stops

        stops.record_early()
    run(main)


if __name__ == "__main__":
    cli()
