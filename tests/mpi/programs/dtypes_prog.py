"""Derived datatypes, buffers and packing: one line per check, identical under MPICH and smpy.

Run with 2 ranks (``mpiexec -n 2`` or ``smpyrun -np 2``); rank 0 prints the local checks,
both ranks print the results of the messages they received.
"""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
D, I = MPI.DOUBLE, MPI.INT  # noqa: E741


def show(tag, value):
    # one write per line, flushed: under mpiexec the ranks' outputs share a pipe, and a
    # line must not be split by the other rank's output
    sys.stdout.write(f"{rank} {tag} {value}\n")
    sys.stdout.flush()


def layout(t):
    return t.size, t.Get_extent(), t.Get_true_extent()


def err(f):
    try:
        return ("ok", f())
    except MPI.Exception as e:
        return ("MPI.Exception", e.Get_error_class())
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__,)


types = {
    "contig": D.Create_contiguous(3), "contig0": D.Create_contiguous(0),
    "vector": D.Create_vector(2, 3, 4), "vector_empty_blocks": D.Create_vector(2, 0, 2),
    "vector_neg": D.Create_vector(3, 1, -2), "hvector": I.Create_hvector(3, 2, 5),
    "indexed": I.Create_indexed([2, 0, 1], [5, 100, 1]), "hindexed": D.Create_hindexed([1, 2], [0, 40]),
    "iblock": D.Create_indexed_block(2, [0, 5]), "hiblock": D.Create_hindexed_block(2, [0, 40]),
    "struct_pad": MPI.Datatype.Create_struct([1, 1], [0, 8], [D, I]),
    "struct_char": MPI.Datatype.Create_struct([1, 1], [0, 4], [I, MPI.CHAR]),
    "struct_empty_block": MPI.Datatype.Create_struct([0, 1], [100, 8], [D, I]),
    "struct_pair": MPI.Datatype.Create_struct([1, 1], [0, 16], [MPI.SHORT_INT, MPI.CHAR]),
    "resized_contig": D.Create_resized(-10, 3).Create_contiguous(2),
    "pair_contig": MPI.DOUBLE_INT.Create_contiguous(2),
    "subarray_c": D.Create_subarray([4, 5], [2, 3], [1, 1]),
    "subarray_f": D.Create_subarray([4, 5], [2, 3], [1, 1], MPI.ORDER_F),
    "darray": D.Create_darray(4, 1, [8, 8], [MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC],
                              [MPI.DISTRIBUTE_DFLT_DARG, 2], [2, 2]),
    "dup": D.Dup(), "f90_int": MPI.Datatype.Create_f90_integer(4),
    "f90_real": MPI.Datatype.Create_f90_real(15, 300),
}
if rank == 0:
    for name, t in types.items():
        env = t.Get_envelope()
        contents = t.Get_contents() if env[-1] != MPI.COMBINER_NAMED else None
        if contents is not None:
            contents = contents[:3] + ([d.Get_name() or d.typestr for d in contents[3]],)
        base, comb, params = t.decode()
        params = {k: (v if k != "datatypes" else len(v)) for k, v in params.items()}
        show(name, (layout(t), env, contents, comb, params, t.is_predefined, t.typechar, t.typestr))
        show(name + "-pickle", t.decode()[1:] == __import__("pickle").loads(
            __import__("pickle").dumps(t)).decode()[1:])
    show("errors", [err(lambda: MPI.INT.Get_contents()), err(lambda: MPI.INT.Create_contiguous(-1)),
                    err(lambda: MPI.Datatype.Create_struct([1], [0], [I, D])),
                    err(lambda: MPI.Datatype.Create_f90_real(40, 30))])

# pack/unpack of a strided type, and external32
v = I.Create_vector(3, 1, 2).Commit()
src = np.arange(6, dtype="i")
buf = bytearray(v.Pack_size(1, comm))
pos = v.Pack(src, buf, 0, comm)
out = np.zeros(6, "i")
v.Unpack(buf, 0, out, comm)
ext = bytearray(I.Pack_external_size("external32", 2))
I.Pack_external("external32", np.array([1, 258], "i"), ext, 0)
back = np.zeros(2, "i")
I.Unpack_external("external32", ext, 0, back)
if rank == 0:
    show("pack", (pos, bytes(buf).hex(), out.tolist(), bytes(ext).hex(), back.tolist()))

# point to point with a non-contiguous type, a struct at MPI.BOTTOM, a partial element
a = np.arange(20, dtype="d") * (rank + 1)
if rank == 0:
    comm.Send([a, 1, types["subarray_c"].Commit()], 1, 1)
    b = np.arange(3, dtype="i") + 40
    c = np.arange(2.0) + 0.5
    st = MPI.Datatype.Create_struct([3, 2], [MPI.Get_address(b), MPI.Get_address(c)], [I, D]).Commit()
    comm.Send([MPI.BOTTOM, 1, st], 1, 2)
    comm.Send([np.arange(5, dtype="i"), 5, I], 1, 3)
else:
    r = np.zeros(20)
    comm.Recv([r, 1, types["subarray_c"].Commit()], 0, 1)
    show("subarray-recv", r.tolist())
    b = np.zeros(3, "i")
    c = np.zeros(2)
    st = MPI.Datatype.Create_struct([3, 2], [MPI.Get_address(b), MPI.Get_address(c)], [I, D]).Commit()
    comm.Recv([MPI.BOTTOM, 1, st], 0, 2)
    show("bottom-recv", (b.tolist(), c.tolist()))
    status = MPI.Status()
    t3 = I.Create_contiguous(3).Commit()
    r = np.zeros(9, "i")
    comm.Recv([r, 2, t3], 0, 3, status)
    show("partial-recv", (r.tolist(), status.Get_count(t3), status.Get_elements(I), status.Get_count(I),
                          status.Get_elements(t3), err(lambda: status.Get_elements(types["struct_pad"])),
                          status.Get_elements(types["struct_char"].Commit()),
                          status.Get_elements(D)))

# collectives with derived types
col = D.Create_vector(2, 1, 4).Commit()  # column 0 of a 2x4 matrix
m = np.arange(8.0) + 10 * rank
g = np.zeros(2 * comm.size)
comm.Allgather([m, 1, col], [g, D])
show("allgather", g.tolist())
z = np.arange(8.0) if rank == 0 else np.zeros(8)
comm.Bcast([z, 1, col], 0)
show("bcast", z.tolist())
show("uncommitted", [err(lambda: comm.Send([m, 1, D.Create_contiguous(2)], MPI.PROC_NULL)),
                     err(lambda: comm.Send([m, 0, D.Create_contiguous(2)], MPI.PROC_NULL)),
                     err(lambda: D.Create_contiguous(2).Pack_size(1, comm))])
show("allreduce-derived", err(lambda: comm.Allreduce([m, 1, col], [np.zeros(8), 1, col], MPI.SUM)))
show("reduce-mismatch", err(lambda: comm.Allreduce([m, 2, D], [np.zeros(8), 1, D], MPI.SUM)))

# buffers
mem = MPI.Alloc_mem(8)
mem[:] = 7
mem[1:3] = b"ab"
show("buffer", (type(mem).__name__, len(mem), mem[0], mem[1:3].tobytes(), mem.readonly,
                bytes(MPI.buffer(b"xyz")), MPI.buffer(b"xyz").readonly, MPI.memory is MPI.buffer))
MPI.Free_mem(mem)
show("freed", (mem.nbytes, mem.address))
arr = np.arange(4, dtype="i")
show("address", (MPI.Get_address(arr) == arr.__array_interface__["data"][0], MPI.Get_address(None),
                 MPI.Aint_add(10, 5), MPI.Aint_diff(10, 5)))
