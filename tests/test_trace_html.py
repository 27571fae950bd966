"""The HTML report of ``--plots DIR`` renders in a real browser: headless Chromium (Debian's
``chromium``) loads it, decodes its three embedded PNG figures at their true sizes and builds
its tables (one row per MPI call and per rank of the run's report)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)

#: appended to a copy of the page: once loaded, writes what the browser made of it into the DOM
PROBE = """<script>window.addEventListener('load', () => {
  const p = document.createElement('pre'); p.id = 'smpy-probe';
  p.textContent = JSON.stringify({
    images: [...document.images].map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight]),
    tables: [...document.querySelectorAll('table')].map(t => t.rows.length),
    title: document.title});
  document.body.appendChild(p);
});</script>
"""


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.imgs: list[dict[str, str | None]] = []
        self.probe = ""
        self._in_probe = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a)
        self._in_probe = tag == "pre" and a.get("id") == "smpy-probe"

    def handle_data(self, data: str) -> None:
        if self._in_probe:
            self.probe += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self._in_probe = False


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def _browser(*args: str, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={profile}", "--virtual-time-budget=10000", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no headless browser: apt-get install chromium (Debian)")
def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "plots"
    done = subprocess.run([sys.executable, "-m", "smpy", "-np", "2", "-q", "--energy", "--plots", str(out),
                           "--platform", str(ROOT / "examples/platforms/energy_platform.yaml"),
                           "--hostfile", str(ROOT / "examples/energy/hosts.txt"),
                           "--cfg=smpi/simulate-computation:no", str(ROOT / "examples/energy/dvfs.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    page = tmp_path / "probed.html"
    page.write_text((out / "report.html").read_text() + PROBE, encoding="utf-8")
    run = _browser("--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    assert run.returncode == 0, run.stderr[-2000:]
    dom = _Dom()
    dom.feed(run.stdout)
    assert dom.probe, f"the page's script did not run: {run.stdout[:500]!r}"
    seen = json.loads(dom.probe)
    assert seen["title"].startswith("smpy: ")
    want = {name: _png_size(out / f"{name}.png") for name in ("gantt", "power", "matrix", "utilization")}
    assert {alt: (w, h) for alt, ok, w, h in seen["images"] if ok} == want  # every figure decoded
    assert all(img["src"].startswith("data:image/png;base64,") for img in dom.imgs)
    # MPI calls table: a header and one row per call; ranks table: a header and one per rank;
    # the utilisation's time bins: a header and one per bin
    bins = len((out / "report.utilization.csv").read_text().splitlines()) - 1
    assert bins == 100
    assert seen["tables"] == [1 + len(report["calls"]), 1 + len(report["ranks"]), 1 + bins]
    # MPI calls, Ranks, Utilisation, and one per figure
    assert dom.tags.get("h2", 0) == 7 and dom.tags.get("td", 0) > 0
    shot = tmp_path / "shot.png"
    run = _browser(f"--screenshot={shot}", "--window-size=1200,2400", (out / "report.html").as_uri(),
                   profile=tmp_path / "profile")
    assert run.returncode == 0 and _png_size(shot) == (1200, 2400), run.stderr[-2000:]
    assert shot.stat().st_size > 20_000  # figures and tables drawn, not a blank page


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no headless browser: apt-get install chromium (Debian)")
def test_batch_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    """``smpy batch --plots DIR``'s page: the Gantt and the utilisation figure decode at their
    true sizes; one table row per job and one per time bin."""
    pytest.importorskip("matplotlib")
    batch_dir = ROOT / "tests" / "programs" / "batch"
    work = tmp_path / "w.yaml"
    jobs = [("j1", 2, 10, 0), ("j2", 4, 5, 1), ("j3", 1, 4, 2)]
    work.write_text("\n".join([f"platform: {batch_dir / 'four.yaml'}", "scheduler: easy",
                               "cfg: {smpi/simulate-computation: 'no'}", "jobs:"] + [
        f"  - {{name: {n}, program: {batch_dir / 'computer.py'}, args: ['{t}'], np: {np}, walltime: {(np + 1) * t}s, "
        f"submit: {s}s}}" for n, np, t, s in jobs]) + "\n")
    out = tmp_path / "plots"
    done = subprocess.run([sys.executable, "-m", "smpy", "batch", str(work), "-q", "--no-solo", "--plots", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "probed.html"
    page.write_text((out / "report.html").read_text() + PROBE, encoding="utf-8")
    run = _browser("--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    assert run.returncode == 0, run.stderr[-2000:]
    dom = _Dom()
    dom.feed(run.stdout)
    seen = json.loads(dom.probe)
    assert seen["title"] == f"smpy batch {work}"
    want = {name: _png_size(out / f"{name}.png") for name in ("gantt", "utilization")}
    assert {alt: (w, h) for alt, ok, w, h in seen["images"] if ok} == want
    assert seen["tables"] == [1 + len(jobs), 1 + 100]  # jobs, then the utilisation's bins
