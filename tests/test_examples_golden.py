"""The bundled examples as golden tests (as SimGrid's tesh files and SimPy's doctests): each
``examples/*.py`` has its expected output in ``examples/expected/``, the program's stdout
followed by the run's summary (simulated makespan, ranks, MPI calls, messages, energy), so
that a change of any model's prediction fails loudly here.

The runs do not simulate the programs' own computation (``smpi/simulate-computation:no``):
measured computation differs from run to run (docs/reproducibility.md); everything else is
deterministic, byte for byte. After a deliberate model change, regenerate with
``SMPY_UPDATE_GOLDEN=1 python -m pytest tests/test_examples_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import smpy

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
EXPECTED = EXAMPLES / "expected"
NO_COMPUTE = {"smpi/simulate-computation": "no"}

#: example -> (ranks, smpyrun options as run() keywords, the command line the file records)
CASES: dict[str, tuple[int, dict]] = {
    "hello.py": (4, {}),
    "ring.py": (4, {}),
    "heat.py": (4, {}),
    "master_worker.py": (4, {}),
    "pingpong.py": (2, {}),
    "energy/dvfs.py": (2, {"platform": "examples/platforms/energy_platform.yaml",
                           "hostfile": "examples/energy/hosts.txt", "cfg": {"plugin": "host_energy"}}),
}


def _command(example: str, np: int, kw: dict) -> str:
    opts = [f"-np {np}", "--cfg=smpi/simulate-computation:no"]
    if "platform" in kw:
        opts.append(f"--platform {kw['platform']}")
    if "hostfile" in kw:
        opts.append(f"--hostfile {kw['hostfile']}")
    opts += [f"--cfg={k}:{v}" for k, v in kw.get("cfg", {}).items()]
    return f"smpyrun {' '.join(opts)} examples/{example}"


def golden_text(example: str) -> str:
    np, kw = CASES[example]
    cfg = {**NO_COMPUTE, **kw.get("cfg", {})}
    old = os.getcwd()
    os.chdir(ROOT)  # the paths of the command line are the repository's
    try:
        res = smpy.run(f"examples/{example}", np=np, cfg=cfg, platform=kw.get("platform"),
                       hostfile=kw.get("hostfile"), capture=True, echo=False)
    finally:
        os.chdir(old)
    assert res.status == "ok", res.message
    summary = [ln for ln in res.summary().splitlines() if "emulation wall time" not in ln]
    return "\n".join([f"$ {_command(example, np, kw)}", res.stdout.rstrip("\n"), *summary]) + "\n"


def expected_file(example: str) -> Path:
    return EXPECTED / (example.replace("/", "_").removesuffix(".py") + ".txt")


def test_every_example_has_a_golden_file() -> None:
    examples = {p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.glob("*.py")}
    examples |= {p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.glob("energy/*.py")}
    assert examples == set(CASES)
    assert {p.name for p in EXPECTED.glob("*.txt")} == {expected_file(e).name for e in CASES}


@pytest.mark.parametrize("example", sorted(CASES))
def test_example_output_and_makespan(example: str) -> None:
    got = golden_text(example)
    path = expected_file(example)
    if os.environ.get("SMPY_UPDATE_GOLDEN"):
        path.write_text(got)
    expected = path.read_text()
    assert "[smpy] simulated makespan: " in expected
    assert got == expected, f"{example}: output or prediction changed (see {path})"
