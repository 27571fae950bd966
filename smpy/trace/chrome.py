"""Timeline traces in the Chrome/Perfetto trace-event format (JSON).

One *process* per simulated host, one *thread* per rank; complete events (``ph: "X"``) for
MPI calls (name, simulated start and duration, the call's source location) and for
computation bursts; flow events (``ph: "s"``/``"f"``) draw each point-to-point message from
the sender's call to the receiver's (bytes and tag in its arguments). Timestamps are simulated microseconds. Events are written in
batches of 4096 as they end, one per line, after an opening ``[``: the trace-event format
accepts a file without its closing bracket, so a crashed or interrupted run keeps what was
traced (up to the last batch). Times are written to the nanosecond.
Open the file in https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

from smpy.kernel.actors import current_actor


class ChromeTracer:
    def __init__(self, path: str, engine: Any, cpu: Any, hosts: list, placement: list) -> None:
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
        for h in hosts:
            if any(p is h for p in placement):
                self._emit({"ph": "M", "name": "process_name", "pid": h.index, "args": {"name": h.name}})
        for rank, h in enumerate(placement):
            self._emit({"ph": "M", "name": "thread_name", "pid": h.index, "tid": rank,
                        "args": {"name": f"rank {rank}"}})
        cpu.on_exec_start.connect(self._exec_start)
        cpu.on_exec_end.connect(self._exec_end)
        self._placement = placement
        self._execs: dict[int, tuple[int, float, str]] = {}
        self._flows = 0

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
        pl = self._placement
        self._write(f'{{"ph":"s","cat":"msg","name":"message","id":{fid},"pid":{pl[src].index},'
                    f'"tid":{src},"ts":{self._us(t0)},"args":{{"bytes":{nbytes},"tag":{tag},"to":{dst}}}}}')
        self._write(f'{{"ph":"f","bp":"e","cat":"msg","name":"message","id":{fid},"pid":{pl[dst].index},'
                    f'"tid":{dst},"ts":{self._us(self.engine.now)}}}')

    def exit(self, rank: int) -> None:
        stack = self._open[rank] if rank < len(self._open) else None
        if not stack:
            return
        name, t0, loc = stack.pop()
        if stack:  # nested call: only the outermost is drawn
            return
        buf = self._buf
        buf.append(f'{{"ph":"X","cat":"mpi","name":"{name}","pid":{self._placement[rank].index},'
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
        self._write(f'{{"ph":"X","cat":"compute","name":{name},"pid":{self._placement[rank].index},'
                    f'"tid":{rank},"ts":{self._us(t0)},"dur":{(self.engine.now - t0) * 1e6:.3f},'
                    f'"args":{{"flops":{float(ex.total)!r}}}}}')

    def close(self) -> None:
        if not self.fh.closed:
            self._flush()
            self.fh.write("\n]\n")
            self.fh.close()
