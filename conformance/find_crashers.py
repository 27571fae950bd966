"""Find the tests that crash or hang smpy, so that they can go into ``exclusions.txt``.

    python conformance/find_crashers.py -n 1 2 -i test_msgspec
    python conformance/find_crashers.py -n 1 2 --append   # add them to exclusions.txt
    python conformance/find_crashers.py -n 1 2 --recheck  # which exclusions can go now

For each N and module, runs the module under smpy (with the current exclusions); while the run
dies (deadlock, timeout, signal, exception escaping unittest), the test that was running is
excluded too and the module runs again. Prints one ``test-id  # reason`` line per culprit.
Only smpy runs: MPICH is not needed.

``--recheck`` runs each module that has exclusions without them: a line can go when the module
then runs to its end at every N and each test it covers passes, or has the outcome MPICH had
(from ``results/np<N>.json``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance import run_suite as rs


def _failed_before(run: rs.ModuleRun, culprit: str) -> list[str]:
    """The tests before ``culprit`` that ended in ERROR or FAIL on some rank, nearest first."""
    out: list[str] = []
    for rep in run.ranks:
        if culprit in rep.started:
            for tid in reversed(rep.started[:rep.started.index(culprit)]):
                if rep.outcomes.get(tid) in ("ERROR", "FAIL") and tid not in out:
                    out.append(tid)
    return out


def find(testdir: Path, module: str, np: int, exclusions: list[rs.Exclusion], timeout_s: float,
         max_rounds: int, workdir: Path) -> list[rs.Exclusion]:
    """Exclude crashing tests of ``module`` until it runs to its end.

    A test that deadlocks or hangs is often the victim of earlier tests that failed half-way
    through a communication and left a message or request behind. Then the fewest of the
    failed tests before it whose exclusion removes the crash at the victim are excluded
    instead (the nearest ones, found by bisection, then pruned one by one)."""
    found: list[rs.Exclusion] = []

    def run(extra: list[rs.Exclusion]) -> tuple[rs.ModuleRun, str | None]:
        r = rs.run_smpy(testdir, [module], np, workdir, timeout_s, exclusions + found + extra)
        if r.completed:
            return r, None
        bm = rs.combine(r, module, set(), exclusions + found + extra)
        return r, (bm.crash_at[0] if bm.crash_at else "?")

    def leakers(victim: str, cause: str, suspects: list[str]) -> list[rs.Exclusion]:
        reason = f"fails and leaves a message or request behind: {victim} then ends in {cause} (np={np})"

        def fixes(tests: list[str]) -> bool:
            return run([rs.Exclusion(t, reason) for t in tests])[1] != victim

        if not suspects or not fixes(suspects):
            return []
        lo, hi = 1, len(suspects)  # smallest prefix of the nearest suspects that fixes it
        while lo < hi:
            mid = (lo + hi) // 2
            if fixes(suspects[:mid]):
                hi = mid
            else:
                lo = mid + 1
        keep = suspects[:lo]
        for t in list(keep[:-1]):
            trial = [k for k in keep if k != t]
            if fixes(trial):
                keep = trial
        return [rs.Exclusion(t, reason) for t in keep]

    current, culprit = run([])
    for _ in range(max_rounds):
        if culprit is None:
            return found
        cause = rs.crash_cause(current)
        if culprit == "?":
            print(f"# {module} np={np}: cannot isolate the crash ({cause}); exclude the module?", flush=True)
            return found
        new: list[rs.Exclusion] = []
        if current.status in ("deadlock", "timeout"):
            new = leakers(culprit, cause, _failed_before(current, culprit))
        if not new:
            if any(x.pattern == culprit for x in found):
                print(f"# {module} np={np}: {culprit} still crashes once excluded ({cause})", flush=True)
                return found
            new = [rs.Exclusion(culprit, f"{cause} (np={np})")]
        for x in new:
            print(f"{x.pattern}  # {x.reason}", flush=True)
        found += new
        current, culprit = run([])
    print(f"# {module} np={np}: still crashing after {max_rounds} rounds", flush=True)
    return found


def recheck(testdir: Path, nps: list[int], exclusions: list[rs.Exclusion], timeout_s: float,
            workdir: Path, modules: list[str]) -> list[rs.Exclusion]:
    """The test-id exclusions that are no longer needed at any of ``nps``."""
    by_module: dict[str, list[rs.Exclusion]] = {}
    for x in exclusions:
        if x.backend is None:
            mod = next((m for m in modules if x.pattern.startswith(m + ".")), None)
            if mod is not None:
                by_module.setdefault(mod, []).append(x)
    removable: list[rs.Exclusion] = []
    for mod, xs in sorted(by_module.items()):
        others = [x for x in exclusions if x not in xs]
        ok = set(map(id, xs))
        for np in nps:
            saved = (rs.load_results(np) or {}).get("modules", {}).get(mod, {}).get("tests", {})
            run = rs.run_smpy(testdir, [mod], np, workdir, timeout_s, others)
            if not run.completed:
                print(f"# {mod} np={np}: {rs.crash_cause(run)} without its exclusions", flush=True)
                ok.clear()
                break
            bm = rs.combine(run, mod, set(saved), others)
            for x in xs:
                hits = [t for t in bm.tests if x.matches(t)]
                good = all(bm.tests[t].outcome in rs.PASSED
                           or rs.normalized(bm.tests[t].outcome) == rs.normalized(saved.get(t, {}).get("mpich", ""))
                           for t in hits)
                if not good:
                    ok.discard(id(x))
        for x in xs:
            if id(x) in ok:
                print(f"can go: {x.pattern}  # {x.reason}", flush=True)
                removable.append(x)
    return removable


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--np", type=int, nargs="+", default=[1, 2])
    ap.add_argument("-i", "--include", action="append", default=[], metavar="REGEX")
    ap.add_argument("-e", "--exclude", action="append", default=[], metavar="REGEX")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--max-rounds", type=int, default=25, help="culprits sought per module and N")
    ap.add_argument("--exclusions", type=Path, default=rs.EXCLUSIONS)
    ap.add_argument("--suite-dir", type=Path, default=None)
    ap.add_argument("--append", action="store_true", help="append the culprits to the exclusions file")
    ap.add_argument("--recheck", action="store_true", help="list the exclusions that can go")
    opts = ap.parse_args(argv)
    testdir = (opts.suite_dir / "test") if opts.suite_dir else rs.fetch_suite()
    exclusions = rs.load_exclusions(opts.exclusions)
    if opts.recheck:
        mods = rs.list_modules(testdir, opts.include, opts.exclude)
        recheck(testdir, opts.np, exclusions, opts.timeout, rs.CACHE / "runs-find", mods)
        return 0
    found: list[rs.Exclusion] = []
    for np in opts.np:
        for mod in rs.list_modules(testdir, opts.include, opts.exclude):
            found += find(testdir, mod, np, exclusions + found, opts.timeout, opts.max_rounds,
                          rs.CACHE / "runs-find")
    if opts.append and found:
        with open(opts.exclusions, "a", encoding="utf-8") as f:
            f.writelines(f"{x.pattern}  # {x.reason}\n" for x in found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
