"""A third-party pytest-based MPI test suite under smpy and under MPICH, test by test.

The suite is PyLops-MPI's (``pylops-mpi`` on PyPI, version ``VERSION``): its sdist ships
``tests/`` (519 tests, each run by every rank; ``tests/conftest.py`` appends ``[Rank r]`` to
the test ids), pure Python over numpy, scipy, PyLops and PyProximal. The sdist and those
packages (pinned below, with pytest 8: the suite's conftest sets ``item._nodeid``, which pytest
9 no longer has) are fetched with pip into ``conformance/.cache/pylops-mpi`` at first use.

* **MPICH**: ``mpiexec -n N python -m pytest tests -v`` with ``-outfile-pattern`` (one output
  file per rank);
* **smpy**: ``smpyrun -np N -m pytest tests -v`` as ``smpy.cli.launch.run`` (what smpyrun
  calls, with ``module="pytest"``) with the output captured per rank.

Each rank's ``-v`` lines give one outcome per test id; the figure is the number of (test,
rank) outcomes that are the same under both, out of all seen. ``-k EXPR`` and ``--files``
select tests as pytest does. ``python conformance/run_pytest_suite.py -n 2`` prints the
differing tests and the figure; ``--json FILE`` keeps them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run as a script: the repository's root, for conformance
    sys.path.insert(0, str(HERE.parent))

from conformance.procs import run_group  # noqa: E402

CACHE = HERE / ".cache" / "pylops-mpi"
VERSION = "0.8.0"
#: the packages the suite needs beyond the venv's (numpy, mpi4py, matplotlib), pinned
PACKAGES = [f"pylops-mpi=={VERSION}", "pylops==2.8.0", "pyproximal==0.13.0", "scipy==1.17.1", "pytest==8.3.5"]
TIMEOUT_S = 3600.0
_LINE = re.compile(r"^(\S+::.+?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b", re.M)
_COLLECT_ERR = re.compile(r"^ERROR (\S+\.py)\b", re.M)


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def fetch(cache: Path = CACHE) -> tuple[Path, Path]:
    """(the unpacked sdist, the directory the packages are installed in)."""
    src = cache / f"pylops_mpi-{VERSION}"
    site = cache / "site"
    if not (src / "tests").is_dir():
        dl = cache / "dl"
        dl.mkdir(parents=True, exist_ok=True)
        sdist = dl / f"pylops_mpi-{VERSION}.tar.gz"
        if not sdist.exists():
            _pip("download", "--no-deps", "--no-binary", "pylops-mpi", "-d", str(dl), f"pylops-mpi=={VERSION}")
        with tarfile.open(sdist) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(cache, filter="data")
            else:  # Python < 3.11.4
                tf.extractall(cache)
    if not (site / "pylops_mpi").is_dir():
        _pip("install", "--no-deps", "--target", str(site), *PACKAGES)
    return src, site


def _env(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH", "")])])
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> tuple[int | None, float, str]:
    code, wall, out, _ = run_group(cmd, cwd, env, timeout_s, merge_stderr=True)
    return code, wall, out


def pytest_args(files: list[str], select: str) -> list[str]:
    args = ["-v", "-p", "no:cacheprovider", *(files or ["tests"])]
    return args + (["-k", select] if select else [])


def run_mpich(src: Path, site: Path, np_: int, args: list[str], timeout_s: float,
              outroot: Path = CACHE / "runs", tag: str = "", extra_env: dict[str, str] | None = None) -> tuple[list[str], dict]:
    outdir = outroot / f"mpich-np{np_}{tag}"
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    cmd = [str(mpiexec) if mpiexec.exists() else "mpiexec", "-outfile-pattern", f"{outdir}/out.%r",
           "-errfile-pattern", f"{outdir}/err.%r", "-n", str(np_), sys.executable, "-m", "pytest", *args]
    code, wall, text = _run(cmd, src, {**_env(site), **(extra_env or {})}, timeout_s)
    ranks = [(outdir / f"out.{r}").read_text(errors="replace") if (outdir / f"out.{r}").exists() else ""
             for r in range(np_)]
    return ranks, {"code": code, "wall_s": wall, "launcher": text[-2000:]}


SMPY_DRIVER = '''\
import json, sys
from smpy.cli.launch import run
np_, outdir, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
res = run(None, np=np_, module="pytest", args=args, capture=True, echo=False)
for r in range(np_):
    with open(f"{outdir}/out.{r}", "w") as f:
        f.write(res.rank_output(r) + res.rank_output(r, "stderr"))
print(json.dumps({"status": res.status, "exit_code": res.exit_code, "message": res.message[-2000:]}))
'''


def run_smpy(src: Path, site: Path, np_: int, args: list[str], timeout_s: float,
             outroot: Path = CACHE / "runs", tag: str = "") -> tuple[list[str], dict]:
    outdir = outroot / f"smpy-np{np_}{tag}"
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    cmd = [sys.executable, "-c", SMPY_DRIVER, str(np_), str(outdir), *args]
    code, wall, text = _run(cmd, src, _env(site), timeout_s)
    ranks = [(outdir / f"out.{r}").read_text(errors="replace") if (outdir / f"out.{r}").exists() else ""
             for r in range(np_)]
    return ranks, {"code": code, "wall_s": wall, "driver": text[-2000:]}


def outcomes(ranks: list[str]) -> dict[str, str]:
    """Test id (with the conftest's ``[Rank r]``, else ``@r`` appended) -> outcome."""
    out: dict[str, str] = {}
    for r, text in enumerate(ranks):
        for m in _LINE.finditer(text):
            tid = m.group(1)
            if "[Rank " not in tid:
                tid = f"{tid}@{r}"
            out[tid] = m.group(2)
        for m in _COLLECT_ERR.finditer(text):
            out[f"{m.group(1)} (collection)@{r}"] = "ERROR"
    return out


def compare(mpich: dict[str, str], smpy: dict[str, str]) -> tuple[int, int, list[tuple[str, str, str]]]:
    ids = sorted(set(mpich) | set(smpy))
    diff = [(t, mpich.get(t, "missing"), smpy.get(t, "missing")) for t in ids if mpich.get(t) != smpy.get(t)]
    return len(ids) - len(diff), len(ids), diff


#: MPICH's ranks busy-poll: on a machine with fewer cores than ranks (np 4 on 2 cores) they
#: take turns only at the scheduler's tick; with this they yield while they wait (outcomes
#: are unchanged, the run takes less of the machine)
YIELD_ENV = {"MPIR_CVAR_ENABLE_HEAVY_YIELD": "1"}


def test_files(src: Path) -> list[str]:
    return sorted(f"tests/{p.name}" for p in (src / "tests").glob("test_*.py"))


def run_both(src: Path, site: Path, n: int, args: list[str], timeout_s: float, tag: str = "",
             yield_env: bool = False) -> tuple[dict[str, str], dict[str, str], dict, dict]:
    """Both runs of one selection, at the same time (outcomes only: neither is timed against
    the other)."""
    with ThreadPoolExecutor(2) as pool:
        mf = pool.submit(run_mpich, src, site, n, args, timeout_s, tag=tag, extra_env=YIELD_ENV if yield_env else None)
        sf = pool.submit(run_smpy, src, site, n, args, timeout_s, tag=tag)
        (m_ranks, m_info), (s_ranks, s_info) = mf.result(), sf.result()
    return outcomes(m_ranks), outcomes(s_ranks), m_info, s_info


def per_test_table(m: dict[str, str], s: dict[str, str]) -> list[str]:
    """One line per test: its id, then the outcome of each rank under MPICH and under smpy
    (``P`` passed, ``F`` failed, ``E`` error, ``S`` skipped, ``x``/``X`` xfail/xpass, ``-`` none)."""
    code = {"PASSED": "P", "FAILED": "F", "ERROR": "E", "SKIPPED": "S", "XFAIL": "x", "XPASS": "X"}
    by_test: dict[str, dict[str, tuple[str, str]]] = {}
    for tid in sorted(set(m) | set(s)):
        base, rank = tid.rsplit("[Rank ", 1) if "[Rank " in tid else tid.rsplit("@", 1)
        by_test.setdefault(base, {})[rank.rstrip("]")] = (code.get(m.get(tid, ""), "-"), code.get(s.get(tid, ""), "-"))
    lines = []
    for base, ranks in by_test.items():
        order = sorted(ranks, key=lambda r: (len(r), r))
        mm, ss = "".join(ranks[r][0] for r in order), "".join(ranks[r][1] for r in order)
        lines.append(f"{'same' if mm == ss else 'DIFF'}  MPICH {mm:<4}  smpy {ss:<4}  {base}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", dest="np", type=int, nargs="+", default=[2])
    ap.add_argument("-k", dest="select", default="", help="pytest's -k expression")
    ap.add_argument("--files", nargs="*", default=[], help="test files (default: tests)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S)
    ap.add_argument("--json", default="")
    ap.add_argument("--per-file", action="store_true",
                    help="one run per test file under each (each file within --timeout; outcomes merged)")
    ap.add_argument("--yield", dest="yield_env", action="store_true",
                    help=f"MPICH's ranks yield while they wait ({', '.join(f'{k}={v}' for k, v in YIELD_ENV.items())})")
    ap.add_argument("--table", default="", help="write the per-test comparison (one line per test) here")
    ns = ap.parse_args(argv)
    src, site = fetch()
    report = {}
    ok = True
    for n in ns.np:
        groups = [[f] for f in (ns.files or test_files(src))] if ns.per_file else [ns.files]
        m, s, m_info, s_info = {}, {}, {"wall_s": 0.0, "files": {}}, {"wall_s": 0.0, "files": {}}
        for files in groups:
            tag = f"-{Path(files[0]).stem}" if ns.per_file else ""
            mg, sg, mi, si = run_both(src, site, n, pytest_args(files, ns.select), ns.timeout, tag, ns.yield_env)
            m.update(mg)
            s.update(sg)
            for info, got in ((m_info, mi), (s_info, si)):
                info["wall_s"] += got["wall_s"]
                info["files"][" ".join(files) or "tests"] = {k: v for k, v in got.items() if k != "wall_s"} | {"wall_s": got["wall_s"]}
            if ns.per_file:
                print(f"  {files[0]}: MPICH {len(mg)} outcomes ({mi['wall_s']:.0f} s, exit {mi['code']}), "
                      f"smpy {len(sg)} ({si['wall_s']:.0f} s, exit {si['code']})", flush=True)
        if ns.table:
            Path(ns.table).write_text("\n".join(per_test_table(m, s)) + "\n")
        same, total, diff = compare(m, s)
        passed = sum(1 for v in m.values() if v == "PASSED")
        print(f"np {n}: {same}/{total} (test, rank) outcomes the same under smpyrun -np {n} -m pytest and "
              f"mpiexec -n {n} python -m pytest; {passed} passed under MPICH, "
              f"{sum(1 for v in s.values() if v == 'PASSED')} under smpy "
              f"[MPICH {m_info['wall_s']:.0f} s, smpy {s_info['wall_s']:.0f} s]")
        for t, a, b in diff[:40]:
            print(f"   {t}: MPICH {a}, smpy {b}")
        for name, info, got in (("MPICH", m_info, m), ("smpy", s_info, s)):
            if not got:
                print(f"   no outcome parsed from {name}:", info)
        ok = ok and not diff and bool(m)
        report[str(n)] = {"same": same, "total": total, "diff": diff, "mpich": m_info, "smpy": s_info}
    if ns.json:
        Path(ns.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
