"""Outside smpyrun, smpy's hints are pass-throughs, so the same program runs in production."""

import subprocess
import sys


def test_hints_are_noops_outside_simulation():
    code = ("import smpy\n"
            "assert not smpy.is_simulated()\n"
            "smpy.execute(100.0); smpy.execute_flops(1e12); smpy.set_pstate(3)\n"
            "assert smpy.get_pstate() == 0 and smpy.get_pstate_count() == 1\n"
            "t0 = smpy.now(); smpy.sleep(0.01); assert smpy.now() - t0 >= 0.009\n"
            "assert isinstance(smpy.host_name(), str)\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
