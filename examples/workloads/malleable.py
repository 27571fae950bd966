"""A malleable master-worker program: the master grows and shrinks its set of workers with
the load, spawning groups of workers (MPI_Comm_spawn) when a phase has many tasks and
stopping and disconnecting groups when it has few.

    python malleable.py [PHASES] [GROUP] [MAX_GROUPS]

PHASES is the number of tasks of each phase (default ``2,8,12,4,0,6``), GROUP the workers a
spawn starts (default 2), MAX_GROUPS the most groups alive at once (default 3). A phase of
``t`` tasks wants ``ceil(t / 2)`` workers (two tasks each), rounded up to whole groups and
at most MAX_GROUPS groups; the master spawns or stops groups to get there, then deals the
tasks round-robin over the workers and collects their results.

The same file is the worker (a spawned process has a parent). Under smpyrun the master also
powers the free nodes off after shrinking (``smpy.nodes.power_off``); under a real mpiexec
that call does nothing. A worker's process ends after its ``Disconnect``, which returns its
node to the free pool (docs/dynamic-allocation.md). The output is the same under both: one line per phase.
"""
import math
import sys

from mpi4py import MPI

try:
    import smpy.nodes as nodes
except ImportError:  # without smpy: the node calls are skipped
    nodes = None

TASKS, STOP = 1, 2


def work(task):
    """A real computation of 10 to 50 ms here: the sum of squares below 200000 * (task % 5 + 1)."""
    return sum(i * i for i in range(200000 * (task % 5 + 1)))


def worker(parent):
    while True:
        status = MPI.Status()
        tasks = parent.recv(source=0, tag=MPI.ANY_TAG, status=status)
        if status.Get_tag() == STOP:
            break
        parent.send([(t, work(t)) for t in tasks], dest=0, tag=TASKS)
    parent.Disconnect()


def master(phases, group, max_groups):
    groups = []  # one intercommunicator per spawned group of `group` workers
    first = 0
    for p, ntasks in enumerate(phases):
        want = min(max_groups, math.ceil(math.ceil(ntasks / 2) / group))
        while len(groups) < want:  # grow
            groups.append(MPI.COMM_SELF.Spawn(sys.executable, [__file__, "--worker"], group))
        shrunk = len(groups) > want
        while len(groups) > want:  # shrink
            inter = groups.pop()
            for w in range(inter.Get_remote_size()):
                inter.send(None, dest=w, tag=STOP)
            inter.Disconnect()
        if shrunk and nodes is not None:
            nodes.power_off()  # the free nodes off (no-op under a real mpiexec)
        tasks = list(range(first, first + ntasks))
        first += ntasks
        workers = [(g, w) for g in groups for w in range(g.Get_remote_size())]
        results = {}
        if workers:
            deal = [tasks[i::len(workers)] for i in range(len(workers))]
            for (g, w), mine in zip(workers, deal):
                g.send(mine, dest=w, tag=TASKS)
            for g, w in workers:
                results.update(g.recv(source=w, tag=TASKS))
        checksum = sum(results.values()) % 1000000007
        print(f"phase {p}: {ntasks} tasks on {len(workers)} workers, checksum {checksum}", flush=True)
    for inter in groups:
        for w in range(inter.Get_remote_size()):
            inter.send(None, dest=w, tag=STOP)
        inter.Disconnect()


if __name__ == "__main__":
    parent = MPI.Comm.Get_parent()
    if parent != MPI.COMM_NULL:
        worker(parent)
    else:
        args = sys.argv[1:]
        phases = [int(x) for x in (args[0] if args else "2,8,12,4,0,6").split(",")]
        group = int(args[1]) if len(args) > 1 else 2
        max_groups = int(args[2]) if len(args) > 2 else 3
        master(phases, group, max_groups)
