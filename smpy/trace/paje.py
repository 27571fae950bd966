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

Processes started during the run (``MPI_Comm_spawn``; with ``procs``) get their container
(and their host's, and its zones') when they start, at that time, and lose it when they end.
With ``jobs`` (``smpy batch --trace``) the ranks are not in their hosts but in a container of
type ``JOB`` per job (created at its submit time, destroyed at the end of its last rank),
named ``rank-<r>`` by their rank in the job's ``COMM_WORLD``; a state ``JOB_STATE`` on it is
``waiting`` from the submit time, ``running`` from the start of its first rank. With a node
pool (``nodes``, dynamic allocation, :mod:`smpy.runtime.nodes`) each host container has the
state ``NODE_STATE`` (``off``, ``booting``, ``free``, ``allocated``, ``shutting down``, set
at each change) and every host of the platform has a container: from the start with
``nodes_from_start`` (a batch, a platform whose nodes have a lifecycle), else from the first
change that is not a node going free at the end of its ranks (spawns on a plain platform).

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
                 energy: Any = None, comment: str = "", procs: list | None = None,
                 jobs: list[tuple[str, float]] | None = None, job_of: Any = None, nodes: Any = None,
                 nodes_from_start: bool = False) -> None:
        self.engine = engine
        self._zone_of = _host_zones(platform)
        self._energy = energy
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
        zone_of = self._zone_of
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
        self._tables: dict[int, dict[str, int]] = {}
        self._rank_values = [self._tables.setdefault(t, {}) for t in self._state_type]
        self._mtypes = set(self._mpi_type)
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
        self._later(procs, jobs, job_of, nodes, nodes_from_start)

    def _later(self, procs: list | None, jobs: list[tuple[str, float]] | None, job_of: Any, nodes: Any,
               nodes_from_start: bool) -> None:
        """What appears during the run: processes, jobs, node states (module docstring)."""
        engine = self.engine
        self._procs = procs
        self._job_of = job_of
        self._jobs = jobs or []
        self._job_alias: dict[int, int] = {}
        self._job_left: dict[int, int] = {}  # ranks of the job not ended
        self._job_ran: set[int] = set()
        if self._jobs:
            self._job_type = self._type(0, 0, "JOB")
            self._job_state = self._type(2, self._job_type, "JOB_STATE")
            self._job_mpi = self._type(0, self._job_type, "MPI")
            for k, (_name, submit) in enumerate(self._jobs):
                engine.schedule_daemon(max(0.0, submit - engine.now), self._submit, k)
        if procs is not None:
            engine.on_actor_start.connect(self._actor_start)
            engine.on_actor_end.connect(self._actor_end)
        self._pool = nodes
        self._values: dict[tuple[int, str], int] = {}  # (state type, name) -> entity value
        self._nodes_drawn = False
        if nodes is not None:
            self._node_now = list(nodes.state)
            nodes.state_listeners.append(self._node_state)
            if nodes_from_start:
                self._draw_nodes()

    # -- processes, jobs and nodes that appear during the run -----------------------------------
    def _host_container(self, h: Any) -> int:
        """The alias of host ``h``'s container, created now (with its zones and variables)."""
        alias = self._host_alias.get(h.index)
        if alias is not None:
            return alias
        parent, ptype = self._zone(self._zone_of.get(h.index))
        htype = self._type(0, ptype, "HOST")
        alias = self._alias()
        now = self._now()
        self._line(f"6 {now} {alias} {htype} {parent} {_quote(h.name)}")
        self._host_alias[h.index] = alias
        self._host_type[h.index] = htype
        self._hosts[h.index] = h
        self._line(f"8 {now} {self._type(1, htype, 'speed', '1 1 1')} {alias} {h.speed_flops!r}")
        self._line(f"8 {now} {self._type(1, htype, 'core_count', '1 1 1')} {alias} {h.cores}")
        if self._energy is not None:
            self._power[h.index] = pw = (self._type(1, htype, "power", "1 0 0"), alias)
            for r in self._energy.records:
                if r.host.index == h.index:
                    self._line(f"8 {now} {pw[0]} {alias} {r.power()!r}")
        return alias

    def _set_state(self, stype: int, container: int, name: str, color: str) -> None:
        """PajeSetState of ``name`` (its entity value declared at first use)."""
        value = self._values.get((stype, name))
        if value is None:
            value = self._values[(stype, name)] = self._alias()
            self._line(f'5 {value} {stype} {_quote(name)} "{color}"')
        self._line(f"11 {self._now()} {stype} {container} {value}")

    def _submit(self, k: int) -> int:
        """The container of job ``k``, created (in state ``waiting``) at its first need."""
        alias = self._job_alias.get(k)
        if alias is None and not self.fh.closed:
            alias = self._job_alias[k] = self._alias()
            self._line(f"6 {self._now()} {alias} {self._job_type} 0 {_quote(self._jobs[k][0])}")
            self._set_state(self._job_state, alias, "waiting", "1 1 0.5")
        return alias or 0

    def _actor_start(self, actor: Any) -> None:
        proc = actor.data
        if proc is None or getattr(proc, "actor", None) is not actor or not isinstance(actor.pid, int):
            return
        rank = actor.pid
        if rank < self._n and (self._alive[rank] or self._rank_alias[rank]):
            return  # an initial rank
        while len(self._rank_alias) <= rank:  # not yet started ranks: placeholders
            for lst, v in ((self._rank_alias, 0), (self._mpi_type, 0), (self._state_type, 0), (self._ref, ""),
                           (self._alive, False), (self._depth, 0), (self._drawn, 0)):
                lst.append(v)  # type: ignore[attr-defined]
            self._rank_values.append({})
        self._n = len(self._rank_alias)
        if self._job_of is not None:
            k, name = self._job_of(proc)
            parent, mtype = self._submit(k), self._job_mpi
            if k not in self._job_ran:
                self._job_ran.add(k)
                self._set_state(self._job_state, parent, "running", "0.3 0.5 0.9")
            self._job_left[k] = self._job_left.get(k, 0) + 1
        else:
            parent = self._host_container(proc.host)
            mtype, name = self._type(0, self._host_type[proc.host.index], "MPI"), f"rank-{rank}"
        alias = self._alias()
        self._line(f"6 {self._now()} {alias} {mtype} {parent} {name}")
        stype = self._type(2, mtype, "MPI_STATE")
        self._rank_alias[rank], self._mpi_type[rank], self._state_type[rank] = alias, mtype, stype
        self._rank_values[rank] = self._tables.setdefault(stype, {})
        self._ref[rank] = f"{stype} {alias}"
        self._alive[rank] = True
        if mtype not in self._mtypes:
            self._mtypes.add(mtype)
            self._one_link = None

    def _actor_end(self, actor: Any) -> None:
        proc = actor.data
        if proc is None or getattr(proc, "actor", None) is not actor or not isinstance(actor.pid, int):
            return
        rank = actor.pid
        if rank < self._n and self._alive[rank] and not self.fh.closed:
            self._end_calls(rank)
            self._destroy_rank(rank)

    def _rank_ended(self, rank: int) -> None:
        """A job's container ends with its last rank."""
        if self._job_of is None or rank >= len(self._procs or []):
            return
        k, _ = self._job_of(self._procs[rank])  # type: ignore[index]
        left = self._job_left.get(k, 0) - 1
        self._job_left[k] = left
        if left == 0 and k in self._job_alias:
            self._line(f"7 {self._now()} {self._job_type} {self._job_alias.pop(k)}")

    def _draw_nodes(self) -> None:
        self._nodes_drawn = True
        hosts = self._pool.hosts
        for h in hosts:
            self._host_container(h)
        for i in range(len(hosts)):
            self._set_node(i, self._node_now[i])

    def _set_node(self, i: int, state: str) -> None:
        stype = self._type(2, self._host_type[i], "NODE_STATE")
        self._set_state(stype, self._host_alias[i], state.replace("_", " "), NODE_COLORS.get(state, "1 1 1"))

    def _node_state(self, i: int, state: str) -> None:
        old = self._node_now[i]
        self._node_now[i] = state
        if old == state or self.fh.closed:
            return
        if self._nodes_drawn:
            self._set_node(i, state)
        elif not (old == "allocated" and state == "free"):  # the first dynamic change
            self._draw_nodes()

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
        k = (((src << 32) | dst) << 32) | (tag & 0xFFFFFFFF)
        seq = self._sent.get(k, 0)
        self._sent[k] = seq + 1
        self._line(f"15 {self._now()} {self._link_type(src, dst)} 0 PTP {self._rank_alias[src]} "
                   f"{src}_{dst}_{tag}_{seq}")

    def message(self, src: int, dst: int, t0: float, nbytes: int, tag: int) -> None:
        if src >= self._n or dst >= self._n:
            return
        k = (((src << 32) | dst) << 32) | (tag & 0xFFFFFFFF)
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
            if len(self._mtypes) == 1:  # every rank container has the same type
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
        self._rank_ended(rank)

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
        for alias in self._job_alias.values():  # jobs that did not end
            self._line(f"7 {now} {self._job_type} {alias}")
        for idx, alias in self._host_alias.items():
            self._line(f"7 {now} {self._host_type[idx]} {alias}")
        for alias, ztype in reversed(self._zones):
            self._line(f"7 {now} {ztype} {alias}")
        self._flush()
        self.fh.close()


#: colours of the node states
NODE_COLORS = {"allocated": "0 0.6 0", "free": "0.85 0.85 0.85", "off": "0.2 0.2 0.2", "booting": "1 0.8 0",
               "shutting_down": "0.8 0.4 0"}


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
