"""MPI.Comm.Join between ranks 0 and 1 over a loopback TCP connection both ends of which
rank 0 opens (so that no rank blocks in a real socket call); rank 1 gets its end's fd."""

import socket

from mpi4py import MPI

world = MPI.COMM_WORLD
rank = world.Get_rank()
keep = []
if rank == 0:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    end, _ = server.accept()
    keep = [server, client, end]
    world.send(client.fileno(), dest=1)
    fd = end.fileno()
elif rank == 1:
    fd = world.recv(source=0)
if rank < 2:
    ic = MPI.Comm.Join(fd)
    print(rank, "join", type(ic).__name__, ic.Get_size(), ic.Get_remote_size(), ic.Get_rank(),
          ic.allgather(rank * 10), flush=True)
    ic.Disconnect()
world.Barrier()
for s in keep:
    s.close()
