"""OS waits in the kernel: a descriptor made ready by another actor wakes its waiter at the
simulated time of the write; a wait only the outside can end makes the engine wait in a real
poll without moving simulated time."""

from __future__ import annotations

import os
import threading
import time

from smpy.kernel import Engine, Sleep, block_on
from smpy.kernel.actors import Actor
from smpy.kernel.oswait import POLLIN, CheckWait, FdWait


def test_fd_ready_by_another_actor_wakes_at_the_write() -> None:
    engine = Engine()
    r, w = os.pipe()
    woke: list[float] = []

    def reader() -> None:
        act = block_on(FdWait(engine, [(r, POLLIN)], "read end"))
        woke.append(engine.now)
        assert act.revents == {r: POLLIN}
        assert os.read(r, 10) == b"hi"

    def writer() -> None:
        block_on(Sleep(engine, 3.0))
        os.write(w, b"hi")
        block_on(Sleep(engine, 5.0))  # later events do not delay the reader

    Actor(engine, "reader", reader).start()
    Actor(engine, "writer", writer).start()
    engine.run()
    os.close(r)
    os.close(w)
    assert woke == [3.0]
    assert engine.now == 8.0
    assert engine.os_poller.waits == []


def test_outside_event_wakes_without_moving_simulated_time() -> None:
    engine = Engine()
    r, w = os.pipe()
    woke: list[float] = []

    def reader() -> None:
        block_on(Sleep(engine, 1.5))
        block_on(FdWait(engine, [(r, POLLIN)], "read end"))
        woke.append(engine.now)

    def outside() -> None:
        time.sleep(0.05)
        os.write(w, b"x")

    t = threading.Thread(target=outside)
    t.start()
    Actor(engine, "reader", reader).start()
    engine.run()  # waits for the thread's write in a real poll
    t.join()
    os.close(r)
    os.close(w)
    assert woke == [1.5]
    assert engine.os_poller.wall_idle_s > 0


def test_check_wait_polls_until_true() -> None:
    engine = Engine()
    calls = []

    def check() -> bool:
        calls.append(engine.now)
        return len(calls) == 3

    def waiter() -> None:
        block_on(CheckWait(engine, check, "condition"))

    def ticker() -> None:
        for _ in range(4):
            block_on(Sleep(engine, 1.0))

    Actor(engine, "waiter", waiter).start()
    Actor(engine, "ticker", ticker).start()
    engine.run()
    # checked once per round: after the first round (t=0), then at t=1 and t=2
    assert calls == [0.0, 1.0, 2.0]


def test_cancelled_wait_leaves_the_poller() -> None:
    engine = Engine()
    r, w = os.pipe()
    fw = FdWait(engine, [(r, POLLIN)], "never")
    assert engine.os_poller.waits == [fw]
    fw.cancel()
    assert engine.os_poller.waits == []
    engine.run()
    os.close(r)
    os.close(w)
