/* SMPI side of the energy differential benchmark (energy_run.py): a 1-D stencil with
 * injected computation, every host at pstate P (or left to the DVFS governor when P < 0).
 * Usage: smpirun ... energy_cases <P>. Prints "stencil_<np>_p<P> <simulated seconds>". */
#include <mpi.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int pstate = argc > 1 ? atoi(argv[1]) : 0;
  if (pstate >= 0) sg_host_set_pstate(sg_host_self(), pstate);
  const int n = 65536;
  char* s = calloc(n, 1);
  char* r = calloc(n, 1);
  int left = (rank - 1 + size) % size, right = (rank + 1) % size;
  for (int it = 0; it < 10; it++) {
    smpi_execute_flops(5e7 * (1 + rank % 3));
    MPI_Sendrecv(s, n, MPI_BYTE, right, 5, r, n, MPI_BYTE, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(s, n, MPI_BYTE, left, 6, r, n, MPI_BYTE, right, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  if (rank == 0) printf("stencil_%d_p%d %.9e\n", size, pstate, MPI_Wtime());
  free(s);
  free(r);
  MPI_Finalize();
  return 0;
}
