"""mpi4py's own test suite under smpy, compared test by test with real MPICH.

    python conformance/run_suite.py                 # N = 1 2 3 4, every module
    python conformance/run_suite.py -n 1 2 -i p2p   # modules matching a regex
    python conformance/run_suite.py --backend smpy  # reuse MPICH's outcomes from results/

For each N and each module ``test_*.py`` of the suite (spawn is always left out,
as in mpi4py's CI with ``-e spawn``), the module runs under

* MPICH: ``<venv>/bin/mpiexec -n N <venv>/bin/python rank_wrapper.py test/main.py -v -i <module>``
  (each rank writes its own log file);
* smpy: ``smpy_driver.py`` (``smpy.run(rank_wrapper.py, np=N, capture=True)`` in a subprocess),
  with the patterns of ``exclusions.txt`` passed to ``main.py --xfile``.

Outcomes are parsed per test and per rank (the worst outcome over the ranks counts), written to
``conformance/results/np<N>.json`` and summarised in a table per N.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.parse import PASSED, RankReport, banner_library, parse_rank_output, worst

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
RESULTS = HERE / "results"
EXCLUSIONS = HERE / "exclusions.txt"
WRAPPER = HERE / "rank_wrapper.py"
DRIVER = HERE / "smpy_driver.py"
BIN = Path(sys.executable).parent  # the venv's bin: python, mpiexec (mpich wheel), smpy
ALWAYS_EXCLUDED = re.compile(r"spawn")
DEFAULT_VERSION = "4.1.2"
KILL_GRACE_S = 20.0


# -- the suite -----------------------------------------------------------------------------
def mpi4py_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mpi4py")
    except PackageNotFoundError:
        return DEFAULT_VERSION


def fetch_suite(version: str | None = None, cache: Path = CACHE) -> Path:
    """The ``test/`` folder of the mpi4py sdist, downloaded with pip into ``cache`` if missing."""
    version = version or mpi4py_version()
    root = cache / f"mpi4py-{version}"
    if (root / "test" / "main.py").exists():
        return root / "test"
    dl = cache / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    sdist = dl / f"mpi4py-{version}.tar.gz"
    if not sdist.exists():
        # --no-binary mpi4py (not :all:): pip prepares the sdist's metadata and would otherwise
        # build every build dependency from source too (minutes instead of seconds)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "mpi4py",
               "-d", str(dl), f"mpi4py=={version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not sdist.exists():
            raise RuntimeError(f"cannot download the mpi4py {version} sdist ({' '.join(cmd)}):\n"
                               f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    tmp = cache / f".unpack-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(sdist) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(tmp, filter="data")
        else:  # Python < 3.11.4: the sdist comes from PyPI through pip
            tf.extractall(tmp)
    shutil.rmtree(root, ignore_errors=True)
    (tmp / f"mpi4py-{version}").rename(root)
    shutil.rmtree(tmp, ignore_errors=True)
    return root / "test"


def list_modules(testdir: Path, include: list[str] | None = None,
                 exclude: list[str] | None = None) -> list[str]:
    mods = sorted(p.stem for p in testdir.glob("test_*.py"))
    mods = [m for m in mods if not ALWAYS_EXCLUDED.search(m)]
    if include:
        inc = re.compile("|".join(include))
        mods = [m for m in mods if inc.search(m)]
    if exclude:
        exc = re.compile("|".join(exclude))
        mods = [m for m in mods if not exc.search(m)]
    return mods


# -- exclusions ----------------------------------------------------------------------------
@dataclass
class Exclusion:
    """A line of ``exclusions.txt``: a test-id pattern, or ``backend=NAME`` (an array backend
    of the suite's ``arrayimpl`` left out under smpy, for crashes inside subtests)."""

    pattern: str  # as written in the file
    reason: str

    @property
    def backend(self) -> str | None:
        return self.pattern.removeprefix("backend=") if self.pattern.startswith("backend=") else None

    @property
    def glob(self) -> str:  # what main.py's parse_pattern() makes of it
        return self.pattern if "*" in self.pattern else f"*{self.pattern}*"

    def matches(self, test_id: str) -> bool:
        return self.backend is None and fnmatch.fnmatchcase(test_id, self.glob)


def load_exclusions(path: Path = EXCLUSIONS) -> list[Exclusion]:
    """``pattern  # reason`` lines; blank lines and ``#`` comment lines are ignored."""
    out: list[Exclusion] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        pat, _, reason = line.partition("#")
        pat = pat.strip()
        if pat:
            out.append(Exclusion(pat, reason.strip()))
    return out


def exclusion_for(test_id: str, exclusions: list[Exclusion]) -> Exclusion | None:
    return next((x for x in exclusions if x.matches(test_id)), None)


def skipped_backends(exclusions: list[Exclusion]) -> list[str]:
    return [x.backend for x in exclusions if x.backend]


# -- running -------------------------------------------------------------------------------
@dataclass
class ModuleRun:
    """One backend's run of some modules at one N."""

    backend: str
    np: int
    status: str  # ok | timeout | exit <code> | smpy's status (error, deadlock, interrupted ...)
    wall_s: float
    ranks: list[RankReport]
    message: str = ""  # smpy's run message / the tail of mpiexec's output
    library: str = ""  # 'MPI 4.1 (MPICH ...)' from the banner

    @property
    def completed(self) -> bool:
        return self.status == "ok" and all(r.completed for r in self.ranks) and bool(self.ranks)


def _env(logdir: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env.pop("SMPY_CONFORMANCE_LOGDIR", None)
    env.pop("SMPY_CONFORMANCE_SKIP_BACKENDS", None)
    if logdir is not None:
        env["SMPY_CONFORMANCE_LOGDIR"] = str(logdir)
    return env


def _run_group(cmd: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
               out_path: Path) -> tuple[int | None, float]:
    """Run ``cmd`` in its own process group; kill the group after ``timeout_s``.

    Returns (exit code or None on timeout, wall seconds)."""
    t0 = time.perf_counter()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            try:  # mpiexec's proxies and ranks, or a rank's leftover children
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    return code, time.perf_counter() - t0


def _read_ranks(logdir: Path, np: int) -> tuple[list[RankReport], str]:
    reports, library = [], ""
    for r in range(np):
        f = logdir / f"rank{r}.log"
        text = f.read_text(errors="replace") if f.exists() else ""
        if r == 0:
            library = banner_library(text)
        reports.append(parse_rank_output(text))
    return reports, library


def _main_args(modules: list[str]) -> list[str]:
    args = ["-v"]
    for m in modules:
        args += ["-i", f"^{re.escape(m)}\\.py$"]
    return args


def run_mpich(testdir: Path, modules: list[str], np: int, workdir: Path,
              timeout_s: float = 120.0, mpiexec: Path = BIN / "mpiexec") -> ModuleRun:
    logdir = workdir / "mpich" / f"np{np}" / "+".join(modules)
    shutil.rmtree(logdir, ignore_errors=True)
    logdir.mkdir(parents=True)
    cmd = [str(mpiexec), "-n", str(np), sys.executable, str(WRAPPER), str(testdir / "main.py"),
           *_main_args(modules)]
    env = _env(logdir)
    env["MPIEXEC_TIMEOUT"] = str(int(timeout_s) + 5)  # hydra's own guard, after ours
    code, wall = _run_group(cmd, testdir.parent, env, timeout_s, logdir / "mpiexec.log")
    ranks, library = _read_ranks(logdir, np)
    status = "timeout" if code is None else "ok" if code == 0 else f"exit {code}"
    tail = "" if status == "ok" else _tail(logdir / "mpiexec.log")
    return ModuleRun("mpich", np, status, wall, ranks, tail, library)


def run_smpy(testdir: Path, modules: list[str], np: int, workdir: Path,
             timeout_s: float = 120.0, exclusions: list[Exclusion] | None = None) -> ModuleRun:
    logdir = workdir / "smpy" / f"np{np}" / "+".join(modules)
    shutil.rmtree(logdir, ignore_errors=True)
    logdir.mkdir(parents=True)
    args = _main_args(modules)
    patterns = [x.pattern for x in exclusions or [] if x.backend is None]
    if patterns:
        xfile = logdir / "xfile.txt"  # main.py reads one pattern per line, no comments
        xfile.write_text("".join(f"{p}\n" for p in patterns))
        args += ["--xfile", str(xfile)]
    env = _env()
    backends = skipped_backends(exclusions or [])
    if backends:
        env["SMPY_CONFORMANCE_SKIP_BACKENDS"] = ",".join(backends)
    cmd = [sys.executable, str(DRIVER), str(np), str(logdir), str(timeout_s),
           str(testdir / "main.py"), *args]
    code, wall = _run_group(cmd, testdir.parent, env, timeout_s + KILL_GRACE_S,
                            logdir / "driver.log")
    ranks, library = _read_ranks(logdir, np)
    info: dict[str, Any] = {}
    if (logdir / "run.json").exists():
        info = json.loads((logdir / "run.json").read_text())
    if code is None:
        status = "timeout"
    elif not info:
        status = f"exit {code}"
    else:
        status = str(info.get("status", "?"))
        if status == "interrupted":
            status = "timeout"
    message = str(info.get("message", "")) or ("" if status == "ok" else _tail(logdir / "driver.log", 200))
    return ModuleRun("smpy", np, status, wall, ranks, message.strip(), library)


def _tail(path: Path, lines: int = 15) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# -- outcomes ------------------------------------------------------------------------------
@dataclass
class TestOutcome:
    outcome: str
    message: str = ""  # first error line, skip reason, exclusion reason or crash cause


@dataclass
class BackendModule:
    """Per-test outcomes of one module under one backend, combined over the ranks."""

    status: str
    wall_s: float
    tests: dict[str, TestOutcome] = field(default_factory=dict)
    crash_at: list[str] = field(default_factory=list)  # tests running when it died
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"status": self.status, "wall_s": round(self.wall_s, 2)}
        if self.crash_at:
            d["crash_at"] = self.crash_at
        if self.message and self.status != "ok":
            d["message"] = self.message[-3000:]
        return d


def combine(run: ModuleRun, module: str, universe: set[str],
            exclusions: list[Exclusion] | None = None) -> BackendModule:
    """Outcomes of ``module``'s tests (``universe`` ∪ the tests reported) under ``run``."""
    prefix = module + "."
    reported: dict[str, TestOutcome] = {}
    fixture: dict[str, str] = {}
    unfinished: list[str] = []
    for rep in run.ranks:
        for tid, out in rep.outcomes.items():
            if not tid.startswith(prefix):
                continue
            old = reported.get(tid)
            if old is None or worst(old.outcome, out) != old.outcome:
                msg = rep.messages.get(tid) or rep.details.get(tid, "")
                reported[tid] = TestOutcome(out, msg)
        for key, msg in rep.fixture_errors.items():
            if key == module or key.startswith(prefix):
                fixture.setdefault(key, msg)
        unfinished += [t for t in rep.unfinished if t.startswith(prefix) and t not in unfinished]
    tests = sorted(universe | set(reported))
    bm = BackendModule(run.status, run.wall_s, message=run.message)
    if not run.completed:
        if not unfinished:  # died between tests: blame the last one that reported
            last = [rep.started[-1] for rep in run.ranks if rep.started and rep.started[-1].startswith(prefix)]
            unfinished = last[:1]
        cause = crash_cause(run)
        if unfinished:
            cause += f" (in {unfinished[0]})"
        bm.crash_at = unfinished
        bm.tests = {t: TestOutcome("crash", cause) for t in tests}
        return bm
    for t in tests:
        if t in reported:
            bm.tests[t] = reported[t]
            continue
        x = exclusion_for(t, exclusions or [])
        cls = t.rsplit(".", 1)[0]
        if x is not None:
            bm.tests[t] = TestOutcome("excluded", x.reason)
        elif cls in fixture:
            bm.tests[t] = TestOutcome("ERROR", fixture[cls])
        elif module in fixture:
            bm.tests[t] = TestOutcome("ERROR", fixture[module])
        else:
            bm.tests[t] = TestOutcome("missing", "not reported")
    return bm


_SIGNALS = {6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}


def crash_cause(run: ModuleRun) -> str:
    """One line saying why a module's run did not complete."""
    lines = [line.strip() for line in run.message.splitlines() if line.strip()]
    if run.status == "deadlock":
        blocked = next((line for line in lines if "blocked in" in line), "")
        return "deadlock: " + re.sub(r"^\[smpy\]\s*", "", blocked)
    if run.status == "timeout":
        return "hang: no end before the timeout"
    m = re.fullmatch(r"exit (-?\d+)", run.status)
    code = int(m[1]) if m else 0
    sig = -code if code < 0 else code - 128 if code > 128 else 0
    if sig:
        where = ""
        try:  # faulthandler's dump: the innermost frame comes first
            i = next(i for i, line in enumerate(lines) if line.startswith(("Current thread", "Thread 0x")))
            f = re.search(r'File "([^"]+)", line (\d+) in (\S+)', lines[i + 1])
            if f:
                where = f" in {Path(f[1]).name}:{f[2]} {f[3]}"
        except (StopIteration, IndexError):
            pass
        return f"crash: signal {_SIGNALS.get(sig, sig)}{where}"
    if run.status == "error":  # an exception escaped a rank: its last line names it
        exc = [line for line in lines if not line.startswith("[smpy]")]
        last = re.sub(r"^\[rank \d+@[^\]]*\]\s*", "", exc[-1]) if exc else lines[-1] if lines else ""
        return f"error: {last}"
    if run.status == "ok":
        return "run ended before unittest's report"
    return f"{run.status}: {lines[-1] if lines else ''}"


def module_universe(run: ModuleRun, module: str) -> set[str]:
    prefix = module + "."
    return {t for rep in run.ranks for t in (*rep.outcomes, *rep.started) if t.startswith(prefix)}


def normalized(outcome: str) -> str:
    return "passed" if outcome in PASSED else outcome


# -- results -------------------------------------------------------------------------------
def failure_key(message: str) -> str:
    """Group key of a failure: the message with numbers and addresses blanked."""
    key = re.sub(r"0x[0-9a-fA-F]+", "0x…", message)
    key = re.sub(r"(?<![\w'])-?\d+(\.\d+)?(e-?\d+)?", "N", key)
    return key[:200]


def summarize(modules: dict[str, dict[str, Any]], np: int) -> dict[str, Any]:
    tot: Counter[str] = Counter()
    per_module: dict[str, dict[str, int]] = {}
    for mod, d in modules.items():
        c: Counter[str] = Counter()
        for t in d["tests"].values():
            m, s = t["mpich"], t["smpy"]
            c["tests"] += 1
            c["mpich_passed"] += m in PASSED
            c["smpy_passed"] += s in PASSED
            c["both_passed"] += m in PASSED and s in PASSED
            c["same_outcome"] += normalized(m) == normalized(s)
            c["mpich_skipped"] += m == "skipped"
            c["smpy_skipped"] += s == "skipped"
            c["smpy_excluded"] += s == "excluded"
            c["smpy_crash"] += s == "crash"
            c["smpy_failed"] += s in ("FAIL", "ERROR", "unexpected success", "missing")
        per_module[mod] = dict(c)
        tot.update(c)
    total = dict(tot)
    total["ratio"] = round(tot["both_passed"] / tot["mpich_passed"], 4) if tot["mpich_passed"] else 0.0
    return {"np": np, "total": total, "modules": per_module}


def failure_areas(modules: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Tests passing under MPICH but not under smpy, grouped by smpy's first error line."""
    groups: dict[str, dict[str, Any]] = {}
    for mod, d in modules.items():
        for tid, t in d["tests"].items():
            if t["mpich"] not in PASSED or t["smpy"] in PASSED:
                continue
            msg = t.get("smpy_message") or t["smpy"]
            key = f"{t['smpy']}: {failure_key(msg)}"
            g = groups.setdefault(key, {"key": key, "outcome": t["smpy"], "count": 0,
                                        "modules": Counter(), "example_test": tid, "example_message": msg})
            g["count"] += 1
            g["modules"][mod] += 1
    out = sorted(groups.values(), key=lambda g: (-g["count"], g["key"]))
    for g in out:
        g["modules"] = dict(g["modules"].most_common())
    return out


def compare_module(module: str, mpich: ModuleRun | None, smpy: ModuleRun | None,
                   exclusions: list[Exclusion], mpich_saved: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """The per-test comparison of one module (JSON-ready)."""
    saved_tests = (mpich_saved or {}).get("tests", {})
    universe = module_universe(mpich, module) if mpich is not None else set(saved_tests)
    if smpy is not None:
        universe |= module_universe(smpy, module)
    entry: dict[str, Any] = {}
    if mpich is not None:
        mb = combine(mpich, module, universe)
        entry["mpich"] = mb.to_json()
        if mpich.library:
            entry["mpich"]["library"] = mpich.library
        mtests = {t: (o.outcome, o.message) for t, o in mb.tests.items()}
    else:
        entry["mpich"] = dict((mpich_saved or {}).get("mpich", {"status": "not run"}), reused=True)
        mtests = {t: (v["mpich"], v.get("mpich_message", "")) for t, v in saved_tests.items()}
    sb = combine(smpy, module, universe, exclusions) if smpy is not None else None
    if sb is not None:
        entry["smpy"] = sb.to_json()
    tests: dict[str, Any] = {}
    for t in sorted(universe | set(mtests)):
        m_out, m_msg = mtests.get(t, ("missing", ""))
        s = sb.tests.get(t, TestOutcome("missing")) if sb is not None else TestOutcome("not run")
        rec: dict[str, Any] = {"mpich": m_out, "smpy": s.outcome}
        if m_msg and m_out not in PASSED:
            rec["mpich_message"] = m_msg
        if s.message and s.outcome not in PASSED:
            rec["smpy_message"] = s.message
        tests[t] = rec
    entry["tests"] = tests
    return entry


def dump_results(out: dict[str, Any]) -> str:
    """JSON with one line per test record (diff-friendly, a third of the indented size)."""
    text = json.dumps(out, indent=1)
    return re.sub(r'\{\n\s*("(?:mpich|smpy)": [^{}\[\]]*?)\n\s*\}',
                  lambda m: "{" + re.sub(r"\n\s*", " ", m[1]) + "}", text) + "\n"


def results_path(np: int, results: Path = RESULTS) -> Path:
    return results / f"np{np}.json"


def load_results(np: int, results: Path = RESULTS) -> dict[str, Any] | None:
    p = results_path(np, results)
    return json.loads(p.read_text()) if p.exists() else None


# -- reporting -----------------------------------------------------------------------------
def format_table(summary: dict[str, Any]) -> str:
    tot = summary["total"]
    lines = [
        f"== N = {summary['np']}: {tot.get('tests', 0)} tests; passed under MPICH "
        f"{tot.get('mpich_passed', 0)}, under smpy {tot.get('smpy_passed', 0)}, under both "
        f"{tot.get('both_passed', 0)} -> ratio both/MPICH {tot['ratio']:.1%} "
        f"(same outcome {tot.get('same_outcome', 0)}, smpy excluded {tot.get('smpy_excluded', 0)}, "
        f"crashed {tot.get('smpy_crash', 0)})",
        f"{'module':<24} {'tests':>5} {'mpich':>5} {'smpy':>5} {'both':>5} {'ratio':>6} "
        f"{'skipM':>5} {'skipS':>5} {'excl':>4} {'crash':>5} {'fail':>4}",
    ]
    for mod, c in sorted(summary["modules"].items()):
        ratio = c.get("both_passed", 0) / c["mpich_passed"] if c.get("mpich_passed") else float("nan")
        lines.append(
            f"{mod:<24} {c.get('tests', 0):>5} {c.get('mpich_passed', 0):>5} {c.get('smpy_passed', 0):>5} "
            f"{c.get('both_passed', 0):>5} {ratio:>6.0%} {c.get('mpich_skipped', 0):>5} "
            f"{c.get('smpy_skipped', 0):>5} {c.get('smpy_excluded', 0):>4} {c.get('smpy_crash', 0):>5} "
            f"{c.get('smpy_failed', 0):>4}")
    return "\n".join(lines)


def format_failures(areas: list[dict[str, Any]], top: int = 40) -> str:
    lines = [f"-- failing areas (passed under MPICH, not under smpy), {len(areas)} groups:"]
    for g in areas[:top]:
        mods = ", ".join(f"{m} {n}" for m, n in list(g["modules"].items())[:4])
        more = "" if len(g["modules"]) <= 4 else f", +{len(g['modules']) - 4} modules"
        lines.append(f"{g['count']:>5}  {g['outcome']}: {g['example_message'][:150]}")
        lines.append(f"       [{mods}{more}] e.g. {g['example_test']}")
    return "\n".join(lines)


# -- main ----------------------------------------------------------------------------------
def smpy_revision() -> str:
    """``git describe --always --dirty`` of the smpy checkout (read-only), or ''."""
    try:
        proc = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE.parent,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def run_np(np: int, testdir: Path, modules: list[str], backend: str, timeout_s: float,
           exclusions: list[Exclusion], workdir: Path, jobs: int, results: Path,
           quiet: bool = False) -> dict[str, Any]:
    saved = load_results(np, results) or {}
    saved_modules: dict[str, Any] = saved.get("modules", {})
    if backend == "smpy":
        missing = [m for m in modules if m not in saved_modules]
        if missing:
            raise SystemExit(f"--backend smpy needs MPICH's outcomes in {results_path(np, results)} "
                             f"for {', '.join(missing)}; run with --backend both first")

    def one(mod: str) -> tuple[str, dict[str, Any]]:
        mp = run_mpich(testdir, [mod], np, workdir, timeout_s) if backend in ("both", "mpich") else None
        sm = run_smpy(testdir, [mod], np, workdir, timeout_s, exclusions) if backend in ("both", "smpy") else None
        if sm is None:  # mpich only: keep smpy's previous outcomes
            entry = compare_module(mod, mp, None, exclusions)
            old = saved_modules.get(mod, {})
            for tid, rec in entry["tests"].items():
                prev = old.get("tests", {}).get(tid, {})
                rec["smpy"] = prev.get("smpy", "not run")
                if "smpy_message" in prev:
                    rec["smpy_message"] = prev["smpy_message"]
            if "smpy" in old:
                entry["smpy"] = old["smpy"]
        else:
            entry = compare_module(mod, mp, sm, exclusions, saved_modules.get(mod))
        if not quiet:
            c = Counter(r["smpy"] for r in entry["tests"].values())
            cm = Counter(r["mpich"] for r in entry["tests"].values())
            print(f"[np={np}] {mod:<24} mpich {entry['mpich'].get('status')} "
                  f"{dict(cm.most_common())} | smpy {entry.get('smpy', {}).get('status')} "
                  f"{dict(c.most_common())}", flush=True)
        return mod, entry

    if jobs > 1:
        with ThreadPoolExecutor(jobs) as ex:
            done = dict(ex.map(one, modules))
    else:
        done = dict(map(one, modules))
    all_modules = dict(saved_modules)
    all_modules.update(done)
    all_modules = dict(sorted(all_modules.items()))
    summary = summarize(all_modules, np)
    out = {
        "suite": f"mpi4py {testdir.parent.name.removeprefix('mpi4py-')} test/ (main.py -v, -e spawn)",
        "np": np,
        "mpi_library": next((e["mpich"]["library"] for e in all_modules.values()
                             if e.get("mpich", {}).get("library")), ""),
        "smpy_revision": smpy_revision(),
        "timeout_s": timeout_s,
        "exclusions": len(exclusions),
        "smpy_skipped_array_backends": skipped_backends(exclusions),
        "summary": summary,
        "failure_areas": failure_areas(all_modules),
        "modules": all_modules,
    }
    results.mkdir(parents=True, exist_ok=True)
    results_path(np, results).write_text(dump_results(out))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--np", type=int, nargs="+", default=[1, 2, 3, 4], help="numbers of ranks")
    ap.add_argument("-i", "--include", action="append", default=[], metavar="REGEX",
                    help="only test modules matching REGEX (repeatable)")
    ap.add_argument("-e", "--exclude", action="append", default=[], metavar="REGEX",
                    help="leave out test modules matching REGEX (spawn always is)")
    ap.add_argument("--backend", choices=["both", "smpy", "mpich"], default="both",
                    help="'smpy' reuses MPICH's outcomes from results/np<N>.json")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per module and backend")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="modules run at once")
    ap.add_argument("--exclusions", type=Path, default=EXCLUSIONS)
    ap.add_argument("--no-exclusions", action="store_true",
                    help="run every test under smpy (to find exclusions that can go)")
    ap.add_argument("--suite-dir", type=Path, default=None,
                    help="an unpacked mpi4py source tree (default: download into conformance/.cache)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where np<N>.json are written")
    ap.add_argument("--top", type=int, default=40, help="failing areas printed per N")
    ap.add_argument("-q", "--quiet", action="store_true", help="no line per module")
    opts = ap.parse_args(argv)

    testdir = (opts.suite_dir / "test") if opts.suite_dir else fetch_suite()
    modules = list_modules(testdir, opts.include, opts.exclude)
    if not modules:
        print("no test module selected", file=sys.stderr)
        return 2
    exclusions = [] if opts.no_exclusions else load_exclusions(opts.exclusions)
    results = opts.results
    if opts.no_exclusions and results == RESULTS:
        results = RESULTS / "no-exclusions"
    workdir = CACHE / "runs"
    reports = []
    for np in opts.np:
        out = run_np(np, testdir, modules, opts.backend, opts.timeout, exclusions, workdir,
                     opts.jobs, results, opts.quiet)
        reports.append(out)
        print(format_table(out["summary"]), flush=True)
        print(format_failures(out["failure_areas"], opts.top), flush=True)
    if len(reports) > 1:
        print("\n== overall")
        for out in reports:
            t = out["summary"]["total"]
            print(f"N={out['np']}: tests {t.get('tests', 0)}, MPICH passed {t.get('mpich_passed', 0)}, "
                  f"smpy passed {t.get('smpy_passed', 0)}, both {t.get('both_passed', 0)}, "
                  f"ratio {t['ratio']:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
