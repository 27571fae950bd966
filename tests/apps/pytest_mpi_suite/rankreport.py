"""A pytest plugin: each rank writes 'nodeid outcome' lines, in the order the tests end, to
RANKREPORT_DIR/results-<size>-<rank>.txt (under mpiexec the ranks' terminal output mixes)."""
import os

from mpi4py import MPI

_lines = []


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _lines.append(f"{report.nodeid} {report.when} {report.outcome}")


def pytest_sessionfinish(session, exitstatus):
    comm = MPI.COMM_WORLD
    path = os.path.join(os.environ.get("RANKREPORT_DIR", "."), f"results-{comm.size}-{comm.rank}.txt")
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in _lines) + f"exitstatus {int(exitstatus)}\n")
