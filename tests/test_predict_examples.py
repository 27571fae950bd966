"""The prediction examples (examples/predict/) print the same results under smpy as under real
mpiexec (MPICH) at small sizes; ``#`` lines (times) are dropped. Also: the smpy hints of the
examples (``--sample``, ``--fold``) run under smpy and leave the plain run's output alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from realmpi import needs_mpiexec, run_reference

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples" / "predict"

CASES = [
    ("similarity.py", ["300", "4", "40"]),
    ("heat3d.py", ["16", "20"]),
    ("mergesort.py", ["100000"]),
    ("lu.py", ["200", "32"]),
    ("ep.py", ["17"]),
]


def _env(with_smpy: bool) -> dict[str, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) if with_smpy else ""
    return env


def _results(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]


def _smpy(np_: int, script: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", str(np_), str(EX / script), *args],
                          capture_output=True, text=True, timeout=120, env=_env(True))


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("np_", [1, 2])
@pytest.mark.parametrize("script,args", CASES, ids=[c[0] for c in CASES])
def test_same_results_as_mpich(script: str, args: list[str], np_: int) -> None:
    real = run_reference(np_, str(EX / script), *args, env=_env(False))
    emu = _smpy(np_, script, args)
    assert emu.returncode == 0, emu.stderr[-2000:]
    assert _results(real.stdout), real.stdout
    assert _results(emu.stdout) == _results(real.stdout)
    assert "# elapsed" in emu.stdout and "# cpu" in emu.stdout


@pytest.mark.slow
def test_lu_residual_check_passes() -> None:
    out = _smpy(3, "lu.py", ["160", "16"])
    assert out.returncode == 0, out.stderr[-2000:]
    assert "scaled residual PASSED" in out.stdout


@pytest.mark.slow
def test_sampling_and_folding_hints_run() -> None:
    plain = _smpy(2, "lu.py", ["512", "32", "--no-check"])
    hinted = _smpy(2, "lu.py", ["512", "32", "--sample", "--fold"])
    assert plain.returncode == 0 and hinted.returncode == 0, plain.stderr[-1000:] + hinted.stderr[-1000:]
    t_plain = float(plain.stdout.split("# elapsed ")[1].split()[0])
    t_hint = float(hinted.stdout.split("# elapsed ")[1].split()[0])
    assert "(not checked)" in hinted.stdout
    # the sampled, folded run predicts about the same time (loose: CPU timing noise)
    assert 0.5 * t_plain < t_hint < 2.0 * t_plain, (t_plain, t_hint)
    ep = _smpy(2, "ep.py", ["18", "--sample"])
    assert ep.returncode == 0, ep.stderr[-1000:]


def _hpl_results(out: str) -> list[str]:
    """hpl.py's results without its times (the ``WR`` line holds the time and the Gflops)."""
    return [ln for ln in _results(out) if not ln.startswith("WR")]


@pytest.mark.slow
@needs_mpiexec
@pytest.mark.parametrize("np_,grid", [(4, ["2", "2"]), (6, ["3", "2"]), (3, ["1", "3"]),
                                      (5, ["5", "1", "--swap=binexch"]),
                                      (6, ["6", "1", "--swap=long", "--depth=0"])])
def test_hpl_same_factors_as_mpich(np_: int, grid: list[str]) -> None:
    """The 2-D HPL twin: same pivots (hence log|det|) and residual under smpy as under MPICH,
    with look-ahead and HPL's mixed swap (binary exchange below 64 local columns, spread-roll
    above), and with each swap algorithm alone on a non-power-of-two process column."""
    args = ["203", "16", *grid]
    real = run_reference(np_, str(EX / "hpl.py"), *args, env=_env(False))
    emu = _smpy(np_, "hpl.py", args)
    assert emu.returncode == 0, emu.stderr[-2000:]
    want = _hpl_results(real.stdout)
    assert any("PASSED" in ln for ln in want), real.stdout
    assert any(ln.startswith("log|det| 208.98474") for ln in want), real.stdout
    assert _hpl_results(emu.stdout) == want
    wr = [ln.split() for ln in emu.stdout.splitlines() if ln.startswith("WR")]
    assert len(wr) == 1 and wr[0][1:5] == ["203", "16", *grid[:2]], emu.stdout
    assert float(wr[0][6]) > 0.0


@pytest.mark.slow
def test_hpl_grid_must_match_ranks_and_hints_run() -> None:
    bad = _smpy(4, "hpl.py", ["64", "8", "3", "2"])
    assert bad.returncode != 0
    assert "the grid 3 x 2 needs 6 ranks, not 4" in bad.stderr + bad.stdout
    bad = _smpy(4, "hpl.py", ["64", "8", "--swap=roll"])
    assert bad.returncode != 0
    assert "hpl.py: --swap=roll: binexch, long or mix" in bad.stderr + bad.stdout
    plain = _smpy(4, "hpl.py", ["768", "32", "2", "2", "--no-check"])
    hinted = _smpy(4, "hpl.py", ["768", "32", "2", "2", "--sample", "--fold"])
    assert plain.returncode == 0 and hinted.returncode == 0, plain.stderr[-1000:] + hinted.stderr[-1000:]
    assert "(not checked)" in hinted.stdout
    t_plain = float(plain.stdout.split("# elapsed ")[1].split()[0])
    t_hint = float(hinted.stdout.split("# elapsed ")[1].split()[0])
    assert 0.5 * t_plain < t_hint < 2.0 * t_plain, (t_plain, t_hint)


def _traffic(np_: int, args: list[str], tmp_path: Path, name: str) -> tuple[int, float]:
    """(messages, bytes) of an hpl.py run under smpy (its --json summary)."""
    out = tmp_path / f"{name}.json"
    run = subprocess.run([sys.executable, "-m", "smpy", "-q", "-np", str(np_), "--json", str(out),
                          str(EX / "hpl.py"), *args], capture_output=True, text=True, timeout=120,
                         env=_env(True))
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads(out.read_text())
    return summary["messages"], summary["bytes_sent"]


def _gepp_pivots(a: np.ndarray) -> np.ndarray:
    """LAPACK's partial pivoting (dgetf2), the rows chosen, in numpy."""
    a, n = a.copy(), a.shape[0]
    piv = np.empty(n, dtype=np.int64)
    for j in range(n):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv[j] = p
        a[[j, p]] = a[[p, j]]
        a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return piv


def test_partial_pivoting_on_a_random_matrix_picks_remaining_rows_uniformly() -> None:
    """The law hpl.py --pivots=uniform draws from: on i.i.d. entries, pivot j is at any of the
    rows j .. n - 1 alike (20 matrices of order 200: 3600 pivots, deciles within 2 points)."""
    n, xs = 200, []
    for seed in range(20):
        piv = _gepp_pivots(np.random.default_rng(seed).random((n, n)) - 0.5)
        j = np.arange(n - 20)
        xs.append((piv[: n - 20] - j) / (n - j))
    x = np.concatenate(xs)
    deciles = np.histogram(x, bins=10, range=(0.0, 1.0))[0] / x.size
    assert np.all(np.abs(deciles - 0.1) < 0.02), deciles
    assert np.mean(x == 0.0) < 0.02  # the diagonal row is no more likely than any other


@pytest.mark.slow
@pytest.mark.parametrize("grid", [["2", "2"], ["4", "2"], ["4", "1"]])
def test_hpl_folded_pivots_move_the_rows_of_a_random_matrix(grid: list[str], tmp_path: Path) -> None:
    """--fold / --sample fake the matrix (a constant: every pivot would be the diagonal row).
    With the drawn pivots (--pivots=uniform, the default) the folded run sends the messages of
    the real factorisation of HPL's kind of random matrix (same count, bytes within 2 %); the
    old behaviour (--pivots=diagonal) leaves 8-14 % of the bytes (the row swaps) out."""
    np_ = int(grid[0]) * int(grid[1])
    base = ["512", "32", *grid]
    real = _traffic(np_, [*base, "--matrix=random", "--no-check"], tmp_path, "real")
    drawn = _traffic(np_, [*base, "--sample", "--fold"], tmp_path, "drawn")
    diag = _traffic(np_, [*base, "--sample", "--fold", "--pivots=diagonal"], tmp_path, "diag")
    assert drawn[0] == real[0], (drawn, real)
    assert abs(drawn[1] / real[1] - 1.0) < 0.025, (drawn, real)
    assert diag[1] / real[1] < 0.93, (diag, real)
    assert abs(drawn[1] - real[1]) < 0.25 * (real[1] - diag[1]), (drawn, real, diag)
    again = _traffic(np_, [*base, "--sample", "--fold"], tmp_path, "again")
    assert again == drawn  # the draws are seeded: the same traffic in every run


@pytest.mark.slow
def test_hpl_rejects_unknown_matrix_and_pivot_kinds() -> None:
    for opt, msg in (("--matrix=hilbert", "--matrix=hilbert: dominant or random"),
                     ("--pivots=lowest", "--pivots=lowest: uniform or diagonal")):
        bad = _smpy(4, "hpl.py", ["64", "8", opt])
        assert bad.returncode != 0
        assert f"hpl.py: {msg}" in bad.stderr + bad.stdout
