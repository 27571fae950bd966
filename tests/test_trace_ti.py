"""Time-independent traces of non-blocking point-to-point and v-collectives: SMPI's lines
(``test``, ``waitall``, ``gatherv``...), replayed by smpy to the recorded time and, for
SMPI-recorded traces, to SMPI's own replay time."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import smpy

ROOT = Path(__file__).resolve().parents[1]
NBV = ROOT / "benchmarks" / "vs_smpi" / "ti" / "nbv.py"
XML = ROOT / "benchmarks" / "vs_smpi" / "cluster64.xml"


def _replay(trace: Path, np_: int, *extra: str) -> float:
    """The replay's makespan, exactly (from --json: the printed line has 9 significant digits,
    whose rounding alone can exceed the tests' rel=1e-9)."""
    summary = trace.with_name(trace.name + ".replay.json")
    out = subprocess.run([sys.executable, "-m", "smpy", "replay", "-q", "-np", str(np_), *extra,
                          "--json", str(summary), str(trace)], capture_output=True, text=True, check=True,
                         timeout=300).stdout
    exact = json.loads(summary.read_text())["makespan_s"]
    assert float(out.split("simulation time")[1].split()[0]) == pytest.approx(exact, rel=1e-8)
    return exact


def _lines(index: Path, rank: int) -> list[str]:
    return (index.parent / f"{index.name}_files" / f"rank-{rank}.txt").read_text().splitlines()


@pytest.mark.slow
def test_nonblocking_and_v_collectives_are_recorded_as_smpi_writes_them(tmp_path: Path) -> None:
    index = tmp_path / "nbv.ti"
    res = smpy.run(str(NBV), np=4, platform=str(XML),
                   cfg={"smpy/trace-ti": str(index), "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    r0 = _lines(index, 0)
    # what SMPI 3.32 writes for the same C program (ti_cases.c nbv): point-to-point sizes in
    # bytes here; collectives in elements of the call's datatype (MPI_DOUBLE: SimGrid's id 0)
    assert r0[2:5] == ["0 irecv 3 4 16000 6", "0 isend 1 4 16000 6", "0 test 3 0 4"]
    assert r0[r0.index("0 compute 2000000.0") + 1:] == [
        "0 irecv 1 8 4000 6", "0 irecv 3 8 4000 6", "0 isend 3 8 4000 6", "0 isend 1 8 4000 6",
        "0 waitall 4",
        "0 gatherv 10 10 20 30 10 0 0 0",
        "0 scatterv 0 0 0 0 10 3 0 0",
        "0 allgatherv 10 10 20 30 10 0 0",
        "0 alltoallv 70 10 20 30 10 70 10 20 30 10 0 0",
        "0 reducescatter 10 20 30 10 0 0",
        "0 finalize"]
    r3 = _lines(index, 3)
    assert "3 gatherv 10 0 0 0 0 0 0 0" in r3 and "3 scatterv 10 20 30 10 10 3 0 0" in r3
    for r in range(4):  # a test that completes a request replaces its wait
        lines = _lines(index, r)
        test = next(x for x in lines if " test " in x)
        waits = [x for x in lines if " wait " in x]
        assert len(waits) == (2 if test.replace("test", "wait") in waits else 1)
    assert _replay(index, 4, "--platform", str(XML)) == pytest.approx(res.makespan_s, rel=1e-9)


PARTIAL = """
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD; r = c.rank; n = c.size
a = np.zeros(3000)
early = c.Irecv(a[:1000], (r - 1) % n, 1)
MPI.Request.Waitall([c.Irecv(a[1000:2000], (r + 1) % n, 2), c.Isend(a[2000:], (r - 1) % n, 2)])
c.Send(a[:1000], (r + 1) % n, 1)
early.Wait()
t = [c.Isend(a[:10], (r + 1) % n, 3), c.Irecv(a[10:20], (r - 1) % n, 3)]
for _ in t:
    MPI.Request.Waitany(t)
"""


@pytest.mark.slow
def test_waitall_of_some_outstanding_requests_keeps_one_wait_each(tmp_path: Path) -> None:
    """SMPI's replay of ``waitall`` waits for every stored request: a Waitall that leaves one
    outstanding is written as one ``wait`` per request, so that the replay does not wait for
    a message sent later (deadlock). Waitany is written as the ``wait`` of the request it
    completes (SMPI writes ``waitAny``, which its replay does not know)."""
    prog = tmp_path / "partial.py"
    prog.write_text(PARTIAL)
    index = tmp_path / "p.ti"
    res = smpy.run(str(prog), np=3, cfg={"smpy/trace-ti": str(index), "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    r1 = _lines(index, 1)
    assert not any("waitall" in x or " test " in x for x in r1)
    assert r1[4:6] == ["1 wait 2 1 2", "1 wait 1 0 2"] and "1 wait 0 1 1" in r1
    assert sorted(r1[-3:-1]) == ["1 wait 0 1 3", "1 wait 1 2 3"]
    assert _replay(index, 3) == pytest.approx(res.makespan_s, rel=1e-9)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("smpirun") is None, reason="SimGrid SMPI not installed")
def test_smpi_recorded_nbv_trace_replays_to_smpi_time() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks" / "vs_smpi"))
    import replay_run

    rows = replay_run.compare([4, 8], ["nbv"], "default", require=True)
    assert len(rows) == 2
    for case, np_, ref, got, err, *_ in rows:
        assert abs(err) < 0.01, (case, np_, ref, got)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("smpirun") is None, reason="SimGrid SMPI not installed")
def test_smpi_replays_smpy_nbv_trace(tmp_path: Path) -> None:
    index = tmp_path / "nbv.ti"
    res = smpy.run(str(NBV), np=4, platform=str(XML),
                   cfg={"smpy/trace-ti": str(index), "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"node-{i}\n" for i in range(4)))
    out = subprocess.run(["smpirun", "-np", "4", "-platform", str(XML), "-hostfile", str(hosts),
                          "--cfg=smpi/coll-selector:ompi", "-replay", str(index)],
                         capture_output=True, text=True, cwd=tmp_path,
                         check=True, timeout=300)
    t = max(float(x) for x in re.findall(r"Simulation time ([0-9.e+-]+)", out.stdout + out.stderr))
    assert t == pytest.approx(_replay(index, 4, "--platform", str(XML)), rel=0.01)


PERSISTENT = """
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD; r = c.rank; n = c.size
a = np.zeros(100); b = np.zeros(100)
reqs = [c.Send_init(a, (r + 1) % n, 3), c.Recv_init(b, (r - 1) % n, 3)]
for it in range(3):
    MPI.Prequest.Startall(reqs)
    reqs[0].Test()
    MPI.Request.Waitall(reqs)
q = c.Irecv(b, MPI.ANY_SOURCE, 5)
c.Send(a, (r + 1) % n, 5)
q.Test()
MPI.Request.Waitall([q, MPI.REQUEST_NULL])
"""


@pytest.mark.slow
def test_persistent_requests_and_tests_replay_to_the_recorded_time(tmp_path: Path) -> None:
    prog = tmp_path / "pers.py"
    prog.write_text(PERSISTENT)
    index = tmp_path / "pers.ti"
    res = smpy.run(str(prog), np=3, cfg={"smpy/trace-ti": str(index)})  # measured computation too
    assert res.status == "ok", res.message
    r1 = [x for x in _lines(index, 1) if " compute " not in x]
    assert r1[1:5] == ["1 isend 2 3 800 6", "1 irecv 0 3 800 6", "1 test 1 2 3", "1 waitall 2"]
    # whether q's message is in by the Test depends on the measured computation and on the
    # other ranks' polls (SMPI's polling counters are shared): either flag is right
    assert r1[-4] == "1 send 2 5 800 6" and r1[-3] in ("1 test 0 1 5", "1 test 1 1 5")
    assert r1[-2:] == ["1 waitall 2", "1 finalize"]
    assert _replay(index, 3) == pytest.approx(res.makespan_s, rel=1e-9)
