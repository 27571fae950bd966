"""A seeded fuzzer of platform files (YAML and SimGrid XML), hostfiles and smpyrun command
lines, for ``test_fuzz.py`` (a few hundred cases in CI) and ``benchmarks/fuzz_platforms.py``
(a larger campaign).

Seeds are the bundled and documented platforms (``examples/platforms``,
``smpy/platform/data``, ``tests/platform/data/{xml,simgrid}``). A case is one mutation of a
seed: a field replaced by a hostile value (negative, NaN, huge, of the wrong type, a unit
glued to garbage), a key or element deleted, duplicated or unknown, a deep nesting, an alias
or entity bomb, or bytes truncated, flipped or inserted. A command line mixes ``-np`` values,
``--cfg`` items with hostile values and hostfiles.

``run_cases`` runs cases in this process under a time limit each (``SIGALRM``) and sorts
each outcome into

* ``accepted`` — loaded (and its ``config:`` passed the run-time check), or ran;
* ``rejected`` — one line naming the file (or the setting, or the option);
* ``unnamed`` — rejected without naming the file;
* ``traceback`` — any other exception, or a traceback printed;
* ``hang`` — over the time limit;
* ``memory`` — ``MemoryError`` (the worker runs under ``RLIMIT_AS``);
* ``silent`` — accepted although the mutation is certainly wrong (a quantity made negative,
  NaN or infinite).

``python tests/platform/fuzzgen.py SEED N [--limit-mb M] [--timeout S]`` runs N cases as a
worker, one JSON line per case on stdout (``start`` lines first, so that a worker killed
from outside still names its last case).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import resource
import signal
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SEED_DIRS = [ROOT / "examples" / "platforms", ROOT / "smpy" / "platform" / "data",
             ROOT / "tests" / "platform" / "data" / "xml",
             ROOT / "tests" / "platform" / "data" / "simgrid"]

#: values that are wrong for any quantity (a size, a time, a speed, a count)
BAD_QUANTITIES: list[Any] = ["-1", -1, "-5e3", "nan", "NaN", "inf", "-inf", ".nan", float("nan"),
                             float("inf"), "-10Gbps", "-50us", "-1Gf"]
#: values that may or may not be wrong depending on the field
ODD_VALUES: list[Any] = ["", "0", 0, "1e+30", 1e30, 10**12, 10**7, "99999999999999999999",
                         "0-999999999", "10Gbps10", "1Gf,", ",", "1Gf,,2Gf", True, None, [],
                         {}, [[[]]], "\u00b2", "\U0001f642", "a" * 1000, "x\x00y", "1 Gf",
                         "1e-320", "0x10", "1_000", "  ", "FULLDUPLEX", "WIFI", "-", "0-",
                         "3-1", "1;2;3", "a:b", "%s%n", "${HOME}", "../../etc/passwd"]
#: keys whose values are free text, names or lists of names (a mutation there proves nothing)
FREE_KEYS = {"name", "prefix", "suffix", "router", "id", "src", "dst", "gw_src", "gw_dst",
             "properties", "host", "up", "down", "order", "hosts", "routers", "links",
             "routing", "topology", "topo_parameters", "sharing", "radical"}

CFG_ITEMS = ["network/bandwidth-factor", "network/latency-factor", "network/weight-S",
             "network/TCP-gamma", "network/model", "network/crosstraffic", "smpi/test",
             "smpi/iprobe", "smpi/wtime", "smpi/init", "smpi/os", "smpi/or", "smpi/ois",
             "smpi/send-is-detached-thresh", "smpi/async-small-thresh", "smpi/iprobe-cpu-usage",
             "smpi/host-speed", "smpi/cpu-threshold", "smpi/simulate-computation",
             "smpy/seed", "smpy/poll-counters", "plugin", "smpi/coll-selector",
             "smpi/allreduce", "smpi/shared-malloc-blocksize", "plugin/dvfs/sampling-rate",
             "smpy/force-memory", "no/such-item"]
CFG_VALUES = ["-1", "nan", "inf", "0", "1", "0:-1", "0:1;0:2", "abc", "", "1e+30", "-0",
              "0:0:-1", "yes", "maybe", "65536", "-5", "1Gf", "0:1e-6:1e-9", "x" * 300]
NP_VALUES = ["1", "2", "4", "0", "-1", "abc", "1e3", "10000000", "99999999999999999999", "3.5"]


@dataclass
class Case:
    """One input: ``kind`` is yaml, xml or cli; ``content`` the file (yaml/xml) or the
    hostfile (cli, may be None); ``argv`` the command line (cli)."""

    ident: str
    kind: str
    content: bytes | None
    argv: list[str] = field(default_factory=list)
    mutation: str = ""
    must_reject: bool = False


def seeds() -> list[Path]:
    found: list[Path] = []
    for d in SEED_DIRS:
        found += sorted(p for p in d.glob("*") if p.suffix in (".yaml", ".yml", ".xml"))
    return found


# ------------------------------------------------------------------------------- YAML

def _paths(data: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, value) of a parsed YAML document (iterative)."""
    stack = [(prefix, data)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, dict):
            stack.extend((path + (k,), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in enumerate(value))


def _set(data: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return data


def _looks_like_quantity(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and re.fullmatch(r"[0-9.]+(e[-+]?[0-9]+)?\s*[A-Za-z]*", value) is not None


def _free(path: tuple) -> bool:
    return any(isinstance(p, str) and (p in FREE_KEYS or "/" in p) for p in path)


def mutate_yaml(text: str, rng: random.Random) -> tuple[bytes, str, bool]:
    import yaml

    data = yaml.safe_load(text)
    op = rng.choice(["value", "value", "value", "bad", "bad", "delete", "unknown", "duplicate",
                     "wrap", "deep", "bomb", "bytes", "bytes", "config"])
    if op in ("bytes", "bomb") or not isinstance(data, dict):
        return _mutate_bytes(text.encode(), rng, yaml_bomb=op == "bomb")
    paths = list(_paths(data))
    path, value = rng.choice(paths)
    must = False
    if op == "bad":
        quantities = [(p, v) for p, v in paths if _looks_like_quantity(v) and not _free(p) and p]
        if quantities:
            path, value = rng.choice(quantities)
            new = rng.choice(BAD_QUANTITIES)
            must = True
            data = _set(data, path, new)
            return _dump(data), f"bad {path} {value!r} -> {new!r}", must
        op = "value"
    if op == "value":
        new = rng.choice(ODD_VALUES)
        data = _set(data, path, new)
        return _dump(data), f"value {path} -> {new!r}"[:200], False
    if op == "delete" and path:
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        del parent[path[-1]]
        return _dump(data), f"delete {path}", False
    if op == "unknown":
        dicts = [(p, v) for p, v in paths if isinstance(v, dict)]
        p, d = rng.choice(dicts)
        d[rng.choice(["bandwith", "latence", "cores ", "__class__", "!!python", "x" * 50])] = 1
        free = any(part in ("properties", "config", "power_overrides") for part in p)
        return _dump(data), f"unknown key in {p}", not free
    if op == "duplicate":
        lists = [(p, v) for p, v in paths if isinstance(v, list) and v]
        if lists:
            p, lst = rng.choice(lists)
            lst.append(lst[rng.randrange(len(lst))])
            return _dump(data), f"duplicate item in {p}", False
    if op == "wrap":
        data = _set(data, path, [value])
        return _dump(data), f"wrap {path}", False
    if op == "deep":
        depth = rng.choice([150, 250, 1000, 5000])
        deep: Any = 1
        for _ in range(depth):
            deep = [deep] if rng.random() < 0.5 else {"a": deep}
        data = _set(data, path, deep)
        try:
            return _dump(data), f"deep {depth} at {path}", depth > 200
        except RecursionError:
            return ("x: " + "[" * depth + "]" * depth).encode(), f"deep {depth} text", True
    if op == "config":
        data["config"] = {rng.choice(CFG_ITEMS): rng.choice(CFG_VALUES)}
        return _dump(data), f"config {data['config']}", False
    new = rng.choice(ODD_VALUES)
    return _dump(_set(data, path, new)), f"value {path} -> {new!r}"[:200], False


def _dump(data: Any) -> bytes:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


_BOMB_YAML = ("a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")))


def _mutate_bytes(raw: bytes, rng: random.Random, yaml_bomb: bool = False,
                  xml: bool = False) -> tuple[bytes, str, bool]:
    if yaml_bomb:
        key = rng.choice(["clusters", "hosts", "zone", "links", "config"])
        return (_BOMB_YAML + f"{key}: *i\n").encode() + raw, f"alias bomb as {key}", True
    op = rng.choice(["truncate", "flip", "insert", "dupline", "delline", "binary"])
    data = bytearray(raw)
    if op == "truncate":
        data = data[:rng.randrange(len(data) + 1)]
    elif op == "flip":
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256)
    elif op == "insert":
        i = rng.randrange(len(data) + 1)
        junk = rng.choice([b"\x00", b"\xff\xfe", b"&", b"<", b"]]>", b"{", b"*a", b"&x ",
                           b"!!python/object/apply:os.system ['true']", b"\t", b"%"])
        data[i:i] = junk
    elif op in ("dupline", "delline"):
        lines = bytes(data).split(b"\n")
        i = rng.randrange(len(lines))
        if op == "dupline":
            lines.insert(i, lines[i])
        else:
            del lines[i]
        data = bytearray(b"\n".join(lines))
    else:
        data = bytearray(rng.randbytes(rng.randint(1, 400)))
    return bytes(data), f"bytes {op}", False


# -------------------------------------------------------------------------------- XML

_ATTR = re.compile(rb'(\w+)="([^"]*)"')


def mutate_xml(raw: bytes, rng: random.Random) -> tuple[bytes, str, bool]:
    op = rng.choice(["attr", "attr", "attr", "bad", "bad", "unknown_attr", "unknown_elem",
                     "deep", "entity", "bytes", "bytes", "dupconfig", "linkctn"])
    attrs = list(_ATTR.finditer(raw))
    if op in ("attr", "bad") and attrs:
        m = rng.choice(attrs)
        name = m.group(1).decode()
        quantity = name in ("speed", "bandwidth", "latency", "bw", "lat", "bb_bw", "bb_lat",
                            "core", "read_bw", "write_bw", "loopback_bw", "loopback_lat")
        if op == "bad" and quantity:
            new = str(rng.choice(BAD_QUANTITIES)).encode()
        else:
            new = str(rng.choice(ODD_VALUES)).encode().replace(b'"', b"").replace(b"<", b"")
        out = raw[:m.start(2)] + new + raw[m.end(2):]
        must = op == "bad" and quantity and not (name == "core" and new.lstrip(b"-")[:1].isdigit()
                                                 and not new.startswith(b"-"))
        return out, f"attr {name}={new[:40]!r}", bool(must)
    if op == "unknown_attr":
        i = raw.find(b"<host ")
        if i < 0:
            i = raw.find(b"<link ")
        if i >= 0:
            return raw[:i + 6] + b'bogus="1" ' + raw[i + 6:], "unknown attribute", True
    if op == "unknown_elem":
        i = raw.rfind(b"</zone>")
        if i >= 0:
            return raw[:i] + b"<bogus/>" + raw[i:], "unknown element", True
    if op == "deep":
        n = rng.choice([120, 1000, 5000])
        i = raw.rfind(b"</zone>")
        if i >= 0:
            inner = b"".join(b'<zone id="d%d" routing="Full">' % k for k in range(n))
            return raw[:i] + inner + b"</zone>" * n + raw[i:], f"deep {n}", True
    if op == "entity":
        bomb = (b'<?xml version="1.0"?>\n<!DOCTYPE platform [<!ENTITY a "aaaaaaaaaa">'
                + b"".join(b'<!ENTITY %c "%s">' % (c, (b"&%c;" % (c - 1)) * 10)
                           for c in range(ord("b"), ord("j")))
                + b']>\n<platform version="4.1"><zone id="&i;" routing="Full"/></platform>\n')
        return bomb, "entity bomb", True
    if op == "dupconfig":
        i = raw.find(b"<zone")
        if i >= 0:
            conf = b'<config><prop id="smpi/test" value="1e-4"/><prop id="smpi/test" value="0"/></config>'
            return raw[:i] + conf + raw[i:], "duplicate config prop", True
    if op == "linkctn":
        i = raw.find(b"<link_ctn ")
        if i >= 0:
            j = raw.find(b"/>", i)
            return (raw[:j] + b"><bogus/></link_ctn>" + raw[j + 2:]), "child of link_ctn", True
    return _mutate_bytes(raw, rng, xml=True)


# --------------------------------------------------------------------------------- CLI

def cli_case(rng: random.Random) -> tuple[list[str], bytes | None, str]:
    argv: list[str] = []
    hostfile: bytes | None = None
    desc = []
    if rng.random() < 0.7:
        np = rng.choice(NP_VALUES)
        argv += ["-np", np]
        desc.append(f"-np {np}")
    else:
        argv += ["-np", "2"]
    for _ in range(rng.randint(0, 2)):
        item = f"{rng.choice(CFG_ITEMS)}:{rng.choice(CFG_VALUES)}"
        argv.append(f"--cfg={item}")
        desc.append(f"--cfg={item[:60]}")
    if rng.random() < 0.3:
        hostfile = rng.choice([b"node-0\nnode-1\n", b"node-0:99999999999\n", b"node-0:0\n",
                               b"node-0 slots=-1\n", b"\xff\xfe\x00\x01" * 20, b"",
                               b"# nothing\n", b"node-99999\n", b"node-0:\xc2\xb2\n",
                               b"node-0:3\nnode-1 slots=2\n", rng.randbytes(64)])
        desc.append(f"hostfile {hostfile[:30]!r}")
    return argv, hostfile, " ".join(desc) or "plain"


def generate(seed: int, n: int) -> list[Case]:
    """``n`` cases, the same for the same seed: 45 % YAML, 40 % XML, 15 % command lines."""
    rng = random.Random(seed)
    files = seeds()
    yaml_seeds = [p for p in files if p.suffix != ".xml"]
    xml_seeds = [p for p in files if p.suffix == ".xml"]
    cases = []
    for k in range(n):
        roll = rng.random()
        if roll < 0.45:
            src = rng.choice(yaml_seeds)
            content, what, must = mutate_yaml(src.read_text(), rng)
            cases.append(Case(f"{seed}-{k}", "yaml", content, [], f"{src.name}: {what}", must))
        elif roll < 0.85:
            src = rng.choice(xml_seeds)
            content, what, must = mutate_xml(src.read_bytes(), rng)
            cases.append(Case(f"{seed}-{k}", "xml", content, [], f"{src.name}: {what}", must))
        else:
            argv, hostfile, what = cli_case(rng)
            cases.append(Case(f"{seed}-{k}", "cli", hostfile, argv, what, False))
    return cases


# ------------------------------------------------------------------------------ running

class _Timeout(BaseException):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _named(message: str, names: list[str]) -> bool:
    first = message.strip().splitlines()[0] if message.strip() else ""
    return any(first.startswith(n) or f" {n}" in first or f"'{n}'" in first for n in names)


def run_platform(case: Case, workdir: Path) -> tuple[str, str]:
    from smpy.platform import PlatformError, load_platform
    from smpy.support.config import Config, ConfigError

    path = workdir / f"case-{case.ident}.{case.kind}"
    path.write_bytes(case.content or b"")
    try:
        platform = load_platform(path)
        Config({}).set_defaults_from(platform.config, platform.source)
    except (PlatformError, ConfigError) as err:
        message = str(err)
        ok = message.startswith(f"{path}: ") and "Traceback" not in message
        return ("rejected" if ok else "unnamed"), message.splitlines()[0][:300]
    return ("silent" if case.must_reject else "accepted"), ""


def run_cli(case: Case, workdir: Path) -> tuple[str, str]:
    from smpy.cli.smpyrun import main

    argv = list(case.argv)
    names = ["-np", "np ", "--cfg", "setting", "smpyrun: error: argument"]
    if case.content is not None:
        hostfile = workdir / f"hosts-{case.ident}.txt"
        hostfile.write_bytes(case.content)
        argv += ["--hostfile", str(hostfile)]
        names.append(str(hostfile))
    argv += ["-q", "-c", "pass"]
    err = io.StringIO()
    out = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main(argv)
    except SystemExit as exc:  # argparse
        rc = exc.code if isinstance(exc.code, int) else 2
    text = err.getvalue()
    if "Traceback" in text:
        return "traceback", text[-300:]
    if rc == 0:
        return "accepted", ""
    if rc == 2:
        lines = [line for line in text.splitlines() if line.strip() and "usage:" not in line
                 and not line.startswith(" ")]
        if len(lines) == 1 and _named(lines[0].removeprefix("smpyrun: error: "), names):
            return "rejected", lines[0][:300]
        return "unnamed", text[-300:]
    return "accepted", f"exit {rc}: {text.strip().splitlines()[-1][:200] if text.strip() else ''}"


def run_cases(cases: list[Case], timeout_s: float = 20.0, log: Any = None) -> list[dict[str, Any]]:
    """Run ``cases`` here, one after the other; see the module's doc for the outcomes."""
    import traceback

    import smpy.cli.launch  # noqa: F401 -- declares every setting, imports what runs need

    os.environ["SMPY_CACHE_DIR"] = ""
    results = []
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        with tempfile.TemporaryDirectory(prefix="smpy-fuzz-") as tmp:
            workdir = Path(tmp)
            for case in cases:
                if log is not None:
                    print(json.dumps({"start": case.ident}), file=log, flush=True)
                signal.setitimer(signal.ITIMER_REAL, timeout_s)
                try:
                    if case.kind == "cli":
                        outcome, detail = run_cli(case, workdir)
                    else:
                        outcome, detail = run_platform(case, workdir)
                except _Timeout:
                    outcome, detail = "hang", f"over {timeout_s} s"
                except MemoryError:
                    outcome, detail = "memory", "MemoryError"
                except BaseException as exc:  # noqa: BLE001 -- that is what we look for
                    outcome = "traceback"
                    detail = "".join(traceback.format_exception_only(type(exc), exc))[-300:]
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                result = {"id": case.ident, "kind": case.kind, "mutation": case.mutation,
                          "outcome": outcome, "detail": detail}
                results.append(result)
                if log is not None:
                    print(json.dumps(result), file=log, flush=True)
    finally:
        signal.signal(signal.SIGALRM, old)
    return results


def limit_memory(megabytes: int) -> None:
    limit = megabytes * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(description="run fuzz cases; one JSON line each on stdout")
    p.add_argument("seed", type=int)
    p.add_argument("n", type=int)
    p.add_argument("--skip", type=int, default=0, help="skip the first SKIP cases")
    p.add_argument("--limit-mb", type=int, default=3072, help="RLIMIT_AS of this process")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per case")
    ns = p.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    cases = generate(ns.seed, ns.n)[ns.skip:]
    limit_memory(ns.limit_mb)
    run_cases(cases, ns.timeout, log=sys.stdout)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
