/* MPI-IO timing cases for the differential against smpy (smpi_io_twin.py is the Python twin,
 * vs_smpi.py runs both).  usage: smpi_io DIR SIZE...
 * For each SIZE (bytes per rank) and each mode, every rank accesses its own block at offset
 * rank*SIZE of the file DIR/MODE.SIZE and prints the simulated seconds of each access,
 * measured from the barrier before it:
 *   indep  MPI_File_write_at, then MPI_File_read_at
 *   coll   MPI_File_write_at_all, then MPI_File_read_at_all (disjoint contiguous blocks)
 *   mixed  after an untimed write of every block, even ranks write theirs again while odd
 *          ranks read theirs (reads and writes of one disk at once)
 *   strided (informational: the two models differ) a file view of SIZE/4096 blocks of
 *          4096 bytes, stride np*4096, written with MPI_File_write_at_all */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void out(const char* mode, const char* op, long n, double t)
{
  printf("%s.%s.%ld.%d %.9f\n", mode, op, n, rank, t);
}

static MPI_File open_file(const char* dir, const char* mode, long n)
{
  char path[4096];
  MPI_File fh;
  snprintf(path, sizeof path, "%s/%s.%ld", dir, mode, n);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
  return fh;
}

static double timed_at(MPI_File fh, MPI_Offset off, char* buf, long n, int write, int coll)
{
  MPI_Status st;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (write && coll)
    MPI_File_write_at_all(fh, off, buf, (int)n, MPI_BYTE, &st);
  else if (write)
    MPI_File_write_at(fh, off, buf, (int)n, MPI_BYTE, &st);
  else if (coll)
    MPI_File_read_at_all(fh, off, buf, (int)n, MPI_BYTE, &st);
  else
    MPI_File_read_at(fh, off, buf, (int)n, MPI_BYTE, &st);
  return MPI_Wtime() - t0;
}

static void simple(const char* dir, const char* mode, long n, char* buf)
{
  int coll = strcmp(mode, "coll") == 0;
  MPI_File fh = open_file(dir, mode, n);
  MPI_Offset off = (MPI_Offset)rank * n;
  out(mode, "write", n, timed_at(fh, off, buf, n, 1, coll));
  out(mode, "read", n, timed_at(fh, off, buf, n, 0, coll));
  MPI_File_close(&fh);
}

static void mixed(const char* dir, long n, char* buf)
{
  MPI_File fh = open_file(dir, "mixed", n);
  MPI_Offset off = (MPI_Offset)rank * n;
  MPI_Status st;
  MPI_File_write_at(fh, off, buf, (int)n, MPI_BYTE, &st);
  int w = rank % 2 == 0;
  out("mixed", w ? "write" : "read", n, timed_at(fh, off, buf, n, w, 0));
  MPI_File_close(&fh);
}

static void strided(const char* dir, long n, char* buf)
{
  const int b = 4096;
  MPI_Datatype ft;
  MPI_Type_vector((int)(n / b), b, size * b, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  MPI_File fh = open_file(dir, "strided", n);
  MPI_File_set_view(fh, (MPI_Offset)rank * b, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  out("strided", "write", n, timed_at(fh, 0, buf, n, 1, 1));
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 2; i < argc; i++) {
    long n = atol(argv[i]);
    char* buf = malloc(n);
    memset(buf, 'a' + rank % 26, n);
    simple(argv[1], "indep", n, buf);
    simple(argv[1], "coll", n, buf);
    if (size > 1)
      mixed(argv[1], n, buf);
    if (size > 1 && n % 4096 == 0)
      strided(argv[1], n, buf);
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
