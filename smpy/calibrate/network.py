"""``smpy calibrate network``: fit SMPI-style piecewise factors from a real ping-pong.

Runs :mod:`smpy.calibrate.pingpong_real` under the real MPI (``mpiexec -n 2``, intra-node
here; give ``--hosts a,b`` style arguments through ``--mpiexec-args`` for two nodes), fits
a segmented affine model (:mod:`smpy.calibrate.fit`) and writes

* a platform YAML fragment (``config:`` with ``network/latency-factor`` and
  ``network/bandwidth-factor`` relative to the nominal latency/bandwidth given), and
  ``smpi/send-is-detached-thresh``: the size from which the real ``MPI_Send`` waits for its
  receiver (:mod:`smpy.calibrate.protocol_real`: a late receiver, bisection), which a
  ping-pong cannot see (its receives are always posted in time). MPICH 4 over shared
  memory here: 8120 bytes. Without the probe (``--no-protocol``, ``--samples``) the start of
  the last fitted segment is a guess, and a poor one: 8 MiB here, so that a program sending
  1 MB panels (examples/predict/lu.py) was predicted 20-30 % too fast;
* with the probe, the library's polling: ``smpy/probe-sees`` (MPICH's ``MPI_Iprobe`` misses
  a message that arrived while the rank computed, until a progress poll pulled it in:
  ``polled``), and the cost of an ``MPI_Iprobe`` / ``MPI_Test`` that finds nothing
  (``smpi/iprobe``, ``smpi/test``, constant: ``smpi/grow-injected-times: no``);
* the raw samples as CSV, and a plot of data and fit when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

from smpy.calibrate.fit import predict, segmented_fit, summarise, to_factors
from smpy.support.mpiexec import default_mpiexec, require_mpiexec
from smpy.support.units import format_bandwidth, format_time, parse_bandwidth, parse_time


def measure(max_exp: int, reps: int, seed: int, mpiexec: str, extra: list[str], timeout: float,
            inner: int = 1) -> tuple:
    prog = Path(__file__).with_name("pingpong_real.py")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [mpiexec, "-n", "2", *extra, sys.executable, str(prog), str(max_exp), str(reps), str(seed), str(inner)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return np.array([r["size"] for r in rows], dtype=float), np.array([r["t"] for r in rows])


def probe_protocol(max_exp: int, mpiexec: str, extra: list[str], timeout: float) -> tuple[int, dict]:
    """The smallest message size whose real ``MPI_Send`` waits for the receive (0: none up
    to 2**max_exp bytes), and the polling behaviour (``probe``: "polled" or "posted",
    ``iprobe`` and ``test``: seconds per call that finds nothing); see
    :mod:`smpy.calibrate.protocol_real`."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [mpiexec, "-n", "2", *extra, sys.executable, "-m", "smpy.calibrate.protocol_real", str(max_exp)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    thresh = [r["threshold"] for r in rows if "threshold" in r]
    polling = [r for r in rows if "probe" in r]
    if not thresh or not polling:
        raise RuntimeError(f"{' '.join(cmd)}: no threshold or polling line in its output")
    return int(thresh[-1]), polling[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="smpy calibrate network", description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", default="1us", help="nominal latency of the link the factors refer to")
    ap.add_argument("--bandwidth", default="10GBps", help="nominal bandwidth of that link")
    ap.add_argument("--max-size", type=int, default=24, help="largest size as a power of two (24 = 16 MiB)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inner", type=int, default=5,
                    help="round trips per measurement, the fastest kept (robust to descheduling)")
    ap.add_argument("--quantile", type=float, default=0.2, help="quantile of the repetitions used per size")
    ap.add_argument("--mpiexec", default=default_mpiexec(), help="mpiexec of the real runs (default: this "
                    "environment's, else the one on PATH)")
    ap.add_argument("--mpiexec-args", default="", help="extra mpiexec arguments (e.g. host placement)")
    ap.add_argument("--samples", help="fit these CSV samples (size,t) instead of measuring")
    ap.add_argument("--no-protocol", dest="protocol", action="store_false",
                    help="do not probe the eager/rendezvous threshold (guess it from the fit)")
    ap.add_argument("-o", "--output", default="network-calibration", help="output prefix")
    ns = ap.parse_args(argv)
    lat, bw = parse_time(ns.latency), parse_bandwidth(ns.bandwidth)
    if not ns.samples:
        try:
            ns.mpiexec = require_mpiexec(ns.mpiexec)
        except LookupError as exc:
            print(f"smpy calibrate network: error: {exc}", file=sys.stderr)
            return 2
    if ns.samples:
        data = np.loadtxt(ns.samples, delimiter=",", skiprows=1)
        sizes, times = data[:, 0], data[:, 1]
    else:
        sizes, times = measure(ns.max_size, ns.reps, ns.seed, ns.mpiexec, ns.mpiexec_args.split(), 1800,
                               ns.inner)
        np.savetxt(f"{ns.output}.csv", np.stack([sizes, times], 1), delimiter=",", header="size,t", comments="")
    # SMPI puts size + 16 bytes on the wire: fit against that
    segs = segmented_fit(sizes + 16, times, quantile=ns.quantile)
    lat_f, bw_f = to_factors(segs, lat, bw)
    thresh = int(segs[-1].start) if len(segs) > 1 else 65536  # a guess: where the fit breaks last
    how = "guessed from the last breakpoint of the fit"
    polling: dict = {}
    if ns.protocol and not ns.samples:
        probed, polling = probe_protocol(ns.max_size, ns.mpiexec, ns.mpiexec_args.split(), 600)
        if probed > 0:
            thresh, how = probed, "probed: MPI_Send waits for the receiver from this size on"
        else:
            thresh, how = (1 << ns.max_size) + 1, f"probed: no MPI_Send up to {1 << ns.max_size} B waited"
    print(f"smpi/send-is-detached-thresh: {thresh} ({how})")
    fragment = {"config": {"network/latency-factor": lat_f, "network/bandwidth-factor": bw_f,
                           "smpi/send-is-detached-thresh": str(thresh)}}
    if polling:
        # the real library's polling: what its probe sees, and the constant cost of a
        # probe or test that finds nothing (SMPI's growing default models none of it)
        fragment["config"].update({"smpy/probe-sees": polling["probe"],
                                   "smpi/iprobe": f"{polling['iprobe']:.3g}",
                                   "smpi/test": f"{polling['test']:.3g}",
                                   "smpi/grow-injected-times": "no"})
        print(f"smpy/probe-sees: {polling['probe']} (MPI_Iprobe calls that missed a message sent while "
              f"the rank computed, per trial: {polling['misses']}); MPI_Iprobe "
              f"{format_time(polling['iprobe'])}, MPI_Test {format_time(polling['test'])} per call")
    Path(f"{ns.output}.yaml").write_text(
        "# smpy calibrate network: factors relative to latency "
        f"{format_time(lat)} and bandwidth {format_bandwidth(bw)}\n" + yaml.safe_dump(fragment, sort_keys=False))
    print(f"{len(segs)} segment(s):")
    for s in segs:
        print(f"  from {int(s.start):>9} B: latency {format_time(s.a)}, bandwidth {format_bandwidth(s.bandwidth)}")
    uniq, q = summarise(sizes, times, ns.quantile)
    errs = [abs(predict(segs, u + 16) - t) / t for u, t in zip(uniq, q)]
    print(f"fit error (relative, on the per-size quantiles): mean {np.mean(errs) * 100:.1f} %, "
          f"max {np.max(errs) * 100:.1f} %")
    print(f"wrote {ns.output}.yaml" + ("" if ns.samples else f" and {ns.output}.csv"))
    _plot(sizes, times, segs, f"{ns.output}.png")
    return 0


def _plot(sizes: np.ndarray, times: np.ndarray, segs: list, path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.loglog(np.maximum(sizes, 1), times, ".", alpha=0.4, label="measured (one-way)")
    xs = np.logspace(0, np.log10(max(sizes.max(), 2)), 400)
    ax.loglog(xs, [predict(segs, x + 16) for x in xs], "-", label=f"fit, {len(segs)} segment(s)")
    for s in segs[1:]:
        ax.axvline(s.start, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("time (s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
