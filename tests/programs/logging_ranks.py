"""Each rank configures logging as its own process does (smpy.shim.logs): its basicConfig
format and level, logging.disable, handlers; a library's import-time setup holds for all."""

import logging
import sys

import logging_libmod
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
# with a directory argument each rank writes to DIR/rank<N>.txt (mpiexec forwards the ranks'
# output in chunks that may cut a line of one rank with another's)
out = open(f"{sys.argv[1]}/rank{rank}.txt", "w") if len(sys.argv) > 1 else sys.stdout
logging.basicConfig(stream=out, level=logging.INFO if rank == 0 else logging.WARNING,
                    format=f"[rank {rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("app")
log.info("starting")
comm.Barrier()
log.warning("value %d", rank * 10)
if rank == 1:
    logging.disable(logging.WARNING)
if rank == 2:
    logging.getLogger("app").setLevel(logging.ERROR)
    logging.getLogger("app").addHandler(logging.StreamHandler(out))
comm.Barrier()
log.warning("after disable")
log.error("an error")
logging_libmod.work(rank)
root = logging.getLogger()
comm.Barrier()
print(f"rank {rank} root handlers {len(root.handlers)} level {logging.getLevelName(root.level)}"
      f" app handlers {len(log.handlers)} libmod handlers {len(logging.getLogger('libmod').handlers)}", file=out)
out.flush()
