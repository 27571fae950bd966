"""mpi4py's ``demo/`` directory under smpy and under MPICH: same exit status, same output.

Every run the demos' makefiles and ``runtests.sh`` scripts make (``mpiexec -n N python
PROGRAM ARGS``, or ``python PROGRAM`` for the sequential ones, run here as N = 1) is made
twice: with the venv's ``mpiexec`` (MPICH) and with ``smpyrun -np N``, each in its own copy of
the demo folder. A run *agrees* when

* both end the same way (exit status 0, non-zero, or killed at the timeout),
* unittest's verdicts on standard error (``Ran N tests``, ``OK``, ``FAILED (...)``) are the
  same, and
* their standard outputs hold the same lines, once sorted (ranks' lines interleave in any
  order under ``mpiexec``) and normalised: numbers with a fraction or an exponent (timings,
  bandwidths), addresses and host names differ between any two real runs too.

Runs that need a compiler, Fortran, CUDA or the internet are listed with the reason and not
made. ``python conformance/run_demos.py`` prints one line per run and the figure (runs that
agree / runs made); ``--json FILE`` keeps the details; ``-k REGEX`` selects runs by id.
The sdist is the one the conformance suite uses (``conformance/.cache``, downloaded by
:func:`conformance.run_suite.fetch_suite`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from conformance.procs import run_group  # noqa: E402
from conformance.run_suite import CACHE, fetch_suite  # noqa: E402

TIMEOUT_S = 300.0


@dataclass
class Demo:
    """One run of a demo: ``mpiexec -n np python *argv`` in ``demo/<folder>``."""

    id: str
    folder: str
    np: int
    argv: list[str]
    stdin: str = ""
    skip: str = ""  #: why the run is not made (compiler, Fortran, CUDA, internet)
    env: dict[str, str] = field(default_factory=dict)


def _ex(folder: str, np: int, *argv: str, stdin: str = "", skip: str = "", **env: str) -> Demo:
    name = " ".join(argv)
    return Demo(f"{folder}: np{np} {name}", folder, np, list(argv), stdin, skip, dict(env))


NEEDS_C = "needs a C compiler (a compiled extension or library)"
NEEDS_FORTRAN = "needs a Fortran compiler"


def demos(root: Path) -> list[Demo]:
    """The runs of ``root`` (the sdist's ``demo/``), as its makefiles and scripts make them."""
    out: list[Demo] = [_ex(".", 5, "helloworld.py")]
    out += [_ex("compute-pi", 2, "cpi-cco.py", stdin="100\n"),
            _ex("compute-pi", 2, "cpi-rma.py", stdin="100\n"),
            _ex("compute-pi", 1, "cpi-dpm.py", "2", stdin="100\n")]
    for prog in ("run_cpi.py", "run_crawl.py", "run_hello.py", "run_primes.py"):
        skip = "needs the internet (crawls python.org)" if "crawl" in prog else ""
        out.append(_ex("futures", 1, prog, skip=skip))
    out += [_ex("futures", 5, "run_julia.py"), _ex("futures", 5, "run_mandelbrot.py")]
    for prog in ("run_cpi.py", "run_crawl.py", "run_hello.py", "run_primes.py", "run_julia.py",
                 "run_mandelbrot.py"):
        skip = "needs the internet (crawls python.org)" if "crawl" in prog else ""
        out.append(_ex("futures", 5, "-m", "mpi4py.futures", prog, skip=skip))
    for np in (1, 2):
        out.append(_ex("futures", np, "test_futures.py"))
        out.append(_ex("futures", np, "-m", "mpi4py.futures", "test_futures.py"))
    out.append(_ex("futures", 1, "test_service.py", skip="two jobs (a server started apart) connected "
                   "through a name service: test_service.sh, not one program run"))
    for opt in ("threads=true", "threads=false", "thread_level=single", "thread_level=funneled",
                "thread_level=serialized", "thread_level=multiple", "fast_reduce=true", "fast_reduce=false",
                "recv_mprobe=true", "recv_mprobe=false", "errors=default", "errors=exception",
                "errors=abort", "errors=fatal"):
        out.append(_ex("init-fini", 2, "test_0.py", opt))
    out += [_ex("init-fini", 2, f"test_{i}.py") for i in range(1, 7)]
    out += [_ex("mandelbrot", 1, "mandelbrot-master.py", skip=NEEDS_FORTRAN + " (mandelbrot-worker.f90)"),
            _ex("mandelbrot", 7, "mandelbrot.py"), _ex("mandelbrot", 1, "mandelbrot-seq.py")]
    out += [_ex("nxtval", 5, p) for p in ("nxtval-threads.py", "nxtval-dynproc.py", "nxtval-onesided.py",
                                          "nxtval-scalable.py", "nxtval-mpi3.py")]
    out += [_ex("reductions", 2, "test_reductions.py", "-q"), _ex("sequential", 2, "test_seq.py")]
    langs = ("py", "c", "cxx", "f90")
    for m in langs:
        for w in langs:
            need = {"c": NEEDS_C, "cxx": "needs a C++ compiler", "f90": NEEDS_FORTRAN}
            skip = need.get(m) or need.get(w) or ""
            out.append(Demo(f"spawning: np1 cpi-master-{m} cpi-worker-{w}", "spawning", 1,
                            ["cpi-master.py", f"./cpi-worker-{w}.exe"] if m == "py" else [], skip=skip))
    out.append(_ex("threads", 1, "sendrecv.py"))
    out.append(_ex("test-run", 1, "test_run.py", "-v"))
    for ex in sorted(p.name for p in (root / "mpi-ref-v1").glob("ex-*.py")):
        out.append(_ex("mpi-ref-v1", 1, ex))
        out.append(_ex("mpi-ref-v1", 2, ex))
    out += [_ex("check-mpiexec", np, "-c", "from mpi4py import MPI", PYTHONWARNINGS="error") for np in (1, 2)]
    out += [_ex("profiling", 8, p) for p in ("cpi.py", "ring.py", "threads.py")]
    for folder, why in (("cython", NEEDS_C + " (Cython)"), ("embedding", NEEDS_C + " (embeds Python)"),
                        ("libmpi-cffi", NEEDS_C + " (cffi)"), ("wrap-c", NEEDS_C),
                        ("wrap-cffi", NEEDS_C + " (cffi)"), ("wrap-ctypes", NEEDS_C + " (a shared library)"),
                        ("wrap-cython", NEEDS_C + " (Cython)"), ("wrap-swig", NEEDS_C + " (SWIG)"),
                        ("wrap-nanobind", "needs a C++ compiler (nanobind)"),
                        ("wrap-pybind11", "needs a C++ compiler (pybind11)"),
                        ("wrap-boost", "needs a C++ compiler (Boost.Python)"),
                        ("wrap-f2py", NEEDS_FORTRAN + " (f2py)"), ("wrap-ctypes-f90", NEEDS_FORTRAN),
                        ("wrap-ctypes-f08", NEEDS_FORTRAN), ("python-config", NEEDS_C + " (builds a program)")):
        out.append(Demo(f"{folder}: (build)", folder, 1, [], skip=why))
    out += [_ex("cuda-aware-mpi", 2, p, skip="needs CUDA") for p in ("use_cupy.py", "use_numba.py")]
    for osu in sorted(p.name for p in root.glob("osu_*.py")):  # the longest runs last
        out.append(_ex(".", 2, osu))
    return out


# -- running ---------------------------------------------------------------------------
def _venv_bin(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else name


def _prepare(root: Path, base: Path) -> Path:
    """A fresh copy of the demo folder (the demos write files) with the spawning scripts,
    beside the sdist's ``test/`` (``futures/test_futures.py`` imports its helpers)."""
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    work = base / "demo"
    shutil.copytree(root, work)
    (base / "test").symlink_to(root.parent / "test")
    for w in ("master", "worker"):
        exe = work / "spawning" / f"cpi-{w}-py.exe"
        exe.write_text(f"#!{sys.executable}\n" + (work / "spawning" / f"cpi-{w}.py").read_text())
        exe.chmod(0o755)
    return work


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    env.update(extra)
    return env


@dataclass
class Outcome:
    status: str  #: ok | error | timeout
    code: int | None
    wall_s: float
    stdout: str
    stderr: str


def run_one(cmd: list[str], cwd: Path, stdin: str, env: dict[str, str], timeout_s: float,
            outdir: Path | None = None) -> Outcome:
    """Run ``cmd``; with ``outdir``, the ranks' outputs are read from the files ``out.*`` /
    ``err.*`` there (mpiexec's ``-outfile-pattern``: the output of one rank's lines stays whole,
    which mpiexec's merged stream does not guarantee)."""
    if outdir is not None:
        shutil.rmtree(outdir, ignore_errors=True)
        outdir.mkdir(parents=True)
    code, wall, stdout, stderr = run_group(cmd, cwd, env, timeout_s, stdin=stdin)
    status = "timeout" if code is None else ("ok" if code == 0 else "error")
    if outdir is not None:
        for kind in ("out", "err"):
            text = "".join(p.read_text(errors="replace") for p in sorted(outdir.glob(f"{kind}.*")))
            if kind == "out":
                stdout += text
            else:
                stderr += text
    return Outcome(status, code, wall, stdout, stderr)


_NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?|\bnan\b|\binf\b")
_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_HOST = re.compile(r"\bnode-\d+\b")


def normalise(text: str) -> list[str]:
    """The output's lines, sorted, with the parts that vary between real runs masked."""
    host = socket.gethostname()
    lines = []
    for line in text.splitlines():
        line = _HOST.sub("<host>", line.replace(host, "<host>") if host else line)
        line = _ADDR.sub("<addr>", line)
        line = _NUM.sub("<num>", line)
        line = line.replace("\0", "")  # name buffers sent whole (futures/run_hello.py)
        lines.append(" ".join(line.split()))  # column widths follow the numbers
    return sorted(lines)


def compare(mpich: Outcome, smpy: Outcome) -> str:
    """'' when the runs agree, else what differs."""
    if mpich.status != smpy.status:
        return f"status: MPICH {mpich.status} ({mpich.code}), smpy {smpy.status} ({smpy.code})"
    a, b = normalise(mpich.stdout), normalise(smpy.stdout)
    if a != b:
        only_a = [x for x in a if x not in b][:3]
        only_b = [x for x in b if x not in a][:3]
        return f"stdout: MPICH only {only_a}, smpy only {only_b} ({len(a)} vs {len(b)} lines)"
    va, vb = verdicts(mpich.stderr), verdicts(smpy.stderr)
    if va != vb:
        return f"unittest verdicts on stderr: MPICH {va}, smpy {vb}"
    return ""


#: a verdict may follow another rank's progress marks on its line: MPICH's ranks write to files
#: of their own here, smpy's share one standard error, where rank 0's last "." and rank 1's
#: "OK" can meet as ".OK" (the order of the ranks' writes follows their simulated times)
_VERDICT = re.compile(r"^[.sxuEF]*(Ran \d+ tests?\b.*|OK\b.*|FAILED \(.*)$", re.M)


def verdicts(stderr: str) -> list[str]:
    """unittest's summary lines (``Ran N tests``, ``OK``, ``FAILED (...)``) of every rank."""
    return sorted(m.group(1).split(" in ")[0].strip() for m in _VERDICT.finditer(stderr))


def commands(d: Demo, outdir: Path) -> tuple[list[str], list[str]]:
    mpich = [_venv_bin("mpiexec"), "-outfile-pattern", f"{outdir}/out.%g.%r", "-errfile-pattern",
             f"{outdir}/err.%g.%r", "-n", str(d.np), sys.executable, *d.argv]
    smpy = [_venv_bin("smpyrun"), "-np", str(d.np), "-q", *d.argv]
    return mpich, smpy


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-k", dest="select", default="", help="only the runs whose id matches this regex")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help="per run and backend, seconds")
    ap.add_argument("--json", default="", help="write the details to this file")
    ap.add_argument("--demo-dir", default="", help="an unpacked demo/ folder (default: the sdist's)")
    ns = ap.parse_args(argv)
    root = Path(ns.demo_dir) if ns.demo_dir else fetch_suite().parent / "demo"
    runs = [d for d in demos(root) if re.search(ns.select, d.id)]
    work = {b: _prepare(root, CACHE / "demo-runs" / b) for b in ("mpich", "smpy")}
    made = agree = 0
    details = []
    t0 = time.perf_counter()
    for d in runs:
        if d.skip or not d.argv:
            print(f"SKIP   {d.id}: {d.skip}")
            details.append({"id": d.id, "skip": d.skip})
            continue
        outdir = CACHE / "demo-runs" / "mpich-out"
        cm, cs = commands(d, outdir)
        env = _env(d.env)
        om = run_one(cm, work["mpich"] / d.folder, d.stdin, env, ns.timeout, outdir)
        os_ = run_one(cs, work["smpy"] / d.folder, d.stdin, env, ns.timeout)
        diff = compare(om, os_)
        made += 1
        agree += not diff
        print(f"{'AGREE ' if not diff else 'DIFFER'} {d.id}  [MPICH {om.status} {om.wall_s:.1f} s, "
              f"smpy {os_.status} {os_.wall_s:.1f} s]" + (f"\n       {diff}" if diff else ""), flush=True)
        if diff and os_.stderr.strip():
            print("       smpy stderr: " + " | ".join(os_.stderr.strip().splitlines()[-3:])[:400])
        details.append({"id": d.id, "np": d.np, "argv": d.argv, "agree": not diff, "diff": diff,
                        "mpich": asdict(om), "smpy": asdict(os_)})
    skipped = sum(1 for x in details if "skip" in x)
    print(f"\ndemo/: {agree}/{made} runs agree (smpyrun vs mpiexec, MPICH); {skipped} not made "
          f"(compiler/Fortran/CUDA/internet); {time.perf_counter() - t0:.0f} s")
    if ns.json:
        Path(ns.json).write_text(json.dumps({"agree": agree, "made": made, "skipped": skipped,
                                             "runs": details}, indent=1) + "\n")
    return 0 if agree == made else 1


if __name__ == "__main__":
    sys.exit(main())
