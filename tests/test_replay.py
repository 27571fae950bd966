"""Time-independent traces: reading both layouts, replaying them, and SMPI's replay as reference."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smpy.replay.ti import EXTENSION, actions_of, is_index, rank_file, rank_files, ranks_in

ROOT = Path(__file__).resolve().parents[1]
ONE_FILE = """\
0 init
1 init
0 compute 1e9
1 compute 5e8
0 send 1 7 1000000
1 recv 0 7 1000000
# a comment
0 allreduce 1000 1e8 0
1 allreduce 1000 1e8 0
0 finalize
1 finalize
"""


def _smpy_replay(trace: Path, np_: int, *extra: str) -> float:
    out = subprocess.run([sys.executable, "-m", "smpy", "replay", "-q", "-np", str(np_), *extra,
                          str(trace)], capture_output=True, text=True, check=True).stdout
    return float(out.split("simulation time")[1].split()[0])


def test_one_file_and_index_layouts(tmp_path: Path) -> None:
    one = tmp_path / "one.txt"
    one.write_text(ONE_FILE)
    assert not is_index(str(one)) and ranks_in(str(one)) == 2
    assert [a for _, a, _ in actions_of(str(one), 1)] == ["init", "compute", "recv", "allreduce",
                                                          "finalize"]
    files = []
    for r in range(2):
        f = tmp_path / "files" / f"rank-{r}.txt"
        f.parent.mkdir(exist_ok=True)
        f.write_text("".join(x + "\n" for x in ONE_FILE.splitlines() if x.startswith(f"{r} ")))
        files.append(f"files/{f.name}")
    index = tmp_path / "trace.ti"
    index.write_text("\n".join(files) + "\n")
    assert is_index(str(index)) and ranks_in(str(index)) == 2
    assert list(actions_of(str(index), 0))[2] == (3, "send", ["1", "7", "1000000"])


def _naive_actions(path: str, rank: int) -> list[tuple[int, str, list[str]]]:
    """Every line split, as actions_of did before it skipped other ranks' lines unsplit."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            words = line.split()
            if words and words[0] == EXTENSION:
                words = words[1:]
            if len(words) >= 2 and words[0] == str(rank):
                out.append((n, words[1], words[2:]))
    return out


def test_one_file_filter_keeps_exactly_the_ranks_lines(tmp_path: Path) -> None:
    lines = ["1 init", "10 init", " 1 send 2 0 8", "1\tsend 3 0 8", "\t1 recv 0 0 8", "1", "1 ", "",
             "#smpy 1 wtime", "#smpy 10 wtime", "#smpy\t1 wtime", "# 1 comment", "11 send 1 0 1",
             "-1 init", "1x init", "1\u2003init", "2 recv 1 0 8", "   ", "1 finalize"]
    one = tmp_path / "tricky.txt"
    one.write_text("\n".join(lines))  # the last line without a newline
    for rank in (0, 1, 2, 10, 11):
        assert list(actions_of(str(one), rank)) == _naive_actions(str(one), rank), rank
    assert [a for _, a, _ in actions_of(str(one), 1)] == ["init", "send", "send", "recv", "wtime", "wtime",
                                                          "init", "finalize"]


def test_one_file_chunks_keep_line_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from smpy.replay import ti

    rnd = random.Random(7)
    words = ["0", "1", "2", "10", "#smpy", "#", "", " ", "\t", "send", "recv", "1e6", "wtime"]
    lines = [" ".join(rnd.choice(words) for _ in range(rnd.randint(0, 5))) for _ in range(3000)]
    one = tmp_path / "random.txt"
    one.write_text("0 init\n" + "\n".join(lines) + "\n")
    for chunk in (1, 7, 64, 1 << 16):
        monkeypatch.setattr(ti, "_CHUNK", chunk)
        for rank in (0, 1, 2, 10):
            assert list(actions_of(str(one), rank)) == _naive_actions(str(one), rank), (chunk, rank)
    assert len(_naive_actions(str(one), 1)) > 100


def test_rank_file_resolves_one_name(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    for r in range(3):
        (tmp_path / "d" / f"rank-{r}.txt").write_text(f"{r} init\n")
    index = tmp_path / "trace.ti"
    index.write_text("# files\nd/rank-0.txt\n\nd/rank-1.txt\n" + str(tmp_path / "d" / "rank-2.txt") + "\n")
    assert [rank_file(str(index), r) for r in range(3)] == rank_files(str(index))
    with pytest.raises(ValueError, match=r"lists 3 rank files, no file for rank 3"):
        list(actions_of(str(index), 3))


@pytest.mark.slow
def test_replay_costs_what_the_actions_say(tmp_path: Path) -> None:
    one = tmp_path / "one.txt"
    one.write_text(ONE_FILE)
    plat = tmp_path / "p.yaml"
    plat.write_text("hosts:\n  - {name: a, speed: 1Gf}\n  - {name: b, speed: 1Gf}\n"
                    "links:\n  - {name: l, bandwidth: 1GBps, latency: 0}\n"
                    "routes:\n  - {src: a, dst: b, links: [l]}\n")
    t = _smpy_replay(one, 2, "--platform", str(plat), "--cfg=network/model:raw", "--cfg=smpi/os:0",
                     "--cfg=smpi/or:0")
    # rank 0: 1 s of compute, then 1 MB at 1 GB/s (the receiver is ready at 0.5 s): 1.001 s,
    # then an allreduce of 1000 bytes (two 1 us messages) and 0.1 s of compute
    assert t == pytest.approx(1.0 + 1e-3 + 2 * 1e-6 + 0.1, rel=1e-3)


@pytest.mark.slow
def test_unknown_action_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("0 init\n0 frobnicate 3\n")
    done = subprocess.run([sys.executable, "-m", "smpy", "replay", "-q", str(bad)],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "action 2: frobnicate 3: rank 0: unknown TI action 'frobnicate'" in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("smpirun") is None, reason="SimGrid SMPI not installed")
def test_replaying_smpi_traces_matches_smpi_replay() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks" / "vs_smpi"))
    import replay_run

    rows = replay_run.compare([8], ["stencil", "mix"], "default", require=True)
    assert len(rows) == 2
    for case, _np, ref, got, err, *_ in rows:
        assert abs(err) < 0.01, (case, ref, got)


RECORDED = """
import numpy as np
from mpi4py import MPI
import smpy
c = MPI.COMM_WORLD; r = c.rank; n = c.size
a = np.zeros(4096)
for lap in range(2):
    if r == 0:
        c.Send(a[:1000], (r + 1) % n, 7); c.Recv(a[:1000], n - 1, 7)
    else:
        c.Recv(a[:1000], r - 1, 7); c.Send(a[:1000], (r + 1) % n, 7)
    smpy.execute_flops(1e6 * (r + 1))
req = c.Irecv(a[:500], MPI.ANY_SOURCE, 5)
c.Isend(np.ones(500), (r + 1) % n, 5).Wait()
req.Wait()
c.Allreduce(np.ones(100), a[:100])
c.Bcast(a[:10], root=1)
c.Reduce(np.ones(64), a[:64], root=2)
c.Gather(np.ones(8), a[:8 * n], root=0)
c.Scatter(np.ones(8 * n), a[:8], root=1)
c.Allgather(np.ones(8), a[:8 * n])
c.Alltoall(np.ones(4 * n), a[:4 * n])
c.Barrier()
smpy.sleep(1e-3)
"""


@pytest.mark.slow
def test_replaying_a_recorded_run_reproduces_its_time(tmp_path: Path) -> None:
    import smpy

    prog = tmp_path / "prog.py"
    prog.write_text(RECORDED)
    index = tmp_path / "run.ti"
    res = smpy.run(str(prog), np=4, cfg={"smpy/trace-ti": str(index),
                                         "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    lines = (tmp_path / "run.ti_files" / "rank-1.txt").read_text().splitlines()
    assert lines[0] == "1 init" and lines[-1] == "1 finalize"
    assert "1 irecv 0 5 4000 6" in lines  # ANY_SOURCE recorded as the matched source
    assert "1 gather 8 8 0 0 0" in lines  # 8 MPI_DOUBLE (SimGrid's id 0), as the call passed
    t = _smpy_replay(index, 4)
    assert t == pytest.approx(res.makespan_s, rel=1e-6)


@pytest.mark.skipif(shutil.which("smpirun") is None, reason="SimGrid SMPI not installed")
def test_smpi_replays_smpy_traces(tmp_path: Path) -> None:
    import re

    import smpy

    prog = tmp_path / "prog.py"
    prog.write_text(RECORDED)
    index = tmp_path / "run.ti"
    xml = ROOT / "benchmarks" / "vs_smpi" / "cluster64.xml"
    res = smpy.run(str(prog), np=4, platform=str(xml),
                   cfg={"smpy/trace-ti": str(index), "smpi/simulate-computation": "no"})
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"node-{i}\n" for i in range(4)))
    out = subprocess.run(["smpirun", "-np", "4", "-platform", str(xml), "-hostfile", str(hosts),
                          "--cfg=smpi/coll-selector:ompi", "-replay", str(index)],
                         capture_output=True, text=True, cwd=tmp_path, check=True)
    t = max(float(x) for x in re.findall(r"Simulation time ([0-9.e+-]+)", out.stdout + out.stderr))
    assert t == pytest.approx(res.makespan_s, rel=1e-3)  # SMPI prints 6 digits


SUMMARY_PROGRAM = """
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD; r = c.rank; n = c.size
left = r - 1 if r > 0 else MPI.PROC_NULL      # the ends exchange with MPI_PROC_NULL
right = r + 1 if r < n - 1 else MPI.PROC_NULL
u = np.zeros(64); red = np.zeros(1)
t0 = MPI.Wtime()
for step in range(12):
    c.Sendrecv(u[1:2], dest=left, sendtag=0, recvbuf=u[-1:], source=right, recvtag=0)
    c.Sendrecv(u[-2:-1], dest=right, sendtag=1, recvbuf=u[0:1], source=left, recvtag=1)
    c.Sendrecv_replace(u[2:10], dest=(r + 1) % n, sendtag=2, source=(r - 1) % n, recvtag=2)
    if step % 4 == 0:
        c.Allreduce(np.ones(1), red, op=MPI.SUM)   # 1 double: the selector looks at the count
        c.sendrecv(step, dest=(r + 1) % n, source=(r - 1) % n)
c.Bcast(u[:3], root=1)
c.Allgather(np.ones(2, dtype=np.int32), np.zeros(2 * n, dtype=np.int32))
t1 = MPI.Wtime()
"""


@pytest.mark.slow
def test_replay_summary_is_the_recorded_runs(tmp_path: Path) -> None:
    """A replay counts the MPI calls, messages and bytes of the run it replays and ends at its
    simulated time: an MPI_Sendrecv is one action (``sendRecv``, or ``send``/``recv`` when one
    side is MPI_PROC_NULL), an MPI_Wtime one too (``#smpy <rank> wtime``), and collectives keep
    their count and datatype (the selectors choose by them)."""
    import json

    import smpy

    prog = tmp_path / "prog.py"
    prog.write_text(SUMMARY_PROGRAM)
    index = tmp_path / "run.ti"
    res = smpy.run(str(prog), np=4, cfg={"smpy/trace-ti": str(index), "smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    lines = (tmp_path / "run.ti_files" / "rank-1.txt").read_text().splitlines()
    assert lines[1] == "#smpy 1 wtime" and "1 sendRecv 8 0 8 2 6 6 0 0" in lines
    assert "1 allreduce 1 0 0" in lines and "1 allgather 2 2 1 1" in lines
    assert "0 send 1 1 8 6" in (tmp_path / "run.ti_files" / "rank-0.txt").read_text().splitlines()
    summary = tmp_path / "replay.json"
    subprocess.run([sys.executable, "-m", "smpy", "replay", "-q", "--json", str(summary), str(index)],
                   capture_output=True, text=True, check=True)
    rep = json.loads(summary.read_text())
    run = res.to_json()
    assert res.mpi_calls == 4 * (2 + 12 * 3 + 3 * 2 + 2)  # Wtime x2, Sendrecv x3, ..., Bcast, Allgather
    for key in ("mpi_calls", "messages", "bytes_sent", "makespan_s"):
        assert rep[key] == run[key], key
