"""Piecewise tables (smpy.support.piecewise), with SimGrid's boundary convention.

Each section i covers (bound_i, bound_{i+1}]; sizes up to the first bound get the default.
"""

import random

import pytest

from smpy.support.piecewise import Piecewise

SMPI_LAT = ("65472:11.6436; 15424:3.48845; 9376:2.59299; 5776:2.18796; 3484:1.88101; "
            "1426:1.61075; 732:1.9503;257:1.95341;0:2.01467")
SMPI_BW = ("65472:0.940694; 15424:0.697866; 9376:0.58729; 5776:1.08739; 3484:0.77493; "
           "1426:0.608902; 732:0.341987; 257:0.338112; 0:0.812084")


def test_smpi_latency_factor_sections_are_sorted():
    table = Piecewise.parse_factors(SMPI_LAT)
    assert [bound for bound, _, _ in table.sections] == [0, 257, 732, 1426, 3484, 5776, 9376,
                                                         15424, 65472]
    assert all(b == 0.0 for _, _, b in table.sections)
    assert table.default == 1.0


@pytest.mark.parametrize(
    ("size", "factor"),
    [
        (1, 2.01467),          # (0, 257]
        (16, 2.01467),         # an empty MPI message is 16 bytes in SMPI
        (257, 2.01467),        # a bound belongs to the section below it (SimGrid code)
        (258, 1.95341),
        (1000, 1.9503),
        (15424, 2.59299),
        (15425, 3.48845),
        (65472, 3.48845),
        (65473, 11.6436),
        (1e9, 11.6436),
    ],
)
def test_smpi_latency_factor_values(size, factor):
    assert Piecewise.parse_factors(SMPI_LAT)(size) == factor


def test_size_zero_gets_the_default_even_with_a_zero_bound():
    # FactorSet::operator(): 0 <= bound 0 at the first section, so the default is returned
    assert Piecewise.parse_factors(SMPI_LAT)(0) == 1.0


def test_smpi_bandwidth_factor_values():
    table = Piecewise.parse_factors(SMPI_BW)
    assert table(100) == 0.812084
    assert table(1000) == 0.341987
    assert table(100_000) == 0.940694


def test_default_below_first_bound():
    # the doc's example without a zero bound: 1 below 1000 (the default), then 2, then 3
    table = Piecewise.parse_factors("1000:2;5000:3")
    assert table(10) == 1.0
    assert table(1000) == 1.0
    assert table(1001) == 2.0
    assert table(5001) == 3.0
    assert Piecewise.parse_factors("1000:2", default=0.5)(10) == 0.5


def test_constant_forms():
    assert Piecewise.parse_factors("13.01")(12345) == 13.01
    assert Piecewise.parse_factors("13.01") == Piecewise.constant(13.01)
    assert Piecewise.constant(0.97)(0) == 0.97
    assert Piecewise.constant(0.97).is_constant
    assert repr(Piecewise.constant(2.0)) == "Piecewise.constant(2.0)"


def test_affine_overheads():
    # startup + perbyte * size, section chosen like the factors; default 0 up to the first bound
    table = Piecewise.parse_affine("0:1e-6:1e-9; 65536:5us:2e-10")
    assert table.sections == ((0.0, 1e-6, 1e-9), (65536.0, 5e-6, 2e-10))
    assert table(0) == 0.0
    assert table(1000) == pytest.approx(1e-6 + 1e-9 * 1000)
    assert table(65536) == pytest.approx(1e-6 + 1e-9 * 65536)
    assert table(65537) == pytest.approx(5e-6 + 2e-10 * 65537)


def test_affine_accepts_simgrid_default_with_extra_fields():
    table = Piecewise.parse_affine("0:0:0:0:0")    # smpi/os default in SimGrid
    assert table(1_000_000) == 0.0
    assert table.sections == ((0.0, 0.0, 0.0),)


def test_bounds_accept_size_units():
    table = Piecewise.parse_factors("64KiB:3;0:1.5")
    assert table.sections[-1][0] == 65536.0
    assert table(65537) == 3.0


def test_equality_hash_and_repr_round_trip():
    a = Piecewise.parse_factors("257:1.95;0:2.01")
    b = Piecewise.parse_factors("0:2.01; 257:1.95")
    assert a == b and hash(a) == hash(b)
    assert a != Piecewise.parse_factors("0:2.01; 257:1.95", default=0.5)
    assert a != Piecewise.parse_factors("0:2.01; 258:1.95")
    assert repr(a) == "Piecewise('0:2.01;257:1.95', default=1.0)"
    assert Piecewise.parse_factors(a.to_string()) == a
    affine = Piecewise.parse_affine("0:1e-06:1e-09;65536:5e-06:2e-10")
    assert Piecewise.parse_affine(affine.to_string()) == affine


def test_sections_constructor():
    table = Piecewise([(100, 1.0, 0.5), (0, 2.0, 0.0)], default=7.0)
    assert table.sections == ((0.0, 2.0, 0.0), (100.0, 1.0, 0.5))
    assert table(0) == 7.0
    assert table(50) == 2.0
    assert table(101) == 1.0 + 0.5 * 101


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("1:2:3", "'1:2:3'"),
        ("0:1;257:x", "'257:x'"),
        ("a:1", "'a:1'"),
        ("0:1;;5:2", "empty section"),
        ("0:1;0:2", "appears twice"),
        ("-1:2", "'-1:2'"),
        ("0:inf", "'0:inf'"),
        ("", "not a number"),
    ],
)
def test_bad_factor_syntax_names_the_section(text, needle):
    with pytest.raises(ValueError) as info:
        Piecewise.parse_factors(text)
    assert needle in str(info.value)


@pytest.mark.parametrize(("text", "needle"), [("0:1e-6", "'0:1e-6'"),
                                              ("0:1e-6:zz", "'0:1e-6:zz'")])
def test_bad_affine_syntax_names_the_section(text, needle):
    with pytest.raises(ValueError) as info:
        Piecewise.parse_affine(text)
    assert needle in str(info.value)


def test_bisect_lookup_matches_a_linear_scan():
    # reference: SimGrid's linear walk, "first size <= bound -> previous section"
    table = Piecewise.parse_factors(SMPI_LAT)

    def linear(size):
        previous = None
        for bound, a, b in table.sections:
            if size <= bound:
                return table.default if previous is None else previous[0] + previous[1] * size
            previous = (a, b)
        return previous[0] + previous[1] * size

    rng = random.Random(42)
    sizes = [0, 1, 256, 257, 258, 65472, 65473] + [rng.randrange(0, 200_000) for _ in range(500)]
    for size in sizes:
        assert table(size) == linear(size), size
