/* Programs whose SMPI time-independent traces replay_run.py replays with SMPI and smpy.
 * Usage: smpirun ... -trace-ti ti_cases <ring|stencil|allreduce|mix> */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* p = argc > 1 ? argv[1] : "ring";
  static double a[1 << 17], b[1 << 17];
  int left = (rank - 1 + size) % size, right = (rank + 1) % size;
  if (!strcmp(p, "ring")) {
    for (int lap = 0; lap < 3; lap++) {
      if (rank == 0) {
        MPI_Send(a, 1000, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
        MPI_Recv(a, 1000, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(a, 1000, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(a, 1000, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
      }
      smpi_execute_flops(1e6);
    }
  } else if (!strcmp(p, "stencil")) {
    MPI_Request r[4];
    for (int it = 0; it < 10; it++) {
      smpi_execute_flops(5e6 * (1 + rank % 3));
      MPI_Irecv(b, 8192, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &r[0]);
      MPI_Irecv(b + 8192, 8192, MPI_DOUBLE, right, 6, MPI_COMM_WORLD, &r[1]);
      MPI_Isend(a, 8192, MPI_DOUBLE, right, 5, MPI_COMM_WORLD, &r[2]);
      MPI_Isend(a + 8192, 8192, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, &r[3]);
      MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
    }
  } else if (!strcmp(p, "allreduce")) {
    for (int it = 0; it < 5; it++) {
      smpi_execute_flops(2e6);
      MPI_Allreduce(a, b, 1 << 15, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
  } else if (!strcmp(p, "nbv")) {  /* non-blocking point-to-point and v-collectives */
    MPI_Request r[4];
    int flag = 0;
    /* v[i]: rank i's part of the rooted ones; x[i]: this rank's exchange with i (symmetric) */
    int v[64], vd[64], x[64], xd[64], s = 0, q = 0;
    for (int i = 0; i < size; i++) {
      v[i] = 10 * (1 + i % 3); vd[i] = s; s += v[i];
      x[i] = 10 * (1 + (rank + i) % 3); xd[i] = q; q += x[i];
    }
    smpi_execute_flops(1e6 * (rank + 1));
    MPI_Irecv(b, 2000, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(a, 2000, MPI_DOUBLE, right, 4, MPI_COMM_WORLD, &r[1]);
    MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
    if (!flag) MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    smpi_execute_flops(2e6);
    MPI_Irecv(b, 500, MPI_DOUBLE, right, 8, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(b + 500, 500, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(a, 500, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &r[2]);
    MPI_Isend(a + 500, 500, MPI_DOUBLE, right, 8, MPI_COMM_WORLD, &r[3]);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
    MPI_Gatherv(a, v[rank], MPI_DOUBLE, b, v, vd, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Scatterv(a, v, vd, MPI_DOUBLE, b, v[rank], MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    MPI_Allgatherv(a, v[rank], MPI_DOUBLE, b, v, vd, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoallv(a, x, xd, MPI_DOUBLE, b, x, xd, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Reduce_scatter(a, b, v, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  } else {  /* mix: most of the replayable actions */
    MPI_Request r;
    smpi_execute_flops(1e6 * (rank + 1));
    MPI_Bcast(a, 100, MPI_INT, 1 % size, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Alltoall(a, 2, MPI_DOUBLE, b, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Gather(a, 3, MPI_DOUBLE, b, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Scatter(a, 3, MPI_DOUBLE, b, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Reduce(a, b, 500, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allgather(a, 4, MPI_DOUBLE, b, 4, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Sendrecv(a, 6, MPI_DOUBLE, right, 3, b, 6, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Irecv(b, 10, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &r);
    MPI_Send(a, 10, MPI_DOUBLE, right, 9, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
