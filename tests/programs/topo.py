"""Process topologies and neighbourhood collectives: one line per rank and check, the same
under smpyrun and real MPICH (tests/mpi/test_topo.py compares them)."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


LINES = []


def out(name, value):
    LINES.append(f"{rank} {name} {value!r}")


def err(name, fn):
    try:
        value = fn()
    except MPI.Exception as e:
        out(name, ("MPI.Exception", e.Get_error_class()))
    except (TypeError, ValueError) as e:
        out(name, (type(e).__name__, str(e)))
    else:
        out(name, value)


def desc(c):
    if c == MPI.COMM_NULL:
        return (type(c).__name__, "null")
    return (type(c).__name__, c.Get_topology(), c.Get_rank(), c.Get_size())


out("dims", [MPI.Compute_dims(n, k) for n in (6, 12, 16, 36, 48, 60, 90, 210) for k in (2, 3, 4)])
out("dims_fixed", [MPI.Compute_dims(24, [2, 0, 0]), MPI.Compute_dims(36, [0, 3, 0, 0])])
err("dims_bad", lambda: MPI.Compute_dims(10, [3, 0]))
out("world_topo", (comm.Get_topology(), comm.is_topo))

# Cartesian: periodic and not, several shapes
for dims, periods in (([size], [True]), ([size], [False]), (MPI.Compute_dims(size, 2), [True, False]),
                      (MPI.Compute_dims(size, 3), [False, True, True])):
    cart = comm.Create_cart(dims, periods)
    name = f"cart{dims}{periods}"
    out(name, (cart.topo, cart.ndim, cart.degrees, cart.inoutedges, [cart.Shift(d, 2) for d in range(len(dims))]))
    out(name + "_map", comm.Cart_map(dims, periods))
    for d in range(len(dims)):
        keep = [i != d for i in range(len(dims))]
        sub = cart.Sub(keep)
        out(name + f"_sub{d}", (desc(sub), sub.topo))
        sub.Free()
    send = np.array([100 * rank + j for j in range(2 * len(dims))], dtype="i")
    recv = np.full(2 * len(dims), -1, dtype="i")
    cart.Neighbor_alltoall(send, recv)
    out(name + "_a2a", recv.tolist())
    recv[:] = -1
    cart.Ineighbor_allgather(send[:1], recv).Wait()
    out(name + "_ag", recv.tolist())
    out(name + "_obj", cart.neighbor_alltoall([(rank, j) for j in range(2 * len(dims))]))
    out(name + "_objag", cart.neighbor_allgather(rank))
    dup = cart.Dup()
    out(name + "_dup", (desc(dup), dup.topo == cart.topo))
    split = cart.Split(0, 0)
    out(name + "_split", desc(split))
    for c in (dup, split, cart):
        c.Free()

# MPICH's neighbourhood schedules keep what fits of a too long message, without an error
ring = comm.Create_cart([size], [True])
tr = np.full(2, -1, dtype="i")
ring.Neighbor_alltoall([np.arange(4, dtype="i") + 10 * rank, 2, MPI.INT], [tr, 1, MPI.INT])
out("truncated", tr.tolist())
ring.Free()

err("cart_too_big", lambda: comm.Create_cart([size + 1]))
err("cart_periods_len", lambda: comm.Create_cart([size], [True, True]))
c0 = comm.Create_cart([])
out("cart0", (desc(c0), c0.topo if c0 != MPI.COMM_NULL else None))
part = comm.Create_cart([1])
out("cart_part", desc(part))
c = comm.Create_cart([size], [False])
err("coords_bad", lambda: c.Get_coords(size))
err("cart_rank_bad", lambda: c.Get_cart_rank([size]))
err("shift_bad", lambda: c.Shift(1, 1))
err("cartdim_graph", lambda: MPI.Graphcomm.Get_dims(c))
err("topocomm_world", lambda: MPI.Topocomm(comm))
err("graphcomm_cart", lambda: MPI.Graphcomm(c))
out("cartcomm_cart", desc(MPI.Cartcomm(c)))

# graph: ring plus a self loop on rank 0
index, edges = [], []
for i in range(size):
    nb = [(i - 1) % size, (i + 1) % size] + ([i] if i == 0 else [])
    edges += nb
    index.append(len(edges))
g = comm.Create_graph(index, edges)
out("graph", (g.topo, g.dims, g.neighbors, g.nneighbors, g.degrees, g.Get_neighbors(size - 1)))
out("graph_map", comm.Graph_map(index, edges))
err("graph_nb_bad", lambda: g.Get_neighbors(size))
err("graph_edge_bad", lambda: desc(comm.Create_graph([1], [size])))
err("graph_edge_bad2", lambda: comm.Create_graph([1], [size + 1]))
indeg = g.indegree
send = np.arange(10 * rank, 10 * rank + indeg, dtype="d")
recv = np.full(indeg, -1.0)
g.Neighbor_alltoall(send, recv)
out("graph_a2a", recv.tolist())
scounts = [rank + 1] * indeg
rcounts = [n + 1 for n in g.inedges]
sendv = np.arange(sum(scounts), dtype="i") + 1000 * rank
recvv = np.full(sum(rcounts) + 1, -1, dtype="i")
g.Neighbor_alltoallv([sendv, scounts], [recvv, rcounts])
out("graph_a2av", recvv.tolist())
out("graph_obj", g.neighbor_alltoall([f"{rank}->{j}" for j in range(indeg)]))
g.Free()

# distributed graphs
src = [(rank - 1) % size, (rank + 2) % size]
dst = [(rank + 1) % size, (rank - 2) % size]
dg = comm.Create_dist_graph_adjacent(src, dst, [1, 2], [3, 4])
out("dga", (dg.Get_dist_neighbors_count(), dg.Get_dist_neighbors(), dg.degrees))
sbuf = np.array([rank * 10 + 1, rank * 10 + 2], dtype="i")
rbuf = np.full(4, -1, dtype="i")
dg.Neighbor_allgatherv(sbuf, [rbuf, [2, 2], [0, 2], MPI.INT])
out("dga_agv", rbuf.tolist())
big = np.array([rank * 1.5, -rank * 1.5], dtype="d")
got = np.zeros(2, dtype="d")
dg.Neighbor_alltoallw([big, ([1, 1], [0, 8]), [MPI.DOUBLE, MPI.DOUBLE]], [got, ([1, 1], [8, 0]), [MPI.DOUBLE] * 2])
out("dga_a2aw", got.tolist())
dd = dg.Dup()
out("dga_dup", (desc(dd), dd.Get_dist_neighbors()))
dd.Free()
dg.Free()
w = comm.Create_dist_graph_adjacent(None, [(rank + 1) % size], MPI.UNWEIGHTED, None)
out("dga_unw", (w.Get_dist_neighbors_count(), w.Get_dist_neighbors()))
w.Free()
e = comm.Create_dist_graph_adjacent([], [], MPI.WEIGHTS_EMPTY, MPI.WEIGHTS_EMPTY)
out("dga_empty", (e.Get_dist_neighbors_count(), e.Get_dist_neighbors()))
e.Free()
err("dga_wlen", lambda: comm.Create_dist_graph_adjacent([0], [0], [1, 2]))
err("dga_wempty", lambda: comm.Create_dist_graph_adjacent([0], [0], MPI.WEIGHTS_EMPTY))
if rank == 0:
    sources, degrees = [0, size - 1], [size, 1]
    dests, weights = list(range(size)) + [0], list(range(5, 5 + size)) + [42]
else:
    sources, degrees, dests, weights = [rank], [1], [0], [rank]
d = comm.Create_dist_graph(sources, degrees, dests, weights)
# MPICH collects the edges in arrival order (any source): compare them as sorted pairs
ins, outs, (iw, ow) = d.Get_dist_neighbors()
out("dg", (d.Get_dist_neighbors_count(), sorted(zip(ins, iw)), sorted(zip(outs, ow))))
out("dg_obj", sorted(d.neighbor_allgather(("from", rank))))
d.Free()

everything = comm.gather(LINES)
if rank == 0:
    print("\n".join(line for lines in everything for line in lines), flush=True)
