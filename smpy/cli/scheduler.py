"""Batch schedulers over whole nodes: FCFS and EASY backfilling (``smpy batch``).

Pure decision logic, driven by the simulation's events (a job's arrival, a job's end): each
call of :meth:`NodeScheduler.decide` returns the jobs to start now and their nodes.

* **FCFS**: jobs start in submission order; the first waiting job that does not fit blocks
  every later one.
* **EASY** (Lifka 1995; Mu'alem and Feitelson 2001): the first waiting job (the head) gets a
  reservation: the *shadow time* ``t_s``, the earliest expected end ``start_j + walltime_j``
  of running jobs (taken in that order) at which enough nodes are free for it, and the nodes
  ``R`` it will take then. A later job ``k`` starts now, out of order, if it fits in the free
  nodes outside ``R``, or if it fits in the free nodes and its expected end
  ``now + walltime_k <= t_s`` (it cannot delay the head). A running job past its walltime is
  expected to end now.

A job asks for ``n`` nodes (the lowest-numbered free ones are taken) or for a fixed set of
nodes. ``smpy batch`` kills a job at its walltime (unless the workload says
``kill_at_walltime: false``), so that ``start + walltime`` bounds its end and the reservations
hold; a job allowed to run past it only delays them. A node whose host failed is *down*: it
is given to no job until it is repaired (:meth:`NodeScheduler.node_down`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Request:
    """A job's demand: ``count`` nodes, or exactly the nodes ``fixed`` (indices)."""

    id: int
    count: int
    walltime: float = math.inf
    fixed: tuple[int, ...] | None = None


class NodeScheduler:
    def __init__(self, nodes: int, policy: str) -> None:
        if policy not in ("fcfs", "easy"):
            raise ValueError(f"unknown scheduling policy {policy!r}")
        self.nodes = nodes
        self.policy = policy
        self.free: set[int] = set(range(nodes))
        self.queue: list[Request] = []
        #: running job id -> (its nodes, expected end)
        self.running: dict[int, tuple[tuple[int, ...], float]] = {}
        self.down: set[int] = set()  #: nodes whose host failed (not in ``free``)

    def check(self, req: Request) -> None:
        """Raise ValueError when ``req`` can never run on this platform."""
        need = len(req.fixed) if req.fixed is not None else req.count
        if need > self.nodes or (req.fixed is not None and not set(req.fixed) <= set(range(self.nodes))):
            raise ValueError(f"asks for {need} nodes; the platform has {self.nodes}")

    def submit(self, req: Request) -> None:
        self.check(req)
        self.queue.append(req)

    def finish(self, job_id: int) -> None:
        nodes, _ = self.running.pop(job_id)
        self.free.update(n for n in nodes if n not in self.down)

    def grow(self, job_id: int, node: int) -> None:
        """Running job ``job_id`` takes free ``node`` (a spawn inside it): it is the job's
        until :meth:`shrink` or the job's end (expected at the job's expected end)."""
        nodes, end = self.running[job_id]
        self.free.discard(node)
        self.running[job_id] = (nodes + (node,), end)

    def shrink(self, job_id: int, node: int) -> None:
        """Running job ``job_id`` gives ``node`` back (free again unless down)."""
        nodes, end = self.running[job_id]
        self.running[job_id] = (tuple(n for n in nodes if n != node), end)
        if node not in self.down:
            self.free.add(node)

    def node_down(self, node: int) -> None:
        """The node's host failed: it leaves the pool (a job holding it frees it at its end)."""
        self.down.add(node)
        self.free.discard(node)

    def node_up(self, node: int) -> None:
        """The node's host is repaired: free again unless a running job still holds it."""
        self.down.discard(node)
        if not any(node in nodes for nodes, _ in self.running.values()):
            self.free.add(node)

    @staticmethod
    def fit(req: Request, avail: set[int]) -> tuple[int, ...] | None:
        """The nodes ``req`` would take in ``avail``, or None."""
        if req.fixed is not None:
            return req.fixed if set(req.fixed) <= avail else None
        if len(avail) < req.count:
            return None
        return tuple(sorted(avail)[:req.count])

    def _start(self, req: Request, nodes: tuple[int, ...], now: float, out: list) -> None:
        self.queue.remove(req)
        self.free.difference_update(nodes)
        self.running[req.id] = (nodes, now + req.walltime)
        out.append((req, nodes))

    def decide(self, now: float) -> list[tuple[Request, tuple[int, ...]]]:
        """The jobs to start at ``now``, with their nodes."""
        out: list[tuple[Request, tuple[int, ...]]] = []
        while self.queue:
            head = self.queue[0]
            nodes = self.fit(head, self.free)
            if nodes is None:
                break
            self._start(head, nodes, now, out)
        if self.policy == "easy" and len(self.queue) > 1:
            self._backfill(now, out)
        return out

    def reservation(self, now: float) -> tuple[float, set[int]]:
        """The head's shadow time and reserved nodes."""
        head = self.queue[0]
        avail = set(self.free)
        ends = sorted((max(end, now), job_id) for job_id, (_, end) in self.running.items())
        for end, job_id in ends:
            avail.update(n for n in self.running[job_id][0] if n not in self.down)
            nodes = self.fit(head, avail)
            if nodes is not None:
                return end, set(nodes)
        return math.inf, set(range(self.nodes))  # pragma: no cover - submit checked the size

    def _backfill(self, now: float, out: list) -> None:
        shadow, reserved = self.reservation(now)
        for req in list(self.queue[1:]):
            nodes = self.fit(req, self.free - reserved)
            if nodes is None and now + req.walltime <= shadow:
                nodes = self.fit(req, self.free)
            if nodes is not None:
                self._start(req, nodes, now, out)
