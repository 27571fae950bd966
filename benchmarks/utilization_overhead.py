"""Cost of the utilisation listener (smpy/trace/utilization.py) in-process: CPU time of a
program without a report, with ``--report`` but no utilisation listener, and with both.

    python benchmarks/utilization_overhead.py                          # ring, np 256, 200 laps
    python benchmarks/utilization_overhead.py --np 256 examples/heat.py 65536 100

The three variants alternate within each round (a busy machine slows them alike); the
minimum process CPU time over the rounds is reported, and the ratios.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("program", nargs="?", default=str(HERE / "programs" / "ring.py"))
    ap.add_argument("args", nargs="*", default=None)
    opts = ap.parse_args(argv)
    args = opts.args if opts.args or opts.program != str(HERE / "programs" / "ring.py") else ["200", "obj"]
    import smpy
    import smpy.cli.launch as launch

    real = launch.Utilization
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(opts.rounds):
            for variant in ("none", "report", "report+utilization"):
                launch.Utilization = real if variant == "report+utilization" else (lambda *a, **k: None)
                cfg = {"smpy/progress": "no"}
                if variant != "none":
                    cfg["smpy/report"] = str(Path(d) / "rep")
                t0 = time.process_time()
                res = smpy.run(opts.program, np=opts.np, args=args, cfg=cfg, capture=True, echo=False)
                cpu = time.process_time() - t0
                if res.status != "ok":
                    raise SystemExit(f"{opts.program} failed: {res.stderr[-2000:]}")
                best[variant] = min(best.get(variant, float("inf")), cpu)
    launch.Utilization = real
    base = best["none"]
    print(f"{Path(opts.program).name} {' '.join(args)} at np {opts.np}, min CPU of {opts.rounds} rounds")
    for variant, cpu in best.items():
        print(f"{variant:<20}{cpu:8.2f} s  x{cpu / base:.3f}")
    print(f"utilisation listener: x{best['report+utilization'] / best['report']:.3f} of --report without it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
