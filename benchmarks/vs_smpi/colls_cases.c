/* SMPI side of the collective differential benchmark.
 * Usage: colls_cases <bcast|allreduce|alltoall|barrier> <label> <bytes>...
 * For each size: a point-to-point barrier, one collective (MPI_DOUBLE, SUM, root 0), then
 * the slowest rank's elapsed time: "<coll>_<label>_<bytes> <seconds>". The algorithm is
 * forced from outside with --cfg=smpi/<coll>:<algo> (same on both emulators). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void p2p_barrier(int rank, int size) {
  char b = 0;
  if (rank == 0) {
    for (int i = 1; i < size; i++) MPI_Recv(&b, 0, MPI_BYTE, i, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 1; i < size; i++) MPI_Send(&b, 0, MPI_BYTE, i, 98, MPI_COMM_WORLD);
  } else {
    MPI_Send(&b, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
    MPI_Recv(&b, 0, MPI_BYTE, 0, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
}

static double p2p_max(int rank, int size, double v) {
  if (rank != 0) { MPI_Send(&v, 1, MPI_DOUBLE, 0, 97, MPI_COMM_WORLD); return v; }
  for (int i = 1; i < size; i++) {
    double x;
    MPI_Recv(&x, 1, MPI_DOUBLE, i, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (x > v) v = x;
  }
  return v;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* coll = argv[1];
  const char* label = argv[2];
  for (int a = 3; a < argc; a++) {
    long bytes = atol(argv[a]);
    long n = bytes / 8;
    long total = !strcmp(coll, "alltoall") ? n * size : n;
    double* s = calloc(total > 0 ? total : 1, sizeof(double));
    double* r = calloc(total > 0 ? total : 1, sizeof(double));
    for (long i = 0; i < total; i++) s[i] = rank + i;
    p2p_barrier(rank, size);
    double t0 = MPI_Wtime();
    if (!strcmp(coll, "bcast")) MPI_Bcast(s, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allreduce")) MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "alltoall")) MPI_Alltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, MPI_COMM_WORLD);
    else if (!strcmp(coll, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
    double worst = p2p_max(rank, size, MPI_Wtime() - t0);
    if (rank == 0) printf("%s_%s_%ld %.9e\n", coll, label, bytes, worst);
    free(s); free(r);
  }
  MPI_Finalize();
  return 0;
}
