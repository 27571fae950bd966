r"""CPU model: executions share a host's cores fairly.

A host with :math:`n` cores of speed :math:`s` (flop/s, current pstate) runs the set
:math:`E` of its active executions. Execution :math:`e` may use at most one core and at
most its own bound :math:`\beta_e` (e.g. a polling loop using 80 % of a core), so its cap
is :math:`u_e = \min(s, \beta_e)`. Rates are max-min fair under the host capacity
:math:`n s` (water-filling, caps ascending):

.. math::

    r_e = \min\Big(u_e,\ \frac{n s - \sum_{u_f < u_e} r_f}{|\{f : u_f \ge u_e\}|}\Big).

With equal caps this is :math:`r_e = \min(s, n s / |E|)`: up to :math:`n` executions run
at full speed, beyond that they slow down proportionally — SimGrid's Cas01 model. An
execution of :math:`F` flops started at :math:`t_0` on an otherwise idle host finishes at
:math:`t_0 + F / s`.

**Memory contention.** An execution may declare a memory-bound fraction :math:`f_e \in [0, 1]`:
the part of its time that, alone on the host, streams memory at the per-core bandwidth
:math:`b_1`. Cores of one host share the aggregate bandwidth :math:`B`. With

.. math::

    k = \sum_{e:\, f_e > 0} r_e / s

cores busy with memory-bound executions (an execution holding a whole core counts 1, a
time-shared one its share), each of them progresses at

.. math::

    \rho_e = \frac{r_e}{(1 - f_e) + f_e\, \sigma(k)\, s / \hat s}, \qquad
    \sigma(k) = \max(1,\ k\, b_1 / B)

flop/s, :math:`\hat s` the core speed of the host's fastest pstate: its compute part runs at
the core's speed, and its memory part at the memory's pace, :math:`\sigma(k)` times slower
than alone and unaffected by the pstate (at :math:`s = \hat s`, :math:`\rho_e = r_e / (1 +
f_e (\sigma(k) - 1))`). Lowering the pstate thus slows a memory-bound region less than a
compute-bound one, the usual observation behind DVFS for memory-bound codes (Hsu and Feng's
:math:`\beta` model, with :math:`\beta = 1 - f`). The memory-bound fraction is defined at
the fastest pstate, where the calibration measures it.
This assumes the memory phases of co-running executions overlap (true of SPMD ranks running
the same loop; an upper bound otherwise); the fractions are calibrated under the same
assumption (``smpy calibrate compute --contention``: :math:`f = (s - 1) / (\sigma(P) - 1)`
from the slowdown :math:`s` measured with :math:`P` ranks at once), so the calibrating run is
reproduced whatever the split between :math:`f` and :math:`\sigma`. Executions with
:math:`f_e = 0` (the default) neither count nor change, and hosts without memory bandwidths
(:math:`\sigma \equiv 1`) at their fastest pstate behave as without this paragraph. Stalled cores stay
busy: the load reported to energy listeners is :math:`\sum_e r_e / s`.

**Memory capacity.** On a host whose ranks occupy :math:`M` bytes of its memory, every
rate above (including :math:`\rho_e`) is divided by :math:`1 + \alpha(M)`
(:mod:`smpy.cpu.memory`, UniMPP's delay function); the cores stay as busy.

Rates are recomputed once per simulation round for the hosts whose set of executions or
pstate changed (``update()``). ``on_load_change(host, busy_cores, now)`` reports the
number of busy cores (:math:`\sum_e r_e / s`) whenever it changes, and ``on_host_change(host)``
fires before a pstate or on/off change, so that listeners (energy) can account for the
interval that ends.

**Failures.** :meth:`CpuModel.fail_host` switches a host off (its power drops to the off
wattage through ``on_host_change``), fails its running executions and kills the actors
placed on it (:func:`smpy.kernel.actors.kill`), at the current simulated time;
``on_host_failure(host)`` then fires. :meth:`CpuModel.repair_host` switches it back on (dead
actors stay dead).
"""

from __future__ import annotations

import math

from smpy.cpu.host import Host
from smpy.kernel.activity import RUNNING, ActivityFailed, RateActivity
from smpy.kernel.actors import kill
from smpy.kernel.engine import Engine
from smpy.kernel.signals import Signal

_INF = math.inf


class Exec(RateActivity):
    """Execution of ``total`` flops on ``host`` (an activity)."""

    __slots__ = ("host", "bound", "model", "label", "memory")

    def __init__(self, model: CpuModel, host: Host, flops: float, bound: float, label: str,
                 memory: float = 0.0) -> None:
        # RateActivity.__init__ and Activity.__init__, inlined: one call per compute burst
        # (every MPI call of a default run) instead of three (tests/kernel/test_flat_inits.py)
        engine = self.engine = model.engine
        self.state = RUNNING
        self.waiters = []
        self.callbacks = None
        self.exception = None
        self.start_time = now = engine.now
        self.finish_time = -1.0
        self.total = flops
        self.remaining = flops
        self.rate = 0.0
        self.last_update = now
        self._done_event = None
        self.model = model
        self.host = host
        self.bound = bound
        self.label = label
        #: memory-bound fraction f of the execution's time alone (see the module docstring)
        self.memory = memory

    def _on_work_done(self) -> None:
        self.model._remove(self)
        self._finish()

    def _on_cancel(self) -> None:
        super()._on_cancel()
        self.model._remove(self)

    def describe(self) -> str:
        return f"{self.label} of {self.total:.6g} flops on {self.host.name}"


class _HostState:
    __slots__ = ("execs", "busy", "special", "memory")

    def __init__(self) -> None:
        self.execs: list[Exec] = []
        self.busy = 0.0
        #: executions in ``execs`` with a bound or a memory-bound fraction (none: equal shares)
        self.special = 0
        #: those with a memory-bound fraction (none: bounds only, see CpuModel._share)
        self.memory = 0


class CpuModel:
    # read at every message (issue 24): slots; the others stay in the instance dict
    __slots__ = ("engine", "dirty", "__dict__", "__weakref__")

    def __init__(self, engine: Engine, hosts: list[Host]) -> None:
        self.engine = engine
        self.dirty = False
        self._dirty_hosts: dict[int, Host] = {}
        for h in hosts:
            h.model_data = _HostState()
        self.on_load_change = Signal("cpu_load_change")  # (host, busy_cores) before the change
        self.on_host_change = Signal("host_change")  # (host) before a pstate or on/off change
        self.on_exec_start = Signal("exec_start")  # (exec)
        self.on_exec_end = Signal("exec_end")  # (exec)
        self.on_host_failure = Signal("host_failure")  # (host) after its actors were killed
        engine.add_model(self)

    def execute(self, host: Host, flops: float, bound: float = math.inf, label: str = "compute",
                memory: float = 0.0) -> Exec:
        """Run ``flops`` on ``host``; ``memory``: the memory-bound fraction of that work."""
        if not 0.0 <= memory <= 1.0:
            raise ValueError(f"memory-bound fraction must be within [0, 1], got {memory}")
        ex = Exec(self, host, flops, bound, label, memory)
        if flops <= 0.0:
            ex._finish()
            return ex
        st = host.model_data
        st.execs.append(ex)
        if bound != _INF or memory != 0.0:
            st.special += 1
            if memory != 0.0:
                st.memory += 1
        self._mark(host)
        if self.on_exec_start:
            self.on_exec_start.emit(ex)
        return ex

    def host_changed(self, host: Host) -> None:
        """Call after a pstate or on/off change of ``host``."""
        self._mark(host)

    def set_pstate(self, host: Host, pstate: int) -> None:
        """Switch ``host`` to ``pstate``; running executions continue at the new speed."""
        if not 0 <= pstate < host.pstate_count:
            raise ValueError(f"host {host.name}: pstate {pstate} out of range 0..{host.pstate_count - 1}")
        if pstate == host.pstate:
            return
        if self.on_host_change:
            self.on_host_change.emit(host)
        host.pstate = pstate
        self._mark(host)

    def set_on(self, host: Host, on: bool) -> None:
        """Power ``host`` on or off (off: speed 0, executions stall)."""
        if on == host.is_on:
            return
        if self.on_host_change:
            self.on_host_change.emit(host)
        host.is_on = on
        self._mark(host)

    def fail_host(self, host: Host) -> None:
        """``host`` fails now: off, its executions fail, the actors on it are killed."""
        self.set_on(host, False)
        for ex in list(host.model_data.execs):
            if ex.state == RUNNING:
                ex._on_cancel()  # releases the core share (and the event)
                ex._fail(ActivityFailed(f"host {host.name} failed"))
        for actor in list(self.engine.actors):
            if actor.host is host and actor.alive:
                kill(actor)
        if self.on_host_failure:
            self.on_host_failure.emit(host)

    def repair_host(self, host: Host) -> None:
        """``host`` is back on (the actors it ran stay dead)."""
        self.set_on(host, True)

    def _mark(self, host: Host) -> None:
        self._dirty_hosts[host.index] = host
        self.dirty = True

    def _remove(self, ex: Exec) -> None:
        st = ex.host.model_data
        try:
            st.execs.remove(ex)
        except ValueError:
            return
        if ex.bound != _INF or ex.memory != 0.0:
            st.special -= 1
            if ex.memory != 0.0:
                st.memory -= 1
        self._mark(ex.host)
        if self.on_exec_end:
            self.on_exec_end.emit(ex)

    def update(self) -> None:
        hosts = self._dirty_hosts
        self._dirty_hosts = {}
        self.dirty = False
        if len(hosts) == 1:
            for host in hosts.values():
                self._share(host)
            return
        for idx in sorted(hosts):
            self._share(hosts[idx])

    def _share(self, host: Host) -> None:
        st: _HostState = host.model_data
        s = host.speed_flops if host.is_on else 0.0
        if len(st.execs) < 2:  # the common case (a rank's burst alone on its host): no list, no sort
            busy = self._alone(host, st.execs[0], s) if st.execs else 0.0
            if busy >= 0.0:
                self._report(host, st, busy / s if s > 0 else 0.0)
                return
        elif not st.special:  # no bound, no memory-bound part: the equal shares below, inlined
            self._report(host, st, self._equal(host, st.execs, s) / s if s > 0 else 0.0)
            return
        elif not st.memory:  # bounds only (MPI_Iprobe's polling at a core's speed): when none
            # of the running executions is capped below the core speed, the equal shares
            # too (the path below gives the same values: nothing is contended)
            for e in st.execs:
                if e.bound < s and e.state == RUNNING:
                    break
            else:
                self._report(host, st, self._equal(host, st.execs, s) / s if s > 0 else 0.0)
                return
        execs = [e for e in st.execs if e.state == RUNNING]
        capacity = host.cores * s
        slowf = host.memory_slowdown  # memory capacity (smpy.cpu.memory): 1 + alpha(M)
        busy = 0.0
        if execs:
            # memory-bound parts only matter on hosts with bandwidths or below their fastest pstate,
            # and only for executions with a fraction
            contended = ((host.memory_bandwidth < _INF or s < host.top_speed) and s > 0
                         and any(e.memory > 0.0 for e in execs))
            if all(e.bound >= s for e in execs):
                r = min(s, capacity / len(execs))
                busy = r * len(execs)
                if not contended:
                    rr = r / slowf
                    for e in execs:
                        if e.rate != rr:
                            e._set_rate(rr)
                rates = [r] * len(execs) if contended else []
            else:
                order = sorted(execs, key=lambda e: min(s, e.bound))
                left = capacity
                n = len(order)
                shares = {}
                for i, e in enumerate(order):
                    r = min(s, e.bound, left / (n - i))
                    left -= r
                    shares[id(e)] = r
                    busy += r
                rates = [shares[id(e)] for e in execs]
                if not contended:
                    for e, r in zip(execs, rates):
                        if e.rate != r / slowf:
                            e._set_rate(r / slowf)
            if contended:
                # the memory part: sigma(k) times its time alone, at the memory's pace (s_hat)
                slow = host.memory_contention(sum(r for e, r in zip(execs, rates) if e.memory > 0.0) / s) \
                    * s / host.top_speed
                for e, r in zip(execs, rates):
                    if e.memory > 0.0:
                        r /= 1.0 - e.memory + e.memory * slow
                    r /= slowf
                    if e.rate != r:
                        e._set_rate(r)
        self._report(host, st, busy / s if s > 0 else 0.0)

    @staticmethod
    def _equal(host: Host, execs: list[Exec], s: float) -> float:
        """The general sharing below when no execution has a bound or a memory-bound part
        (every share ``min(s, n s / |E|)``, the same values without the tests): rates set,
        the busy flop/s returned. Two of these per compute burst on a busy host."""
        n = len(execs)
        for e in execs:
            if e.state != RUNNING:
                n -= 1
        if not n:
            return 0.0
        r = min(s, host.cores * s / n)
        rr = r / host.memory_slowdown
        for e in execs:
            if e.rate != rr:
                e._set_rate(rr)  # a no-op on an execution that is not running
        return r * n

    @staticmethod
    def _alone(host: Host, e: Exec, s: float) -> float:
        """The general sharing below for one execution, when it is not capped below the core
        speed and has no memory-bound part (the same values): its rate set, the busy flop/s
        returned; -1 when the general path must run."""
        if e.state != RUNNING:
            return 0.0
        if e.bound < s or e.memory != 0.0:
            return -1.0
        r = min(s, host.cores * s)
        rr = r / host.memory_slowdown
        if e.rate != rr:
            e._set_rate(rr)
        return r

    def _report(self, host: Host, st: _HostState, busy_cores: float) -> None:
        if busy_cores != st.busy:
            if self.on_load_change:
                self.on_load_change.emit(host, busy_cores)
            st.busy = busy_cores

    def busy_cores(self, host: Host) -> float:
        return host.model_data.busy
