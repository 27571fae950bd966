"""Prediction of an fsync'ed single-node checkpoint against real runs on this node.

1. ``smpy calibrate storage DIR`` measures the file system holding DIR (O_DIRECT);
2. the platform is this node's calibration (``calibration/vm-2core/platform.yaml``) with that
   ``filesystems:`` fragment mounted at DIR;
3. ``ckpt.py`` (every rank ``np.save`` + ``fsync`` of MIB MiB, REPS times, median) runs, for
   each process count, in interleaved rounds: real (``mpiexec``), predicted (``smpyrun``),
   real again. The prediction error is against the median of the real runs (of the median
   prediction); the noise floor is the relative difference between the two real runs of a
   round (median over the rounds), in
   the same interleaved session. The load average is printed before and after.

    python benchmarks/io/checkpoint_vs_real.py                       # np 1 2, 64 MiB, 3 rounds
    python benchmarks/io/checkpoint_vs_real.py --fragment PREFIX.yaml  # reuse a calibration
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NODE = ROOT / "calibration" / "vm-2core" / "platform.yaml"


def _out(cmd: list[str], timeout: float = 1800) -> str:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p.stdout


def _seconds(text: str) -> tuple[float, float]:
    """(checkpoint, fsync) median seconds printed by ckpt.py."""
    m = re.search(r"^checkpoint (\S+)\nfsync (\S+)", text, re.M)
    if m is None:
        raise SystemExit(f"no checkpoint time in:\n{text[-1000:]}")
    return float(m.group(1)), float(m.group(2))


def calibrate(d: Path, out: Path, seconds: float) -> Path:
    _out([sys.executable, "-m", "smpy", "calibrate", "storage", str(d), "-o", str(out / "storage"),
          "--seconds", str(seconds)])
    return out / "storage.yaml"


def platform(fragment: Path, d: Path, out: Path) -> Path:
    text = fragment.read_text()
    # the fragment's mount is the calibrated directory; make sure it is DIR
    text = re.sub(r"mount: .*", f"mount: {d}", text)
    plat = out / "platform.yaml"
    plat.write_text(NODE.read_text().rstrip() + "\n" + "\n".join(
        ln for ln in text.splitlines() if not ln.startswith("#")) + "\n")
    return plat


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/smpy-ckpt", help="the checkpoint directory (DIR)")
    ap.add_argument("--np", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--mib", type=int, default=64, help="MiB per rank")
    ap.add_argument("--reps", type=int, default=5, help="checkpoints per run (median)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fragment", help="a `smpy calibrate storage` YAML to reuse (no calibration)")
    ap.add_argument("--seconds", type=float, default=40, help="calibration budget")
    a = ap.parse_args(argv)
    mpiexec = shutil.which("mpiexec") or str(Path(sys.executable).parent / "mpiexec")
    d = Path(a.dir).resolve()
    d.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as t:
        out = Path(t)
        fragment = Path(a.fragment) if a.fragment else calibrate(d, out, a.seconds)
        plat = platform(fragment, d, out)
        print(fragment.read_text().strip())
        prog = [str(HERE / "ckpt.py"), str(d), str(a.mib), str(a.reps)]
        rows = []
        for rnd in range(a.rounds):
            for np_ in a.np:
                real1 = _seconds(_out([mpiexec, "-n", str(np_), sys.executable, *prog]))
                pred = _seconds(_out([sys.executable, "-m", "smpy", "-q", "-np", str(np_), "--platform", str(plat),
                                      "--hosts", f"node-0:{np_}", *prog]))
                real2 = _seconds(_out([mpiexec, "-n", str(np_), sys.executable, *prog]))
                rows.append((np_, rnd, real1, pred, real2))
                print(f"round {rnd} np {np_}: real {real1[0]:.4f} s (fsync {real1[1]:.4f}), predicted "
                      f"{pred[0]:.4f} s (fsync {pred[1]:.4f}), real {real2[0]:.4f} s (fsync {real2[1]:.4f})",
                      flush=True)
    load1 = os.getloadavg()
    print(f"\n{a.mib} MiB per rank, np.save + fsync, median of {a.reps}; load average "
          f"{load0[0]:.1f} before, {load1[0]:.1f} after")
    print("checkpoint (barrier to barrier) and, apart, the slowest rank's fsync; medians over the rounds")
    print(f"{'np':>3} {'phase':>10} {'real s':>9} {'predicted s':>12} {'error':>8} {'noise floor':>12}")
    for np_ in a.np:
        mine = [r for r in rows if r[0] == np_]
        for i, phase in enumerate(("checkpoint", "fsync")):
            real = statistics.median(x[i] for r in mine for x in (r[2], r[4]))
            pred = statistics.median(r[3][i] for r in mine)
            noise = statistics.median(abs(r[2][i] - r[4][i]) / ((r[2][i] + r[4][i]) / 2) for r in mine)
            print(f"{np_:>3} {phase:>10} {real:9.4f} {pred:12.4f} {100 * (pred - real) / real:7.1f}% "
                  f"{100 * noise:11.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
