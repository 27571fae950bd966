"""Utilisation over time (smpy/trace/utilization.py): allocated, busy and MPI-waiting cores,
efficiency and power per time bin, integrated exactly from the simulation's events."""

import csv
import json
import textwrap
from pathlib import Path

import pytest

import smpy

NO_COMPUTE = {"smpi/simulate-computation": "no"}

#: 4 hosts of one core at 1 Gflop/s: a computing rank is one busy core of 4
PLATFORM = """\
name: four
clusters:
  - name: c
    prefix: n-
    suffix: ""
    radical: 0-3
    cores: 1
    speed: 1Gf
    bandwidth: 10Gbps
    latency: 10us
    sharing: SPLITDUPLEX
    backbone: {bandwidth: 100Gbps, latency: 0us}
"""


def _run(tmp_path: Path, code: str, np: int = 4, platform: str | None = None, **cfg: str):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(code))
    plat = tmp_path / "plat.yaml"
    plat.write_text(PLATFORM)
    prefix = tmp_path / "rep"
    res = smpy.run(str(prog), np=np, platform=platform or str(plat),
                   cfg={**NO_COMPUTE, "smpy/report": str(prefix), **cfg}, capture=True, echo=False)
    assert res.status == "ok", res.stderr
    with open(f"{prefix}.utilization.csv", newline="") as fh:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]
    return res, rows, json.loads(Path(f"{prefix}.json").read_text())


def _integral(rows, col):
    return sum((r["t_end"] - r["t_start"]) * r[col] for r in rows)


def test_two_of_four_ranks_computing_is_half_efficiency(tmp_path):
    res, rows, _ = _run(tmp_path, """\
        from mpi4py import MPI
        import smpy
        c = MPI.COMM_WORLD
        if c.rank < 2:
            smpy.execute_flops(1e9)   # 1 s at 1 Gflop/s
        c.Barrier()
        """, **{"smpy/utilization-bin": "1s"})
    first = rows[0]
    assert (first["t_start"], first["t_end"]) == (0.0, 1.0)
    assert first["allocated"] == 4.0 and first["busy"] == 2.0 and first["waiting_mpi"] == 2.0
    assert first["efficiency"] == 0.5
    assert first["power_W"] == 0.0  # no energy plugin
    # then the barrier completes: nobody computes
    assert len(rows) == 2 and rows[1]["busy"] == 0.0 and rows[1]["t_end"] == res.makespan_s


MIXED = """\
    from mpi4py import MPI
    import numpy as np
    import smpy
    c = MPI.COMM_WORLD
    r, n = c.rank, c.size
    buf = np.zeros(10000)
    for it in range(3):
        smpy.execute_flops(1e8 * (r + 1) + 3e7 * it)
        c.Sendrecv(buf, dest=(r + 1) % n, recvbuf=np.empty_like(buf), source=(r - 1) % n)
        if r % 2:
            smpy.execute(0.05)
        x = c.allreduce(r)
    if r == 0:
        smpy.execute_flops(2e8)
    c.Barrier()
    """


def test_utilisation_integrates_to_the_busy_core_seconds(tmp_path):
    res, rows, rep = _run(tmp_path, MIXED)
    assert len(rows) == 100
    assert rows[0]["t_start"] == 0.0 and rows[-1]["t_end"] == res.makespan_s
    widths = [r["t_end"] - r["t_start"] for r in rows]
    assert max(widths) == pytest.approx(min(widths), rel=1e-9)
    compute = rep["total"]["compute_s"]
    assert compute == pytest.approx(3 * 1e-1 * (1 + 2 + 3 + 4) + 4 * 0.09 + 2 * 3 * 0.05 + 0.2, rel=1e-12)
    # one rank per one-core host, every execution at full speed: busy core-seconds = computation
    assert _integral(rows, "busy") == pytest.approx(compute, rel=1e-12)
    # no execution inside MPI calls: the waiting core-seconds are the ranks' MPI time
    assert _integral(rows, "waiting_mpi") == pytest.approx(rep["total"]["mpi_s"], rel=1e-9)
    # each host is allocated while its rank lives
    ends = sum(r["end_s"] for r in rep["ranks"])
    assert _integral(rows, "allocated") == pytest.approx(ends, rel=1e-12)
    for r in rows:
        assert r["busy"] + r["waiting_mpi"] <= r["allocated"] + 1e-9
        assert r["efficiency"] == pytest.approx(r["busy"] / r["allocated"], rel=1e-12)


def test_bins_are_deterministic_and_follow_the_bin_width(tmp_path):
    _run(tmp_path, MIXED, **{"smpy/utilization-bin": "50ms"})
    first = (tmp_path / "rep.utilization.csv").read_bytes()
    res, rows, _ = _run(tmp_path, MIXED, **{"smpy/utilization-bin": "50ms"})
    assert (tmp_path / "rep.utilization.csv").read_bytes() == first
    assert all(r["t_end"] - r["t_start"] == pytest.approx(0.05, rel=1e-9) for r in rows[:-1])
    assert len(rows) == -(-res.makespan_s // 0.05)


def test_bad_bin_width_is_one_clear_line(tmp_path):
    with pytest.raises(ValueError, match="utilization-bin"):
        _run(tmp_path, "pass\n", **{"smpy/utilization-bin": "-3s"})


def test_power_integrates_to_the_energy(tmp_path):
    root = Path(__file__).resolve().parents[1]
    res, rows, _ = _run(tmp_path, """\
        from mpi4py import MPI
        import smpy
        smpy.execute_flops(1e8 * (MPI.COMM_WORLD.rank + 1))
        MPI.COMM_WORLD.Barrier()
        """, np=2, platform=str(root / "examples/platforms/energy_platform.yaml"),
        plugin="host_energy")
    # rank 0 on MyHost1 (4 cores at 100 Mflop/s) computes 1 s, rank 1 on MyHost2 (1 core) 2 s
    assert rows[0]["allocated"] == 5.0 and rows[0]["busy"] == 2.0
    assert _integral(rows, "busy") == pytest.approx(3.0, rel=1e-9)
    # every host's power (MyHost3 idle included) integrates to the run's energy
    assert _integral(rows, "power_W") == pytest.approx(res.energy["total_J"], rel=1e-9)
    eps = 93.33333333333333
    assert rows[0]["power_W"] == pytest.approx(eps + 0.25 * (200 - eps) + 200 + 100, rel=1e-12)
    second = [r for r in rows if 1.0 <= r["t_start"] and r["t_end"] <= 2.0]
    assert second and all(r["power_W"] == pytest.approx(100 + 200 + 100, rel=1e-12) for r in second)


def test_spawned_processes_are_allocated_while_they_live(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(textwrap.dedent("""\
        from mpi4py import MPI
        import smpy
        p = MPI.Comm.Get_parent()
        smpy.execute_flops(1e9)
        p.Barrier()
        p.Disconnect()
        """))
    res, rows, _ = _run(tmp_path, f"""\
        import sys
        from mpi4py import MPI
        import smpy
        smpy.execute_flops(1e9)
        c = MPI.COMM_WORLD.Spawn(sys.executable, [{str(child)!r}], 2)
        c.Barrier()
        c.Disconnect()
        smpy.execute_flops(5e8)
        """, np=1, **{"smpy/utilization-bin": "0.5s"})
    # the parent computes 1.5 s, each child 1 s
    assert _integral(rows, "busy") == pytest.approx(3.5, rel=1e-9)
    assert rows[0]["allocated"] == 1.0 and rows[0]["efficiency"] == 1.0
    assert max(r["allocated"] for r in rows) == 3.0
    assert rows[-1]["allocated"] == 1.0 and rows[-1]["busy"] == 1.0
    # while the children compute, the parent waits in the barrier on its core
    during = next(r for r in rows if r["t_start"] == 1.5)
    assert (during["allocated"], during["busy"], during["waiting_mpi"]) == (3.0, 2.0, 1.0)
