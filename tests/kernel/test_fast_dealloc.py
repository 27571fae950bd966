"""The compiled deallocation of the per-message objects (smpy/kernel/_accel.c, fast_dealloc;
docs/performance.md, "Ring messages: in-place counters, the running actor, the release of the
per-message objects"): the same steps in the same order as CPython's subtype_dealloc, checked
against twin classes that keep CPython's: the slots released in the same order (their
finalizers' log), weak references cleared and their callbacks called, a subclass made later
(its instance dict, if it has one, released before the bases' slots: the one difference),
cycles, the classes' reference counts, and the classes it must refuse."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

from tests.accel_twins import MOD, needs_accel

pytestmark = needs_accel

LOG: list[str] = []


class Noisy:
    """A value that logs its release."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __del__(self) -> None:
        LOG.append(self.name)


def _classes():
    class Base:
        __slots__ = ("a", "b", "__weakref__")

    class Mid(Base):
        __slots__ = ("c",)

    class Leaf(Mid):
        __slots__ = ("d", "e")

    return Base, Mid, Leaf


def _fill(o, tag):
    for name in ("a", "b", "c", "d", "e"):
        if name != "c" or tag != "skip-c":  # an unset slot
            setattr(o, name, Noisy(f"{name}"))


def _release_log(cls, tag=""):
    LOG.clear()
    o = cls()
    _fill(o, tag)
    del o
    return list(LOG)


def test_slots_released_in_cpythons_order():
    ref = _classes()[2]
    fast = _classes()[2]
    assert MOD.fast_dealloc(fast) is True
    for tag in ("", "skip-c"):
        assert _release_log(fast, tag) == _release_log(ref, tag)
    assert _release_log(ref) == ["d", "e", "c", "a", "b"]  # the class's own slots first


def test_weak_references_cleared_and_their_callbacks_called():
    for cls, register in ((_classes()[2], True), (_classes()[2], False)):
        if register:
            assert MOD.fast_dealloc(cls)
        seen = []
        o = cls()
        o.a = Noisy("a")
        r = weakref.ref(o, lambda ref, seen=seen: seen.append(("callback", ref() is None, list(LOG))))
        LOG.clear()
        del o
        assert r() is None
        assert seen == [("callback", True, [])]  # before any slot is released, as CPython does
        assert LOG == ["a"]


def _subclass_logs(with_dict):
    Base, Mid, Leaf = _classes()
    rBase, rMid, rLeaf = _classes()
    assert MOD.fast_dealloc(Leaf)
    slots = ("f", "__dict__") if with_dict else ("f",)
    Sub = type("Sub", (Leaf,), {"__slots__": slots})
    rSub = type("rSub", (rLeaf,), {"__slots__": slots})
    logs = []
    for cls in (Sub, rSub):
        LOG.clear()
        o = cls()
        _fill(o, "")
        o.f = Noisy("f")
        if with_dict:
            o.extra = Noisy("extra")
        r = weakref.ref(o)
        del o
        assert r() is None
        logs.append(list(LOG))
    return Sub, Leaf, logs


def test_a_subclass_made_later_releases_its_own_slots_then_the_bases():
    Sub, Leaf, (fast, ref) = _subclass_logs(with_dict=False)
    assert fast == ref == ["f", "d", "e", "c", "a", "b"]
    refs = sys.getrefcount(Sub), sys.getrefcount(Leaf)
    for _ in range(1000):
        Sub().a = 1
        Leaf().a = 1
    assert (sys.getrefcount(Sub), sys.getrefcount(Leaf)) == refs


def test_a_subclass_with_a_dict_releases_it_before_the_bases_slots():
    """The one difference (docs/performance.md): CPython's deallocation of a subclass stops its
    walk at the first base with another deallocation, so the subclass's instance dict goes
    before that base's slots instead of after them. No smpy class subclasses these."""
    _, _, (fast, ref) = _subclass_logs(with_dict=True)
    assert ref == ["f", "d", "e", "c", "a", "b", "extra"]
    assert fast == ["f", "extra", "d", "e", "c", "a", "b"]


def test_the_class_is_held_by_its_instances_and_released_with_them():
    Leaf = _classes()[2]
    assert MOD.fast_dealloc(Leaf)
    before = sys.getrefcount(Leaf)
    objs = [Leaf() for _ in range(100)]
    assert sys.getrefcount(Leaf) == before + 100
    del objs
    assert sys.getrefcount(Leaf) == before


def test_cycles_are_collected():
    Leaf = _classes()[2]
    assert MOD.fast_dealloc(Leaf)
    LOG.clear()
    a, b = Leaf(), Leaf()
    a.a, b.a = b, a
    a.b, b.b = Noisy("x"), Noisy("y")
    r = weakref.ref(a)
    del a, b
    gc.collect()
    assert r() is None
    assert sorted(LOG) == ["x", "y"]


def test_refused_classes_keep_cpythons():
    class WithDel:
        __slots__ = ("a",)

        def __del__(self):
            pass

    class WithDict:
        pass

    class SlotsOverDict(WithDict):
        __slots__ = ("a",)

    class Plain:
        __slots__ = ("a",)

    class Var(tuple):
        __slots__ = ()

    for cls in (WithDel, WithDict, SlotsOverDict, Var):
        dealloc_before = cls.__basicsize__
        assert MOD.fast_dealloc(cls) is False, cls
        assert cls.__basicsize__ == dealloc_before
    with pytest.raises(TypeError):
        MOD.fast_dealloc(Plain())
    assert MOD.fast_dealloc(int) is False


def test_the_per_message_classes_use_it():
    from smpy.kernel import accel
    from smpy.kernel.engine import Event
    from smpy.mpi.msgspec import BufSpec
    from smpy.network.model import Flow
    from smpy.runtime.p2p import RecvRequest, SendRequest

    assert accel.use(True)
    try:
        for cls in (Event, SendRequest, RecvRequest, Flow, BufSpec):
            assert MOD.fast_dealloc(cls) is True  # already set: True again
    finally:
        accel.use(False)
