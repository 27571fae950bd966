"""Differential benchmark: the same communication patterns under SimGrid SMPI and smpy.

For each pattern and process count, compiles ``cases.c`` with ``smpicc``, runs it with
``smpirun`` on a SimGrid XML platform (``cluster64.xml``: 64-host star cluster;
``fattree.xml``: 16-host two-level fat tree) and runs the Python twin ``cases.py`` with smpy on
the equivalent YAML (``examples/platforms/cluster64.yaml``, ``fattree.yaml`` written by
``smpy platform convert``), then prints, case by case, both simulated
times and the relative error, plus each emulator's wall time and peak RSS.

    python benchmarks/vs_smpi/run.py                 # default set
    python benchmarks/vs_smpi/run.py --np 64 1024 --patterns ring pingpong
    python benchmarks/vs_smpi/run.py --cfg network/model:CM02 --cfg smpi/lat-factor:1 --cfg smpi/bw-factor:1

Computation is injected as flops on both sides and measured computation is switched off
(``smpi/simulate-computation:no``), so both runs are deterministic. Exits 0 when SMPI is
missing (nothing to compare) unless ``--require-smpi``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from childproc import run_child, smpi_build  # noqa: E402 - benchmarks/childproc.py, shared with speed/side_by_side.py

#: platform name -> (SimGrid XML, smpy YAML, number of hosts named node-0 ...)
PLATFORMS = {
    "cluster64": (HERE / "cluster64.xml", ROOT / "examples" / "platforms" / "cluster64.yaml", 64),
    "fattree": (HERE / "fattree.xml", HERE / "fattree.yaml", 16),
}
PATTERNS = ("pingpong", "ring", "many_to_one", "all_pairs", "stencil", "polling")


def _run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 900) -> tuple[str, float, float]:
    """Run ``cmd``; return (stdout, wall seconds, peak RSS MiB of the child, read by ``wait4``)."""
    c = run_child(cmd, env=env, timeout=timeout)
    return c.out, c.wall, c.rss


def _parse(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def smpi_hosts(tmp: Path, n: int) -> Path:
    hf = tmp / "hosts.txt"
    hf.write_text("".join(f"node-{i}\n" for i in range(n)))
    return hf


def run_smpi(binary: Path, hostfile: Path, np_: int, pattern: str, cfg: list[str], xml: Path) -> tuple[dict, float, float]:
    cmd = ["smpirun", "-np", str(np_), "-platform", str(xml), "-hostfile", str(hostfile),
           "--cfg=smpi/host-speed:1Gf", "--cfg=smpi/simulate-computation:no",
           *[f"--cfg={c}" for c in cfg], str(binary), pattern]
    out, wall, rss = _run(cmd)
    return _parse(out), wall, rss


def run_smpy(np_: int, pattern: str, cfg: list[str], yaml: Path) -> tuple[dict, float, float]:
    cmd = [sys.executable, "-m", "smpy", "-q", "-np", str(np_), "--platform", str(yaml),
           "--cfg=smpi/simulate-computation:no", *[f"--cfg={c}" for c in cfg], str(HERE / "cases.py"), pattern]
    # smpy as installed: with byte-code caching (PYTHONDONTWRITEBYTECODE, set on some CI
    # machines, would recompile all of smpy at every start, ~0.15 s) and its platform cache
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out, wall, rss = _run(cmd, env=env)
    return _parse(out), wall, rss


def compare(nps: list[int], patterns: list[str], cfg: list[str], require: bool = False,
            platform: str = "cluster64") -> list[tuple]:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        binary = tmp / "cases"
        if not smpi_build(HERE / "cases.c", binary, require):
            return []
        xml, yaml, nhosts = PLATFORMS[platform]
        hostfile = smpi_hosts(tmp, nhosts)
        for np_ in nps:
            for pat in patterns:
                if pat in ("pingpong",) and np_ < 2:
                    continue
                ref, w_ref, m_ref = run_smpi(binary, hostfile, np_, pat, cfg, xml)
                got, w_got, m_got = run_smpy(np_, pat, cfg, yaml)
                for case, t_ref in ref.items():
                    t_got = got.get(case, float("nan"))
                    rows.append((case, np_, t_ref, t_got, (t_got - t_ref) / t_ref, w_ref, w_got, m_ref, m_got))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", nargs="+", type=int, default=[16, 64])
    ap.add_argument("--patterns", nargs="+", default=list(PATTERNS), choices=PATTERNS)
    ap.add_argument("--cfg", action="append", default=[], help="setting given to both emulators")
    ap.add_argument("--platform", choices=sorted(PLATFORMS), default="cluster64")
    ap.add_argument("--require-smpi", action="store_true")
    ns = ap.parse_args(argv)
    rows = compare(ns.np, ns.patterns, ns.cfg, ns.require_smpi, ns.platform)
    if not rows:
        return 0
    print(f"platform {ns.platform}; settings: {' '.join(ns.cfg) or '(defaults: network/model:SMPI)'}")
    print(f"{'case':<22}{'np':>6}{'SMPI (s)':>16}{'smpy (s)':>16}{'error':>10}"
          f"{'wall SMPI':>11}{'wall smpy':>11}{'RSS SMPI':>10}{'RSS smpy':>10}")
    for case, np_, a, b, e, wa, wb, ma, mb in rows:
        print(f"{case:<22}{np_:>6}{a:>16.9e}{b:>16.9e}{e * 100:>9.3f}%{wa:>10.2f}s{wb:>10.2f}s"
              f"{ma:>8.0f}MB{mb:>8.0f}MB")
    errs = sorted(abs(r[4]) for r in rows)
    print(f"\n{len(rows)} cases: median |error| {errs[len(errs) // 2] * 100:.3f}%, max {errs[-1] * 100:.3f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
