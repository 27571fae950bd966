"""The roll of HPL's long swap (examples/predict/hpl.py, ``spread_roll`` and ``exchange``) alone:
the program run by ``swap_message.py``.

Usage: smpyrun -np N swap_roll.py P laps [rows] [cols] [--fold] [--send-recv] [--active=K]

The N ranks form a P x N/P grid; each process column rolls the P pieces of an X buffer of
``rows`` x ``cols`` doubles around the column, ``laps`` times: P - 1 steps, alternately with
the previous and the next process row, each one ``colcomm.Sendrecv`` of row slices of X
inside ``smpy.untimed()``, as hpl.py's ``exchange`` does. ``--fold``: X is an
``smpy.shared_array`` (folded, as under hpl.py --fold); ``--send-recv``: the same messages
as separate ``Send`` / ``Recv`` calls (even rows send first), to compare with the Sendrecv
path; ``--active=K``: only the first K process columns roll (the others wait in the final
reduction; by default all: every column's messages in flight at once). Prints "roll <messages sent by this column> <simulated seconds>" from rank 0.
"""
import sys

import numpy as np
from mpi4py import MPI

try:
    import smpy
except ImportError:  # real mpiexec
    smpy = None

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
args = [a for a in sys.argv[1:] if not a.startswith("--")]
P = int(args[0])
laps = int(args[1])
rows = int(args[2]) if len(args) > 2 else 128
cols = int(args[3]) if len(args) > 3 else 32
FOLD, SEPARATE = "--fold" in sys.argv, "--send-recv" in sys.argv
Q = size // P
ACTIVE = int(next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--active=")), Q))
myrow, mycol = rank // Q, rank % Q
colcomm = comm.Split(mycol, myrow)
if FOLD and smpy is not None:
    X = smpy.shared_array((rows, cols))
else:
    X = np.zeros((rows, cols))
bounds = [rows * e // P for e in range(P + 1)]


def piece(e):
    e %= P
    return bounds[e], bounds[e + 1]


def roll_steps(d):
    """hpl.py's spread_roll roll part: (sa, sb, ra, rb, partner) for P - 1 steps."""
    steps = []
    for k in range(P - 1):
        step = k >> 1
        if (d + k) & 1:
            steps.append((*piece(d + step), *piece(d - step - 1), (d - 1) % P))
        else:
            steps.append((*piece(d - step), *piece(d + step + 1), (d + 1) % P))
    return steps


def untimed():
    if smpy is None:
        import contextlib
        return contextlib.nullcontext()
    return smpy.untimed()


steps = roll_steps(myrow)
TAG = 40
t0 = MPI.Wtime()
sent = 0
for _ in range(laps if mycol < ACTIVE else 0):
    with untimed():
        for sa, sb, ra, rb, partner in steps:
            if SEPARATE:
                if myrow % 2 == 0:
                    colcomm.Send(X[sa:sb], dest=partner, tag=TAG)
                    colcomm.Recv(X[ra:rb], source=partner, tag=TAG)
                else:
                    colcomm.Recv(X[ra:rb], source=partner, tag=TAG)
                    colcomm.Send(X[sa:sb], dest=partner, tag=TAG)
            else:
                colcomm.Sendrecv(X[sa:sb], dest=partner, sendtag=TAG, recvbuf=X[ra:rb],
                                 source=partner, recvtag=TAG)
            sent += 1
total = comm.reduce(sent, op=MPI.SUM, root=0)
if rank == 0:
    print(f"roll {total} {MPI.Wtime() - t0:.9e}")
