"""smpy.cpu.model's shares on a host whose executions have bounds but no memory-bound part
(MPI_Iprobe polls at a core's speed: bound = the core speed): when no running execution is
capped below the core speed, the equal shares are taken directly; the general water-filling
gives the same values bit for bit (forced here by a memory counter that sends every share
down the general path)."""

from __future__ import annotations

import math

from smpy.cpu.host import Host
from smpy.cpu.model import CpuModel, _HostState
from smpy.kernel import Actor, Engine, Sleep, block_on

JOBS = {  # name -> (start, flops, bound): four cores, up to seven executions at once
    "a": (0.0, 300.0, math.inf), "b": (0.0, 150.0, 100.0), "c": (0.1, 90.0, 100.0),
    "d": (0.2, 500.0, math.inf), "e": (0.25, 40.0, 100.0), "f": (0.3, 70.0, 60.0),
    "g": (0.3, 220.0, 100.0), "h": (1.7, 30.0, 100.0),
}


def _run(general: bool):
    host = Host("h", cores=4, speeds_flops=[100.0], index=0)
    eng = Engine()
    cpu = CpuModel(eng, [host])
    if general:  # a count the fast path reads: every share goes the general way
        host.model_data.memory = 1_000_000
    ends, loads = {}, []
    cpu.on_load_change.connect(lambda h, busy: loads.append((eng.now, busy)))

    def body(name, start, flops, bound):
        if start:
            block_on(Sleep(eng, start))
        block_on(cpu.execute(host, flops, bound=bound))
        ends[name] = eng.now

    for name, job in JOBS.items():
        Actor(eng, name, body, (name, *job)).start()
    eng.run()
    return ends, loads


def test_bounded_shares_the_same_as_the_general_path():
    fast, general = _run(False), _run(True)
    assert fast == general
    ends, loads = fast
    assert len(ends) == len(JOBS) and len(loads) > 8
    assert ends["f"] > 70.0 / 60.0 + 0.3  # capped at 60 flop/s (and shared at times)


def test_memory_counter_follows_the_executions():
    host = Host("h", cores=2, speeds_flops=[100.0], index=0)
    eng = Engine()
    cpu = CpuModel(eng, [host])
    st: _HostState = host.model_data
    a = cpu.execute(host, 100.0, bound=50.0)
    b = cpu.execute(host, 100.0, memory=0.5)
    assert (st.special, st.memory) == (2, 1)
    cpu._remove(b)
    assert (st.special, st.memory) == (1, 0)
    cpu._remove(a)
    assert (st.special, st.memory) == (0, 0)
