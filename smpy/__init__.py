"""smpy — run unmodified mpi4py programs on a simulated cluster and predict their run time.

Public API for programs and experiments::

    import smpy
    result = smpy.run("app.py", np=64, platform="cluster.yaml", cfg={"network/model": "SMPI"})
    print(result.makespan_s)

Inside a program run by smpyrun (guard with ``try: import smpy``)::

    smpy.execute(0.5)          # 0.5 s of computation on the target host
    smpy.execute_flops(1e9)    # 1 Gflop on the target host
    smpy.is_simulated()        # True under smpyrun
    smpy.set_pstate(1)         # DVFS on the rank's host; smpy.get_consumed_energy() in J
    smpy.set_host_on("node-7", False)   # power a host off (off wattage; its ranks die)
    for i in smpy.sample(range(n), iters=10, threshold=0.005):   # SMPI_SAMPLE_LOCAL
        kernel(i)
    a = smpy.shared_array((n, n))   # SMPI_SHARED_MALLOC: folded memory, garbage contents
    with smpy.untimed():            # smpi_bench_end() ... smpi_bench_begin(): not computation
        bookkeeping_between_mpi_calls()
    smpy.set_memory(2e9)            # the rank holds 2 GB smpy cannot see (memory capacity)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from smpy.cli.launch import RunResult


def run(script: str | None = None, np: int = 4, platform: str | None = None, cfg: dict[str, Any] | None = None,
        args: list[str] | tuple = (), hostfile: str | None = None, capture: bool = True,
        echo: bool = False, parts: list[Any] | None = None) -> RunResult:
    """Simulate ``script`` on ``np`` ranks; returns a :class:`smpy.cli.launch.RunResult`.

    By default the program's output is captured (``result.stdout``) and not echoed.
    MPMD (one ``MPI_COMM_WORLD``, ``MPI.APPNUM`` the part's index), as
    ``mpiexec -n 2 python a.py x : -n 3 python b.py y``::

        smpy.run(parts=[smpy.App("a.py", np=2, args=["x"]), smpy.App("b.py", np=3, args=["y"])])
    """
    from smpy.cli.launch import run as _run
    if parts is not None:
        return _run(None, platform=platform, cfg=cfg, hostfile=hostfile, capture=capture, echo=echo,
                    parts=parts)
    if script is None:
        raise ValueError("smpy.run: give a script or parts=[smpy.App(...), ...]")
    return _run(script, np=np, platform=platform, cfg=cfg, args=args, hostfile=hostfile,
                capture=capture, echo=echo)


def __getattr__(name: str) -> Any:
    if name == "App":  # smpy.App: one part of an MPMD run (imported on first use)
        from smpy.cli.launch import App
        return App
    raise AttributeError(f"module 'smpy' has no attribute {name!r}")


def _proc():
    from smpy.runtime.world import current
    return current()


def _sim():
    """The running rank, or None outside smpyrun (then every hint is a pass-through)."""
    from smpy.kernel.actors import current_actor
    a = current_actor()
    return None if a is None else a.data


def is_simulated() -> bool:
    """True when called from a rank running under smpy."""
    from smpy.kernel.actors import current_actor
    return current_actor() is not None


def execute(seconds: float) -> None:
    """Simulate ``seconds`` of computation on the rank's host (at its current speed).

    Outside smpyrun: a no-op (the real computation runs instead)."""
    p = _sim()
    if p is not None:
        p.world.timing.execute_seconds(p, float(seconds))


def execute_flops(flops: float) -> None:
    """Simulate ``flops`` floating-point operations on the rank's host (no-op outside smpyrun)."""
    p = _sim()
    if p is not None:
        p.world.timing.execute_flops(p, float(flops))


class untimed:
    """``with smpy.untimed():`` the rank's Python time inside the block is not simulated
    computation (SMPI's ``smpi_bench_end()`` ... ``smpi_bench_begin()``); its MPI calls are
    simulated as usual. For an emulated program's bookkeeping between MPI calls that the
    real code does in nanoseconds (see :mod:`smpy.timing.bench`). Nests; not inside an
    ``smpy.sample`` loop. Outside smpyrun: a no-op."""

    __slots__ = ("_p",)

    def __enter__(self) -> untimed:
        p = self._p = _sim()
        if p is not None:
            p.world.timing.set_untimed(p, True)
        return self

    def __exit__(self, *exc: object) -> None:
        p = self._p
        if p is not None:
            p.world.timing.set_untimed(p, False)


def sleep(seconds: float) -> None:
    """Simulated sleep, host idle (a real sleep outside smpyrun)."""
    p = _sim()
    if p is None:
        import time
        time.sleep(seconds)
    else:
        p.world.timing.sleep(p, float(seconds))


def now() -> float:
    """Current simulated time (s), without the cost of ``MPI.Wtime`` (a monotonic clock outside)."""
    p = _sim()
    if p is None:
        import time
        return time.perf_counter()
    return p.world.engine.now


def host_name() -> str:
    p = _sim()
    if p is None:
        import socket
        return socket.gethostname()
    return p.host.name


def _flushed():
    """The running rank, with its pending computation simulated (at the old state)."""
    p = _proc()
    p.world.timing.flush(p)
    return p


def set_pstate(pstate: int) -> None:
    """Switch the rank's host to performance state ``pstate`` (DVFS; no-op outside smpyrun)."""
    if _sim() is None:
        return
    p = _flushed()
    p.world.cpu.set_pstate(p.host, int(pstate))
    p.world.timing.restart(p)


def get_pstate() -> int:
    p = _sim()
    return 0 if p is None else p.host.pstate


def get_pstate_count() -> int:
    p = _sim()
    return 1 if p is None else p.host.pstate_count


def host_speed() -> float:
    """Speed of one core of the rank's host at its current pstate (flop/s)."""
    return _proc().host.speed_flops


def _energy(p):
    e = getattr(p.world, "energy", None)
    if e is None:
        raise RuntimeError("the host energy plugin is off: run with --energy (or --cfg=plugin:host_energy)")
    return e


def get_power() -> float:
    """Current power of the rank's host (W)."""
    p = _flushed()
    w = _energy(p).power(p.host)
    p.world.timing.restart(p)
    return w


def get_consumed_energy() -> float:
    """Energy consumed so far by the rank's host (J)."""
    p = _flushed()
    j = _energy(p).consumed(p.host)
    p.world.timing.restart(p)
    return j


def sample(iterable, iters: int = 10, threshold: float = 0.005, scope: str = "local",
           tag: str = "", warmup: int = 0, work=None):
    """Iterate over ``iterable`` running only as many iterations as needed to time them
    (SMPI_SAMPLE_LOCAL/GLOBAL): at most ``iters``, fewer once the relative standard error of
    the mean falls below ``threshold``; then the mean × the number of items is simulated and
    the loop ends. ``scope``: "local" (statistics per rank) or "global" (shared by all
    ranks); ``tag`` separates loops on one line (e.g. by problem size); ``warmup``: the
    first iterations of every visit of the loop run, cost their measured time and have
    statistics of their own, apart from the steady samples that follow them back to back
    (each visit keeps its cold start; ``--cfg=smpy/sample-warmup:site``: the first
    iterations of the site only, left out of the statistics); ``work``: each item's amount of work
    (a number, or a function of the item) when iterations differ in size: the statistics
    are then time per unit of work, and a site serves loops of every size. The loop body
    must not call MPI. Outside smpyrun every iteration runs::

        for i in smpy.sample(range(n), iters=10, threshold=0.005, scope="global"):
            kernel(i)
    """
    p = _sim()
    if p is None:
        return iter(iterable)
    from smpy.timing import sampling

    items = iterable if hasattr(iterable, "__len__") else list(iterable)
    file, line = sampling.caller_site(2)
    key = sampling.site_key(p, file, line, str(tag), scope)
    wf = sampling.work_function(work)
    st = sampling.stats_for(p, key, int(iters), float(threshold), int(warmup), wf is not None)
    return sampling.sample_loop(p, items, key, st, wf)


def sampled(iters: int = 10, threshold: float = 0.005, scope: str = "local", tag: str = "",
            warmup: int = 0):
    """Decorator for a repeated kernel: its calls run (and are timed) until enough samples
    are taken (after ``warmup`` calls that run but are not samples), then each call only
    simulates the mean time and returns the last result.
    The function must not call MPI. Outside smpyrun the function runs every time."""

    def deco(fn):
        from smpy.timing import sampling

        code = fn.__code__
        site = (code.co_filename, code.co_firstlineno)

        @sampling.wraps(fn)
        def wrapper(*args, **kwargs):
            p = _sim()
            if p is None:
                return fn(*args, **kwargs)
            key = sampling.site_key(p, site[0], site[1], str(tag), scope)
            st = sampling.stats_for(p, key, int(iters), float(threshold), int(warmup),
                                    visits=False)
            return sampling.sampled_call(p, fn, key, st, args, kwargs)

        return wrapper

    return deco


def shared_array(shape, dtype=float, shared=None):
    """A numpy array whose memory is folded (SMPI_SHARED_MALLOC): every rank's array, and
    every array of the run, share one block of memory (``smpi/shared-malloc:global``), or one
    array per call site (``local``), or none (``no``). ``shared=[(start, stop), ...]`` folds
    only those byte ranges (SMPI_PARTIAL_SHARED_MALLOC). The contents are garbage by design.
    Outside smpyrun: ``numpy.zeros(shape, dtype)``."""
    import numpy as np

    p = _sim()
    if p is None:
        return np.zeros(shape, dtype)
    import sys

    f = sys._getframe(1)
    a = p.world.timing.shared_array(p, shape, dtype, (f.f_code.co_filename, f.f_lineno), shared)
    if p.world.memory is not None:  # a real rank holds its own copy (memory capacity)
        p.world.memory.folded(p, float(a.nbytes))
    return a


def set_memory(nbytes: float) -> None:
    """Declare that the calling rank holds ``nbytes`` of memory smpy does not see (Python
    objects, buffers of C extensions), besides the numpy arrays it counts by itself: on hosts
    that declare ``ram``, the rank's resident memory slows the host's computations and may
    exhaust it (docs/models.md, memory capacity). Each call replaces the previous value.
    No-op outside smpyrun."""
    p = _sim()
    if p is not None and p.world.memory is not None:
        p.world.timing.flush(p)
        p.world.memory.declare(p, float(nbytes))
        p.world.timing.restart(p)


def _host_named(p, name: str | None):
    if name is None:
        return p.host
    if not p.world.platform.has_host(name):
        raise ValueError(f"no host named {name!r} on platform {p.world.platform.name!r}")
    return p.world.platform.host(name)


def set_host_on(name: str, on: bool = True) -> None:
    """Power host ``name`` on or off (its power becomes the profile's off wattage; it computes
    nothing). Switching off a host that runs ranks kills them, as a host failure does (see
    docs/failures.md): the caller too when it runs there. No-op outside smpyrun."""
    if _sim() is None:
        return
    p = _flushed()
    host = _host_named(p, name)
    injector = getattr(p.world, "injector", None)
    busy = any(q.host is host and q.actor is not None and q.actor.alive for q in p.world.processes)
    if injector is not None and (busy or not host.is_on):
        injector.apply("host", host.name, [host], bool(on))  # recorded as a failure / repair
    else:
        p.world.cpu.set_on(host, bool(on))
    p.world.timing.restart(p)


def host_is_on(name: str | None = None) -> bool:
    """Whether host ``name`` (default: the rank's) is powered on (True outside smpyrun)."""
    p = _sim()
    return True if p is None else bool(_host_named(p, name).is_on)


def get_host_power(name: str) -> float:
    """Current power of host ``name`` (W); needs the host_energy plugin."""
    p = _flushed()
    w = _energy(p).power(_host_named(p, name))
    p.world.timing.restart(p)
    return w


def get_host_consumed_energy(name: str) -> float:
    """Energy consumed so far by host ``name`` (J); needs the host_energy plugin."""
    p = _flushed()
    j = _energy(p).consumed(_host_named(p, name))
    p.world.timing.restart(p)
    return j


__all__ = ["__version__", "execute", "execute_flops", "get_consumed_energy", "get_host_consumed_energy",
           "get_host_power", "get_power", "get_pstate", "get_pstate_count", "host_is_on", "host_name",
           "host_speed", "is_simulated", "now", "run", "sample", "sampled", "set_host_on", "set_pstate",
           "shared_array", "sleep"]


def _replay_file(action: str, path: str, offset: int = 0, nbytes: int = 0) -> bool:
    """``smpy replay`` of a recorded Python file operation (``open``, ``read``, ``write``,
    ``sync``): the model's time for ``path``, no real I/O. False outside smpyrun."""
    p = _sim()
    if p is None:
        return False
    from smpy.runtime import fsio
    from smpy.shim import fileio

    fs = fsio.fs_of(p.world, path)
    p.world.timing.flush(p)
    if action in ("read", "write"):
        fileio._charge(p, path, fs, offset, nbytes, action == "write")
    elif action == "sync":
        fileio._sync(p, path, fs)
    else:
        fileio._meta(p, fs, action, path)
    p.world.timing.restart(p)
    return True


def _replay_mpi_file(f, action: str, offs=(), lens=()) -> bool:
    """``smpy replay`` of a recorded MPI-IO access or synchronisation on the open ``f``
    (smpy.mpi.file.replay); False outside smpyrun."""
    if _sim() is None:
        return False
    from smpy.mpi.file import replay

    replay(f, action, offs, lens)
    return True
