"""mpi-master-slave's WorkQueue (run unmodified under smpyrun and mpiexec): the master hands
30 tasks to the slaves as they become ready and collects their results; the slaves square
their task's number. The master prints the results in task order."""
from mpi4py import MPI
from mpi_master_slave import Master, Slave, WorkQueue


class Squarer(Slave):
    def do_work(self, data):
        task, x = data
        return task, x * x, MPI.COMM_WORLD.rank > 0


comm = MPI.COMM_WORLD
if comm.rank == 0:
    queue = WorkQueue(Master(range(1, comm.size)))
    for i in range(30):
        queue.add_work(data=(i, i + 100))
    results = {}
    while not queue.done():
        queue.do_work()
        for task, sq, on_slave in queue.get_completed_work():
            results[task] = (sq, on_slave)
    queue.master.terminate_slaves()  # the slaves leave run() below
    print("results", [results[i] for i in range(30)])
    print("done", len(results))
else:
    Squarer().run()
