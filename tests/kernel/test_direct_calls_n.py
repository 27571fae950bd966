"""smpy/support/_cext.h's direct calls without keywords against Python's calls
(docs/performance.md, "The point-to-point path's calls, made directly"): ``call_direct_n``
(an exact builtin function of flags METH_FASTCALL, METH_FASTCALL | METH_KEYWORDS or METH_O
called through its C function) and ``cmethod_call`` (a method looked up as Python looks it
up, per call site, a method descriptor of a C method called through its C function, the
self's class checked as the descriptor checks it). Whatever is not such a function or descriptor (a Python
function in its place, a wrong argument count, a descriptor of another class put on a class)
is called, or refused, as Python does it: the same result or the same exception."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from smpy.support import cext

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def probe():
    mod, why = cext.load(HERE / "_cext_calls_probe.c", "tests_cext_calls_probe._cext_calls_probe")
    if mod is None:
        pytest.skip(why)
    return mod


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as e:  # the exception's class and text: the same both ways
        return ("raised", type(e), str(e))


def _method_call(obj, name, args):
    """obj.name(*args) as the interpreter calls a method (LOAD_METHOD: the descriptor unbound)"""
    return eval(f"obj.{name}(*args)", {"obj": obj, "args": args})


@pytest.mark.parametrize("kind", ["fast", "fast_kw", "o", "noargs"])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_builtin_functions_of_each_convention(probe, kind, n):
    f = getattr(probe, kind)
    args = tuple(range(n))
    assert _outcome(probe.call, f, *args) == _outcome(f, *args)


def test_other_callables_are_called_as_python_calls_them(probe):
    def py(*a):
        return ("python", a)

    class Callable:
        def __call__(self, *a):
            return ("instance", a)

    for f in (py, Callable(), len, max, print.__call__, probe.o.__call__, str.upper, (lambda x: x * 2)):
        for args in ((), ("ab",), ("ab", "cd")):
            assert _outcome(probe.call, f, *args) == _outcome(f, *args), (f, args)


def test_the_recursion_check_is_made(probe):
    # a direct call keeps the recursion check of the builtin's vectorcall: RecursionError,
    # not a crash
    with pytest.raises(RecursionError):
        probe.recurse(probe.recurse)


class Base:
    pass


class Sub(Base):
    pass


class Other:
    pass


@pytest.fixture(scope="module")
def descrs(probe):
    return probe.methods(Base)


def test_method_calls_follow_the_class(probe, descrs):
    # a C method on a class, then replaced by a Python function, shadowed on a subclass, put on
    # a class it does not belong to, deleted: cmethod_call gives Python's call each time
    # (the descriptor found called with the object, as PyObject_VectorcallMethod calls it)
    class K:
        pass

    for name, d in descrs.items():
        setattr(K, name, d)  # descriptors of Base on K: the self check refuses K's instances
    k = K()
    for name in descrs:
        for args in ((), (1,)):
            assert _outcome(probe.method_call, name, k, *args) == _outcome(descrs[name], k, *args)

    class M(Base):
        pass

    for name, d in descrs.items():
        setattr(M, name, d)
    m = M()
    for _ in range(3):  # the cache filled, then hit
        for name in descrs:
            for args in ((), (1,), (1, 2)):
                assert _outcome(probe.method_call, name, m, *args) == _outcome(descrs[name], m, *args)
    M.o = lambda self, x: ("python", x)
    assert probe.method_call("o", m, 5) == ("python", 5)

    class N(M):
        def fast(self, *a):
            return ("override", a)

    assert probe.method_call("fast", N(), 1) == ("override", (1,))
    assert probe.method_call("fast", m, 1) == ("fast", m, (1,))
    del M.fast
    assert _outcome(probe.method_call, "fast", m, 1) == _outcome(_method_call, m, "fast", (1,))


def test_an_instance_attribute_comes_first(probe, descrs):
    class D(Base):
        pass

    D.o = descrs["o"]
    d = D()
    assert probe.method_call("o", d, 1) == ("o", d, 1)
    d.o = lambda x: ("own", x)
    assert probe.method_call("o", d, 1) == ("own", 1)
    del d.o
    assert probe.method_call("o", d, 1) == ("o", d, 1)


def test_reference_counts_unchanged(probe, descrs):
    class E(Base):
        pass

    E.fast, E.o = descrs["fast"], descrs["o"]
    e, x = E(), object()
    probe.method_call("fast", e, x)  # the method cache holds the descriptor from its first call
    before = (sys.getrefcount(e), sys.getrefcount(x), sys.getrefcount(descrs["fast"]))
    for _ in range(100):
        probe.method_call("fast", e, x)
        probe.method_call("o", e, x)
        probe.call(probe.o, x)
    assert (sys.getrefcount(e), sys.getrefcount(x), sys.getrefcount(descrs["fast"])) == before
