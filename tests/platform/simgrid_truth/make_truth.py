"""Regenerate ``tests/platform/data/truth/*.txt``: what SimGrid 3.32 computes for each test
platform (hosts, links, routes), recorded once so that the tests run without SimGrid.

Needs SimGrid's development files (Debian: ``apt install libsimgrid-dev``, version 3.32)::

    python tests/platform/simgrid_truth/make_truth.py

It compiles ``sg_routes.cpp`` (``g++ -std=c++17 -O1 sg_routes.cpp -lsimgrid``), runs it on
every platform of ``PLATFORMS`` and writes one truth file per platform (format in
``truth.py``). Only the tests read the result; nothing in smpy depends on SimGrid.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
sys.path.insert(0, str(HERE))

from truth import MAX_SIDE, write_truth  # noqa: E402

#: platform files (relative to tests/platform/data) whose ground truth is recorded
PLATFORMS = sorted(str(path.relative_to(DATA)) for folder in ("simgrid", "xml")
                   for path in (DATA / folder).glob("*.xml"))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tool = Path(tmp) / "sg_routes"
        subprocess.run(["g++", "-std=c++17", "-O1", str(HERE / "sg_routes.cpp"), "-o", str(tool),
                        "-lsimgrid"], check=True)
        for name in PLATFORMS:
            result = subprocess.run([str(tool), str(DATA / name), str(MAX_SIDE)],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                print(f"{name}: SimGrid failed:\n{result.stderr[-2000:]}", file=sys.stderr)
                return 1
            target = write_truth(name, result.stdout)
            print(f"{name} -> {target.relative_to(DATA)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
