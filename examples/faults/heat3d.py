"""A 3-D heat code that checkpoints to a file system every K steps and, when run again after a
failure, resumes from its last complete checkpoint.

    mpiexec -n 4 python examples/faults/heat3d.py --dir /tmp/heat-ckpt --steps 40 --every 10
    smpyrun -np 8 --platform examples/faults/heat_pfs.yaml --cfg smpi/simulate-computation:no \\
        --fail node-3@30s --restarts 2 --restart-delay 5s \\
        examples/faults/heat3d.py --dir /tmp/smpy-heat/scratch/run1 --step-time 1 --every 10

The domain, an ``n x n x (n * size)`` grid of doubles, is cut into slabs along z (one per
rank, with a ghost plane on each side exchanged with ``Sendrecv`` every step); each step is an
explicit 7-point update, with fixed boundaries (a hot plane at z = 0). A checkpoint is written
every K steps:

1. every rank ``np.save``-s its slab to ``DIR/step<S>.r<rank>.npy``;
2. an ``allreduce`` makes sure all did (a failure before it leaves the previous checkpoint
   in force);
3. rank 0 writes ``S`` to ``DIR/latest`` (a small file replaced atomically) and removes the
   previous step's files.

At start, rank 0 reads ``DIR/latest``; if it exists, every rank loads its slab of that step
and the run continues from there. At the end the checkpoint files are removed and rank 0
prints the step range of this run, a checksum of the final field (the same whether or not the
run was interrupted) and the checkpoint time.

Under smpy, ``--step-time S`` adds S seconds of simulated computation per step (a production
step; run with ``--cfg smpi/simulate-computation:no`` so that the numpy work on the small
grid is not timed as well); ``DIR`` under a ``filesystems`` mount of the platform is timed by
that file system (``examples/faults/heat_pfs.yaml``: a parallel scratch). Under mpiexec,
``--step-time`` is ignored and ``DIR`` is a real directory (created if needed). ``DIR``
defaults to ``$HEAT_CKPT_DIR``, else ``heat-ckpt``.
"""

import argparse
import os

import numpy as np
from mpi4py import MPI

try:
    import smpy
    SIMULATED = smpy.is_simulated()
except ImportError:
    SIMULATED = False

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=16, help="slab size n x n x n per rank")
ap.add_argument("--steps", type=int, default=200)
ap.add_argument("--every", type=int, default=20, help="checkpoint every K steps (0: never)")
ap.add_argument("--dir", default=os.environ.get("HEAT_CKPT_DIR", "heat-ckpt"))
ap.add_argument("--step-time", type=float, default=0.0, help="simulated seconds per step (smpy only)")
ap.add_argument("--timeline", action="store_true", help="rank 0 prints each checkpoint's start and end")
opt = ap.parse_args()

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
n = opt.n
up = rank + 1 if rank + 1 < size else MPI.PROC_NULL
down = rank - 1 if rank > 0 else MPI.PROC_NULL
latest = os.path.join(opt.dir, "latest")


def slab_file(step: int, r: int) -> str:
    return os.path.join(opt.dir, f"step{step}.r{r}.npy")


# -- restart: the last complete checkpoint, if any -----------------------------------------
start = 0
if rank == 0:
    os.makedirs(opt.dir, exist_ok=True)
    if os.path.exists(latest):
        with open(latest) as f:
            start = int(f.read())
start = comm.bcast(start, root=0)
t_begin = MPI.Wtime()
if start:
    u = np.load(slab_file(start, rank))
else:
    u = np.zeros((n + 2, n, n))  # z planes 0 and n+1 are ghosts
    if rank == 0:
        u[0] = 1.0  # the hot boundary below the first slab
if rank == 0 and start:
    print(f"resumed at step {start} at {t_begin:.6f} s, restored in {MPI.Wtime() - t_begin:.6f} s")

ckpt_time = 0.0
alpha = 1.0 / 8.0
for step in range(start, opt.steps):
    # halo exchange: send the top plane up and receive the lower ghost from below, then back
    top = np.empty((n, n))
    bottom = np.empty((n, n))
    comm.Sendrecv(np.ascontiguousarray(u[n]), dest=up, recvbuf=bottom, source=down)
    comm.Sendrecv(np.ascontiguousarray(u[1]), dest=down, recvbuf=top, source=up)
    if down != MPI.PROC_NULL:
        u[0] = bottom
    if up != MPI.PROC_NULL:
        u[n + 1] = top
    c = u[1:n + 1]
    lap = -6.0 * c + u[:n] + u[2:]
    lap[:, 1:, :] += c[:, :-1, :]
    lap[:, :-1, :] += c[:, 1:, :]
    lap[:, :, 1:] += c[:, :, :-1]
    lap[:, :, :-1] += c[:, :, 1:]
    u[1:n + 1] = c + alpha * lap
    if SIMULATED and opt.step_time > 0:
        smpy.execute(opt.step_time)
    done = step + 1
    if opt.every and done % opt.every == 0 and done < opt.steps:
        t0 = MPI.Wtime()
        np.save(slab_file(done, rank), u)
        comm.allreduce(0)  # every slab is written
        if rank == 0:
            with open(latest + ".new", "w") as f:
                f.write(str(done))
            os.replace(latest + ".new", latest)
            prev = done - opt.every
            for r in range(size):
                if prev > 0 and os.path.exists(slab_file(prev, r)):
                    os.remove(slab_file(prev, r))
        ckpt_time += MPI.Wtime() - t0
        if rank == 0 and opt.timeline:
            print(f"checkpoint {done}: {t0:.6f} -> {MPI.Wtime():.6f} s")

checksum = comm.allreduce(float(u[1:n + 1].sum()))
comm.Barrier()
if rank == 0:
    last = (opt.steps - 1) // opt.every * opt.every if opt.every else 0
    for r in range(size):
        if last > 0 and os.path.exists(slab_file(last, r)):
            os.remove(slab_file(last, r))
    if os.path.exists(latest):
        os.remove(latest)
    print(f"steps {start}..{opt.steps - 1} in this run, checksum {checksum:.12e}, "
          f"checkpoints {ckpt_time:.6f} s, ended at {MPI.Wtime():.6f} s")
