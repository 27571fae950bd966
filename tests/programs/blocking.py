"""Blocking system calls in ranks (tests/test_blocking.py): each case runs under mpiexec too."""

import asyncio
import multiprocessing as mp
import select
import socket
import subprocess
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
case = sys.argv[1]


def square(x):
    return x * x


def listener():
    """A listening socket on rank 0, its port known to every rank."""
    srv = None
    if rank == 0:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
    port = comm.bcast(srv.getsockname()[1] if srv is not None else None, root=0)
    return srv, port


def join() -> None:
    # mpi4py's test_dynproc TestDPM.testJoin: rank 0 accepts before rank 1 connects
    srv, port = listener()
    if rank == 0:
        conn, _ = srv.accept()
    else:
        conn = socket.create_connection(("127.0.0.1", port))
    inter = MPI.Comm.Join(conn.fileno())  # (MPICH leaves the socket non-blocking)
    value = inter.bcast(42 if rank == 0 else None, root=MPI.ROOT if rank == 0 else 0)
    line = f"{rank} joined {inter.Get_remote_size()} " + ("sent" if rank == 0 else f"value {value}")
    for text in comm.gather(line, root=0) or []:  # one writer: mpiexec may mix two ranks' lines
        print(text, flush=True)
    inter.Free()
    conn.close()


def select_wakes() -> None:
    # rank 0 waits in select(); rank 1 sleeps 2 s, then writes: rank 0 wakes at 2 s
    srv, port = listener()
    if rank == 0:
        conn, _ = srv.accept()
        t0 = time.time()
        r, _, _ = select.select([conn], [], [], 10.0)
        print(rank, "readable after", round(time.time() - t0, 6), conn.recv(4), flush=True)
        got = 0
        while got < 300000:  # more than the socket buffers hold: sendall waits for recv
            got += len(conn.recv(65536))
        print(rank, "received", got, flush=True)
        t0 = time.time()
        r, _, _ = select.select([conn], [], [], 0.5)
        print(rank, "timeout after", round(time.time() - t0, 6), r, flush=True)
    else:
        conn = socket.create_connection(("127.0.0.1", port))
        time.sleep(2.0)
        conn.sendall(b"ping")
        conn.sendall(b"x" * 300000)
        comm.Barrier()
        return
    comm.Barrier()


def run_asyncio() -> None:
    # every rank runs its own loop at once: rank 0 a server, the others clients
    async def handle(reader, writer):
        line = await reader.readline()
        writer.write(b"echo " + line)
        await writer.drain()
        writer.close()

    async def main():
        if rank == 0:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            comm.bcast(server.sockets[0].getsockname()[1], root=0)
            await asyncio.sleep(1.0)
            server.close()
            await server.wait_closed()
            return "server closed"
        port = comm.bcast(None, root=0)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.sleep(0.25 * rank)
        writer.write(f"hello from {rank}\n".encode())
        await writer.drain()
        line = await reader.readline()
        writer.close()
        return line.decode().strip()

    result = asyncio.run(main())
    print(rank, result, "at", round(MPI.Wtime(), 6), flush=True)


def pool() -> None:
    with mp.Pool(2) as p:
        print(rank, p.map(square, range(4)), flush=True)


def pool_exit() -> None:
    # rank 0 ends while rank 1 still uses its pool (waiting for rank 0's message): a process's
    # exit (multiprocessing's atexit handler) ends that process's pools and children only
    with mp.Pool(2) as p:
        if rank == 1:
            comm.recv(source=0)
        print(rank, p.map(square, range(4)), flush=True)
    if rank == 0:
        print(rank, "active children", len(mp.active_children()), flush=True)
        comm.send("done", dest=1)


def child() -> None:
    # a child process and its pipe: rank 1 keeps computing while rank 0 waits
    if rank == 0:
        out = subprocess.run([sys.executable, "-c", "import time; time.sleep(0.3); print('child done')"],
                             capture_output=True, text=True, check=True)
        print(rank, out.stdout.strip(), flush=True)
    else:
        n = comm.recv(source=0) if False else 0
        print(rank, "free", n, flush=True)
    comm.Barrier()


def waitpid_reaped() -> None:
    # two waiters on one child, as in a multiprocessing.Pool (its worker handler thread polls
    # the workers while a rank joins them): one gets the status, the other ChildProcessError,
    # as with two real waiters
    import os
    import threading
    if rank == 0:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
        got = []

        def wait() -> None:
            try:
                got.append(f"status {os.waitpid(child.pid, 0)[1]}")
            except ChildProcessError as exc:
                got.append(f"ChildProcessError {exc.errno}")

        reaper = threading.Thread(target=wait)
        reaper.start()
        wait()
        reaper.join()
        print(rank, sorted(got), flush=True)
    comm.Barrier()
    print(rank, "done", flush=True)


def stall_fd() -> None:
    if rank == 0:
        a, b = socket.socketpair()
        a.recv(10)  # nobody writes: only the watchdog ends this
    else:
        comm.recv(source=0)


def stall_real() -> None:
    if rank == 1:
        select.epoll().poll(-1)  # a real blocking call smpy does not make cooperative
    else:
        comm.recv(source=1)


{"join": join, "select": select_wakes, "asyncio": run_asyncio, "pool": pool, "pool_exit": pool_exit, "child": child,
 "stall_fd": stall_fd, "stall_real": stall_real, "waitpid_reaped": waitpid_reaped}[case]()
