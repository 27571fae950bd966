"""smpy/support/_cext.h's lookup caches against Python: every read through them gives what
Python's lookup gives after any change of the dict or the class (docs/performance.md,
"Module dicts by version, getters called directly").

The probe extension (tests/kernel/_cext_probe.c) exposes the header's helpers: dict_get /
dict_set (a dict's entries remembered with its version), attr_get / attr_set (per class and
name), and two call sites of cached_get (per site: a module's value, a getter, two classes)."""

from __future__ import annotations

import gc
import sys
import types
from pathlib import Path

import pytest

from smpy.support import cext

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def probe():
    mod, why = cext.load(HERE / "_cext_probe.c", "tests_cext_probe._cext_probe")
    if mod is None:
        pytest.skip(why)
    return mod


def _read(probe, d, name):
    v = probe.dict_get(d, name)
    return "<absent>" if v is probe.ABSENT else v


def _py(d, name):
    return d.get(name, "<absent>")


def test_dict_entries_follow_every_change_of_the_dict(probe):
    """A module's globals read through dict_get, changed by every kind of write Python has
    (STORE_GLOBAL, specialized or not, setattr, __dict__ methods, del, clear): the read
    always gives Python's."""
    m = types.ModuleType("m")
    exec("x = 1\ny = 2\ndef put(v):\n    global x\n    x = v\ndef drop():\n    global y\n    del y\n", m.__dict__)
    d = m.__dict__
    names = ["x", "y", "z", "put"]

    def same():
        for n in names:
            assert _read(probe, d, n) == _py(d, n), n
            assert _read(probe, d, n) == _py(d, n), n  # a second read: the remembered entry

    same()
    for i in range(200):  # the interpreter specializes the store on the way
        m.put(i)
        assert _read(probe, d, "x") == i
    same()
    m.x = "set"
    same()
    d.update(y=3, z=4)
    same()
    m.drop()
    same()
    d.pop("z")
    same()
    d.setdefault("z", 5)
    same()
    del m.x
    same()
    d.clear()
    same()
    d["x"] = "back"
    same()


def test_dict_set_keeps_the_other_entries_and_sees_later_changes(probe):
    d = {"a": 1, "b": 2}
    assert probe.dict_get(d, "b") == 2
    probe.dict_set(d, "a", 10)  # the write itself: the entry of "b" stays valid
    assert d == {"a": 10, "b": 2}
    assert probe.dict_get(d, "a") == 10 and probe.dict_get(d, "b") == 2
    d["b"] = 20  # a write from Python: both seen
    assert probe.dict_get(d, "b") == 20 and probe.dict_get(d, "a") == 10
    probe.dict_set(d, "c", 3)  # a new key
    assert probe.dict_get(d, "c") == 3 and d["c"] == 3
    probe.dict_set(d, "c", 3)  # the same object: no change
    del d["c"]
    assert probe.dict_get(d, "c") is probe.ABSENT


def test_code_run_by_a_write_or_a_lookup_is_seen(probe):
    """A finalizer of the replaced value, and a key's __eq__ run by the lookup, both change
    the dict: what they did is read afterwards, as Python reads it."""
    d = {"a": 1, "b": 2}

    class Dies:
        def __del__(self):
            d["b"] = "by finalizer"

    d["a"] = Dies()
    assert probe.dict_get(d, "b") == 2
    probe.dict_set(d, "a", 0)
    gc.collect()
    assert d["b"] == "by finalizer"
    assert probe.dict_get(d, "b") == "by finalizer"

    name = sys.intern("key_with_a_twin")

    class Twin:  # same hash as the name, compared by the lookup: changes the dict
        def __hash__(self):
            return hash(name)

        def __eq__(self, other):
            e["other"] = e.get("other", 0) + 1
            return False

    e = {Twin(): 0, "other": 0}
    for _ in range(3):
        assert _read(probe, e, name) == "<absent>"
        assert _read(probe, e, "other") == e["other"]
        probe.dict_set(e, name, "v")
        assert _read(probe, e, "other") == e["other"]
        del e[name]

    class Quiet(Twin):  # changes the dict only when asked to, after the reads were remembered
        armed = False
        __hash__ = Twin.__hash__

        def __eq__(self, other):
            if Quiet.armed:
                f["other"] = "by __eq__"
            return False

    f = {Quiet(): 0, "other": 0}
    assert _read(probe, f, name) == "<absent>" and _read(probe, f, "other") == 0
    assert _read(probe, f, name) == "<absent>"  # remembered: no lookup, no __eq__
    Quiet.armed = True
    probe.dict_set(f, name, "v")  # its store compares the key: __eq__ changes "other"
    assert f["other"] == "by __eq__"
    assert _read(probe, f, "other") == "by __eq__"


def test_a_new_dict_is_never_taken_for_a_freed_one(probe):
    """Dicts made and freed in turn (often at the same address): each is read as itself."""
    for i in range(300):
        d = {"k": i}
        assert probe.dict_get(d, "k") == i
        if i % 2:
            probe.dict_set(d, "k", -i)
            assert probe.dict_get(d, "k") == -i
        del d


def test_module_attributes_per_site_and_per_name(probe):
    """A module's attribute read at a site (its value kept with the dict's version) and by
    name (attr_get): a change by setattr or through the dict is seen; two names read in turn
    at the named table each give their own."""
    m = types.ModuleType("mm")
    m.x, m.y = 1, 2
    for i in range(5):
        assert probe.site_x(m) == m.x and probe.site_y(m) == m.y
        assert probe.attr_get(m, "x") == m.x and probe.attr_get(m, "y") == m.y
        if i == 1:
            m.x = "x1"
        if i == 2:
            m.__dict__["y"] = "y2"
        if i == 3:
            probe.attr_set(m, "x", "x3")
            assert m.x == "x3"
    del m.x
    with pytest.raises(AttributeError):
        probe.site_x(m)
    m.__getattr__ = lambda name: "from __getattr__ " + name  # PEP 562
    assert probe.site_x(m) == m.x == "from __getattr__ x"


def test_getters_and_properties_are_called_as_python_calls_them(probe):
    """A class's property (data descriptor): its fget called with the object, also after
    property.__init__ changes it in place, or after the class gets another property; an
    instance dict does not shadow it. A C getter (memoryview, greenlet) read as getattr reads
    it."""
    calls = []

    class P:
        def __init__(self, v):
            self.__dict__["x"] = "instance dict"  # a property wins over it, as in Python
            self.v = v

        @property
        def x(self):
            calls.append(self.v)
            return ("x", self.v)

    a, b = P(1), P(2)
    for o in (a, b, a):
        assert probe.site_x(o) == o.x
    assert calls == [1, 1, 2, 2, 1, 1]
    P.__dict__["x"].__init__(lambda self: ("re-init", self.v))
    assert probe.site_x(a) == a.x == ("re-init", 1)
    P.x = property(lambda self: ("new", self.v))
    assert probe.site_x(b) == b.x == ("new", 2)
    del P.x
    assert probe.site_x(a) == a.x == "instance dict"

    mv = memoryview(b"abc")
    assert probe.attr_get(mv, "c_contiguous") is mv.c_contiguous is True
    assert probe.attr_get(mv[::2], "c_contiguous") is mv[::2].c_contiguous is False
    greenlet = pytest.importorskip("greenlet")
    g = greenlet.greenlet(lambda: None)
    assert probe.attr_get(g, "parent") is g.parent is greenlet.getcurrent()
    assert probe.attr_get(g, "dead") is g.dead


def test_one_site_two_classes_in_turn(probe):
    """A site that sees instances of two classes in turn (slots at other offsets): each read
    gives the object's own value, also after a class changes."""

    class A:
        __slots__ = ("pad", "x")

        def __init__(self, x):
            self.x = x

    class B:
        __slots__ = ("x",)

        def __init__(self, x):
            self.x = x

    class C:
        __slots__ = ("a", "b", "x")

        def __init__(self, x):
            self.x = x

    objs = [A(1), B(2), A(3), B(4), C(5), A(6), C(7), B(8)]
    for _ in range(3):
        assert [probe.site_x(o) for o in objs] == [o.x for o in objs]
    A.x = property(lambda self: "A's property")  # replaces the slot's descriptor
    assert [probe.site_x(o) for o in objs] == [o.x for o in objs]
    assert probe.site_x(objs[0]) == "A's property"
    with pytest.raises(AttributeError):
        probe.site_x(B.__new__(B))  # an unset slot: Python's error


def test_methods_are_bound_as_python_binds_them(probe):
    """A function of a class without instance dicts, read as an attribute: bound to the
    object, also after the class's function is replaced; a class whose instances have a
    __dict__ (which may hold the name) reads through the protocol."""

    class S:
        __slots__ = ("v",)

        def __init__(self, v):
            self.v = v

        def x(self):
            return ("x", self.v)

    class D:
        def x(self):
            return "class"

    s1, s2 = S(1), S(2)
    for o in (s1, s2, s1):
        m = probe.site_x(o)
        assert m == o.x and m.__self__ is o and m() == ("x", o.v)
    S.x = lambda self: ("new", self.v)
    assert probe.site_x(s2)() == ("new", 2)
    d = D()
    assert probe.site_x(d)() == "class"
    d.x = lambda: "instance"
    assert probe.site_x(d)() == "instance"
    S.x = staticmethod(lambda: "static")
    assert probe.site_x(s1)() == s1.x() == "static"
    S.x = classmethod(lambda cls: cls)
    assert probe.site_x(s1)() is S
    S.x = str.upper  # a C method descriptor (of str: not S's, so binding it fails as in Python)
    with pytest.raises(TypeError):
        _ = s1.x
    with pytest.raises(TypeError):
        probe.site_x(s1)


def test_many_dicts_and_names_share_the_tables(probe):
    """dict_get / dict_set over more (dict, name) pairs than the entry table holds, and dicts
    sharing track slots: entries and dicts displace each other, every read gives the dict's
    value."""
    names = [f"k{i}" for i in range(40)]
    dicts = [{n: (j, i) for i, n in enumerate(names)} for j in range(200)]
    for rnd in range(3):
        for i, n in enumerate(names):
            for j, d in enumerate(dicts):
                assert _read(probe, d, n) == _py(d, n) == (j, i + rnd)
                if (i + j) % 2:
                    probe.dict_set(d, n, (j, i + rnd + 1))
                else:
                    d[n] = (j, i + rnd + 1)
    del dicts[3]["k5"]
    assert _read(probe, dicts[3], "k5") == "<absent>"
    assert _read(probe, dicts[4], "k5") == (4, 8)


def test_many_names_and_classes_share_the_per_name_table(probe):
    """attr_get / attr_set over more (class, name) pairs than the table has entries, so that
    names displace each other in its sets: every read gives getattr's value, every store
    lands where setattr puts it."""
    names = [f"a{i}" for i in range(300)]
    classes = [type(f"C{k}", (), {"__slots__": tuple(names)}) for k in range(3)]
    objs = [c() for c in classes for _ in range(2)]
    for j, o in enumerate(objs):
        for i, n in enumerate(names):
            probe.attr_set(o, n, (j, i))
    for rnd in range(3):
        for i, n in enumerate(names):
            for j, o in enumerate(objs):
                assert probe.attr_get(o, n) == getattr(o, n) == (j, i + rnd)
                probe.attr_set(o, n, (j, i + rnd + 1))
    del objs[0].a7
    with pytest.raises(AttributeError):
        probe.attr_get(objs[0], "a7")
    assert probe.attr_get(objs[1], "a7") == (1, 10)


def test_method_calls_see_the_instance_dict_and_the_class(probe):
    """call_method0 on classes whose instances have a __dict__ (a managed one on CPython
    3.11: no __slots__, or "__dict__" among them) and on one without: the instance's own
    attribute first, the class's function replaced, deleted, a C method."""

    class D:
        def x(self):
            return "class"

    class M:
        __slots__ = ("v", "__dict__")

        def __init__(self, v):
            self.v = v

        def x(self):
            return ("m", self.v)

    class S:
        __slots__ = ()

        def x(self):
            return "slots"

    d, e = D(), D()
    for _ in range(2):
        assert probe.call_x(d) == "class"
    d.x = lambda: "instance"
    assert probe.call_x(d) == d.x() == "instance"
    assert probe.call_x(e) == "class"
    del d.x
    assert probe.call_x(d) == "class"
    D.x = lambda self: "new"
    assert probe.call_x(d) == probe.call_x(e) == "new"
    m1, m2 = M(1), M(2)
    assert [probe.call_x(o) for o in (m1, m2, m1)] == [("m", 1), ("m", 2), ("m", 1)]
    m2.x = lambda: "own"
    assert probe.call_x(m2) == "own" and probe.call_x(m1) == ("m", 1)
    assert m2.v == 2 and vars(m2) == {"x": m2.x}
    assert probe.call_x(S()) == "slots"
    del D.x
    with pytest.raises(AttributeError):
        probe.call_x(e)
    D.x = str.upper  # a C method descriptor of another class: binding fails as in Python
    with pytest.raises(TypeError):
        probe.call_x(e)


def test_dict_versions_are_used_where_the_interpreter_has_them(probe):
    assert probe.versions() is (sys.version_info < (3, 12))


def test_dict_memo_follows_every_change_of_the_dict(probe):
    """dict_memo_get (the running actor read several times between two writes) gives what
    the dict holds after each write, deletion, clear and for another dict at the same memo."""
    mod = types.ModuleType("m_memo")
    d = mod.__dict__
    mod._current = a = object()
    assert probe.dict_memo_get(d, "_current") is a
    assert probe.dict_memo_get(d, "_current") is a
    mod._current = None
    assert probe.dict_memo_get(d, "_current") is None
    b = object()
    d["_current"] = b
    assert probe.dict_memo_get(d, "_current") is b
    d.update(_current=a)
    assert probe.dict_memo_get(d, "_current") is a
    del d["_current"]
    assert probe.dict_memo_get(d, "_current") is probe.ABSENT
    exec("_current = 5", d)  # a store by the interpreter (STORE_NAME into the globals)
    assert probe.dict_memo_get(d, "_current") == 5
    other = {"_current": "other"}
    assert probe.dict_memo_get(other, "_current") == "other"
    assert probe.dict_memo_get(d, "_current") == 5
    for i in range(50):  # dicts made and freed at addresses the memo saw
        tmp = {"_current": i}
        assert probe.dict_memo_get(tmp, "_current") == i
        del tmp
        gc.collect()


@pytest.mark.parametrize("v", [0, 1, -1, 5, -5, 255, 256, 2**30 - 1, -(2**30 - 1), 2**30, -(2**30), 2**62, -(2**62),
                               2**63 - 1, True, False])
def test_int_conversions_give_what_the_c_api_gives(probe, v):
    assert probe.as_long(v) == (int(v), int(v))


@pytest.mark.parametrize("v", [2**63, -(2**63) - 1, 2**100, 1.5, "3", None])
def test_int_conversions_raise_as_the_c_api_raises(probe, v):
    with pytest.raises(OverflowError if isinstance(v, int) else TypeError):
        probe.as_long(v)


class _Truth:
    def __init__(self, t):
        self.t = t

    def __bool__(self):
        if self.t is None:
            raise ValueError("no truth")
        return self.t


@pytest.mark.parametrize("v", [True, False, None, 0, 1, 0.0, "", "x", [], [0], {}, (), _Truth(True), _Truth(False)])
def test_truth_is_pythons(probe, v):
    assert probe.is_true(v) is bool(v)


def test_truth_raises_as_python_raises(probe):
    with pytest.raises(ValueError, match="no truth"):
        probe.is_true(_Truth(None))


def test_incr_in_place_only_on_a_value_no_one_else_holds(probe):
    held = int("1000")
    assert not probe.incr_in_place(held)  # held by `held` and the call's argument
    assert held == 1000
    assert not probe.incr_in_place(5)  # a small int, shared
    assert not probe.incr_in_place(2**40)  # two digits
    assert not probe.incr_in_place(1.5)
