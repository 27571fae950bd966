/* SMPI side of the side-by-side speed benchmark (side_by_side.py). Usage: twins <pattern> [n]
 * Prints "<case> <simulated seconds>" from rank 0; the Python twin is twins.py. */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ring(int rank, int size, int laps) {
  double token = 0; /* 8 B */
  double t0 = MPI_Wtime();
  for (int k = 0; k < laps; k++) {
    if (rank == 0) {
      MPI_Send(&token, 1, MPI_DOUBLE, 1 % size, 7, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_DOUBLE, size - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_DOUBLE, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      token += 1;
      MPI_Send(&token, 1, MPI_DOUBLE, (rank + 1) % size, 7, MPI_COMM_WORLD);
    }
  }
  if (rank == 0) printf("ring_%d %.9e\n", laps, MPI_Wtime() - t0);
}

static void pingpong(int rank, int reps) {
  char* buf = malloc(8388608);
  memset(buf, 1, 8388608);
  double t0 = MPI_Wtime();
  for (long n = 1; n <= 8388608; n *= 2) {
    for (int k = 0; k < reps; k++) {
      if (rank == 0) {
        MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
      }
    }
  }
  if (rank == 0) printf("pingpong_%d %.9e\n", reps, MPI_Wtime() - t0);
  free(buf);
}

/* 1-D stencil: per step, injected flops, two halo Sendrecv of 8 KiB and an Allreduce of one double */
static void stencil(int rank, int size, int steps) {
  int n = 1024;
  double* s = malloc(n * sizeof(double));
  double* r = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) s[i] = rank;
  int left = (rank - 1 + size) % size, right = (rank + 1) % size;
  double t0 = MPI_Wtime(), res = 0;
  for (int k = 0; k < steps; k++) {
    smpi_execute_flops(1e6 * (1 + rank % 3));
    MPI_Sendrecv(s, n, MPI_DOUBLE, right, 5, r, n, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(s, n, MPI_DOUBLE, left, 6, r, n, MPI_DOUBLE, right, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double local = r[0], global = 0;
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    res = global;
  }
  if (rank == 0) printf("stencil_%d %.9e\n", steps, MPI_Wtime() - t0);
  (void)res;
  free(s);
  free(r);
}

static void allreduce(int reps) {
  int n = 131072; /* 1 MiB of doubles */
  double* s = malloc(n * sizeof(double));
  double* r = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) s[i] = 1;
  double t0 = MPI_Wtime();
  for (int k = 0; k < reps; k++) MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("allreduce_%d %.9e\n", reps, MPI_Wtime() - t0);
  free(s);
  free(r);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* p = argc > 1 ? argv[1] : "ring";
  int n = argc > 2 ? atoi(argv[2]) : 1;
  if (!strcmp(p, "ring")) ring(rank, size, n);
  else if (!strcmp(p, "pingpong")) pingpong(rank, n);
  else if (!strcmp(p, "stencil")) stencil(rank, size, n);
  else if (!strcmp(p, "allreduce")) allreduce(n);
  MPI_Finalize();
  return 0;
}
