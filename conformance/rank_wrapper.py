"""Runs mpi4py's ``test/main.py`` as one rank, for both backends of the conformance harness.

Usage: ``rank_wrapper.py MAIN_PY [main.py options...]``.

* Under real MPI (``mpiexec``) with ``SMPY_CONFORMANCE_LOGDIR`` set, the rank's file
  descriptors 1 and 2 are redirected to ``$SMPY_CONFORMANCE_LOGDIR/rank<PMI_RANK>.log`` before
  anything is imported, so the verbose unittest output of each rank can be parsed on its own
  (ranks of a real run interleave their output on a shared stream).
* Under smpy the wrapper is the simulated program; each rank's output is captured by smpy.

``main.py`` ends with ``sys.exit(not success)``. Here that exit status is printed on the
rank's stderr and swallowed, so that a rank whose tests failed does not abort the other ranks
before they report their own outcomes; the harness judges tests by their reported outcomes.

``SMPY_CONFORMANCE_SKIP_BACKENDS`` (comma-separated names such as ``dlpack-array``) removes
array backends of the suite's ``arrayimpl`` module: buffer tests then loop over the other
backends only (``backend=`` lines of ``exclusions.txt``, for smpy runs).
"""

import os
import runpy
import sys


def _redirect() -> None:
    logdir = os.environ.get("SMPY_CONFORMANCE_LOGDIR")
    rank = os.environ.get("PMI_RANK")
    if not logdir or rank is None:
        return
    fd = os.open(os.path.join(logdir, f"rank{int(rank)}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _skip_backends(testdir: str) -> None:
    names = {n.strip() for n in os.environ.get("SMPY_CONFORMANCE_SKIP_BACKENDS", "").split(",") if n.strip()}
    if not names:
        return
    if testdir not in sys.path:
        sys.path.insert(0, testdir)
    import arrayimpl  # the suite's own module (one copy per rank under smpy)

    arrayimpl.ArrayBackends[:] = [c for c in arrayimpl.ArrayBackends if c.backend not in names]


def main() -> None:
    _redirect()
    main_py = sys.argv[1]
    _skip_backends(os.path.dirname(os.path.abspath(main_py)))
    # in place: under smpy sys.argv is the rank's own list, swapped in at every context switch
    sys.argv[:] = [main_py, *sys.argv[2:]]
    code: object = 0
    try:
        runpy.run_path(main_py, run_name="__main__")
    except SystemExit as e:
        code = e.code
    sys.stdout.flush()
    sys.stderr.write(f"[conformance] main.py exit status: {code!r}\n")
    sys.stderr.flush()


main()
