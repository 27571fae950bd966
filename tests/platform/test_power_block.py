"""The platform's native `power` block: parsing, per-host overrides, errors naming the field."""

from __future__ import annotations

import pytest

from smpy.energy.host_energy import parse_wattage_per_state
from smpy.platform import PlatformError, load_platform_data


def _host(**extra):
    return {"name": "h", "speed": ["2Gf", "1Gf"], "cores": 4, **extra}


def _plat(*hosts):
    return {"hosts": list(hosts)}


def _ranges(host):
    return parse_wattage_per_state(host.properties["wattage_per_state"], host.pstate_count)


def test_three_spellings_give_the_same_profile() -> None:
    forms = [
        [{"idle": "100W", "epsilon": "110W", "all_cores": "200W"}, {"idle": 90, "all_cores": 150}],
        ["100:110:200", "90:150"],
        [["100W", "110W", "0.2kW"], [90, 90, 150]],
    ]
    got = []
    for pstates in forms:
        p = load_platform_data(_plat(_host(power={"off": "10W", "pstates": pstates})))
        h = p.host("h")
        got.append([(r.idle, r.epsilon, r.all_cores) for r in _ranges(h)])
        assert float(h.properties["wattage_off"]) == 10.0
    assert got[0] == got[1] == got[2] == [(100.0, 110.0, 200.0), (90.0, 90.0, 150.0)]


def test_yaml_bare_off_key_is_read_as_off() -> None:
    # PyYAML turns `off:` into the boolean False
    p = load_platform_data(_plat(_host(power={False: "7W", "pstates": ["1:2:3", "1:2:3"]})))
    assert float(p.host("h").properties["wattage_off"]) == 7.0


def test_wrong_number_of_profiles_names_the_field() -> None:
    with pytest.raises(PlatformError, match=r"hosts\[0\]\.power\.pstates: expected 2 power profile"):
        load_platform_data(_plat(_host(power={"pstates": ["1:2:3"]})))


def test_bad_power_value_names_the_field() -> None:
    with pytest.raises(PlatformError, match=r"hosts\[0\]\.power\.pstates\[1\]"):
        load_platform_data(_plat(_host(power={"pstates": ["1:2:3", "1:2:x"]})))


def test_power_and_properties_together_is_an_error() -> None:
    with pytest.raises(PlatformError, match=r"hosts\[0\]\.power: give the power profile either"):
        load_platform_data(_plat(_host(power={"pstates": ["1:2:3", "1:2:3"]},
                                       properties={"wattage_per_state": "1:2:3, 1:2:3"})))


CLUSTER = {"name": "c", "prefix": "n-", "count": 4, "speed": ["2Gf", "1Gf"], "cores": 2,
           "bandwidth": "10Gbps", "latency": "1us"}


def test_cluster_power_with_per_host_override() -> None:
    spec = {"clusters": [dict(CLUSTER, power={"off": 5, "pstates": ["100:120:200", "80:90:150"]},
                              power_overrides={"n-2": {"off": 6, "pstates": ["1:2:3", "4:5:6"]}})]}
    p = load_platform_data(spec)
    assert _ranges(p.host("n-0"))[0].all_cores == 200.0
    assert _ranges(p.host("n-2"))[1].epsilon == 5.0
    assert float(p.host("n-2").properties["wattage_off"]) == 6.0
    assert float(p.host("n-3").properties["wattage_off"]) == 5.0


def test_override_of_unknown_host_is_an_error() -> None:
    spec = {"clusters": [dict(CLUSTER, power_overrides={"n-7": {"pstates": ["1:2:3", "4:5:6"]}})]}
    with pytest.raises(PlatformError, match=r"power_overrides\.n-7: no host 'n-7' in this cluster"):
        load_platform_data(spec)
