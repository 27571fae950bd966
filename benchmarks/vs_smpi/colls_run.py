"""Differential benchmark of collectives: simulated times under SimGrid SMPI and smpy with
the same algorithm forced on both sides (``--cfg=smpi/<coll>:<algo>``), or the same
selector (``ompi``, ``mpich``...).

    python benchmarks/vs_smpi/colls_run.py                        # default set, np 8 16 64
    python benchmarks/vs_smpi/colls_run.py --np 16 --colls bcast --algos binomial_tree NTSL
    python benchmarks/vs_smpi/colls_run.py --cfg network/model:CM02 --cfg smpi/lat-factor:1 --cfg smpi/bw-factor:1
    python benchmarks/vs_smpi/colls_run.py --platform fattree256 --np 256 --algos ompi mpich mvapich2 impi
    python benchmarks/vs_smpi/colls_run.py --all --progress     # every section -> colls_results.txt
    python benchmarks/vs_smpi/colls_run.py --all --only fattree --colls scatter   # re-run one chunk
    python benchmarks/vs_smpi/colls_run.py --all --only np16 --colls bcast --algos NTSL  # ... or some rows

Each case runs ``colls_cases.c`` (smpicc/smpirun on cluster64.xml, or fattree256.xml) and its
twin ``colls_cases.py`` (smpy on examples/platforms/cluster64.yaml, or fattree256.yaml), one
rank per host: a point-to-point barrier,
one collective, the slowest rank's time. Prints both times and the relative error per
(collective, algorithm, np, bytes). Exits 0 when SMPI is missing unless --require-smpi.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as vs_smpi  # noqa: E402 - the shared runner (subprocess, RSS, parsing)
from childproc import smpi_build  # noqa: E402 - benchmarks/childproc.py (run.py put it on the path)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
XML = HERE / "cluster64.xml"
YAML = ROOT / "examples" / "platforms" / "cluster64.yaml"

SELECTOR_NAMES = ("ompi", "mpich", "mvapich2", "impi", "default")

SEL = list(SELECTOR_NAMES)
BARRIERED = [f"{a}_{b}_barrier" for a in ("pair", "ring") for b in ("light", "mpi", "one")]
#: every registered algorithm SimGrid knows, forced (not here: barrier ompi_two_procs, which
#: needs exactly 2 ranks, and smpy's own nbc_linear / mvapich2_noncomm names)
ALGOS = {
    "bcast": ["binomial_tree", "flattree", "NTSL", "NTSB", "ompi_pipeline", "ompi_split_bintree",
              "scatter_rdb_allgather", "scatter_LR_allgather", "mvapich2_intra_node", "mvapich2_inter_node", "SMP_binary",
              "arrival_pattern_aware", "arrival_pattern_aware_wait", "arrival_scatter", "NTSL_Isend", "SMP_binomial",
              "SMP_linear", "flattree_pipeline", "mvapich2_knomial_intra_node", *SEL],
    "reduce": ["binomial", "flat_tree", "ompi_chain", "ompi_pipeline", "ompi_binary", "ompi_in_order_binary",
               "scatter_gather", "mvapich2_knomial", "mvapich2_two_level", "NTSL", "rab", "arrival_pattern_aware", "ompi_basic_linear", "ompi_binomial", *SEL],
    "allreduce": ["rdb", "lr", "rab_rdb", "rab", "redbcast", "ompi_ring_segmented", "mvapich2_rs", "mvapich2_two_level", "smp_rdb",
                  "smp_binomial_pipeline", "smp_rsag_lr", "smp_rsag_rab", "rab1", "rab2", "smp_binomial", "smp_rsag",
                  *SEL],
    "alltoall": ["basic_linear", "pair", "pair_rma", "ring", "bruck", "rdb", "2dmesh", "3dmesh", "mvapich2_scatter_dest",
                 *BARRIERED, *SEL],
    "alltoallv": ["ompi_basic_linear", "bruck", "pair", "ring", *BARRIERED, *SEL],
    "allgather": ["rdb", "ring", "bruck", "pair", "ompi_neighborexchange", "GB", "NTSLR", "mvapich2_smp", "smp_simple",
                  "loosely_lr", "SMP_NTS", "2dmesh", "3dmesh", "NTSLR_NB", "rhv", "spreading_simple", *SEL],
    "allgatherv": ["GB", "ring", "pair", "ompi_neighborexchange", "ompi_bruck", "mpich_rdb", "mpich_ring", *SEL],
    "gather": ["ompi_basic_linear", "ompi_binomial", "ompi_linear_sync", "mvapich2_two_level", *SEL],
    "scatter": ["ompi_basic_linear", "ompi_binomial", "ompi_linear_nb", "mvapich2_two_level_direct",
                "mvapich2_two_level_binomial", *SEL],
    "reduce_scatter": ["default", "ompi_basic_recursivehalving", "ompi_ring", "ompi_butterfly", "mpich_pair",
                       "mpich_rdb", "mpich_noncomm", *SEL],
    "barrier": ["ompi_basic_linear", "ompi_bruck", "ompi_recursivedoubling", "ompi_tree", "mvapich2_pair",
                "mpich_smp", "ompi_doublering", *SEL],
}
#: one process per size even with --batch: SimGrid leaves unmatched messages behind on some
#: paths (SMP_linear, split_bintree's small-message fallback, on one-rank nodes; the
#: arrival-pattern bcast's short path), which derail its next collective in the same process;
#: arrival_scatter with fewer elements than ranks makes SimGrid recurse until it crashes
NO_BATCH = {"SMP_linear", "ompi_split_bintree", "arrival_pattern_aware", "arrival_scatter"}
#: message sizes: the vector (bcast, reduce, allreduce) or one rank's block (the others)
SIZES = {"bcast": [8, 65536, 1048576], "reduce": [8, 65536, 1048576], "allreduce": [8, 65536, 1048576],
         "alltoall": [8, 4096, 65536], "alltoallv": [8, 4096, 65536], "allgather": [8, 4096, 65536],
         "allgatherv": [8, 4096, 65536], "gather": [8, 4096, 65536], "scatter": [8, 4096, 65536],
         "reduce_scatter": [8, 4096, 65536], "barrier": [0]}
#: the SMP-aware algorithms, run again with 4 ranks per host (plus the selectors' two-level paths)
SMP_ALGOS = {
    "bcast": ["SMP_binary", "SMP_binomial", "mvapich2_inter_node", "mpich", "mvapich2", "impi"],
    "reduce": ["mvapich2_two_level", "mpich", "mvapich2", "impi"],
    "allreduce": ["smp_binomial", "smp_binomial_pipeline", "smp_rdb", "smp_rsag_lr", "mvapich2_two_level", "mpich",
                  "mvapich2", "impi"],
    "allgather": ["SMP_NTS", "loosely_lr", "smp_simple", "mvapich2_smp", "mvapich2", "impi"],
    "allgatherv": ["mvapich2", "impi"], "alltoall": ["mvapich2", "impi"], "alltoallv": ["mvapich2", "impi"],
    "gather": ["mvapich2_two_level", "mvapich2", "impi"],
    "scatter": ["mvapich2_two_level_direct", "mvapich2_two_level_binomial", "mvapich2", "impi"],
    "reduce_scatter": SEL, "barrier": ["mvapich2", "impi"],
}
#: the 256-host fat tree: (algorithms, sizes) per collective; all-to-all patterns stop at
#: 4 KiB blocks (256 × 256 × 64 KiB is hours of wall time and gigabytes on each side), alltoall
#: at 8 B (SMPI alone needs more than 15 minutes for 4 KiB blocks on the shared machine)
FATTREE = {
    "gather": ([*SEL, "ompi_binomial", "ompi_linear_sync"], None),
    "scatter": (["ompi", "mpich", "ompi_binomial"], None),
    "allgatherv": (["ompi", "mpich", "ring"], [8, 4096]),
    "reduce_scatter": (["ompi", "mpich", "ompi_ring"], [8, 4096]),
    "alltoallv": (["ompi", "pair"], [8, 4096]),
    "alltoall": (["ompi", "mpich", "bruck"], [8]),
    "bcast": (["ompi", "mpich"], None), "reduce": (["mvapich2", "impi"], None),
    "allreduce": (["mvapich2", "impi"], None), "allgather": (["mvapich2", "impi"], None),
    "barrier": (SEL, None),
}
#: the sections of colls_results.txt (--all): key -> (title, platform, np, ranks per host,
#: {collective: (algorithms, sizes or None for SIZES)})
SECTIONS = {
    "np16": ("cluster64, np 16, 1 rank per host: every forced algorithm and every selector", "cluster64", 16, 1,
             {c: (a, None) for c, a in ALGOS.items()}),
    "np64": ("cluster64, np 64, 1 rank per host: every selector", "cluster64", 64, 1,
             {c: (SEL, None) for c in ALGOS}),
    "smp4": ("cluster64, np 16, 4 ranks per host: SMP-aware algorithms and the selectors", "cluster64", 16, 4,
             {c: (a, None) for c, a in SMP_ALGOS.items()}),
    "fattree": ("fattree256 (benchmarks/vs_smpi/fattree256.xml/.yaml), np 256, 1 rank per host: selectors and "
                "forced algorithms", "fattree256", 256, 1, FATTREE),
}
#: platforms: (SMPI XML, smpy YAML, hosts)
PLATFORMS = {"cluster64": (XML, YAML, 64), "fattree256": (HERE / "fattree256.xml", HERE / "fattree256.yaml", 256)}


def compare(nps: list[int], colls: list[str], algos: list[str] | None, cfg: list[str],
            require: bool = False, batch: bool = False, platform: str = "cluster64",
            progress: bool = False, per_host: int = 1, sizes: list[int] | None = None) -> list[tuple]:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        binary = tmp / "colls_cases"
        if not smpi_build(HERE / "colls_cases.c", binary, require):
            return []
        hostfile = tmp / "hosts.txt"
        xml, yaml, hosts = PLATFORMS[platform]
        # per_host consecutive ranks on each host (SMP-aware algorithms see nodes of that size)
        hostfile.write_text("".join(f"node-{i}\n" * per_host for i in range(hosts)))
        for np_ in nps:
            for coll in colls:
                for algo in (algos or ALGOS[coll]):
                    if algo not in ALGOS[coll] and algos is None:
                        continue
                    # a forced algorithm runs under the ompi selector on both sides, so that the
                    # collectives it calls (redbcast: reduce + bcast) are the same too (SMPI's
                    # own default selector is "default", smpy's is "ompi")
                    forced = [f"smpi/coll-selector:{algo}"] if algo in SELECTOR_NAMES \
                        else ["smpi/coll-selector:ompi", f"smpi/{coll}:{algo}"]
                    # one process per size: SimGrid's SMP_linear (split_bintree's fallback for
                    # small messages) leaves unmatched messages behind on one-rank nodes, which
                    # then derail the next collective of the same process
                    todo = (sizes or SIZES[coll]) if coll != "barrier" else SIZES[coll]
                    groups = [todo] if batch and algo not in NO_BATCH else [[n] for n in todo]
                    for group in groups:
                        args = [coll, algo, *map(str, group)]
                        try:
                            ref, w_ref, bad_ref = _smpi(binary, hostfile, xml, np_, args, cfg + forced)
                        except (RuntimeError, subprocess.TimeoutExpired) as e:  # SimGrid aborts on some cases
                            _failed(rows, coll, algo, group, np_, "SMPI", e, progress)
                            continue
                        try:
                            got, w_got, bad_got = _smpy(yaml, hostfile, np_, args, cfg + forced)
                        except (RuntimeError, subprocess.TimeoutExpired) as e:
                            _failed(rows, coll, algo, group, np_, "smpy", e, progress)
                            continue
                        for n in group:  # a case a side did not print: it stopped (deadlock...)
                            case = f"{coll}_{algo}_{n}"
                            for who, times in (("SMPI", ref), ("smpy", got)):
                                if case not in times:
                                    _failed(rows, coll, algo, [n], np_, who, RuntimeError("no result printed"),
                                            progress)
                                    break
                        for case, t_ref in ref.items():
                            if case not in got:
                                continue
                            t_got = got.get(case, float("nan"))
                            err = (t_got - t_ref) / t_ref if t_ref else float("nan")
                            # a time is only worth comparing when the result is right
                            note = "; ".join(f"{who} wrong result on {bad[case]} rank(s)"
                                             for who, bad in (("SMPI", bad_ref), ("smpy", bad_got)) if case in bad)
                            rows.append((case, np_, t_ref, t_got, err, w_ref, w_got, note))
                            if progress:
                                print(f"{case:<48}{np_:>5}{t_ref:>16.9e}{t_got:>16.9e}{err * 100:>9.3f}% {note}",
                                      file=sys.stderr, flush=True)
    return rows


def _failed(rows: list, coll: str, algo: str, sizes: list[int], np_: int, who: str, err: Exception,
            progress: bool) -> None:
    """Record the cases of a run that crashed (error column = who failed)."""
    last = [ln for ln in str(err).splitlines() if "CRITICAL" in ln or "Error" in ln or "error" in ln]
    why = (last[-1] if last else str(err).splitlines()[-1]).strip()[:160]
    for n in sizes:
        rows.append((f"{coll}_{algo}_{n}", np_, float("nan"), float("nan"), who, 0.0, 0.0, why))
        if progress:
            print(f"{coll}_{algo}_{n:<10} {np_:>5} {who} FAILED: {why}", file=sys.stderr, flush=True)


def _run(cmd: list[str]) -> tuple[dict[str, float], float, dict[str, int]]:
    """Run ``cmd``; return its "<case> <seconds>" lines, the wall time (run.py's runner) and
    the cases whose result was wrong ("WRONG <case> <ranks>" lines: case -> ranks)."""
    out, wall, _rss = vs_smpi._run(cmd)
    bad = {p[1]: int(p[2]) for p in (ln.split() for ln in out.splitlines()) if len(p) == 3 and p[0] == "WRONG"}
    return vs_smpi._parse(out), wall, bad


def _smpi(binary: Path, hostfile: Path, xml: Path, np_: int, args: list[str], cfg: list[str]):
    return _run(["smpirun", "-np", str(np_), "-platform", str(xml), "-hostfile", str(hostfile),
                 "--cfg=smpi/host-speed:1Gf", "--cfg=smpi/simulate-computation:no",
                 *[f"--cfg={c}" for c in cfg], str(binary), *args])


def _smpy(yaml: Path, hostfile: Path, np_: int, args: list[str], cfg: list[str]):
    return _run([sys.executable, "-m", "smpy", "-q", "-np", str(np_), "--platform", str(yaml),
                 "--hostfile", str(hostfile),
                 "--cfg=smpi/simulate-computation:no", *[f"--cfg={c}" for c in cfg],
                 str(HERE / "colls_cases.py"), *args])


def table(rows: list[tuple], walls: bool = False) -> list[str]:
    """The rows as text lines: case, np, both times, the error (and the wall times)."""
    head = f"{'case':<48}{'np':>5}{'SMPI (s)':>17}{'smpy (s)':>17}{'error':>10}"
    out = [head + (f"{'wall SMPI':>11}{'wall smpy':>11}" if walls else "")]
    for case, np_, a, b, e, wa, wb, note in rows:
        if isinstance(e, str):
            out.append(f"{case:<48}{np_:>5}  {e} crashed: {note}")
            continue
        line = f"{case:<48}{np_:>5}{a:>17.9e}{b:>17.9e}{e * 100:>9.3f}%"
        if walls:
            line += f"{wa:>10.2f}s{wb:>10.2f}s"
        if wa < 0:  # see carry_over
            line += "  (carried over from the previous colls_results.txt)"
        out.append(line + (f"  ({note}: not compared)" if note else ""))
    return out


def summary(rows: list[tuple]) -> str:
    """Cases compared, median and max |error|, how many within 2 %, crashes, wrong results."""
    ok = [r for r in rows if not isinstance(r[4], str) and not r[7] and r[4] == r[4]]
    errs = sorted(abs(r[4]) for r in ok)
    crashed = [r for r in rows if isinstance(r[4], str)]
    wrong = [r for r in rows if not isinstance(r[4], str) and r[7]]
    if not errs:
        return f"no case compared; {len(crashed)} crashed, {len(wrong)} with a wrong result"
    within = sum(1 for e in errs if e <= 0.02)
    return (f"{len(errs)} cases: median |error| {errs[len(errs) // 2] * 100:.3f}%, max {errs[-1] * 100:.3f}%, "
            f"{within} within 2 %; {len(crashed)} cases crashed (SMPI {sum(r[4] == 'SMPI' for r in crashed)}, "
            f"smpy {sum(r[4] == 'smpy' for r in crashed)}); {len(wrong)} cases not compared because a side "
            f"computed a wrong result (SMPI {sum('SMPI wrong' in r[7] for r in wrong)}, "
            f"smpy {sum('smpy wrong' in r[7] for r in wrong)})")


def run_all(only: list[str] | None, colls: list[str] | None, cache: Path, out: Path, progress: bool,
            run: bool = True, algos: list[str] | None = None) -> None:
    """Run the sections of :data:`SECTIONS` (``only`` some; ``colls`` some collectives),
    keep each (section, collective) chunk's rows in ``cache`` (JSON) and write the whole
    table, chunks not re-run taken from the cache, to ``out``."""
    cache.mkdir(parents=True, exist_ok=True)
    for key, (_title, platform, np_, per_host, plan) in SECTIONS.items():
        if not run or (only and key not in only):
            continue
        for coll, (plan_algos, sizes) in plan.items():
            if colls and coll not in colls:
                continue
            chunk = cache / f"{key}-{coll}.json"
            todo = [a for a in plan_algos if algos is None or a in algos]
            if not todo:
                continue
            rows = compare([np_], [coll], todo, [], require=True, batch=True, platform=platform,
                           progress=progress, per_host=per_host, sizes=sizes)
            if algos is not None and chunk.exists():  # replace these algorithms' rows only
                new = {r[0]: r for r in rows}
                old = [tuple(r) for r in json.loads(chunk.read_text())]
                rows = [new.pop(r[0], r) for r in old] + list(new.values())
            chunk.write_text(json.dumps(rows))
    lines, every = [], []
    for key, (title, *_rest, plan) in SECTIONS.items():
        rows = []
        for coll in plan:
            f = cache / f"{key}-{coll}.json"
            if f.exists():
                rows += [tuple(r) for r in json.loads(f.read_text())]
        if not rows:
            continue
        every += rows
        lines += ["", f"## {title}", *table(rows), "", summary(rows)]
    head = [f"# benchmarks/vs_smpi/colls_run.py --all, SimGrid 3.32 vs smpy (network/model:SMPI defaults), "
            f"{time.strftime('%Y-%m-%d')}",
            "# simulated seconds of one collective (slowest rank); error = (smpy - SMPI) / SMPI; a forced algorithm",
            "# runs under the ompi selector on both sides; the sizes of one case run in one process (--batch).",
            "# Both sides check their results: a case where one side computes a wrong result is shown but not",
            "# compared; \"crashed\": that side aborts on the case.",
            f"# all: {summary(every)}"]
    out.write_text("\n".join(head + lines) + "\n")


def carry_over(old: Path, key: str, colls: list[str], cache: Path) -> None:
    """Fill ``key``'s chunks of ``colls`` with the rows of section ``key`` of an earlier
    colls_results.txt (for cases the shared machine had no time to re-run; their code has
    not changed since). The rows are marked (wall times -1) and the table says so."""
    _title, platform, np_, per_host, _plan = SECTIONS[key]
    if per_host != 1:
        raise SystemExit("--carry-over: only sections with one rank per host")
    rows: dict[str, list] = {c: [] for c in colls}
    inside = False
    for ln in old.read_text().splitlines():
        if ln.startswith("## "):
            # the rows of that platform at that np, one rank per host (the earlier table kept
            # reduce_scatter in a section of its own)
            inside = ln[3:].startswith(platform) and "ranks per host" not in ln
            continue
        parts = ln.split()
        if not inside or len(parts) < 5 or not parts[4].endswith("%") or parts[1] != str(np_):
            continue
        coll = next((c for c in sorted(colls, key=len, reverse=True) if parts[0].startswith(c + "_")), None)
        if coll is not None:
            rows[coll].append((parts[0], int(parts[1]), float(parts[2]), float(parts[3]),
                               float(parts[4][:-1]) / 100, -1.0, -1.0, ""))
    for coll, got in rows.items():
        if got:
            (cache / f"{key}-{coll}.json").write_text(json.dumps(got))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", nargs="+", type=int, default=[8, 16, 64])
    ap.add_argument("--colls", nargs="+", default=list(ALGOS), choices=list(ALGOS))
    ap.add_argument("--algos", nargs="+", default=None, help="algorithms (or selectors) to force")
    ap.add_argument("--cfg", action="append", default=[], help="setting given to both emulators")
    ap.add_argument("--require-smpi", action="store_true")
    ap.add_argument("--batch", action="store_true", help="all sizes in one run per case (faster)")
    ap.add_argument("--platform", default="cluster64", choices=list(PLATFORMS))
    ap.add_argument("--progress", action="store_true", help="print each case on stderr as it completes")
    ap.add_argument("--per-host", type=int, default=1, help="ranks per host (consecutive ranks share a host)")
    ap.add_argument("--sizes", nargs="+", type=int, default=None,
                    help="message sizes in bytes instead of the per-collective defaults (barrier: none)")
    ap.add_argument("--all", action="store_true",
                    help="run the sections of colls_results.txt (--only some) and rewrite it")
    ap.add_argument("--only", nargs="+", choices=list(SECTIONS), help="with --all: these sections only")
    ap.add_argument("--cache", type=Path, default=HERE / ".colls_cache", help="with --all: per-chunk rows")
    ap.add_argument("--out", type=Path, default=HERE / "colls_results.txt", help="with --all: the table")
    ap.add_argument("--no-run", action="store_true", help="with --all: only rewrite the table from the cache")
    ap.add_argument("--carry-over", type=Path, default=None, metavar="OLD_RESULTS",
                    help="with --all --only KEY --colls ...: take those chunks' rows from an earlier table")
    ns = ap.parse_args(argv)
    if ns.all and ns.carry_over:
        for key in ns.only or []:
            carry_over(ns.carry_over, key, ns.colls, ns.cache)
        ns.no_run = True
    if ns.all:
        colls = ns.colls if ns.colls != list(ALGOS) else None
        run_all(ns.only, colls, ns.cache, ns.out, ns.progress, not ns.no_run, ns.algos)
        return 0
    rows = compare(ns.np, ns.colls, ns.algos, ns.cfg, ns.require_smpi, ns.batch, ns.platform, ns.progress,
                   ns.per_host, ns.sizes)
    if not rows:
        return 0
    print(f"platform: {ns.platform}, {ns.per_host} rank(s) per host; settings: {' '.join(ns.cfg) or '(defaults: network/model:SMPI)'}")
    print("\n".join(table(rows, walls=True)))
    print()
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
