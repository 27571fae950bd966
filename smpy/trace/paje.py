"""Timeline traces in the Paje format, for ViTE (``--trace FILE.paje`` or ``--trace-format paje``).

The file is what SimGrid's ``smpirun -trace`` writes (SimGrid 3.32, ``src/instr``), with the
platform part of ``tracing/platform`` and the grouping of ``tracing/smpi/group``:

* a header of ``%EventDef`` blocks that declare each event kind, its number and its fields
  (``PajeDefineContainerType 0`` ... ``PajeNewEvent 17``); every later line is
  ``<number> <fields...>`` in the order of its definition;
* the container hierarchy: the root container ``0`` is the platform's root zone, nested zones
  are containers of types ``L1``, ``L2``... (their depth), then ``HOST`` containers, then one
  ``MPI`` container ``rank-<r>`` per rank inside its host; only the hosts that run ranks
  (and their zones) appear;
* states of type ``MPI_STATE`` per rank, pushed when an outermost MPI call starts and popped
  when it returns (SMPI's names: ``PMPI_Send``... for ``MPI_Send``; mpi4py's pickle-based
  calls keep their names, ``Comm.allreduce``), ``computing`` for simulated computation
  outside MPI calls, zero-length ``PMPI_Init`` at the start and ``PMPI_Finalize`` at the end;
* links of type ``MPI_LINK`` (value ``PTP``) for point-to-point messages: started on the
  sender's container when the send is posted, ended on the receiver's when the message is
  delivered, paired by a unique key;
* variables on hosts: ``speed`` (flop/s) and ``core_count`` at the start and, with the
  energy plugin, ``power`` (W) at every change.

Type, entity-value and container aliases are small integers from one counter; entity values
(state names) are declared when first used. Times are simulated seconds (9 decimals). Events
are written in time order as they happen, in batches of 4096 lines: a crashed or interrupted
run keeps what was traced up to the last batch.
"""

from __future__ import annotations

from typing import IO, Any

from smpy.kernel.actors import current_actor

#: (number, name, fields) of the event definitions, SimGrid's numbering
EVENT_DEFS: tuple[tuple[int, str, tuple[tuple[str, str], ...]], ...] = (
    (0, "PajeDefineContainerType", (("Alias", "string"), ("Type", "string"), ("Name", "string"))),
    (1, "PajeDefineVariableType", (("Alias", "string"), ("Type", "string"), ("Name", "string"),
                                   ("Color", "color"))),
    (2, "PajeDefineStateType", (("Alias", "string"), ("Type", "string"), ("Name", "string"))),
    (3, "PajeDefineEventType", (("Alias", "string"), ("Type", "string"), ("Name", "string"))),
    (4, "PajeDefineLinkType", (("Alias", "string"), ("Type", "string"), ("StartContainerType", "string"),
                               ("EndContainerType", "string"), ("Name", "string"))),
    (5, "PajeDefineEntityValue", (("Alias", "string"), ("Type", "string"), ("Name", "string"),
                                  ("Color", "color"))),
    (6, "PajeCreateContainer", (("Time", "date"), ("Alias", "string"), ("Type", "string"),
                                ("Container", "string"), ("Name", "string"))),
    (7, "PajeDestroyContainer", (("Time", "date"), ("Type", "string"), ("Name", "string"))),
    (8, "PajeSetVariable", (("Time", "date"), ("Type", "string"), ("Container", "string"), ("Value", "double"))),
    (9, "PajeAddVariable", (("Time", "date"), ("Type", "string"), ("Container", "string"), ("Value", "double"))),
    (10, "PajeSubVariable", (("Time", "date"), ("Type", "string"), ("Container", "string"), ("Value", "double"))),
    (11, "PajeSetState", (("Time", "date"), ("Type", "string"), ("Container", "string"), ("Value", "string"))),
    (12, "PajePushState", (("Time", "date"), ("Type", "string"), ("Container", "string"), ("Value", "string"))),
    (13, "PajePopState", (("Time", "date"), ("Type", "string"), ("Container", "string"))),
    (14, "PajeResetState", (("Time", "date"), ("Type", "string"), ("Container", "string"))),
    (15, "PajeStartLink", (("Time", "date"), ("Type", "string"), ("Container", "string"), ("Value", "string"),
                           ("StartContainer", "string"), ("Key", "string"))),
    (16, "PajeEndLink", (("Time", "date"), ("Type", "string"), ("Container", "string"), ("Value", "string"),
                         ("EndContainer", "string"), ("Key", "string"))),
    (17, "PajeNewEvent", (("Time", "date"), ("Type", "string"), ("Container", "string"), ("Value", "string"))),
)


#: local calls SMPI does not trace (no state drawn)
UNTRACED = frozenset({"MPI_Wtime", "MPI_Wtick", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Get_processor_name",
                      "MPI_Initialized", "MPI_Finalized", "MPI_Get_version", "MPI_Query_thread",
                      "MPI_Is_thread_main"})


def header() -> str:
    out = []
    for num, name, fields in EVENT_DEFS:
        out.append(f"%EventDef {name} {num}\n")
        out.extend(f"%       {f} {t}\n" for f, t in fields)
        out.append("%EndEventDef\n")
    return "".join(out)


def _quote(name: str) -> str:
    return f'"{name}"' if (not name or any(c in name for c in ' \t"')) else name


def state_name(call: str) -> str:
    """SMPI's state name of an MPI call: ``PMPI_Send`` for ``MPI_Send``."""
    return "P" + call if call.startswith("MPI_") else call


def state_color(name: str) -> str:
    low = name.lower()
    if name == "computing":
        return "0 1 1"
    if "init" in low or "finalize" in low:
        return "0 1 0"
    if "recv" in low:
        return "1 0 0"
    if "send" in low:
        return "0 0 1"
    if "wait" in low or "test" in low or "probe" in low:
        return "1 1 0"
    return "1 0.5 0"


class PajeTracer:
    """Writes the Paje trace of a run; the tracer protocol of :mod:`smpy.mpi._call` plus
    :meth:`send` (a message posted), :meth:`rank_start` and :meth:`rank_end`."""

    def __init__(self, path: str, engine: Any, cpu: Any, platform: Any, placement: list,
                 energy: Any = None, comment: str = "") -> None:
        self.engine = engine
        self.fh: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.fh.write("#This file was generated by smpy (Paje format, as SimGrid's -trace)\n")
        if comment:
            self.fh.write(f"#{comment}\n")
        self.fh.write(header())
        self._buf: list[str] = []
        self._next = 0
        self.events = 0
        self._types: dict[tuple[int, str], int] = {}
        self._placement = placement
        # -- containers: zones (of the used hosts), hosts, ranks
        zone_of = _host_zones(platform)
        self._zone_alias: dict[int, int] = {}  # id(zone) -> alias (root zone: 0)
        self._zone_type: dict[int, int] = {}
        self._zones: list[tuple[int, int]] = []  # (alias, type) of the zones, in creation order
        self._host_alias: dict[int, int] = {}  # host index -> alias
        self._host_type: dict[int, int] = {}
        self._hosts: dict[int, Any] = {}
        for h in placement:
            if h.index in self._host_alias:
                continue
            parent, ptype = self._zone(zone_of.get(h.index))
            htype = self._type(0, ptype, "HOST")
            alias = self._alias()
            self._line(f"6 0.000000000 {alias} {htype} {parent} {_quote(h.name)}")
            self._host_alias[h.index] = alias
            self._host_type[h.index] = htype
            self._hosts[h.index] = h
        self._speed: dict[int, int] = {}
        for idx, h in self._hosts.items():
            htype = self._host_type[idx]
            speed = self._type(1, htype, "speed", "1 1 1")
            cores = self._type(1, htype, "core_count", "1 1 1")
            self._line(f"8 0.000000000 {speed} {self._host_alias[idx]} {h.speed_flops!r}")
            self._line(f"8 0.000000000 {cores} {self._host_alias[idx]} {h.cores}")
        self._power: dict[int, tuple[int, int]] = {}
        if energy is not None:
            for idx, _h in self._hosts.items():
                self._power[idx] = (self._type(1, self._host_type[idx], "power", "1 0 0"),
                                    self._host_alias[idx])
            for r in energy.records:
                pw = self._power.get(r.host.index)
                if pw is not None:
                    self._line(f"8 0.000000000 {pw[0]} {pw[1]} {r.power()!r}")
            energy.power_listeners.append(self._power_changed)
        self._rank_alias: list[int] = []
        self._state_type: list[int] = []
        self._mpi_type: list[int] = []
        self._link_types: dict[tuple[int, int], int] = {}
        self._one_link: int | None = None
        for rank, h in enumerate(placement):
            htype = self._host_type[h.index]
            mtype = self._type(0, htype, "MPI")
            alias = self._alias()
            self._line(f"6 0.000000000 {alias} {mtype} {self._host_alias[h.index]} rank-{rank}")
            self._rank_alias.append(alias)
            self._mpi_type.append(mtype)
            self._state_type.append(self._type(2, mtype, "MPI_STATE"))
        self._n = len(placement)
        #: per rank, its state type's table: MPI call or state name -> entity value alias
        tables: dict[int, dict[str, int]] = {}
        self._rank_values = [tables.setdefault(t, {}) for t in self._state_type]
        #: "<state type> <container>" of each rank, the common part of its push and pop lines
        self._ref = [f"{t} {a}" for t, a in zip(self._state_type, self._rank_alias)]
        self._t = -1.0
        self._ts = ""
        self._alive = [True] * len(placement)
        self._depth = [0] * len(placement)  # open MPI calls per rank
        self._drawn = [0] * len(placement)  # the state of the outermost one (0: none)
        self._pushed: dict[int, int] = {}  # id(exec) -> rank, computing states pushed
        self._sent: dict[int, int] = {}  # (source, destination, tag) -> messages posted
        self._delivered: dict[int, int] = {}  # ... and delivered
        cpu.on_exec_start.connect(self._exec_start)
        cpu.on_exec_end.connect(self._exec_end)

    # -- output -------------------------------------------------------------------------------
    def _line(self, text: str) -> None:
        buf = self._buf
        buf.append(text)
        if len(buf) >= 4096:
            self._flush()

    def _flush(self) -> None:
        if self._buf:
            self.events += len(self._buf)
            self.fh.write("\n".join(self._buf) + "\n")
            self._buf.clear()
            self.fh.flush()

    def _alias(self) -> int:
        self._next += 1
        return self._next

    def _type(self, kind: int, parent: int, name: str, color: str = "") -> int:
        """The alias of a type (``kind``: 0 container, 1 variable, 2 state), defined once."""
        key = (parent, name)
        alias = self._types.get(key)
        if alias is None:
            alias = self._types[key] = self._alias()
            self._line(f"{kind} {alias} {parent} {name}" + (f' "{color}"' if kind == 1 else ""))
        return alias

    def _zone(self, zone: Any) -> tuple[int, int]:
        """(container alias, type alias) of ``zone``, creating it and its parents."""
        if zone is None or zone.parent is None:
            return 0, 0
        key = id(zone)
        alias = self._zone_alias.get(key)
        if alias is None:
            parent, ptype = self._zone(zone.parent)
            depth = 0
            z = zone
            while z.parent is not None:
                depth += 1
                z = z.parent
            ztype = self._type(0, ptype, f"L{depth}")
            alias = self._alias()
            self._line(f"6 0.000000000 {alias} {ztype} {parent} {_quote(zone.name)}")
            self._zone_alias[key] = alias
            self._zone_type[key] = ztype
            self._zones.append((alias, ztype))
        return alias, self._zone_type[key]

    def _value(self, rank: int, name: str) -> int:
        """The alias of the state of ``name``, an MPI call name or a state name (declared at
        first use; 0 for calls without a state). Each rank reads its state type's table:
        state types differ only when hosts sit at different depths of the zone tree."""
        table = self._rank_values[rank]
        alias = table.get(name)
        if alias is None:
            if name in UNTRACED:
                alias = table[name] = 0
            else:
                state = state_name(name)
                alias = table.get(state)
                if alias is None:
                    alias = table[state] = self._alias()
                    self._line(f'5 {alias} {self._state_type[rank]} {_quote(state)} "{state_color(state)}"')
                table[name] = alias
        return alias

    def _now(self) -> str:
        now = self.engine.now
        if now != self._t:  # many events share their time: format it once
            self._t = now
            self._ts = f"{now:.9f}"
        return self._ts

    def _push(self, rank: int, name: str) -> None:
        value = self._rank_values[rank].get(name) or self._value(rank, name)
        self._line(f"12 {self._now()} {self._ref[rank]} {value}")

    def _pop(self, rank: int) -> None:
        self._line(f"13 {self._now()} {self._ref[rank]}")

    # -- tracer protocol ----------------------------------------------------------------------
    def enter(self, rank: int, name: str, frame: Any = None) -> None:
        if rank >= self._n or not self._alive[rank]:
            return
        depth = self._depth[rank] + 1
        self._depth[rank] = depth
        if depth == 1:  # only the outermost call is drawn
            value = self._rank_values[rank].get(name)
            if value is None:
                value = self._value(rank, name)
            self._drawn[rank] = value
            if value:
                self._line(f"12 {self._now()} {self._ref[rank]} {value}")

    def exit(self, rank: int) -> None:
        if rank >= self._n or not self._alive[rank]:
            return
        depth = self._depth[rank]
        if depth:
            self._depth[rank] = depth - 1
            if depth == 1 and self._drawn[rank]:
                self._line(f"13 {self._now()} {self._ref[rank]}")

    # Links: the n-th message from src to dst with a tag is keyed "<src>_<dst>_<tag>_<n>" when
    # posted and when delivered (messages of one source, destination and tag are delivered in
    # order, but for those of different communicators: then two links swap their starts)
    def send(self, src: int, dst: int, tag: int, nbytes: int) -> None:
        n = self._n
        if src >= n or dst >= n or not self._alive[src]:
            return
        k = ((src * n + dst) << 32) | (tag & 0xFFFFFFFF)
        seq = self._sent.get(k, 0)
        self._sent[k] = seq + 1
        self._line(f"15 {self._now()} {self._link_type(src, dst)} 0 PTP {self._rank_alias[src]} "
                   f"{src}_{dst}_{tag}_{seq}")

    def message(self, src: int, dst: int, t0: float, nbytes: int, tag: int) -> None:
        n = self._n
        k = ((src * n + dst) << 32) | (tag & 0xFFFFFFFF)
        seq = self._delivered.get(k, 0)
        if seq >= self._sent.get(k, 0) or not self._alive[dst]:
            return  # not drawn when posted (the sender had ended)
        self._delivered[k] = seq + 1
        self._line(f"16 {self._now()} {self._link_type(src, dst)} 0 PTP {self._rank_alias[dst]} "
                   f"{src}_{dst}_{tag}_{seq}")

    def _link_type(self, src: int, dst: int) -> int:
        if self._one_link is not None:
            return self._one_link
        pair = (self._mpi_type[src], self._mpi_type[dst])
        alias = self._link_types.get(pair)
        if alias is None:
            alias = self._link_types[pair] = self._alias()
            name = "MPI_LINK" if pair[0] == pair[1] else f"MPI_LINK_{pair[0]}_{pair[1]}"
            self._line(f"4 {alias} 0 {pair[0]} {pair[1]} {name}")
            if len(set(self._mpi_type)) == 1:  # every rank container has the same type
                self._one_link = alias
        return alias

    def rank_start(self, rank: int) -> None:
        if rank < len(self._alive) and self._alive[rank]:
            self._push(rank, "PMPI_Init")
            self._pop(rank)

    def rank_end(self, rank: int) -> None:
        if rank >= len(self._alive) or not self._alive[rank]:
            return
        self._end_calls(rank)
        self._push(rank, "PMPI_Finalize")
        self._pop(rank)
        self._destroy_rank(rank)

    def _end_calls(self, rank: int) -> None:
        """Pop the state of a call that never returned (the rank ended inside it)."""
        if self._depth[rank] > 0 and self._drawn[rank]:
            self._pop(rank)
        self._depth[rank] = 0

    def _destroy_rank(self, rank: int) -> None:
        for ex, r in list(self._pushed.items()):
            if r == rank:
                del self._pushed[ex]
                self._pop(rank)
        self._alive[rank] = False
        self._line(f"7 {self._now()} {self._mpi_type[rank]} {self._rank_alias[rank]}")

    # -- computation and power ----------------------------------------------------------------
    def _exec_start(self, ex: Any) -> None:
        a = current_actor()
        if a is None or not isinstance(a.pid, int):
            return
        rank = a.pid
        if rank < self._n and self._alive[rank] and self._depth[rank] == 0 \
                and a.data is not None and getattr(a.data, "actor", None) is a:
            self._pushed[id(ex)] = rank
            self._push(rank, "computing")

    def _exec_end(self, ex: Any) -> None:
        rank = self._pushed.pop(id(ex), None)
        if rank is not None:
            self._pop(rank)

    def _power_changed(self, host: Any, time: float, watts: float) -> None:
        pw = self._power.get(host.index)
        if pw is not None and not self.fh.closed:
            self._line(f"8 {time:.9f} {pw[0]} {pw[1]} {watts!r}")

    def close(self) -> None:
        if self.fh.closed:
            return
        for rank, alive in enumerate(self._alive):
            if alive:  # a rank that did not end (error, deadlock, interruption)
                self._end_calls(rank)
                self._destroy_rank(rank)
        now = self._now()
        for idx, alias in self._host_alias.items():
            self._line(f"7 {now} {self._host_type[idx]} {alias}")
        for alias, ztype in reversed(self._zones):
            self._line(f"7 {now} {ztype} {alias}")
        self._flush()
        self.fh.close()


def _host_zones(platform: Any) -> dict[int, Any]:
    """Host index -> the zone that holds it (empty without a zone tree)."""
    out: dict[int, Any] = {}
    root = getattr(platform, "zone", None)
    stack = [root] if root is not None else []
    while stack:
        z = stack.pop()
        for v in z.vertices:
            if v.host is not None:
                out[v.host.index] = z
        stack.extend(z.children)
    return out
