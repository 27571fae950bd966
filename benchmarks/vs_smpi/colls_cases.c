/* SMPI side of the collective differential benchmark.
 * Usage: colls_cases <coll> <label> <bytes>...   (coll: bcast reduce allreduce alltoall
 *   alltoallv allgather allgatherv gather scatter reduce_scatter barrier)
 * For each size: a point-to-point barrier, one collective (MPI_DOUBLE, SUM, root 0; <bytes>
 * is the vector of bcast/reduce/allreduce, else one rank's block), then
 * the slowest rank's elapsed time: "<coll>_<label>_<bytes> <seconds>", and
 * "WRONG <coll>_<label>_<bytes> <ranks>" when some ranks got a wrong result. The algorithm is
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

/* the slowest rank's time in v[0], the number of ranks with a wrong result in v[1] */
static void p2p_max(int rank, int size, double* v) {
  if (rank != 0) { MPI_Send(v, 2, MPI_DOUBLE, 0, 97, MPI_COMM_WORLD); return; }
  for (int i = 1; i < size; i++) {
    double x[2];
    MPI_Recv(x, 2, MPI_DOUBLE, i, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (x[0] > v[0]) v[0] = x[0];
    v[1] += x[1];
  }
}

/* 1 when this rank's result differs from what the collective must give (s[i] = rank + i
 * on every rank; SUM; root 0) */
static int wrong(const char* coll, const double* s, const double* r, long n, int rank, int size) {
  /* which check applies, decided once (the loops run n x size times at np 1024) */
  int bcast = !strcmp(coll, "bcast");
  int summed = !strcmp(coll, "allreduce") || (!strcmp(coll, "reduce") && rank == 0);
  int scatter = !strcmp(coll, "scatter");
  int rs = !strcmp(coll, "reduce_scatter");
  int a2a = !strcmp(coll, "alltoall") || !strcmp(coll, "alltoallv");
  int gathered = !strcmp(coll, "allgather") || !strcmp(coll, "allgatherv") || (!strcmp(coll, "gather") && rank == 0);
  double tri = size * (size - 1) / 2.0;
  for (long k = 0; k < n; k++) {
    if (bcast && s[k] != k) return 1;
    if (summed && r[k] != tri + (double)size * k) return 1;
    if (scatter && r[k] != rank * n + k) return 1;
    if (rs && r[k] != tri + (double)size * (rank * n + k)) return 1;
    if (a2a || gathered) {
      for (int j = 0; j < size; j++) {
        if (a2a && r[j * n + k] != j + rank * n + k) return 1;
        if (gathered && r[j * n + k] != j + k) return 1;
      }
    }
  }
  return 0;
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
    int blocks = strcmp(coll, "bcast") && strcmp(coll, "reduce") && strcmp(coll, "allreduce");
    long total = blocks ? n * size : n;
    double* s = calloc(total > 0 ? total : 1, sizeof(double));
    double* r = calloc(total > 0 ? total : 1, sizeof(double));
    int* counts = malloc(size * sizeof(int));
    int* displs = malloc(size * sizeof(int));
    for (int i = 0; i < size; i++) { counts[i] = (int)n; displs[i] = (int)(i * n); }
    for (long i = 0; i < total; i++) s[i] = rank + i;
    p2p_barrier(rank, size);
    double t0 = MPI_Wtime();
    if (!strcmp(coll, "bcast")) MPI_Bcast(s, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allreduce")) MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "alltoall")) MPI_Alltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, MPI_COMM_WORLD);
    else if (!strcmp(coll, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce")) MPI_Reduce(s, r, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "alltoallv"))
      MPI_Alltoallv(s, counts, displs, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allgather")) MPI_Allgather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allgatherv"))
      MPI_Allgatherv(s, n, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    else if (!strcmp(coll, "gather")) MPI_Gather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "scatter")) MPI_Scatter(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce_scatter"))
      MPI_Reduce_scatter(s, r, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double v[2] = {MPI_Wtime() - t0, 0};
    v[1] = wrong(coll, s, r, n, rank, size);
    p2p_max(rank, size, v);
    if (rank == 0) printf("%s_%s_%ld %.9e\n", coll, label, bytes, v[0]);
    if (rank == 0 && v[1] > 0) printf("WRONG %s_%s_%ld %d\n", coll, label, bytes, (int)v[1]);
    free(s); free(r); free(counts); free(displs);
  }
  MPI_Finalize();
  return 0;
}
