"""Group algebra and Info objects (no simulation needed)."""

import pytest

from smpy.mpi import GROUP_EMPTY, INFO_ENV, INFO_NULL, Group, Info
from smpy.mpi import Exception as MPIException
from smpy.runtime.constants import IDENT, SIMILAR, UNDEFINED, UNEQUAL
from smpy.runtime.errors import ERR_INFO_NOKEY, ERR_RANK
from smpy.runtime.group import GroupImpl


def g(*members):
    return Group._wrap(GroupImpl(members))


def test_set_operations_keep_mpi_order():
    a, b = g(3, 1, 2), g(2, 5, 3)
    assert a.Union(b)._impl.members == (3, 1, 2, 5)
    assert a.Intersection(b)._impl.members == (3, 2)
    assert a.Difference(b)._impl.members == (1,)
    assert a.Difference(a) == GROUP_EMPTY and a.Difference(a) is not GROUP_EMPTY  # a new handle object, as mpi4py


def test_incl_excl_ranges_translate_compare():
    a = g(10, 11, 12, 13, 14, 15)
    assert a.Incl([4, 0])._impl.members == (14, 10)
    assert a.Excl([0, 5])._impl.members == (11, 12, 13, 14)
    assert a.Range_incl([(0, 4, 2)])._impl.members == (10, 12, 14)
    assert a.Range_excl([(1, 5, 2)])._impl.members == (10, 12, 14)
    b = a.Incl([5, 3, 1])
    assert Group.Translate_ranks(a, [1, 3, 0], b) == [2, 1, UNDEFINED]
    assert a.Compare(a.Dup()) == IDENT
    assert a.Compare(a.Incl([5, 4, 3, 2, 1, 0])) == SIMILAR
    assert a.Compare(b) == UNEQUAL
    with pytest.raises(MPIException) as ei:
        a.Incl([7])
    assert ei.value.Get_error_class() == ERR_RANK


def test_info_mapping_and_errors():
    i = Info.Create()
    i.Set("a", "1")
    i["b"] = "2"
    assert i.Get("a") == "1" and i.Get("zz") is None
    assert i.Get_nkeys() == 2 and i.Get_nthkey(1) == "b" and list(i.keys()) == ["a", "b"]
    assert dict(i.items()) == {"a": "1", "b": "2"} and "a" in i and len(i) == 2
    d = i.Dup()
    i.Delete("a")
    assert "a" in d and "a" not in i
    with pytest.raises(MPIException) as ei:
        i.Delete("a")
    assert ei.value.Get_error_class() == ERR_INFO_NOKEY
    assert not INFO_NULL and INFO_ENV.Get_nkeys() == 0 and bool(i)
    i.Free()
    assert i == INFO_NULL
