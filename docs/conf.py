"""Sphinx configuration of smpy's documentation site (``sphinx-build -W -b html docs OUT``).

The pages are the Markdown files of this folder (MyST). The reference pages of the command
line, of the ``--cfg`` items, of the collective algorithms and of the platform schema are
generated at build time from the code by the directives of ``_ext/smpy_ref.py``; the API and
the models come from the modules' own docstrings (autodoc).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, os.path.dirname(HERE))  # the checkout's smpy, not an installed copy

project = "smpy"
author = "the smpy developers"
copyright = "the smpy developers"  # noqa: A001 - Sphinx's name

from smpy import __version__  # noqa: E402

release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
    "smpy_ref",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store", "research"]
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3
# the Markdown pages are also read on GitHub, where they link each other and the code by
# relative path; links to files outside docs/ stay plain links
myst_all_links_external = False
suppress_warnings: list[str] = []

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = f"smpy {release}"
html_static_path: list[str] = []
smartquotes = False  # "--cfg" stays two hyphens
