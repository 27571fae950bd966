"""The documentation site builds with warnings as errors (``sphinx-build -W``).

The reference pages are generated from the code at build time (docs/_ext/smpy_ref.py), so a
setting, algorithm, command-line option or schema field without a usable description, a
docstring that is not valid reStructuredText, or a page missing from the toctree fails here.
The ``test`` extra installs Sphinx, so CI builds the site; the test skips only where Sphinx
is not installed.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two builds of the site, 10-40 s each

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")
pytest.importorskip("furo")

ROOT = Path(__file__).resolve().parent.parent


def _build(src: Path, out: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / ".doctrees"), str(src), str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, f"sphinx-build -W failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    _build(ROOT / "docs", out)
    return out


def _text(path: Path) -> str:
    return re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))


def test_every_markdown_page_is_built(site):
    pages = {p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md")
             if "_build" not in p.parts and "_ext" not in p.parts and "research" not in p.parts}
    built = {p.relative_to(site).with_suffix("") for p in site.rglob("*.html")}
    assert pages <= built, f"pages not built: {sorted(map(str, pages - built))}"


def test_cfg_reference_lists_every_declared_item(site):
    import smpy.cli.launch  # noqa: F401 - declares every setting
    from smpy.support.config import all_flags

    text = _text(site / "reference" / "cfg.html")
    missing = [f.name for f in all_flags() if f.name not in text]
    assert not missing, f"--cfg items missing from the reference: {missing}"


def test_collectives_reference_lists_every_algorithm(site):
    from smpy.colls.dispatch import OVERRIDES
    from smpy.colls.registry import ALGORITHMS

    text = _text(site / "reference" / "collectives.html")
    for family in OVERRIDES:
        for name in ALGORITHMS[family]:
            assert f"smpi/{family}:" in text and name in text, (family, name)


def test_cli_reference_shows_every_smpyrun_option_and_command(site):
    from smpy.cli.main import CALIBRATE
    from smpy.cli.smpyrun import build_parser

    text = _text(site / "reference" / "cli.html")
    for action in build_parser()._actions:
        for opt in action.option_strings:
            assert opt in text, opt
    for command in ["predict", "platform", "replay", "plot"] + [f"calibrate {c}" for c in CALIBRATE]:
        assert f"usage: smpy {command}" in text, command


def test_model_pages_render_the_math(site):
    html = (site / "reference" / "models.html").read_text(encoding="utf-8")
    assert html.count('class="math') >= 20, "the model docstrings' math did not render"


def test_a_new_page_needs_no_toctree_entry(tmp_path):
    """Pages that no section lists yet are linked from the root ("More topics"), in docs/
    and in a folder of it, so adding one does not make the -W build fail as an orphan; a link
    to a file outside docs/ (valid where the Markdown is read in the repository) shows its path."""
    src = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", src, ignore=shutil.ignore_patterns("_build"))
    (src / "zz-new-topic.md").write_text("# A new topic\n\nSee [the README](../README.md) and "
                                         "[running](running.md).\n")
    (src / "notes").mkdir()
    (src / "notes" / "deep.md").write_text("# A page in a folder\n")
    _build(src, tmp_path / "html")
    index = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    assert 'href="zz-new-topic.html"' in index and 'href="notes/deep.html"' in index
    page = _text(tmp_path / "html" / "zz-new-topic.html")
    assert "the README" in page and "README.md" in page
