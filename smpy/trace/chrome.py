"""Timeline traces in the Chrome/Perfetto trace-event format (JSON).

One *process* per simulated host, one *thread* per rank; complete events (``ph: "X"``) for
MPI calls (name, simulated start and duration, the call's source location) and for
computation bursts; flow events (``ph: "s"``/``"f"``) draw each point-to-point message from
the sender's call to the receiver's (bytes and tag in its arguments). Timestamps are simulated microseconds. Events are written in
batches of 4096 as they end, one per line, after an opening ``[``: the trace-event format
accepts a file without its closing bracket, so a crashed or interrupted run keeps what was
traced (up to the last batch). Times are written to the nanosecond.
Open the file in https://ui.perfetto.dev or chrome://tracing.

Processes started during the run (``MPI_Comm_spawn``, the jobs of ``smpy batch``) get their
thread (and their host's process) when they first appear. A *group* function may put the
ranks elsewhere than under their host: ``smpy batch --trace`` gives each job a process,
with its ranks as threads and a ``job`` thread drawing its ``wait`` and ``run`` phases
(:meth:`ChromeTracer.span`). With a node pool (:meth:`ChromeTracer.watch_nodes`, dynamic
allocation, :mod:`smpy.runtime.nodes`) the process ``nodes`` has one thread per node and a
span per state it was in (``off``, ``booting``, ``free``, ``allocated``, ``shutting down``),
drawn once a node changed state other than by going free at the end of its ranks (every
run's end): the whole run for every node, from the tracer's start to its close.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import IO, Any

from smpy.kernel.actors import current_actor

#: the Chrome process of the node states (far from host indices and job numbers)
NODES_PID = 1_000_000_000
#: a job's thread of phases (``wait``, ``run``) in its process, above its ranks
PHASES_TID = 1_000_000_000


def by_host(proc: Any) -> tuple[int, str, str]:
    """The default grouping: a process per host, a thread per rank."""
    return proc.host.index, proc.host.name, f"rank {proc.rank}"


class ChromeTracer:
    """``group(process) -> (pid, process name, thread name)`` places a rank (default:
    :func:`by_host`); ``procs`` is the world's growing process list (ranks started after the
    tracer: spawned, or a batch job's)."""

    def __init__(self, path: str, engine: Any, cpu: Any, hosts: list, placement: list,
                 procs: list | None = None, group: Callable[[Any], tuple[int, str, str]] | None = None) -> None:
        self.engine = engine
        self.fh: IO[str] = open(path, "w")  # noqa: SIM115 - closed in close()
        self.fh.write("[\n")
        self._first = True
        self._buf: list[str] = []
        self._basenames: dict[str, str] = {}
        self._labels: dict[str, str] = {}  # computation label -> its JSON string
        self._t1 = self._t2 = -1.0
        self._s1 = self._s2 = ""
        #: per rank, the calls entered and not yet left (name, start, location)
        self._open: list[list[tuple[str, float, str]]] = [[] for _ in placement]
        self.events = 0
        self._procs = procs
        self._group = group or by_host
        self._named: set[int] = set()  # pids named
        #: rank -> its Chrome pid
        self._pids: list[int] = []
        if group is None:  # the hosts in platform order, then the ranks (as before spawns existed)
            for h in hosts:
                if any(p is h for p in placement):
                    self.name_process(h.index, h.name)
        for rank, h in enumerate(placement):
            self._place(rank, procs[rank] if procs is not None and rank < len(procs) else _Placed(rank, h))
        cpu.on_exec_start.connect(self._exec_start)
        cpu.on_exec_end.connect(self._exec_end)
        self._execs: dict[int, tuple[int, float, str]] = {}
        self._flows = 0
        self._pool: Any = None
        self._node_since: list[tuple[float, str]] = []
        self._nodes_drawn = False
        self._pending: list[tuple[int, str, float, float]] = []  # spans before the first drawn

    # -- where ranks go ---------------------------------------------------------------------
    def name_process(self, pid: int, name: str, sort: int | None = None) -> None:
        """Name Chrome process ``pid`` (once)."""
        if pid in self._named:
            return
        self._named.add(pid)
        self._emit({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}})
        if sort is not None:
            self._emit({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": sort}})

    def name_thread(self, pid: int, tid: int, name: str) -> None:
        self._emit({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})

    def _place(self, rank: int, proc: Any) -> None:
        pid, pname, tname = self._group(proc)
        self.name_process(pid, pname)
        self.name_thread(pid, rank, tname)
        self._pids.append(pid)

    def _pid(self, rank: int) -> int:
        """The pid of ``rank``, placing the ranks started since the last call."""
        pids = self._pids
        if rank < len(pids):
            return pids[rank]
        procs = self._procs or []
        for r in range(len(pids), rank + 1):
            self._place(r, procs[r])
        return pids[rank]

    def span(self, pid: int, tid: int, cat: str, name: str, t0: float, t1: float,
             args: dict | None = None) -> None:
        """A complete event from ``t0`` to ``t1`` (simulated seconds)."""
        self._write(f'{{"ph":"X","cat":{json.dumps(cat)},"name":{json.dumps(name)},"pid":{pid},"tid":{tid},'
                    f'"ts":{t0 * 1e6:.3f},"dur":{(t1 - t0) * 1e6:.3f},"args":{json.dumps(args or {})}}}')

    # -- node states ----------------------------------------------------------------------------
    def watch_nodes(self, pool: Any) -> None:
        """Draw the states of the nodes of ``pool`` (``.hosts``, ``.state``, and
        ``.state_listeners`` called as ``f(node index, state)`` at each change)."""
        self._pool = pool
        now = self.engine.now
        self._node_since = [(now, s) for s in pool.state]
        pool.state_listeners.append(self._node_state)

    def _node_state(self, i: int, state: str) -> None:
        t0, old = self._node_since[i]
        if old == state:
            return
        now = self.engine.now
        self._node_since[i] = (now, state)
        span = (i, old.replace("_", " "), t0, now)
        if not self._nodes_drawn:
            # a node going free as its last rank ends is no dynamic allocation: every run's
            # end; anything else is (a boot, a shutdown, a spawn or job taking a node)
            self._pending.append(span)
            if old == "allocated" and state == "free":
                return
            self._nodes_drawn = True
            self.name_process(NODES_PID, "nodes", sort=-1)
            for k, h in enumerate(self._pool.hosts):
                self.name_thread(NODES_PID, k, h.name)
            spans, self._pending = self._pending, []
        else:
            spans = [span]
        for k, name, a, b in spans:
            if b > a:
                self.span(NODES_PID, k, "node", name, a, b)

    def _emit(self, ev: dict) -> None:
        self._write(json.dumps(ev, separators=(",", ":")))

    def _write(self, text: str) -> None:
        self._buf.append(text)
        self.events += 1
        if len(self._buf) >= 4096:
            self._flush()

    def _us(self, t: float) -> str:
        """Simulated time ``t`` in microseconds, to the nanosecond; events often share their
        time, so the last two are kept formatted."""
        if t == self._t1:
            return self._s1
        if t == self._t2:
            return self._s2
        text = f"{t * 1e6:.3f}"
        self._t2, self._s2 = self._t1, self._s1
        self._t1, self._s1 = t, text
        return text

    def _flush(self) -> None:
        if self._buf:
            self.fh.write(("" if self._first else ",\n") + ",\n".join(self._buf))
            self._first = False
            self._buf.clear()
            self.fh.flush()

    # MPI calls (called by the facade's entry/exit protocol). The hot events are formatted
    # by hand: json.dumps of a dict per event doubled the cost of a traced message.
    def enter(self, rank: int, name: str, frame: Any = None) -> None:
        loc = ""
        if frame is not None:
            code = frame.f_code
            base = self._basenames.get(code.co_filename)
            if base is None:
                base = self._basenames[code.co_filename] = json.dumps(os.path.basename(code.co_filename))[1:-1]
            loc = f"{base}:{frame.f_lineno}"
        try:
            self._open[rank].append((name, self.engine.now, loc))
        except IndexError:  # a spawned rank, not in the initial placement
            self._open.extend([] for _ in range(rank + 1 - len(self._open)))
            self._open[rank].append((name, self.engine.now, loc))

    def send(self, src: int, dst: int, tag: int, nbytes: int) -> None:
        """A message posted (drawn when delivered, by :meth:`message`)."""

    def message(self, src: int, dst: int, t0: float, nbytes: int, tag: int) -> None:
        self._flows += 1
        fid = self._flows
        self._write(f'{{"ph":"s","cat":"msg","name":"message","id":{fid},"pid":{self._pid(src)},'
                    f'"tid":{src},"ts":{self._us(t0)},"args":{{"bytes":{nbytes},"tag":{tag},"to":{dst}}}}}')
        self._write(f'{{"ph":"f","bp":"e","cat":"msg","name":"message","id":{fid},"pid":{self._pid(dst)},'
                    f'"tid":{dst},"ts":{self._us(self.engine.now)}}}')

    def exit(self, rank: int) -> None:
        stack = self._open[rank] if rank < len(self._open) else None
        if not stack:
            return
        name, t0, loc = stack.pop()
        if stack:  # nested call: only the outermost is drawn
            return
        pids = self._pids
        pid = pids[rank] if rank < len(pids) else self._pid(rank)
        buf = self._buf
        buf.append(f'{{"ph":"X","cat":"mpi","name":"{name}","pid":{pid},'
                   f'"tid":{rank},"ts":{self._us(t0)},"dur":{(self.engine.now - t0) * 1e6:.3f},'
                   + (f'"args":{{"location":"{loc}"}}}}' if loc else '"args":{}}'))
        self.events += 1
        if len(buf) >= 4096:
            self._flush()

    # computation
    def _exec_start(self, ex: Any) -> None:
        a = current_actor()
        if a is not None and isinstance(a.pid, int):
            self._execs[id(ex)] = (a.pid, self.engine.now, ex.label)

    def _exec_end(self, ex: Any) -> None:
        rec = self._execs.pop(id(ex), None)
        if rec is None:
            return
        rank, t0, label = rec
        name = self._labels.get(label)
        if name is None:
            name = self._labels[label] = json.dumps(str(label))
        self._write(f'{{"ph":"X","cat":"compute","name":{name},"pid":{self._pid(rank)},'
                    f'"tid":{rank},"ts":{self._us(t0)},"dur":{(self.engine.now - t0) * 1e6:.3f},'
                    f'"args":{{"flops":{float(ex.total)!r}}}}}')

    def close(self) -> None:
        if not self.fh.closed:
            if self._nodes_drawn:  # the state each node is in at the end
                now = self.engine.now
                for i, (t0, state) in enumerate(self._node_since):
                    if now > t0:
                        self.span(NODES_PID, i, "node", state.replace("_", " "), t0, now)
                self._node_since = [(now, s) for _, s in self._node_since]
            self._flush()
            self.fh.write("\n]\n")
            self.fh.close()


class _Placed:
    """A rank of the initial placement when the tracer has no process list."""

    def __init__(self, rank: int, host: Any) -> None:
        self.rank, self.host = rank, host
