"""Run report (``--report PREFIX``): where each rank's simulated time went.

Per rank: simulated time in MPI calls (outermost calls only: communication plus waiting),
in computation (simulated bursts and injected work), and the rest (sleeps, start-up); per
MPI call name: calls, bytes sent by the application's point-to-point calls, simulated time;
overall: the same sums and the load imbalance of the busy time,
:math:`\\lambda = \\max_r b_r / \\bar b - 1` with :math:`b_r` computation + MPI time of rank
:math:`r`. Written as ``PREFIX.json`` and ``PREFIX.csv`` (one row per rank and call) and
printed as a table.
"""

from __future__ import annotations

import csv
import json
from typing import Any

from smpy.kernel.actors import current_actor


class Report:
    """Collects per-rank, per-call simulated times through the facade's call hooks."""

    def __init__(self, engine: Any, cpu: Any, ranks: int) -> None:
        self.engine = engine
        self.ranks = ranks
        self._open: list[list[tuple[str, float]]] = [[] for _ in range(ranks)]
        #: rank -> call -> [count, simulated s]
        self.calls: list[dict[str, list[float]]] = [{} for _ in range(ranks)]
        self.compute = [0.0] * ranks
        self.bytes_sent = [0.0] * ranks
        self._execs: dict[int, tuple[int, float]] = {}
        #: (source, destination) -> bytes of the application's point-to-point messages
        self.matrix: dict[tuple[int, int], int] = {}
        cpu.on_exec_start.connect(self._exec_start)
        cpu.on_exec_end.connect(self._exec_end)
        #: receives ``enter``/``exit`` too (the utilisation over time), without a Tee's cost
        self.follower: Any = None

    # tracer protocol (smpy.mpi._call)
    def enter(self, rank: int, name: str, frame: Any = None) -> None:
        if self.follower is not None:
            self.follower.enter(rank, name)
        if rank < self.ranks:  # spawned processes are numbered after the initial ranks
            self._open[rank].append((name, self.engine.now))

    def exit(self, rank: int) -> None:
        if self.follower is not None:
            self.follower.exit(rank)
        if rank >= self.ranks:
            return
        stack = self._open[rank]
        if not stack:
            return
        name, t0 = stack.pop()
        if stack:
            return
        rec = self.calls[rank].get(name)
        if rec is None:
            rec = self.calls[rank][name] = [0, 0.0]
        rec[0] += 1
        rec[1] += self.engine.now - t0

    def send(self, src: int, dst: int, tag: int, nbytes: int) -> None:
        """A message posted (counted when delivered, by :meth:`message`)."""

    def message(self, src: int, dst: int, t0: float, nbytes: int, tag: int) -> None:
        if src >= self.ranks or dst >= self.ranks:
            return
        self.bytes_sent[src] += nbytes
        key = (src, dst)
        self.matrix[key] = self.matrix.get(key, 0) + nbytes

    def _exec_start(self, ex: Any) -> None:
        a = current_actor()
        if a is not None and isinstance(a.pid, int) and a.pid < self.ranks:
            self._execs[id(ex)] = (a.pid, self.engine.now)

    def _exec_end(self, ex: Any) -> None:
        rec = self._execs.pop(id(ex), None)
        if rec is not None:
            self.compute[rec[0]] += self.engine.now - rec[1]

    # output
    def summary(self, end_times: list[float]) -> dict[str, Any]:
        ranks = []
        per_call: dict[str, list[float]] = {}
        for r in range(self.ranks):
            mpi = sum(v[1] for v in self.calls[r].values())
            # computation inside MPI calls (polling) is part of the call's time
            ranks.append({"rank": r, "end_s": end_times[r], "mpi_s": mpi,
                          "compute_s": self.compute[r],
                          "other_s": max(end_times[r] - mpi - self.compute[r], 0.0),
                          "bytes_sent": self.bytes_sent[r],
                          "calls": {k: {"count": int(v[0]), "time_s": v[1]}
                                    for k, v in sorted(self.calls[r].items())}})
            for k, v in self.calls[r].items():
                acc = per_call.setdefault(k, [0, 0.0])
                acc[0] += v[0]
                acc[1] += v[1]
        busy = [x["mpi_s"] + x["compute_s"] for x in ranks]
        mean = sum(busy) / len(busy) if busy else 0.0
        return {
            "ranks": ranks,
            "calls": {k: {"count": int(v[0]), "time_s": v[1]} for k, v in sorted(per_call.items())},
            "total": {"mpi_s": sum(x["mpi_s"] for x in ranks),
                      "compute_s": sum(x["compute_s"] for x in ranks),
                      "bytes_sent": sum(self.bytes_sent),
                      "load_imbalance": (max(busy) / mean - 1.0) if mean > 0 else 0.0},
            "matrix": [[s, d, b] for (s, d), b in sorted(self.matrix.items())],
        }

    def write(self, prefix: str, data: dict[str, Any]) -> None:
        with open(f"{prefix}.json", "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
        with open(f"{prefix}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["rank", "call", "count", "time_s"])
            for r in data["ranks"]:
                w.writerow([r["rank"], "(computation)", "", r["compute_s"]])
                for name, v in r["calls"].items():
                    w.writerow([r["rank"], name, v["count"], v["time_s"]])

    @staticmethod
    def table(data: dict[str, Any], top: int = 12) -> str:
        tot = data["total"]
        n = max(len(data["ranks"]), 1)
        lines = [f"[smpy report] per rank (mean over {n}): computation "
                 f"{tot['compute_s'] / n:.6g} s, MPI {tot['mpi_s'] / n:.6g} s; load imbalance "
                 f"{tot['load_imbalance']:.1%}; {tot['bytes_sent']:.6g} bytes sent point-to-point",
                 f"{'MPI call':<28}{'calls':>10}{'time (s, all ranks)':>22}{'share':>8}"]
        calls = sorted(data["calls"].items(), key=lambda kv: -kv[1]["time_s"])
        total = sum(v["time_s"] for _, v in calls) or 1.0
        for name, v in calls[:top]:
            lines.append(f"{name:<28}{v['count']:>10}{v['time_s']:>22.6g}{v['time_s'] / total:>8.1%}")
        if len(calls) > top:
            lines.append(f"... {len(calls) - top} more in the JSON/CSV files")
        return "\n".join(lines)


class Tee:
    """Forwards the tracer protocol to several tracers (timeline and report)."""

    def __init__(self, *targets: Any) -> None:
        self.targets = [t for t in targets if t is not None]

    def enter(self, rank: int, name: str, frame: Any = None) -> None:
        for t in self.targets:
            t.enter(rank, name, frame)

    def exit(self, rank: int) -> None:
        for t in self.targets:
            t.exit(rank)

    def send(self, src: int, dst: int, tag: int, nbytes: int) -> None:
        for t in self.targets:
            t.send(src, dst, tag, nbytes)

    def message(self, src: int, dst: int, t0: float, nbytes: int, tag: int) -> None:
        for t in self.targets:
            t.message(src, dst, t0, nbytes, tag)

    def close(self) -> None:
        for t in self.targets:
            if hasattr(t, "close"):
                t.close()
