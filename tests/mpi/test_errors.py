"""MPI error classes, strings, codes and ``MPI.Exception`` against real mpi4py on MPICH."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap

import pytest
from realmpi import require_real_mpi4py

from smpy.runtime import errors
from smpy.runtime.errors import MPIException

REAL_SCRIPT = textwrap.dedent(r'''
    import json, sys
    import numpy as np
    from mpi4py import MPI
    out = {}
    names = [n for n in dir(MPI) if n.startswith("ERR_") or n == "SUCCESS"]
    # MPI_Error_string(MPI_ERR_LASTCODE) reads garbage in MPICH: values only for those
    out["classes"] = {n: [getattr(MPI, n), None if getattr(MPI, n) == MPI.ERR_LASTCODE
                          else MPI.Get_error_string(getattr(MPI, n))] for n in names}
    out["unknown"] = [MPI.Get_error_string(i) for i in (54, 59, 74, 78, 79, 82, 127)]
    out["max_error_string"] = MPI.MAX_ERROR_STRING
    e = MPI.Exception(MPI.ERR_TRUNCATE)
    out["exc"] = [str(e), repr(e), e.error_code, e.error_class, e.error_string, bool(e),
                  list(e.args), e == 14, e != 14, e < 15, e >= 14, hash(e) == hash(14)]
    out["exc0"] = [str(MPI.Exception()), repr(MPI.Exception()), bool(MPI.Exception())]
    out["exc_neg"] = repr(MPI.Exception(-5))
    out["exc_float"] = repr(MPI.Exception(3.0))
    c = MPI.COMM_SELF
    r = c.Isend(np.zeros(100), 0, 1)
    try:
        c.Recv(np.zeros(50), 0, 1)
    except MPI.Exception as exc:
        out["trunc"] = [str(exc).split("\n")[0], exc.error_class, exc.error_code & 0x7F,
                        exc.error_code != exc.error_class,
                        MPI.Get_error_string(exc.error_code) == str(exc),
                        MPI.Get_error_class(exc.error_code)]
    r.Wait()
    last0 = MPI.COMM_WORLD.Get_attr(MPI.LASTUSEDCODE)
    c1 = MPI.Add_error_class()
    c2 = MPI.Add_error_class()
    k1 = MPI.Add_error_code(c1)
    k2 = MPI.Add_error_code(c1)
    kk = MPI.Add_error_code(MPI.ERR_OTHER)
    s0 = [MPI.Get_error_string(x) for x in (c1, k1, kk)]
    MPI.Add_error_string(c1, "my class")
    MPI.Add_error_string(k1, "my code")
    out["dyn"] = [last0, c1, c2, k1, k2, kk, MPI.Get_error_class(c1), MPI.Get_error_class(k1),
                  MPI.Get_error_class(kk), s0, MPI.Get_error_string(c1), MPI.Get_error_string(k1),
                  MPI.Get_error_string(k2), str(MPI.Exception(k1)), MPI.Exception(k1).error_class,
                  MPI.COMM_WORLD.Get_attr(MPI.LASTUSEDCODE)]
    json.dump(out, sys.stdout)
''')


@pytest.fixture(scope="module")
def real() -> dict[str, object]:
    require_real_mpi4py()
    try:
        proc = subprocess.run([sys.executable, "-c", REAL_SCRIPT], capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the real mpi4py reference script timed out")
    if proc.returncode != 0:
        pytest.fail(f"the real mpi4py reference script failed:\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


@pytest.fixture
def fresh_registry():
    reg = errors.ErrorRegistry()
    saved = errors._provider
    errors.set_registry_provider(lambda: reg)
    yield reg
    errors.set_registry_provider(saved)  # smpy.runtime.world's, for the runs of later tests


@pytest.mark.slow
def test_error_classes_and_strings(real: dict[str, object]) -> None:
    classes: dict[str, list[object]] = real["classes"]  # type: ignore[assignment]
    ours = {n for n in errors.__all__ if n.startswith("ERR_") or n == "SUCCESS"}
    assert ours == set(classes)
    for name, (value, string) in classes.items():
        assert getattr(errors, name) == value, name
        if string is not None:
            assert errors.get_error_string(value) == string, name
            assert str(MPIException(value)) == string, name
    assert [errors.get_error_string(i) for i in (54, 59, 74, 78, 79, 82, 127)] == real["unknown"]
    assert errors.MAX_ERROR_STRING == real["max_error_string"]


def test_exception_protocol(real: dict[str, object]) -> None:
    e = MPIException(errors.ERR_TRUNCATE)
    assert [str(e), repr(e), e.error_code, e.error_class, e.error_string, bool(e), list(e.args),
            e == 14, e != 14, e < 15, e >= 14, hash(e) == hash(14)] == real["exc"]
    assert [str(MPIException()), repr(MPIException()), bool(MPIException())] == real["exc0"]
    assert repr(MPIException(-5)) == real["exc_neg"]
    assert repr(MPIException(3.0)) == real["exc_float"]  # type: ignore[arg-type]
    assert isinstance(e, RuntimeError)
    assert MPIException(5) == MPIException(5) and {MPIException(5): 1}[5] == 1
    with pytest.raises(OverflowError):
        MPIException(2**40)
    assert pickle.loads(pickle.dumps(e)) == e


def test_raised_errors_read_like_mpich(real: dict[str, object]) -> None:
    first_line, cls, low, code_ne_class, same_string, cls2 = real["trunc"]  # type: ignore[misc]
    with pytest.raises(MPIException) as info:
        errors.raise_error(errors.ERR_TRUNCATE, "MPI_Recv: Message from rank 0 and tag 1 "
                           "truncated; 800 bytes received but buffer size is 400")
    e = info.value
    assert str(e).split("\n")[0] == first_line == "Message truncated, error stack:"
    assert str(e) == ("Message truncated, error stack:\nMPI_Recv: Message from rank 0 and tag 1 "
                      "truncated; 800 bytes received but buffer size is 400")
    assert e.error_class == cls == errors.ERR_TRUNCATE
    assert e.error_code & 0x7F == low and (e.error_code != e.error_class) == code_ne_class
    assert (errors.get_error_string(e.error_code) == str(e)) == same_string
    assert errors.get_error_class(e.error_code) == cls2
    assert 0 < e.error_code <= errors.ERR_LASTCODE
    assert str(MPIException(e.error_code)) == str(e)
    assert repr(e) == f"MPI.Exception({e.error_code})"
    assert isinstance(errors.make_error(errors.ERR_RANK, "x"), MPIException)
    assert errors.make_error(errors.ERR_RANK).error_code == errors.ERR_RANK


def test_ring_forgets_old_details() -> None:
    first = errors.make_error(errors.ERR_TAG, "the first one")
    for _ in range(errors._RING_SIZE):
        errors.make_error(errors.ERR_OTHER, "filler")
    assert first.error_class == errors.ERR_TAG
    assert str(first) == "Invalid tag"  # detail evicted: the class string remains


def test_user_defined_classes_like_mpich(real: dict[str, object], fresh_registry) -> None:
    last0 = errors.last_used_code()
    c1 = errors.add_error_class()
    c2 = errors.add_error_class()
    k1 = errors.add_error_code(c1)
    k2 = errors.add_error_code(c1)
    kk = errors.add_error_code(errors.ERR_OTHER)
    s0 = [errors.get_error_string(x) for x in (c1, k1, kk)]
    errors.add_error_string(c1, "my class")
    errors.add_error_string(k1, "my code")
    ours = [last0, c1, c2, k1, k2, kk, errors.get_error_class(c1), errors.get_error_class(k1),
            errors.get_error_class(kk), s0, errors.get_error_string(c1),
            errors.get_error_string(k1), errors.get_error_string(k2), str(MPIException(k1)),
            MPIException(k1).error_class, errors.last_used_code()]
    assert ours == real["dyn"]
    assert c1 > errors.ERR_LASTCODE


def test_user_defined_errors_misuse(fresh_registry) -> None:
    with pytest.raises(MPIException) as info:
        errors.add_error_string(errors.ERR_ARG, "no")
    assert info.value.error_class == errors.ERR_ARG
    with pytest.raises(MPIException):
        errors.add_error_code(0x40000099)
    c = errors.add_error_class()
    k = errors.add_error_code(c)
    with pytest.raises(MPIException) as info:
        errors.remove_error_class(c)
    assert info.value.error_class == errors.ERR_OTHER
    errors.remove_error_code(k)
    errors.remove_error_class(c)
    with pytest.raises(MPIException):
        errors.get_error_class(c)
    with pytest.raises(MPIException):
        errors.get_error_class(-1)
    assert errors.get_error_class(12345) == 12345 & 0x7F  # MPICH masks plain codes


def test_registries_are_per_provider() -> None:
    a, b = errors.ErrorRegistry(), errors.ErrorRegistry()
    saved = errors._provider
    try:
        errors.set_registry_provider(lambda: a)
        ca = errors.add_error_class()
        errors.set_registry_provider(lambda: b)
        cb = errors.add_error_class()
    finally:
        errors.set_registry_provider(saved)
    assert ca == cb == 0x40000081  # each rank numbers its own classes, as separate processes do
