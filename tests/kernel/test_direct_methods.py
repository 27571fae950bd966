"""The compiled per-message path's direct calls between compiled functions (smpy/support/_cext.h,
``cmethod_call``, ``call_tuple_direct``, ``call_one_direct``; docs/performance.md,
"Events and flows without the call machinery"): a method found on the class as a C method
descriptor is called through its C function, an event's or a callback's builtin through its
C function; everything the lookup would find instead (an instance attribute, a method patched
on the class, a descriptor of another class, another number of arguments) is still what is
called, as the Python code does. Each case both ways, the same results."""

from __future__ import annotations

import pytest

from smpy.kernel import accel
from smpy.kernel.activity import Trigger
from smpy.kernel.engine import Engine
from smpy.kernel.sharing import SharingModel
from smpy.lmm import System
from smpy.network.links import Link
from smpy.network.model import NAMED_MODELS, Flow, NetworkConfig, NetworkModel
from smpy.support.piecewise import Piecewise
from tests.accel_twins import both as _both
from tests.accel_twins import needs_accel

pytestmark = needs_accel


def _net():
    lat, bw, S, gamma = NAMED_MODELS["SMPI"]
    cfg = NetworkConfig(name="SMPI", lat_factor=Piecewise.parse_factors(lat), bw_factor=Piecewise.parse_factors(bw),
                        weight_S=S, tcp_gamma=gamma)
    e = Engine()
    links = (Link("a", 1.25e9, 5e-5), Link("b", 1.25e9, 5e-5))
    return e, NetworkModel(e, list(links), cfg), links


def _flows(e, net, links, n, log):
    for i in range(n):
        f = net.communicate(links, 1e5 * (i + 1))
        f.add_callback(lambda fl, i=i: log.append((i, e.now, fl.rate)))
    e.run()


def test_an_instance_attribute_named_like_the_model_method_is_called():
    # NetworkModel instances have a __dict__: ``net.update = ...`` there is what the engine
    # calls (its absence is remembered with the dict's version: set after a first run)
    def go():
        e, net, links = _net()
        log, calls = [], []
        _flows(e, net, links, 2, log)

        def update():
            calls.append(e.now)
            SharingModel.update(net)

        net.update = update
        _flows(e, net, links, 3, log)
        del net.update
        n = len(calls)
        _flows(e, net, links, 1, log)
        return log, calls, n == len(calls), e.now

    a, b = _both(go)
    assert a == b and a[1] and a[2]


def test_a_method_patched_on_the_class_is_called():
    # Flow._release and _finish replaced on the class after a first run (the class's version
    # changes): the compiled _work_done calls the replacements
    def go():
        e, net, links = _net()
        log, calls = [], []
        _flows(e, net, links, 2, log)
        release, finish = Flow.__dict__["_release"], Flow._finish

        def _release(self):
            calls.append(("release", e.now))
            return release(self)

        def _finish(self):
            calls.append(("finish", e.now))
            return finish(self)

        Flow._release, Flow._finish = _release, _finish
        try:
            _flows(e, net, links, 2, log)
        finally:
            Flow._release = release
            del Flow._finish
        _flows(e, net, links, 1, log)
        return log, calls, e.now

    a, b = _both(go)
    assert a == b and len(a[1]) == 4


def test_a_descriptor_copied_to_another_class_is_not_called_directly():
    # System.solve (compiled) put on an unrelated class: the descriptor's own type check
    # raises, as calling it does; never the C function on a foreign object
    assert accel.use(True)
    try:
        class Fake:
            solve = System.__dict__["solve"]
            remove = System.__dict__["remove"]

        e, net, links = _net()
        _flows(e, net, links, 1, [])
        net.system = Fake()
        net.dirty = True
        with pytest.raises(TypeError, match="descriptor 'solve'"):
            e.run()
    finally:
        accel.use(False)


def _events(kind):
    e = Engine()
    log = []
    if kind == "builtins":
        e.schedule(1.0, log.append, "x")          # METH_O, one argument
        e.schedule(2.0, log.sort)                 # METH_FASTCALL | METH_KEYWORDS, none
        e.schedule(3.0, log.clear)                # METH_NOARGS, none
        e.schedule(4.0, log.extend, (1, 2))
        e.schedule(5.0, log.insert, 0, "y")      # METH_FASTCALL, two
    elif kind == "noargs_given_one":
        e.schedule(1.0, log.clear, 1)
    elif kind == "o_given_none":
        e.schedule(1.0, log.append)
    elif kind == "o_given_two":
        e.schedule(1.0, log.append, 1, 2)
    elif kind == "callbacks":
        t = Trigger(e, "t")
        t.add_callback(log.append)                # METH_O: called with the activity
        t.add_callback(lambda a: log.append(a.describe()))
        e.schedule(1.0, t.fire)
    elif kind == "callback_noargs":
        t = Trigger(e, "t")
        t.add_callback(log.clear)                 # METH_NOARGS given the activity: TypeError
        e.schedule(1.0, t.fire)
    try:
        e.run()
    except TypeError as exc:
        return "TypeError", str(exc), log, e.now
    return [x if isinstance(x, (str, int)) else type(x).__name__ for x in log], e.now, e.events_processed


@pytest.mark.parametrize("kind", ["builtins", "noargs_given_one", "o_given_none", "o_given_two", "callbacks",
                                  "callback_noargs"])
def test_events_and_callbacks_of_builtins_match_python(kind):
    a, b = _both(lambda: _events(kind))
    assert a == b
    if kind.startswith(("noargs", "o_", "callback_")):
        assert a[0] == "TypeError"


# -- bound methods in kept memory (smpy/kernel/_accel.c, bound_release / bound_new) -----------
def _drain(net, links):
    # more flows made at once than the kept memory holds (BM_POOL_MAX): none kept after
    for _ in range(12):
        net.communicate(links, 1e5)


def test_an_event_callback_held_elsewhere_is_left_alone():
    # the engine keeps a callback's memory only when it holds the last reference: a bound
    # method kept by the program (and one with a weak reference) stays what it was
    import weakref

    def go():
        e, net, links = _net()
        log, gone = [], []
        f = net.communicate(links, 1e5)
        kept = f._lat_event.fn
        g = net.communicate(links, 2e5)
        ref = weakref.ref(g._lat_event.fn, lambda r: gone.append(e.now))
        _drain(net, links)  # f's and g's events run first, none kept before
        e.run()
        dead = (ref() is None, len(gone))
        _flows(e, net, links, 3, log)  # bound methods made again meanwhile
        # (when the event's bound method dies differs: Python's loop keeps it until the next event)
        return (kept.__self__ is f, kept.__name__, dead, ref() is None, len(gone), log, e.now), type(kept).__name__

    (a, ta), (b, tb) = _both(go)
    assert a == b and a[0] and a[1] == "_start_bandwidth_phase" and a[2] == (True, 1) and a[4] == 1
    assert (ta, tb) == ("method", "builtin_function_or_method")


class _Foreign(Flow):
    """A flow whose ``_work_done`` is a method descriptor of another class (list.clear: the
    same flags as the compiled one); binding it to a flow raises, as Python does."""

    __slots__ = ()
    _work_done = list.__dict__["clear"]


class _OtherFlags(Flow):
    """A flow whose ``_work_done`` is another method of its own classes with other flags (one
    argument): bound, then called without one, it raises."""

    __slots__ = ()


def _rebound(kind):
    e, net, links = _net()
    log, out = [], []
    _drain(net, links)
    _flows(e, net, links, 2, log)  # the kept memory: bound methods
    cls = _Foreign if kind == "foreign" else _OtherFlags
    if kind == "flags":
        _OtherFlags._work_done = Flow._set_rate  # the compiled METH_O method when in place
    try:
        for _ in range(2):  # the second time, the lookup of _work_done is remembered
            f = net.communicate(links, 1e5)
            f.__class__ = cls
            try:
                e.run()
                out.append("no error")
            except TypeError as exc:
                out.append(("TypeError", "descriptor" in str(exc) or "argument" in str(exc)))
    finally:
        if kind == "flags":
            del _OtherFlags._work_done
    return out, log


@pytest.mark.parametrize("kind", ["foreign", "flags"])
def test_a_callback_of_another_class_or_flags_is_bound_as_python_binds_it(kind):
    a, b = _both(lambda: _rebound(kind))
    assert a == b and a[0] == [("TypeError", True)] * 2


def test_a_ready_queue_of_a_deque_subclass_is_asked_its_length():
    # bool(engine._ready) read in place for an exact deque only
    import collections

    class Counted(collections.deque):
        calls = 0

        def __len__(self):
            Counted.calls += 1
            return super().__len__()

    def go():
        Counted.calls = 0
        e, net, links = _net()
        e._ready = Counted()
        log = []
        _flows(e, net, links, 3, log)
        return log, e.now, Counted.calls > 0

    a, b = _both(go)
    assert a == b and a[2]


def test_a_size_of_an_int_subclass_is_hashed_at_each_message():
    # the compiled communicate remembers factors[size] by the size object for exact ints and
    # floats only: another size is looked up (hashed) each time, as Python does
    class Size(int):
        hashes = 0

        def __hash__(self):
            Size.hashes += 1
            return int.__hash__(self)

    def go():
        Size.hashes = 0
        e, net, links = _net()
        size = Size(1000)
        out = []
        for _ in range(4):
            net.communicate(links, size)
            e.run()
            out.append(Size.hashes)
        return e.now, out

    a, b = _both(go)
    assert a == b and a[1] == [2, 3, 4, 5]


def test_a_waiters_list_subclass_is_asked_its_truth():
    # bool(activity.waiters), bool(signal._slots), ...: an exact list's length read in place,
    # a subclass asked (its __len__), as Python does
    class Counted(list):
        calls = 0

        def __len__(self):
            Counted.calls += 1
            return super().__len__()

    def go():
        Counted.calls = 0
        e, net, links = _net()
        t = Trigger(e, "t")
        t.waiters = Counted()
        e.schedule(1.0, t.fire)
        e.run()
        n = Counted.calls
        net.on_flow_end._slots = Counted()
        _flows(e, net, links, 2, [])
        return e.now, n, Counted.calls - n

    a, b = _both(go)
    assert a == b and a[1] >= 1 and a[2] >= 2


def test_a_bound_method_in_kept_memory_is_called_as_python_calls_it():
    # only bound methods of flags METH_NOARGS are kept (so that one made in kept memory has
    # the vectorcall of its flags): one of another method (list.append, one argument) is not
    def go():
        e, net, links = _net()
        log = []
        _flows(e, net, links, 1, log)
        _drain(net, links)
        e.run()  # the kept memory full
        _drain(net, links)  # and empty again, flows waiting
        e.schedule(0.0, log.append, "now")
        e.run(until=e.now)  # that event only
        f = net.communicate(links, 1e5)
        fn = f._lat_event.fn
        f.cancel()
        r = fn()  # through its vectorcall, as Python calls it
        e.run()
        return r, fn.__name__, log, e.now

    a, b = _both(go)
    assert a == b and a[0] is None and a[1] == "_start_bandwidth_phase" and "now" in a[2]


def test_engine_schedule_patched_on_the_class_is_called_by_set_rate():
    # _set_rate runs the compiled Engine.schedule directly only while Engine's class is the
    # one it found it on (its version tag): a wrapper put there after a first run is called
    def go():
        e, net, links = _net()
        log, calls = [], []
        _flows(e, net, links, 2, log)
        real = Engine.__dict__["schedule"]

        def schedule(self, delay, fn, *args):
            calls.append(getattr(fn, "__name__", "?"))
            return real(self, delay, fn, *args)

        Engine.schedule = schedule
        try:
            _flows(e, net, links, 2, log)
        finally:
            Engine.schedule = real
        return log, calls, e.now

    a, b = _both(go)
    assert a == b and "_work_done" in a[1]


def test_a_rate_factor_of_a_float_subclass_multiplies_as_python_does():
    # v.value * act.rate_factor and info.lat * lat_factor: two exact floats multiplied in C,
    # a float subclass (its __rmul__ first) by the number protocol
    class Factor(float):
        calls = 0

        def __rmul__(self, other):
            Factor.calls += 1
            return float(other) * float(self) * 0.5

    def go():
        Factor.calls = 0
        e, net, links = _net()
        log = []
        _flows(e, net, links, 1, log)
        f = net.communicate(links, 1e5)
        f.rate_factor = Factor(1.0)
        f.add_callback(lambda fl: log.append(("f", e.now, fl.rate)))
        e.run()
        return log, Factor.calls, e.now

    a, b = _both(go)
    assert a == b and a[1] >= 1
