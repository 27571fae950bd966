"""Matched probes (Mprobe/Improbe + Message) and Comm.Get_group under smpyrun."""

from pathlib import Path

import smpy

PROG = Path(__file__).parent / "programs" / "mprobe.py"


def test_matched_probes_and_groups():
    res = smpy.run(str(PROG), np=2, cfg={"smpi/simulate-computation": "no"})
    assert res.status == "ok", res.message
    out = res.stdout.splitlines()
    assert not [line for line in out if line.startswith("FAIL")], out
    names = {line.split()[1] for line in out}
    assert {"group_size", "mprobe_status", "mprobe_recv", "improbe_count", "improbe_Recv", "improbe_nothing",
            "mprobe_proc_null"} <= names
