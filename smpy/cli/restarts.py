r"""``smpyrun --restarts K [--restart-delay T]``: run the program again after a failed attempt.

Attempt :math:`i+1` starts at :math:`t_{i} + \delta` (simulated time continues: ``MPI.Wtime``,
the failure draws and the energy accounting go on from there), :math:`t_i` being the time at
which attempt :math:`i` was aborted and :math:`\delta` the restart delay (default 60 s), on
the hosts of the placement that are up at that time (the failed ones, unless repaired by an
MTTR, are left out; ranks go round-robin over the others). The program's files persist: a
program that writes checkpoints and resumes from the last one is emulated end to end. Stops at
the first attempt that does not fail (or after ``K`` restarts).

Figures: each attempt (start, end, status, ranks lost); the time to solution (the end of the
last attempt); the work lost, :math:`\sum_{\text{failed}} (t_{\text{end}} - t_{\text{start}})
\cdot n_p` rank-seconds; the energy of all attempts (each attempt's hosts over its own span;
the restart delays are not counted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def run_attempts(run: Callable[..., Any], restarts: int, delay: float, **kwargs: Any) -> list[Any]:
    """The attempts' RunResults; ``run`` is :func:`smpy.cli.launch.run`."""
    attempts = [run(**kwargs)]
    while attempts[-1].status == "failed" and len(attempts) <= restarts:
        attempts.append(run(**kwargs, start_time=attempts[-1].makespan_s + delay))
    return attempts


def record(attempts: list[Any]) -> dict[str, Any]:
    """The --json fields of a run with restarts."""
    rows = [{"start_s": a.start_time_s, "end_s": a.makespan_s, "status": a.status,
             "lost_ranks": a.lost_ranks, "hosts": sorted({r.host for r in a.ranks}),
             "energy_J": (a.energy or {}).get("total_J")} for a in attempts]
    energies = [r["energy_J"] for r in rows]
    return {
        "attempts": rows,
        "time_to_solution_s": attempts[-1].makespan_s,
        "work_lost_rank_s": sum((a.makespan_s - a.start_time_s) * a.np for a in attempts if a.status == "failed"),
        "energy_all_attempts_J": sum(energies) if all(e is not None for e in energies) else None,
    }


def summary(attempts: list[Any]) -> str:
    rec = record(attempts)
    lines = [f"[smpy] attempt {i + 1}: {a['start_s']:.9g} s -> {a['end_s']:.9g} s, {a['status']}"
             + (f", lost ranks {sorted(a['lost_ranks'])}" if a["lost_ranks"] else "")
             + f", on {len(a['hosts'])} hosts" for i, a in enumerate(rec["attempts"])]
    lines.append(f"[smpy] time to solution {rec['time_to_solution_s']:.9g} s; work lost "
                 f"{rec['work_lost_rank_s']:.6g} rank-s"
                 + (f"; energy of all attempts {rec['energy_all_attempts_J']:.6f} J"
                    if rec["energy_all_attempts_J"] is not None else ""))
    return "\n".join(lines)
