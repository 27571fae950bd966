"""Unit strings → SI floats (smpy.support.units)."""

import pytest

from smpy.support.units import (
    UnitError,
    format_bandwidth,
    format_power,
    format_size,
    format_speed,
    format_time,
    parse_bandwidth,
    parse_power,
    parse_size,
    parse_speed,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10Gbps", 1.25e9),          # bits: 10e9 / 8
        ("1.25GBps", 1.25e9),
        ("100Gbps", 12.5e9),
        ("1Bps", 1.0),
        ("8bps", 1.0),
        ("1kBps", 1e3),
        ("1KBps", 1e3),
        ("2MBps", 2e6),
        ("1TBps", 1e12),
        ("1KiBps", 1024.0),
        ("1MiBps", 1024.0**2),
        ("1GiBps", 1024.0**3),
        ("1TiBps", 1024.0**4),
        ("1kbps", 125.0),
        ("1Kbps", 125.0),
        ("1Mbps", 125e3),
        ("1Tbps", 125e9),
        ("1Kibps", 128.0),
        ("1Mibps", 1024.0**2 / 8),
        ("1Gibps", 1024.0**3 / 8),
        ("1Tibps", 1024.0**4 / 8),
        ("125MBps", 125e6),
        (" 10 Gbps ", 1.25e9),
        ("1e3Bps", 1000.0),
        ("1e9", 1e9),                # a bare number is already SI
    ],
)
def test_parse_bandwidth(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50us", 50e-6),
        ("0.1us", 0.1e-6),
        ("0.1µs", 0.1e-6),     # micro sign U+00B5
        ("0.1μs", 0.1e-6),     # greek mu U+03BC
        ("1ps", 1e-12),
        ("3ns", 3e-9),
        ("1.5ms", 1.5e-3),
        ("2s", 2.0),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1d", 86400.0),
        ("1w", 604800.0),
        ("0s", 0.0),
        ("0us", 0.0),
    ],
)
def test_parse_time(text, expected):
    assert parse_time(text) == expected


def test_parse_time_is_the_nearest_double():
    # 50 * 1e-6 is one ulp below 5e-05; the parser scales exactly, then rounds once
    assert parse_time("50us") == 5e-05
    assert parse_time("0.1us") == 1e-07


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1f", 1.0),
        ("1kf", 1e3),
        ("1Kf", 1e3),
        ("800Mf", 800e6),
        ("1Gf", 1e9),
        ("1.2Gf", 1.2e9),
        ("1Tf", 1e12),
        ("1Pf", 1e15),
        ("1Ef", 1e18),
        ("1Zf", 1e21),
        ("1flops", 1.0),
        ("2.5Gflops", 2.5e9),
        ("3Mflops", 3e6),
        ("1gigaflops", 1e9),   # SimGrid's long form
    ],
)
def test_parse_speed(text, expected):
    assert parse_speed(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1B", 1.0),
        ("1kB", 1e3),
        ("1KB", 1e3),
        ("1MB", 1e6),
        ("1GB", 1e9),
        ("1KiB", 1024.0),
        ("64KiB", 65536.0),
        ("1MiB", 1024.0**2),
        ("1GiB", 1024.0**3),
        ("8b", 1.0),
        ("65536", 65536.0),
        (65536, 65536.0),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"), [("95W", 95.0), ("1.2kW", 1200.0), ("5mW", 0.005), ("1MW", 1e6)]
)
def test_parse_power(text, expected):
    assert parse_power(text) == pytest.approx(expected)


@pytest.mark.parametrize("parse", [parse_bandwidth, parse_time, parse_speed, parse_size,
                                   parse_power])
def test_numbers_pass_through_as_si(parse):
    assert parse(3) == 3.0
    assert parse(2.5e-6) == 2.5e-6
    assert isinstance(parse(3), float)


@pytest.mark.parametrize(
    ("parse", "bad"),
    [
        (parse_bandwidth, "10 Gbs"),
        (parse_bandwidth, "5mbps"),     # milli-bits: not a unit
        (parse_bandwidth, "Gbps"),
        (parse_bandwidth, "10Gbps/s"),
        (parse_bandwidth, ""),
        (parse_bandwidth, None),
        (parse_bandwidth, True),
        (parse_bandwidth, [10]),
        (parse_time, "50 usec"),
        (parse_time, "1.2.3s"),
        (parse_time, "5MS"),
        (parse_speed, "1GF"),
        (parse_speed, "1Ghz"),
        (parse_size, "1 kilobyte"),
        (parse_power, "95 watts"),
    ],
)
def test_bad_values_raise_unit_error(parse, bad):
    with pytest.raises(UnitError) as info:
        parse(bad)
    assert isinstance(info.value, ValueError)
    assert repr(bad) in str(info.value)
    assert "units:" in str(info.value)


def test_unit_error_names_value_and_accepted_units():
    with pytest.raises(UnitError) as info:
        parse_bandwidth("10 Gbs")
    message = str(info.value)
    assert "'10 Gbs'" in message
    assert "unknown unit 'Gbs'" in message
    assert "Gbps" in message and "GiBps" in message
    assert info.value.kind == "bandwidth"
    assert info.value.value == "10 Gbs"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2.015e-4, "201.5 us"),
        (5e-05, "50 us"),
        (1.5, "1.5 s"),
        (0.0, "0 s"),
        (1e-3, "1 ms"),
        (0.99999e-3, "1 ms"),
        (3e-9, "3 ns"),
        (12345.6, "12346 s"),
    ],
)
def test_format_time(value, text):
    assert format_time(value) == text


def test_format_other_quantities():
    assert format_bandwidth(1.25e9) == "10 Gbps"
    assert format_bandwidth(12.5e9) == "100 Gbps"
    assert format_bandwidth(125e3) == "1 Mbps"
    assert format_size(65536) == "64 KiB"
    assert format_size(100) == "100 B"
    assert format_size(1024**3) == "1 GiB"
    assert format_speed(1e9) == "1 Gf"
    assert format_speed(2.5e9) == "2.5 Gf"
    assert format_power(95.0) == "95 W"
    assert format_power(1200.0) == "1.2 kW"


@pytest.mark.parametrize("value", ["10Gbps", "1.25GBps", "40Mbps", "3KiBps"])
def test_format_bandwidth_round_trips_to_four_digits(value):
    parsed = parse_bandwidth(value)
    shown = format_bandwidth(parsed).replace(" ", "")
    assert parse_bandwidth(shown) == pytest.approx(parsed, rel=5e-4)
