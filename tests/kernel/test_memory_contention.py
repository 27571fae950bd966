"""The host memory-contention model of smpy.cpu.model (no MPI): executions with a
memory-bound fraction f slow down by 1 + f (sigma(k) - 1), sigma(k) = max(1, k b1 / B)."""

import math

import pytest

from smpy.cpu.host import Host
from smpy.cpu.model import CpuModel
from smpy.kernel import Actor, Engine, Sleep, block_on


def _host(cores=2, bandwidth=30e9, core_bandwidth=20e9):
    h = Host("h", cores=cores, speeds_flops=[100.0], index=0)
    h.memory_bandwidth, h.core_memory_bandwidth = bandwidth, core_bandwidth
    return h


def _run(host, jobs):
    """jobs: name -> (start, flops, fraction); returns name -> end time."""
    eng = Engine()
    cpu = CpuModel(eng, [host])
    ends = {}

    def body(name, start, flops, fraction):
        if start:
            block_on(Sleep(eng, start))
        block_on(cpu.execute(host, flops, memory=fraction))
        ends[name] = eng.now

    for name, job in jobs.items():
        Actor(eng, name, body, (name, *job)).start()
    eng.run()
    return ends, cpu


def test_sigma_of_the_host():
    h = _host()
    assert h.memory_contention(1) == 1.0  # 20 GB/s of 30: one core does not saturate
    assert h.memory_contention(2) == pytest.approx(4 / 3)
    assert h.memory_contention(3) == pytest.approx(2.0)
    assert Host("x", 2, [1.0]).memory_contention(8) == 1.0  # no bandwidths: no contention


def test_two_memory_bound_executions_slow_each_other():
    # sigma(2) = 4/3; f = 0.5: each runs 1 + 0.5 / 3 times slower than alone
    ends, _ = _run(_host(), {"a": (0.0, 100.0, 0.5), "b": (0.0, 100.0, 0.5)})
    assert ends["a"] == pytest.approx(1 + 0.5 / 3) and ends["b"] == pytest.approx(1 + 0.5 / 3)


def test_contention_follows_the_overlap_in_time():
    # a alone for 0.5 s (50 flops), then both at 100 / (1 + 1/6) flop/s: a's last 50 flops take
    # 0.5833 s; b has 50 done when a ends at 1.0833, then 0.5 s alone
    ends, _ = _run(_host(), {"a": (0.0, 100.0, 0.5), "b": (0.5, 100.0, 0.5)})
    slow = 1 + 0.5 / 3
    assert ends["a"] == pytest.approx(0.5 + 0.5 * slow)
    assert ends["b"] == pytest.approx(ends["a"] + 0.5)


def test_compute_bound_executions_neither_count_nor_slow_down():
    ends, _ = _run(_host(), {"a": (0.0, 100.0, 0.5), "b": (0.0, 100.0, 0.0)})
    assert ends == {"a": pytest.approx(1.0), "b": pytest.approx(1.0)}


def test_host_without_memory_bandwidths_is_unchanged():
    ends, _ = _run(_host(bandwidth=math.inf, core_bandwidth=math.inf),
                   {"a": (0.0, 100.0, 1.0), "b": (0.0, 100.0, 1.0)})
    assert ends == {"a": pytest.approx(1.0), "b": pytest.approx(1.0)}


def test_time_shared_cores_count_by_their_share_and_stay_busy():
    # 3 fully memory-bound executions on 2 cores: each gets 200/3 flop/s of core, k = 2 busy
    # cores, sigma = 4/3, so each progresses at 50 flop/s: 100 flops end at t = 2
    h = _host()
    eng = Engine()
    cpu = CpuModel(eng, [h])
    loads = []
    cpu.on_load_change.connect(lambda host, busy: loads.append(busy))
    ends = []

    def body():
        block_on(cpu.execute(h, 100.0, memory=1.0))
        ends.append(eng.now)

    for i in range(3):
        Actor(eng, f"e{i}", body).start()
    eng.run()
    assert ends == pytest.approx([2.0, 2.0, 2.0])
    assert loads and loads[0] == pytest.approx(2.0)  # stalled cores are busy cores (energy)


def test_fraction_out_of_range_is_refused():
    eng = Engine()
    h = _host()
    cpu = CpuModel(eng, [h])
    with pytest.raises(ValueError, match="memory-bound fraction"):
        cpu.execute(h, 1.0, memory=1.5)


def test_memory_bound_part_does_not_follow_the_pstate():
    # 100 flops at pstate 1 (50 flop/s, fastest 100 flop/s): a compute-bound execution takes 2 s;
    # with f = 0.5 half of its time alone at full speed (0.5 s) is memory-bound and stays 0.5 s,
    # the other half doubles to 1 s: 1.5 s
    def slow_host(**memory):
        h = Host("h", cores=2, speeds_flops=[100.0, 50.0], pstate=1, index=0)
        for k, v in memory.items():
            setattr(h, k, v)
        return h

    ends, _ = _run(slow_host(), {"a": (0.0, 100.0, 0.5), "b": (0.0, 100.0, 0.0)})
    assert ends == {"a": pytest.approx(1.5), "b": pytest.approx(2.0)}
    # with contention too: the memory half takes 0.5 s x sigma(2) = 4/3 -> 1 + 2/3 s
    ends, _ = _run(slow_host(memory_bandwidth=30e9, core_memory_bandwidth=20e9),
                   {"a": (0.0, 100.0, 0.5), "b": (0.0, 100.0, 0.5)})
    assert ends == {"a": pytest.approx(1 + 2 / 3), "b": pytest.approx(1 + 2 / 3)}


def test_pstate_change_mid_execution_moves_only_the_compute_part():
    # f = 0.5, 100 flops: at 100 flop/s for 0.5 s (50 flops done), then pstate 1 (50 flop/s):
    # the remaining 50 flops progress at 50 / (0.5 + 0.5 * 0.5) = 66.67 flop/s: 0.75 s more
    h = Host("h", cores=1, speeds_flops=[100.0, 50.0], index=0)
    eng = Engine()
    cpu = CpuModel(eng, [h])
    ends = []

    def body():
        block_on(cpu.execute(h, 100.0, memory=0.5))
        ends.append(eng.now)

    Actor(eng, "a", body).start()
    eng.schedule(0.5, lambda: cpu.set_pstate(h, 1))
    eng.run()
    assert ends == [pytest.approx(1.25)]
