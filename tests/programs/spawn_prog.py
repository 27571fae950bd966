"""Dynamic processes: prints, per process, what Spawn/Spawn_multiple/Get_parent/Disconnect,
APPNUM, ports and names give (parents: no argument; children: spawned by the parents)."""

import sys

from mpi4py import MPI

CODE = ("from mpi4py import MPI; import sys; p = MPI.Comm.Get_parent(); "
        "w = MPI.COMM_WORLD; x = p.bcast(None, root=0); "
        "p.gather((w.Get_rank(), w.Get_size(), w.Get_attr(MPI.APPNUM), sys.argv[1:], x), root=0); "
        "p.Disconnect()")


def out(*args):
    sys.stdout.write(" ".join(map(str, args)) + "\n")  # one write: lines of processes do not mix
    sys.stdout.flush()


def child() -> None:
    parent = MPI.Comm.Get_parent()
    world = MPI.COMM_WORLD
    tag = f"child{world.Get_rank()}"
    out(tag, "parent", type(parent).__name__, parent.Is_inter(), parent.Get_size(), parent.Get_remote_size(),
        parent.Get_rank(), world.Get_size(), sys.argv[1:], world.Get_attr(MPI.APPNUM))
    msg = parent.bcast(None, root=0)
    parent.send((world.Get_rank(), msg), dest=0, tag=7)
    merged = parent.Merge(high=True)
    out(tag, "merged", merged.Get_size(), merged.Get_rank(), merged.allreduce(merged.Get_rank()))
    merged.Free()
    parent.Disconnect()
    out(tag, "after", parent == MPI.COMM_NULL, MPI.Comm.Get_parent() == MPI.COMM_NULL)


def main() -> None:
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    tag = f"parent{rank}"
    out(tag, "start", MPI.Comm.Get_parent() == MPI.COMM_NULL, world.Get_attr(MPI.UNIVERSE_SIZE),
        world.Get_attr(MPI.APPNUM))
    errcodes: list = []
    inter = world.Spawn(sys.executable, [__file__, "child", "x y"], 3, root=0, errcodes=errcodes)
    out(tag, "spawn", type(inter).__name__, inter.Get_size(), inter.Get_remote_size(), inter.Get_rank(), errcodes)
    inter.bcast({"from": "parents"}, root=MPI.ROOT if rank == 0 else MPI.PROC_NULL)
    if rank == 0:
        got = sorted(inter.recv(source=MPI.ANY_SOURCE, tag=7) for _ in range(3))
        out(tag, "got", got)
    merged = inter.Merge(high=False)
    out(tag, "merged", merged.Get_size(), merged.Get_rank(), merged.allreduce(merged.Get_rank()))
    merged.Free()
    inter.Disconnect()
    out(tag, "disconnected", inter == MPI.COMM_NULL)

    codes: list = []
    inter = MPI.COMM_SELF.Spawn_multiple([sys.executable] * 2, [["-c", CODE, "a"], ["-c", CODE, "b"]], [1, 2],
                                         root=0, errcodes=codes)
    inter.bcast(rank, root=MPI.ROOT)
    out(tag, "multiple", inter.Get_remote_size(), codes, sorted(inter.gather(None, root=MPI.ROOT)))
    inter.Disconnect()

    # ports and names
    service = f"smpy-test-{rank}"
    port = MPI.Open_port()
    MPI.Publish_name(service, port)
    out(tag, "lookup", MPI.Lookup_name(service) == port)
    MPI.Unpublish_name(service, port)
    MPI.Close_port(port)
    for name, call in (("Lookup_name", lambda: MPI.Lookup_name("smpy-no-such-service")),
                       ("Spawn root", lambda: world.Spawn(sys.executable, [__file__], 1, root=world.Get_size()))):
        try:
            call()
            out(tag, name, "no error")
        except MPI.Exception as e:
            out(tag, name, "error class", e.Get_error_class())
    if world.Get_size() >= 2:
        if rank == 0:
            port = MPI.Open_port()
            world.send(port, dest=1)
            ic = MPI.COMM_SELF.Accept(port)
            MPI.Close_port(port)
        elif rank == 1:
            ic = MPI.COMM_SELF.Connect(world.recv(source=0))
        if rank < 2:
            out(tag, "accept/connect", ic.Get_remote_size(), ic.allgather(rank))
            ic.Disconnect()


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child()
    else:
        main()
