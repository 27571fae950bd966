"""One part of an MPMD run (tests/test_mpmd.py): what each rank sees of the job, and a
communication within its part and across parts; rank 0 prints every rank's view (one
writer: Hydra interleaves the lines of several processes)."""

import os
import sys

from mpi4py import MPI

w = MPI.COMM_WORLD
app = w.Get_attr(MPI.APPNUM)
me = os.path.basename(sys.argv[0])
part = w.Split(app, w.Get_rank())
total = w.allreduce(w.Get_rank() * 10 + app)
view = (f"{me} rank {w.Get_rank()} of {w.Get_size()} appnum {app} argv {sys.argv[1:]}: part rank "
        f"{part.Get_rank()} of {part.Get_size()}, part sum {part.allreduce(w.Get_rank())}, world sum {total}")
views = w.gather(view, root=0)
if w.Get_rank() == 0:
    print("\n".join(views), flush=True)
