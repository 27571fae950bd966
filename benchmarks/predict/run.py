"""Calibrate smpy on this node, then predict runs of examples/predict/ that calibration did not see.

    python benchmarks/predict/run.py [--reps 3] [--np 2] [--quick]

1. ``smpy calibrate host-speed``: the flop rate of one core (``smpi/host-speed``);
2. ``smpy calibrate network``: a real ping-pong (``mpiexec -n 2``, intra-node) fitted by
   segments: latency/bandwidth factors relative to the loopback link of the platform;
3. a one-node platform YAML for this machine: one host with ``nproc`` cores at the measured
   speed, messages on its loopback link with the fitted factors (``work/node.yaml``);
4. ``smpy calibrate compute`` per example on two *small* sizes (``--cal-reps`` runs of each kind):
   one marginal factor per program (``--program-wide``: lu's Iprobe moves work between
   regions), kept only where it differs significantly from 1;
5. for each validation case (larger sizes, never used in 4): the real run (``mpiexec -n NP``,
   ``OPENBLAS_NUM_THREADS=1``, median of ``--reps`` of the time the program prints) and the
   prediction (``smpyrun`` with the platform and the example's factors, median of ``--reps``
   runs, and the same without factors, "raw"); per case the real
   and predicted times and the error ``(pred - real) / real``; then MERPSYS's
   :math:`d_{avg}` and :math:`d_{max}` (mean and maximum of :math:`|t_{pred}-t_{real}|/t_{real}`).

The last lines give the noise floor of the metric on the machine as it was: the same
:math:`d_{avg}` between the median of the even-numbered real runs and that of the odd-numbered
ones (no prediction can be verified to better than that), and the fastest-of-N and paired
summaries.

The real runs are traced per region (:mod:`smpy.calibrate.trace_real`: a clock read per MPI
call) and the emulated ones write a region report, so the table also gives the error of the
simulated compute time alone (``comp``, ``comp_raw``: all ranks, MPI calls excluded), which
neither MPICH's polling nor the network model enters (``--no-compute``: plain real runs).

Results go to ``benchmarks/predict/results.txt`` (and stdout). The load average of the machine
is recorded with each real run: the real times are wall-clock times, so other processes on
the cores inflate them while the emulator measures CPU time (see docs/prediction.md); every
run can be started with a raised priority (``--nice -15``, needs root; it had no visible
effect in the sandbox these results come from).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "predict"
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
MPIEXEC = str(BIN / "mpiexec")

# example -> (calibration: base workload, workload; [validation arguments...]). The factors are
# the marginal ratios between the two calibration workloads (fixed per-run costs cancel, see
# smpy/calibrate/compute.py); the validation sizes are larger and never seen by calibration,
# and long enough (about 1-2 s on this node) for start-up costs and timer noise to be small.
# The calibration's larger workload is in the same memory regime as the validation runs
# (working sets beyond the 1 MiB L2 cache, for heat3d and mergesort beyond a share of the L3),
# so that what the factor measures is what the validation runs do, and 3-7x the smaller one:
# the marginal ratio divides differences, whose relative noise grows as they shrink.
CASES: dict[str, tuple[tuple[list[str], list[str]], list[list[str]]]] = {
    "similarity.py": ((["2000"], ["5000"]), [["6000"], ["9000"]]),
    "heat3d.py": ((["80", "20"], ["112", "40"]), [["128", "50"], ["160", "40"]]),
    "mergesort.py": ((["1000000"], ["3000000"]), [["4000000"], ["8000000"]]),
    "lu.py": ((["1024", "64", "--no-check"], ["1792", "64", "--no-check"]),
              [["2560", "64", "--no-check"], ["3072", "64", "--no-check"]]),
    "ep.py": ((["21"], ["24"]), [["25"], ["26"]]),
}
QUICK: dict[str, tuple[tuple[list[str], list[str]], list[list[str]]]] = {
    "similarity.py": ((["600"], ["800"]), [["1600"]]),
    "heat3d.py": ((["24", "10"], ["32", "10"]), [["64", "10"]]),
    "mergesort.py": ((["200000"], ["300000"]), [["1000000"]]),
    "lu.py": ((["256", "64", "--no-check"], ["384", "64", "--no-check"]), [["768", "64", "--no-check"]]),
    "ep.py": ((["18"], ["19"]), [["21"]]),
}
ELAPSED = re.compile(r"^# elapsed ([0-9.eE+-]+) s", re.M)
CPU = re.compile(r"^# cpu ([0-9.eE+-]+) s", re.M)


def env() -> dict[str, str]:
    e = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def real_env() -> dict[str, str]:
    """The real run: real mpi4py, no smpy on the path (the examples' hints pass through)."""
    e = env()
    e["PYTHONPATH"] = ""
    return e


def traced_env() -> dict[str, str]:
    """A real run under smpy.calibrate.trace_real (real mpi4py; smpy importable for the tracer,
    whose cost is a clock read per MPI call): per-region compute CPU times."""
    from smpy.calibrate.compute import mpi_call_names

    e = env()
    e["SMPY_TRACE_CALLS"] = ",".join(mpi_call_names())
    return e


def compute_total(rows: dict[str, float]) -> float:
    """Compute seconds of a run (all ranks), without its first and last regions (imports,
    output and teardown, outside the span the examples time)."""
    return sum(v for k, v in rows.items() if not k.startswith("<start>:") and not k.endswith(":<end>:0"))


def simulated_total(report: Path) -> float:
    """Simulated compute seconds of an emulated run from its region report (after factors)."""
    import csv

    with report.open() as fh:
        return compute_total({r[0]: float(r[3]) for r in list(csv.reader(fh))[1:]})


NICE: list[str] = []


def sh(cmd: list[str], timeout: float = 1800, environ: dict[str, str] | None = None) -> str:
    done = subprocess.run([*NICE, *cmd], capture_output=True, text=True, timeout=timeout, env=environ or env())
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return done.stdout


def elapsed(out: str, pattern: re.Pattern = ELAPSED) -> float:
    m = pattern.search(out)
    if m is None:
        raise SystemExit(f"no '# elapsed' line in:\n{out}")
    return float(m.group(1))


def name_of(ex: str, args: list[str]) -> str:
    return f"{ex[:-3]} {' '.join(a for a in args if not a.startswith('--'))}"


def calibrate(work: Path, np_: int, quick: bool, cases: dict, reps: int,
              contention: bool = False) -> tuple[float, Path, dict[str, Path]]:
    smpy = [sys.executable, "-m", "smpy", "calibrate"]
    out = sh([*smpy, "host-speed", "--seconds", "0.5" if quick else "2"])
    speed = float(re.search(r"smpi/host-speed:([0-9.eE+-]+)f", out).group(1))
    print(f"[run] host speed {speed / 1e9:.3f} Gflop/s per core", flush=True)
    net = work / "net"
    sh([*smpy, "network", "--latency", "1us", "--bandwidth", "10GBps", "--max-size", "22" if quick else "24",
        "--reps", "3" if quick else "5", "-o", str(net)])
    import yaml

    frag = yaml.safe_load((work / "net.yaml").read_text())["config"]
    small_lat = float(str(frag["network/latency-factor"]).split(";")[0].split(":")[1])  # x 1 us
    if small_lat > 50:
        print(f"[run] WARNING: fitted latency of small messages {small_lat:.0f} us: the ping-pong measured "
              "the scheduler (loaded machine?); predictions of communicating cases will be off", flush=True)
    platform = {
        "name": "this-node",
        "config": {"network/model": "SMPI", "network/loopback-lat": "1us", "network/loopback-bw": "10GBps",
                   "network/latency-factor": frag["network/latency-factor"],
                   "network/bandwidth-factor": frag["network/bandwidth-factor"],
                   "smpi/send-is-detached-thresh": frag["smpi/send-is-detached-thresh"],
                   # the real library's polling (MPICH: a probe misses what arrived while the rank
                   # computed; a probe or test costs a constant fraction of a microsecond)
                   **{k: frag[k] for k in ("smpy/probe-sees", "smpi/iprobe", "smpi/test",
                                           "smpi/grow-injected-times") if k in frag}},
        "hosts": [{"name": "node", "cores": os.cpu_count() or 1, "speed": f"{speed:.6g}f"}],
    }
    if contention:  # the node's memory bandwidths, for the host memory-contention model
        sh([*smpy, "memory", "-np", str(os.cpu_count() or 1), *(["--seconds", "1"] if quick else []),
            "-o", str(work / "memory.yaml")])
        platform["hosts"][0]["memory"] = yaml.safe_load((work / "memory.yaml").read_text())["memory"]
    pfile = work / "node.yaml"
    pfile.write_text("# one-node platform of this machine, written by benchmarks/predict/run.py\n"
                     + yaml.safe_dump(platform, sort_keys=False))
    print(f"[run] platform {pfile}: {platform['config']}", flush=True)
    factors = {}
    for ex, ((base, small), _) in cases.items():
        f = work / f"factors-{ex[:-3]}.csv"
        out = sh([*smpy, "compute", "-np", str(np_), "--platform", str(pfile), "--cfg", f"smpi/host-speed:{speed}f",
                  "--reps", str(reps), "--base-args", " ".join(base), "--program-wide",
                  *(["--contention"] if contention else []), "-o", str(f), str(EX / ex), *small])
        factors[ex] = f
        print(f"[run] factors for {ex} ({' '.join(base)} -> {' '.join(small)}): {f}\n{out.rstrip()}", flush=True)
    return speed, pfile, factors


def spread(values: list[float]) -> float:
    """(max - min) / median: how far apart repeated measurements of one thing are."""
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else math.nan


def loadavg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3,
                    help="real runs and predictions per case (median)")
    ap.add_argument("--cal-reps", type=int, default=5,
                    help="runs of each kind per calibration workload (medians; a marginal ratio divides "
                         "differences, which need more runs than the validation)")
    ap.add_argument("--only", action="append", default=[], help="run only these examples (e.g. ep)")
    ap.add_argument("--no-compute", dest="compute", action="store_false",
                    help="do not trace the real runs' compute per region (columns comp, comp_raw)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument("--contention", action="store_true",
                    help="host memory-contention model: measure the node's memory bandwidths (smpy "
                         "calibrate memory) and calibrate with serialized real runs (--contention)")
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("-o", "--output", default=str(HERE / "results.txt"))
    ap.add_argument("--nice", type=int, default=0,
                    help="niceness of every run (negative, as root: the measured runs take the cores "
                         "from other load; 0: leave it)")
    return ap


def report_lines(ns: argparse.Namespace, speed: float, pfile: Path, rows: list, mins: list, paired: list,
                 floor: list[float], t_start: float) -> list[str]:
    """The results file: the header, one line per case, the error summaries."""
    errs = [abs(r[4]) for r in rows]
    errs_cpu = [abs(r[5]) for r in rows]
    errs_raw = [abs(r[9]) for r in rows]
    lines = [
        f"# smpy prediction vs real runs on this node ({os.cpu_count()} cores), np {ns.np}, "
        f"median of {ns.reps} real runs and of {ns.reps} predictions",
        f"# host speed {speed / 1e9:.3f} Gflop/s; platform {pfile.name}; factors per example from "
        "smaller sizes" + ("; host memory-contention model (--contention)" if ns.contention else ""),
        "# real: elapsed (MPI.Wtime) of the real run; cpu: thread CPU time of its busiest rank over the",
        "# same span (MPICH polls while waiting, so ~ the elapsed time the run would have on idle cores);",
        "# err: (pred - real) / real; err_cpu: (pred - cpu) / cpu; raw: prediction without the region",
        "# factors, err_raw: (raw - cpu) / cpu; load: 1-min load average; emul: emulation wall time;",
        "# comp / comp_raw: error of the simulated compute time alone (all ranks, MPI calls excluded;",
        "# real: per-region thread CPU times of the traced real runs), with and without the factors;",
        "# spr_r / spr_p: spread (max - min) / median of the real runs' elapsed times and of all the",
        "# predictions (with and without factors, which differ by noise when no factor was kept)",
        f"# {'case':<22}{'real s':>9}{'cpu s':>9}{'pred s':>9}{'err':>8}{'err_cpu':>8}{'raw s':>9}{'err_raw':>8}"
        f"{'load':>6}{'emul s':>7}{'comp':>8}{'comp_raw':>9}{'spr_r':>7}{'spr_p':>7}",
    ]
    for name, real, cpu, pred, err, err_cpu, load, wall, raw, err_raw, comp, comp_raw, spr_r, spr_p in rows:
        lines.append(f"  {name:<22}{real:>9.4f}{cpu:>9.4f}{pred:>9.4f}{err * 100:>7.1f}%{err_cpu * 100:>7.1f}%"
                     f"{raw:>9.4f}{err_raw * 100:>7.1f}%{load:>6.1f}{wall:>7.1f}{comp * 100:>7.1f}%"
                     f"{comp_raw * 100:>8.1f}%{spr_r * 100:>6.1f}%{spr_p * 100:>6.1f}%")
    lines.append(f"vs elapsed: d_avg {statistics.mean(errs) * 100:.2f} %  d_max {max(errs) * 100:.2f} %  "
                 f"within 5 %: {sum(e <= 0.05 for e in errs)}/{len(errs)}")
    lines.append(f"vs cpu:     d_avg {statistics.mean(errs_cpu) * 100:.2f} %  d_max {max(errs_cpu) * 100:.2f} %  "
                 f"within 5 %: {sum(e <= 0.05 for e in errs_cpu)}/{len(errs_cpu)}")
    lines.append(f"raw vs cpu: d_avg {statistics.mean(errs_raw) * 100:.2f} %  d_max {max(errs_raw) * 100:.2f} %  "
                 f"within 5 %: {sum(e <= 0.05 for e in errs_raw)}/{len(errs_raw)}   "
                 f"(total {time.time() - t_start:.0f} s)")
    if ns.compute:
        ec, er = [abs(r[10]) for r in rows], [abs(r[11]) for r in rows]
        lines.append(f"compute:    d_avg {statistics.mean(ec) * 100:.2f} %  d_max {max(ec) * 100:.2f} %  "
                     f"within 5 %: {sum(e <= 0.05 for e in ec)}/{len(ec)}   without factors: d_avg "
                     f"{statistics.mean(er) * 100:.2f} %  d_max {max(er) * 100:.2f} %")
    # Interference on a shared machine only ever adds time, to the real runs (other load on
    # the cores, the hypervisor) as to the emulator's measurements (cache pollution): the
    # fastest of the repetitions estimates the undisturbed time on both sides
    em = [abs(p - r) / r for _n, r, p, _raw in mins]
    emr = [abs(raw - r) / r for _n, r, _p, raw in mins]
    lines.append(f"fastest of {ns.reps}: d_avg {statistics.mean(em) * 100:.2f} %  d_max {max(em) * 100:.2f} %  "
                 f"within 5 %: {sum(e <= 0.05 for e in em)}/{len(em)}   without factors: d_avg "
                 f"{statistics.mean(emr) * 100:.2f} %  d_max {max(emr) * 100:.2f} %  within 5 %: "
                 f"{sum(e <= 0.05 for e in emr)}/{len(emr)}")
    ep_, er_ = [abs(e) for _n, e, _r in paired], [abs(r) for _n, _e, r in paired]
    lines.append(f"paired:     d_avg {statistics.mean(ep_) * 100:.2f} %  d_max {max(ep_) * 100:.2f} %  "
                 f"within 5 %: {sum(e <= 0.05 for e in ep_)}/{len(ep_)}   without factors: d_avg "
                 f"{statistics.mean(er_) * 100:.2f} %  d_max {max(er_) * 100:.2f} %  within 5 %: "
                 f"{sum(e <= 0.05 for e in er_)}/{len(er_)}   (median over the reps of the error of each "
                 "prediction against the real run just before it)")
    if floor:
        # what the same metric gives between two halves of the real runs themselves: no
        # prediction can be verified to better than this on the machine as it was
        lines.append(f"noise floor: d_avg {statistics.mean(floor) * 100:.2f} %  d_max {max(floor) * 100:.2f} %  "
                     f"within 5 %: {sum(e <= 0.05 for e in floor)}/{len(floor)}   (median of the even-numbered "
                     "real runs against that of the odd-numbered ones)")
    lines += [f"#   {n:<22} fastest real {r:8.4f} s  pred {p:8.4f} s ({(p - r) / r * 100:+6.1f} %)  "
              f"raw {raw:8.4f} s ({(raw - r) / r * 100:+6.1f} %)" for n, r, p, raw in mins]
    return lines


def main() -> int:
    ns = build_parser().parse_args()
    if ns.nice:
        NICE[:] = ["nice", "-n", str(ns.nice)]
    cases = QUICK if ns.quick else CASES
    if ns.only:
        cases = {k: v for k, v in cases.items() if k[:-3] in ns.only}
    work = Path(ns.work)
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    speed, pfile, factors = calibrate(work, ns.np, ns.quick, cases, ns.cal_reps, ns.contention)
    # examples whose factor file lists no region: their predictions are the raw ones
    kept = {ex: len(f.read_text().splitlines()) > 1 for ex, f in factors.items()}
    rows = []
    floor: list[float] = []  # real runs against real runs: |median(even reps) - median(odd)| / median
    mins: list[tuple[str, float, float, float]] = []  # fastest real run, prediction, raw prediction
    paired: list[tuple[str, float, float]] = []  # median over reps of (pred_i - real_i) / real_i
    runs: dict[str, dict[str, list[float]]] = {}
    for ex, (_, sizes) in cases.items():
        for args in sizes:
            reals, cpus, loads, creals = [], [], [], []
            preds, raws, walls, cpreds, craws = [], [], [], [], []
            report = work / "regions.csv"
            rep_cfg = [f"--cfg=smpy/region-report:{report}"] if ns.compute else []
            # real and emulated runs alternate, so that a drift of the machine's speed (its
            # measured flop rate moved by 11 % between two runs of this script) hits both
            for rep in range(ns.reps):
                loads.append(loadavg())
                if ns.compute:
                    tdir = work / f"trace-{ex[:-3]}-{rep}"
                    shutil.rmtree(tdir, ignore_errors=True)
                    out = sh([MPIEXEC, "-n", str(ns.np), sys.executable, "-m", "smpy.calibrate.trace_real",
                              str(tdir), str(EX / ex), *args], environ=traced_env())
                    from smpy.calibrate.compute import read_real
                    creals.append(compute_total(read_real(tdir)))
                else:
                    out = sh([MPIEXEC, "-n", str(ns.np), sys.executable, str(EX / ex), *args], environ=real_env())
                reals.append(elapsed(out))
                cpus.append(elapsed(out, CPU))
                # one emulated run is as noisy as one real run: as many of each
                t0 = time.perf_counter()
                out = sh([sys.executable, "-m", "smpy", "-q", "-np", str(ns.np), "--platform", str(pfile),
                          f"--cfg=smpi/host-speed:{speed}f", f"--cfg=smpi/comp-adjustment-file:{factors[ex]}",
                          *rep_cfg, str(EX / ex), *args])
                walls.append(time.perf_counter() - t0)
                preds.append(elapsed(out))
                if ns.compute:
                    cpreds.append(simulated_total(report))
                if not kept[ex]:  # no factor kept: the prediction is the raw one
                    raws.append(preds[-1])
                    if ns.compute:
                        craws.append(cpreds[-1])
                    continue
                raws.append(elapsed(sh([sys.executable, "-m", "smpy", "-q", "-np", str(ns.np), "--platform",
                                        str(pfile), f"--cfg=smpi/host-speed:{speed}f", *rep_cfg,
                                        str(EX / ex), *args])))
                if ns.compute:
                    craws.append(simulated_total(report))
            if len(reals) >= 2:
                even, odd = statistics.median(reals[0::2]), statistics.median(reals[1::2])
                floor.append(abs(even - odd) / odd)
            real, cpu = statistics.median(reals), statistics.median(cpus)
            pred, raw, wall = statistics.median(preds), statistics.median(raws), statistics.median(walls)
            paired.append((name_of(ex, args), statistics.median((p - r) / r for p, r in zip(preds, reals)),
                           statistics.median((p - r) / r for p, r in zip(raws, reals))))
            comp = ((statistics.median(cpreds) - statistics.median(creals)) / statistics.median(creals),
                    (statistics.median(craws) - statistics.median(creals)) / statistics.median(creals)
                    ) if ns.compute else (math.nan, math.nan)
            name = name_of(ex, args)
            rows.append((name, real, cpu, pred, (pred - real) / real, (pred - cpu) / cpu,
                         statistics.mean(loads), wall, raw, (raw - cpu) / cpu, *comp,
                         spread(reals), spread(preds + raws)))
            mins.append((name, min(reals), min(preds), min(raws)))
            runs[name] = {"real": reals, "cpu": cpus, "pred": preds, "raw": raws, "load": loads}
            print(f"[run] {name:<22} real {real:8.4f} s (cpu {cpu:8.4f} s)  pred {pred:8.4f} s  "
                  f"err {rows[-1][4] * 100:+6.1f} % / {rows[-1][5] * 100:+6.1f} %  no factors {raw:8.4f} s  "
                  f"compute err {comp[0] * 100:+6.1f} % (raw {comp[1] * 100:+6.1f} %)  load {rows[-1][6]:.1f}",
                  flush=True)
    lines = report_lines(ns, speed, pfile, rows, mins, paired, floor, t_start)
    text = "\n".join(lines) + "\n"
    print(text)
    Path(ns.output).write_text(text)
    Path(ns.output).with_suffix(".runs.json").write_text(json.dumps(runs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
