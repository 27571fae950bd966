"""``smpy calibrate host-speed``: the flop rate of one core of this machine.

It is the reference speed ``smpi/host-speed``: measured CPU seconds × this = flops injected
on the target host. Measured with single-threaded float64 matrix products (numpy)."""

from __future__ import annotations

import argparse
import sys

from smpy.support.units import format_speed
from smpy.timing.bench import measure_host_speed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="smpy calibrate host-speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="measurement time")
    ns = ap.parse_args(argv)
    from smpy.shim.blas import single_thread_blas
    single_thread_blas()
    speed = measure_host_speed(ns.seconds)
    print(f"host speed: {format_speed(speed)} per core")
    print(f"use: --cfg=smpi/host-speed:{speed:.4g}f")
    return 0


if __name__ == "__main__":
    sys.exit(main())
