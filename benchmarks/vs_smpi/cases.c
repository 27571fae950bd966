/* SMPI side of the differential benchmark. Usage: cases <pattern> */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A barrier made of point-to-point messages (all to 0, then 0 to all), so that both
 * emulators synchronise the same way whatever their collective algorithms. */
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

/* Max over ranks, gathered by point-to-point messages to rank 0. */
static double p2p_max(int rank, int size, double v) {
  if (rank != 0) { MPI_Send(&v, 1, MPI_DOUBLE, 0, 97, MPI_COMM_WORLD); return v; }
  for (int i = 1; i < size; i++) {
    double x;
    MPI_Recv(&x, 1, MPI_DOUBLE, i, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (x > v) v = x;
  }
  return v;
}

static char* buffer(size_t n) { char* b = malloc(n > 0 ? n : 1); memset(b, 1, n); return b; }

static void pingpong(int rank, int size) {
  static const long sizes[] = {1, 16, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 8388608};
  char* buf = buffer(8388608);
  for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    long n = sizes[i];
    p2p_barrier(rank, size);
    double t0 = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(buf, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("pingpong_%ld %.9e\n", n, MPI_Wtime() - t0);
    } else if (rank == 1) {
      MPI_Recv(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    }
  }
  free(buf);
}

static void ring(int rank, int size) {
  int token = 0, laps = 3;
  p2p_barrier(rank, size);
  double t0 = MPI_Wtime();
  for (int l = 0; l < laps; l++) {
    if (rank == 0) {
      MPI_Send(&token, 1, MPI_INT, 1 % size, 7, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_INT, size - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_INT, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD);
    }
  }
  if (rank == 0) printf("ring_%d %.9e\n", size, MPI_Wtime() - t0);
}

static void many_to_one(int rank, int size) {
  const long n = 1048576;
  char* buf = buffer(n * (rank == 0 ? size : 1));
  p2p_barrier(rank, size);
  double t0 = MPI_Wtime();
  if (rank == 0) {
    MPI_Request* r = malloc(sizeof(MPI_Request) * size);
    for (int i = 1; i < size; i++) MPI_Irecv(buf + i * n, n, MPI_BYTE, i, 3, MPI_COMM_WORLD, &r[i - 1]);
    MPI_Waitall(size - 1, r, MPI_STATUSES_IGNORE);
    printf("many_to_one_%d %.9e\n", size, MPI_Wtime() - t0);
    free(r);
  } else {
    MPI_Send(buf, n, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
  }
  free(buf);
}

static void all_pairs(int rank, int size) {
  const long n = 4194304;
  char* s = buffer(n);
  char* r = buffer(n);
  int peer = (rank + size / 2) % size;
  p2p_barrier(rank, size);
  double t0 = MPI_Wtime();
  MPI_Sendrecv(s, n, MPI_BYTE, peer, 4, r, n, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  double worst = p2p_max(rank, size, MPI_Wtime() - t0);
  if (rank == 0) printf("all_pairs_%d %.9e\n", size, worst);
  free(s); free(r);
}

static void stencil(int rank, int size) {
  const long n = 65536;
  char* s = buffer(n);
  char* r = buffer(n);
  int left = (rank - 1 + size) % size, right = (rank + 1) % size;
  p2p_barrier(rank, size);
  double t0 = MPI_Wtime();
  for (int it = 0; it < 10; it++) {
    smpi_execute_flops(5e6 * (1 + rank % 3));
    MPI_Sendrecv(s, n, MPI_BYTE, right, 5, r, n, MPI_BYTE, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(s, n, MPI_BYTE, left, 6, r, n, MPI_BYTE, right, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  double worst = p2p_max(rank, size, MPI_Wtime() - t0);
  if (rank == 0) printf("stencil_%d %.9e\n", size, worst);
  free(s); free(r);
}

/* every rank polls at once: Testall over 4 receives, Testany over 4, an Iprobe loop (SMPI's
   polling costs grow with failures, counted per call for all ranks together) */
static void polling(int rank, int size) {
  const long n = 4096;
  char* b = buffer(4 * n);
  char* s = buffer(n);
  int left = (rank - 1 + size) % size, right = (rank + 1) % size;
  p2p_barrier(rank, size);
  double t0 = MPI_Wtime();
  for (int it = 0; it < 3; it++) {
    MPI_Request rq[4];
    int flag = 0, idx = -1;
    for (int k = 0; k < 4; k++) MPI_Irecv(b + k * n, n, MPI_BYTE, left, 20 + k, MPI_COMM_WORLD, &rq[k]);
    smpi_execute_flops(2e6 * (1 + rank % 3));
    for (int k = 0; k < 4; k++) MPI_Send(s, n, MPI_BYTE, right, 20 + k, MPI_COMM_WORLD);
    while (!flag) MPI_Testall(4, rq, &flag, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 4; k++) MPI_Irecv(b + k * n, n, MPI_BYTE, right, 30 + k, MPI_COMM_WORLD, &rq[k]);
    smpi_execute_flops(1e6 * (1 + rank % 2));
    for (int k = 0; k < 4; k++) MPI_Send(s, n, MPI_BYTE, left, 30 + k, MPI_COMM_WORLD);
    for (int got = 0; got < 4; got++) {
      flag = 0;
      while (!flag) MPI_Testany(4, rq, &idx, &flag, MPI_STATUS_IGNORE);
    }
    smpi_execute_flops(3e6 * (rank % 4));
    MPI_Send(s, 1, MPI_BYTE, right, 40, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Iprobe(left, 40, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Recv(b, 1, MPI_BYTE, left, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  double worst = p2p_max(rank, size, MPI_Wtime() - t0);
  if (rank == 0) printf("polling_%d %.9e\n", size, worst);
  free(b); free(s);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* p = argc > 1 ? argv[1] : "pingpong";
  if (!strcmp(p, "pingpong")) pingpong(rank, size);
  else if (!strcmp(p, "ring")) ring(rank, size);
  else if (!strcmp(p, "many_to_one")) many_to_one(rank, size);
  else if (!strcmp(p, "all_pairs")) all_pairs(rank, size);
  else if (!strcmp(p, "stencil")) stencil(rank, size);
  else if (!strcmp(p, "polling")) polling(rank, size);
  else if (rank == 0) fprintf(stderr, "unknown pattern %s\n", p);
  MPI_Finalize();
  return 0;
}
