"""smpy calibrate storage: this node's file system measured (quick mode), as a fragment that
loads into a platform and times file I/O there."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from smpy.calibrate import storage
from smpy.platform import PlatformError, load_platform

_CLUSTER = """clusters:
  - {name: c, prefix: node-, count: 2, speed: 1Gf, bandwidth: 10Gbps, latency: 10us}
"""


@pytest.mark.parametrize("mode", [[], ["--buffered"]])
def test_quick_calibration_writes_a_loadable_fragment(tmp_path, mode):
    data = tmp_path / "data"
    data.mkdir()
    prefix = tmp_path / "out" / "storage"
    assert storage.main([str(data), "-o", str(prefix), "--quick", *mode]) == 0
    assert list(data.iterdir()) == []  # the test file is removed
    frag = yaml.safe_load((tmp_path / "out" / "storage.yaml").read_text())
    (fs,) = frag["filesystems"]
    assert fs["kind"] == "local" and fs["mount"] == str(data.resolve())
    text = (tmp_path / "out" / "storage.txt").read_text()
    assert ("O_DIRECT" in text) != bool(mode) or not hasattr(__import__("os"), "O_DIRECT")
    kinds = {line.split()[0] for line in text.splitlines()[2:-2]}
    assert kinds == {"seq-write", "seq-read", "rand-write", "rand-read", "conc-write", "conc-read"}
    streams = sorted(int(line.split()[2]) for line in text.splitlines() if line.startswith("conc-write"))
    assert streams == [1, 2, 4]
    assert (tmp_path / "out" / "storage.png").stat().st_size > 1000
    plat_file = tmp_path / "p.yaml"
    plat_file.write_text(_CLUSTER + (tmp_path / "out" / "storage.yaml").read_text())
    (loaded,) = load_platform(str(plat_file)).filesystems
    assert loaded.disk.read > 1e6 and loaded.disk.write > 1e6 and 0 <= loaded.disk.latency < 1.0
    assert loaded.disk.read == pytest.approx(float(fs["disk"]["read"].removesuffix("Bps")))
    # the aggregate and the one-stream figures are both written, the stream at most the aggregate
    assert 1e6 < loaded.disk.write_stream <= loaded.disk.write
    assert 1e6 < loaded.disk.read_stream <= loaded.disk.read
    # the page cache: this node's available memory (Linux)
    if __import__("os").path.exists("/proc/meminfo"):
        assert loaded.cache > 1 << 20 and fs["cache"]["size"].endswith("B")
    assert loaded.disk.write_stream == pytest.approx(float(fs["disk"]["write_stream"].removesuffix("Bps")))


def test_latency_is_the_smallest_random_access_less_its_transfer():
    res = storage.Result("/x", True, 1 << 20, [
        storage.Point("seq-write", 1 << 20, 10, 0.1), storage.Point("seq-read", 1 << 20, 20, 0.1),
        storage.Point("rand-write", 4096, 100, 0.02), storage.Point("rand-write", 1 << 20, 10, 0.2),
        storage.Point("rand-read", 4096, 100, 0.01), storage.Point("rand-read", 1 << 20, 10, 0.2)])
    storage._summarise(res)
    assert res.write_bw == pytest.approx(10 * (1 << 20) / 0.1)
    assert res.read_bw == pytest.approx(20 * (1 << 20) / 0.1)
    assert res.write_latency == pytest.approx(2e-4 - 4096 / res.write_bw)
    assert res.read_latency == pytest.approx(1e-4 - 4096 / res.read_bw)
    assert res.latency == pytest.approx((res.read_latency + res.write_latency) / 2)


def test_aggregate_is_the_best_of_one_stream_and_the_concurrent_phases():
    M = 1 << 20
    res = storage.Result("/x", True, 8 * M, [
        storage.Point("seq-write", M, 8, 0.08), storage.Point("seq-read", M, 8, 0.04),
        storage.Point("rand-write", 4096, 10, 0.01), storage.Point("rand-read", 4096, 10, 0.01),
        storage.Point("conc-write", 8 * M, 1, 0.09), storage.Point("conc-write", 4 * M, 2, 0.05),
        storage.Point("conc-write", 2 * M, 4, 0.064), storage.Point("conc-read", 8 * M, 1, 0.05),
        storage.Point("conc-read", 4 * M, 2, 0.05), storage.Point("conc-read", 2 * M, 4, 0.05)])
    storage._summarise(res)
    assert res.write_bw == pytest.approx(100 * M) and res.read_bw == pytest.approx(200 * M)
    assert res.write_agg == pytest.approx(8 * M / 0.05)  # two writers: 160 MiB/s
    assert res.read_agg == pytest.approx(200 * M)  # no concurrent phase beat the one stream
    frag = yaml.safe_load(storage.fragment(res, "local", "/x", cache=1 << 30))
    assert frag["filesystems"][0]["cache"] == {"size": "1073741824B"}
    assert "cache" not in yaml.safe_load(storage.fragment(res, "local", "/x", cache=0))["filesystems"][0]
    disk = frag["filesystems"][0]["disk"]
    assert float(disk["write"].removesuffix("Bps")) == pytest.approx(8 * M / 0.05, rel=1e-5)
    assert float(disk["write_stream"].removesuffix("Bps")) == pytest.approx(100 * M, rel=1e-5)
    assert float(disk["read_stream"].removesuffix("Bps")) == pytest.approx(200 * M, rel=1e-5)


def test_bad_arguments_are_one_line(tmp_path):
    for args, want in (([str(tmp_path / "none")], "not a directory"),
                       ([str(tmp_path), "--sizes", "1000"], "multiple of 4096"),
                       ([str(tmp_path), "--size", "big"], "--size")):
        proc = subprocess.run([sys.executable, "-m", "smpy", "calibrate", "storage", *args, "--quick",
                               "-o", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and want in proc.stderr and "Traceback" not in proc.stderr


def test_fragment_with_a_bad_number_names_the_field(tmp_path):
    plat_file = tmp_path / "p.yaml"
    plat_file.write_text(_CLUSTER + "filesystems:\n  - {name: l, kind: local, mount: /x, disk: {read: fast}}\n")
    with pytest.raises(PlatformError, match=r"filesystems\[0\].disk.read"):
        load_platform(str(plat_file))
