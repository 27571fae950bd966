"""Reference pages generated from the code at build time (no checked-in copies to drift).

Directives (in MyST: a fenced block ```` ```{smpy-cfg} ````):

``smpy-cfg``
    every ``--cfg`` item, from the declarations of :mod:`smpy.support.config`
    (what ``smpyrun --help-cfg`` lists), grouped by prefix;
``smpy-collectives``
    the selectors and every registered collective algorithm, from
    :mod:`smpy.colls.registry` (what ``smpyrun --help-coll`` lists);
``smpy-cli`` *module:function* [*argv ...*]
    the argparse parser of one command: ``build_parser`` functions are called, other entry
    points are run until they parse their arguments, and the parser is taken there;
``smpy-schema``
    the platform file's pydantic models (:mod:`smpy.platform.schema`), field by field;
``smpy-layers``
    the package layers as ``tests/test_layers.py`` enforces them, with each package's summary.

Every node is built directly (help texts and docstrings are shown as text, never parsed as
markup), so a help string cannot break the ``-W`` build.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import typing
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from docutils.statemachine import StringList


def _root() -> Path:
    """The checkout holding the smpy package that is documented."""
    import smpy

    return Path(smpy.__file__).resolve().parents[1]


# ------------------------------------------------------------------------------- helpers

def _section(document: Any, title: str, key: str) -> nodes.section:
    sec = nodes.section()
    sec["ids"].append(nodes.make_id(key))
    sec["names"].append(nodes.fully_normalize_name(key))
    sec += nodes.title(text=title)
    document.note_implicit_target(sec)
    return sec


def _para(*parts: Any) -> nodes.paragraph:
    """A paragraph of text and inline nodes (a ``str`` is plain text)."""
    p = nodes.paragraph()
    for part in parts:
        p += nodes.Text(part) if isinstance(part, str) else part
    return p


def _def_item(term: list[Any], body: list[nodes.Node]) -> nodes.definition_list_item:
    item = nodes.definition_list_item()
    t = nodes.term()
    for part in term:
        t += nodes.Text(part) if isinstance(part, str) else part
    item += t
    d = nodes.definition()
    for b in body:
        d += b
    item += d
    return item


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _inline(text: str) -> nodes.paragraph:
    """One paragraph of reStructuredText prose with its inline literals (````x````, roles such
    as ``:mod:`x```) as literals and everything else as text."""
    p = nodes.paragraph()
    pos = 0
    for m in re.finditer(r"``(.+?)``|:[\w:]+:`~?(.+?)`", text):
        if m.start() > pos:
            p += nodes.Text(text[pos:m.start()])
        p += nodes.literal(text=m.group(1) or m.group(2))
        pos = m.end()
    if pos < len(text):
        p += nodes.Text(text[pos:])
    return p


def _paragraphs(doc: str) -> list[nodes.paragraph]:
    """A docstring as plain paragraphs (split at blank lines, whitespace collapsed)."""
    return [_inline(_collapse(p)) for p in inspect.cleandoc(doc).split("\n\n") if p.strip()]


class _Generated(Directive):
    """A directive whose output comes from the code: its page is read again at every build
    (the code may have changed while the page did not)."""

    def run(self) -> list[nodes.Node]:
        self.state.document.settings.env.note_reread()
        return self.generate()

    def generate(self) -> list[nodes.Node]:
        raise NotImplementedError


# ------------------------------------------------------------------------------- --cfg

def _cfg_default(flag: Any) -> str:
    if flag.default is None or flag.default == "":
        return "none (see the description)"
    return str(flag.default)


class CfgDirective(_Generated):
    has_content = False

    def generate(self) -> list[nodes.Node]:
        import smpy.cli.launch  # noqa: F401 - importing the launcher declares every setting
        from smpy.support.config import all_flags

        flags = sorted(all_flags(), key=lambda f: f.name)
        groups: dict[str, list[Any]] = {}
        for f in flags:
            groups.setdefault(f.name.split("/")[0] if "/" in f.name else "(top level)", []).append(f)
        out: list[nodes.Node] = [_para(f"{len(flags)} items, in {len(groups)} groups. Give them as "
                                       "--cfg=NAME:VALUE (repeatable), or in the platform file's "
                                       "config: section; --cfg wins.")]
        for group, items in groups.items():
            title = group if group.startswith("(") else f"{group}/…"
            sec = _section(self.state.document, title, f"cfg-{group}")
            dl = nodes.definition_list()
            for f in items:
                body: list[nodes.Node] = [_para(_collapse(f.doc))]
                facts: list[Any] = ["Default: ", nodes.literal(text=_cfg_default(f))]
                if f.choices:
                    facts += [". Choices: ", nodes.literal(text=" | ".join(f.choices))]
                body.append(_para(*facts, "."))
                dl += _def_item([nodes.literal(text=f.name)], body)
            sec += dl
            out.append(sec)
        return out


# ------------------------------------------------------------------------------- collectives

class CollectivesDirective(_Generated):
    has_content = False

    def generate(self) -> list[nodes.Node]:
        from smpy.colls.dispatch import OVERRIDES
        from smpy.colls.registry import ALGORITHMS
        from smpy.colls.selectors import SELECTORS

        families = [f for f in sorted(ALGORITHMS) if f in OVERRIDES]
        total = sum(len(ALGORITHMS[f]) for f in families)
        sel = nodes.bullet_list()
        for name in sorted(SELECTORS):
            sel += nodes.list_item("", _para(nodes.literal(text=name)))
        out: list[nodes.Node] = [
            _para(f"{total} algorithms in {len(families)} collectives. Force one with "
                  "--cfg=smpi/<collective>:<name>; choose the selector with "
                  "--cfg=smpi/coll-selector:<name>. Selectors:"),
            sel,
        ]
        for family in families:
            algos = ALGORITHMS[family]
            sec = _section(self.state.document, family, f"coll-{family}")
            sec += _para(f"{len(algos)} algorithms; --cfg=smpi/{family}:<name>.")
            dl = nodes.definition_list()
            for name in sorted(algos, key=str.lower):
                a = algos[name]
                body: list[nodes.Node] = _paragraphs(a.doc) if a.doc else [_para("(no description)")]
                marks = []
                if a.commutative_only:
                    marks.append(f"commutative operations only (otherwise {a.fallback})")
                if a.requires is not None:
                    marks.append(f"needs {a.requirement} (otherwise {a.fallback})")
                if marks:
                    body.append(_para("Restrictions: " + "; ".join(marks) + "."))
                body.append(_para("Source: " + a.source))
                dl += _def_item([nodes.literal(text=name)], body)
            sec += dl
            out.append(sec)
        return out


# ------------------------------------------------------------------------------- CLI

class _Parsed(BaseException):  # noqa: N818 - not an error; a BaseException passes `except Exception`
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def capture_parser(target: str, argv: list[str], prog: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``module:function``: its return value if it returns one, else the parser
    on which the function calls ``parse_args`` (the call is stopped there)."""
    modname, _, fname = target.partition(":")
    fn = getattr(importlib.import_module(modname), fname)
    saved = {m: getattr(argparse.ArgumentParser, m)
             for m in ("parse_args", "parse_known_args", "parse_intermixed_args")}

    def stop(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Parsed(self)

    for m in saved:
        setattr(argparse.ArgumentParser, m, stop)
    try:
        if fname.startswith("build"):
            result = fn(prog) if prog else fn()
        else:
            result = fn(argv)
    except _Parsed as got:
        return got.parser
    finally:
        for m, f in saved.items():
            setattr(argparse.ArgumentParser, m, f)
    if isinstance(result, argparse.ArgumentParser):
        return result
    raise RuntimeError(f"{target} neither returned nor used an argparse parser")


def _help_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    fmt = parser._get_formatter()
    return _collapse(fmt._expand_help(action))


def _invocation(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.choices is not None and action.metavar is None:
        metavar = "{" + ",".join(map(str, action.choices)) + "}"
    return ", ".join(f"{o} {metavar}" for o in action.option_strings)


def render_parser(document: Any, parser: argparse.ArgumentParser, key: str) -> list[nodes.Node]:
    out: list[nodes.Node] = []
    usage = parser.format_usage().strip()
    block = nodes.literal_block(usage, usage)
    block["language"] = "text"
    out.append(block)
    if parser.description:
        out += _paragraphs(parser.description)
    subs: list[tuple[str, argparse.ArgumentParser]] = []
    for group in parser._action_groups:
        dl = nodes.definition_list()
        for action in group._group_actions:
            if isinstance(action, argparse._SubParsersAction):
                subs += list(action.choices.items())
                continue
            if action.help == argparse.SUPPRESS:
                continue
            body = [_para(_help_of(parser, action) or "(no description)")]
            dl += _def_item([nodes.literal(text=_invocation(action))], body)
        if len(dl.children):
            out.append(nodes.rubric(text=group.title or "arguments"))
            out.append(dl)
    for name, sub in subs:
        sec = _section(document, sub.prog, f"{key}-{name}")
        for n in render_parser(document, sub, f"{key}-{name}"):
            sec += n
        out.append(sec)
    if parser.epilog:
        out += _paragraphs(parser.epilog)
    return out


class CliDirective(_Generated):
    """``smpy-cli`` *module:function* [*argv ...*], option ``:prog:`` for ``build_parser``."""
    required_arguments = 1
    optional_arguments = 20
    option_spec = {"prog": directives.unchanged}
    has_content = False

    def generate(self) -> list[nodes.Node]:
        target, *argv = self.arguments
        if target == "smpy.cli.main:CALIBRATE":  # one section per `smpy calibrate` command
            from smpy.cli.main import CALIBRATE

            out: list[nodes.Node] = []
            for name, module in CALIBRATE.items():
                parser = capture_parser(f"{module}:main", [])
                key = f"cli-smpy-calibrate-{name}"
                sec = _section(self.state.document, f"smpy calibrate {name}", key)
                for node in render_parser(self.state.document, parser, key):
                    sec += node
                out.append(sec)
            return out
        parser = capture_parser(target, argv, self.options.get("prog"))
        return render_parser(self.state.document, parser, "cli-" + parser.prog.replace(" ", "-"))


# ------------------------------------------------------------------------------- platform schema

def _models(root: Any) -> list[Any]:
    """``root`` and every pydantic model its fields mention, depth first, each once."""
    from pydantic import BaseModel

    seen: list[Any] = []

    def visit(model: Any) -> None:
        if model in seen:
            return
        seen.append(model)
        for name in model.model_fields:
            ann = model.__annotations__.get(name)
            if ann is None:
                for base in model.__mro__:
                    ann = getattr(base, "__annotations__", {}).get(name) or ann
            for word in re.findall(r"[A-Za-z_]\w*", str(ann)):
                obj = getattr(inspect.getmodule(model), word, None)
                if isinstance(obj, type) and issubclass(obj, BaseModel) and obj is not model:
                    visit(obj)

    visit(root)
    return seen


def _attr_docs(modname: str) -> dict[tuple[str, str], list[str]]:
    from sphinx.pycode import ModuleAnalyzer

    try:
        return ModuleAnalyzer.for_module(modname).find_attr_docs()
    except Exception:  # noqa: BLE001 - a missing comment is not an error of the page
        return {}


def _value_types(module: Any, names: set[str]) -> list[tuple[str, str]]:
    """The annotated value types among ``names``, each with what it accepts, in the words of
    the schema's own error message for a bad value."""
    from pydantic import TypeAdapter, ValidationError

    out = []
    for name in sorted(names):
        alias = getattr(module, name, None)
        if alias is None or typing.get_origin(alias) is not typing.Annotated:
            continue
        try:
            TypeAdapter(alias).validate_python("?!")
            accepts = "a name (text)"
        except ValidationError as err:
            msg = err.errors()[0]["msg"]
            msg = re.sub(r"^Value error, (expected )?", "", msg)
            msg = re.sub(r", found '\?!'( \(bad group '\?!'\))?", "", msg)
            accepts = msg.replace("Input should be", "one of")
        out.append((name, accepts))
    return out


class SchemaDirective(_Generated):
    has_content = False

    def generate(self) -> list[nodes.Node]:
        from pydantic_core import PydanticUndefined

        from smpy.platform import schema

        docs = _attr_docs(schema.__name__)
        out: list[nodes.Node] = []
        used: set[str] = set()
        for model in _models(schema.PlatformSpec):
            sec = _section(self.state.document, model.__name__, f"schema-{model.__name__}")
            if "__doc__" in vars(model) and model.__doc__:
                for para in inspect.cleandoc(model.__doc__).split("\n\n"):
                    sec += _inline(_collapse(para))
            table = nodes.table()
            tgroup = nodes.tgroup(cols=4)
            table += tgroup
            for width in (18, 28, 16, 38):
                tgroup += nodes.colspec(colwidth=width)
            thead = nodes.thead()
            tgroup += thead
            thead += self._row(["key", "type", "default", "notes"])
            tbody = nodes.tbody()
            tgroup += tbody
            for name, field in model.model_fields.items():
                ann = next((b.__annotations__[name] for b in model.__mro__
                            if name in getattr(b, "__annotations__", {})), "")
                if field.is_required():
                    default = "required"
                elif field.default is PydanticUndefined:
                    default = "computed"
                else:
                    default = repr(field.default)
                note = " ".join(docs.get((model.__name__, name), []))
                used.update(re.findall(r"[A-Za-z_]\w*", str(ann)))
                tbody += self._row([nodes.literal(text=name), nodes.literal(text=str(ann)),
                                    default, _collapse(note)])
            sec += table
            out.append(sec)
        types = _section(self.state.document, "Value types", "schema-value-types")
        dl = nodes.definition_list()
        for name, accepts in _value_types(schema, used):
            dl += _def_item([nodes.literal(text=name)], [_para(accepts)])
        types += dl
        out.append(types)
        return out

    @staticmethod
    def _row(cells: list[Any]) -> nodes.row:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += _para(cell) if isinstance(cell, (str, nodes.Node)) else cell
            row += entry
        return row


# ------------------------------------------------------------------------------- layers

def _layer_table() -> dict[str, int]:
    tree = ast.parse((_root() / "tests" / "test_layers.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "LAYER"
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError("tests/test_layers.py defines no LAYER table")


class LayersDirective(_Generated):
    has_content = False

    def generate(self) -> list[nodes.Node]:
        layers: dict[int, list[str]] = {}
        for pkg, level in _layer_table().items():
            if not pkg.startswith("__"):
                layers.setdefault(level, []).append(pkg)
        dl = nodes.definition_list()
        for level in sorted(layers, reverse=True):
            body: list[nodes.Node] = []
            for pkg in sorted(layers[level]):
                init = _root() / "smpy" / pkg / "__init__.py"
                doc = ast.get_docstring(ast.parse(init.read_text())) if init.exists() else None
                first = _collapse(doc.split("\n\n")[0]) if doc else "(no package docstring)"
                para = _inline(" — " + first)
                para.insert(0, nodes.literal(text=f"smpy/{pkg}"))
                body.append(para)
            dl += _def_item([f"level {level}"], body)
        return [dl]


# ------------------------------------------------------------------------------- module map

class ModulesDirective(_Generated):
    """``smpy-modules`` *package*: a section per subpackage with every module's docstring,
    read from the source without importing it (some modules are scripts that real ``mpiexec``
    runs) and parsed as the reStructuredText it is (the page is an ``.rst`` file)."""
    required_arguments = 1
    has_content = False

    def generate(self) -> list[nodes.Node]:
        from sphinx.util.parsing import nested_parse_to_nodes

        top = self.arguments[0]
        root = _root() / top
        groups: dict[str, list[tuple[str, Path]]] = {}
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root.parent).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if any(p.startswith("_") for p in parts) or len(parts) < 2:
                continue  # private modules, and __main__
            groups.setdefault(".".join(parts[:2]), []).append((".".join(parts), path))
        doc = self.state.document
        out: list[nodes.Node] = []
        for group, mods in groups.items():
            sec = _section(doc, group, f"pkg-{group}")
            for name, path in mods:
                text = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
                sub = _section(doc, name, f"mod-{name}")
                sub += _para(nodes.literal(text=str(path.relative_to(root.parent))))
                if text:
                    content = StringList(text.splitlines(), source=str(path))
                    for node in nested_parse_to_nodes(self.state, content,
                                                      allow_section_headings=True):
                        sub += node
                else:
                    sub += _para("(no module docstring)")
                sec += sub
            out.append(sec)
        return out


# ------------------------------------------------------------------------------- other pages

def _listed(source: str) -> set[str]:
    """The entries of the toctree fences of a MyST page (other than ``smpy-more`` itself)."""
    listed: set[str] = set()
    for block in re.findall(r"```\{toctree\}(.*?)```", source, re.S):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith(":"):
                listed.add(line)
    return listed


class MoreDirective(Directive):
    """A toctree of every page that the root document's toctrees do not list, so that a new
    page (in docs/ or a folder of it) is reachable instead of an orphan that fails ``-W``."""
    option_spec = {"caption": directives.unchanged}
    has_content = False

    def run(self) -> list[nodes.Node]:
        env = self.state.document.settings.env
        listed = _listed(Path(env.doc2path(env.docname)).read_text(encoding="utf-8"))
        rest = sorted(d for d in env.found_docs if d != env.docname and d not in listed)
        if not rest:
            return []
        from sphinx import addnodes

        toc = addnodes.toctree()
        toc["parent"] = env.docname
        toc["entries"] = [(None, d) for d in rest]
        toc["includefiles"] = list(rest)
        toc["maxdepth"] = 1
        toc["caption"] = self.options.get("caption")
        toc["glob"] = False
        toc["hidden"] = False
        toc["includehidden"] = False
        toc["numbered"] = 0
        toc["titlesonly"] = False
        wrapper = nodes.compound(classes=["toctree-wrapper"])
        wrapper += toc
        return [_para("Pages not yet placed in a section above:"), wrapper]


_OUTSIDE_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:\.\./)+)([^)\s#]+)(#[^)\s]*)?\)")


def _outside_links(app: Any, docname: str, source: list[str]) -> None:
    """A Markdown link to a file outside docs/ (``[the README](../README.md)``, which works
    where the Markdown is read in the repository) becomes the text and the file's path: the
    site has no page for it, and an unresolved link would fail the -W build."""
    if not app.env.doc2path(docname).suffix == ".md":
        return
    depth = docname.count("/")

    def repl(m: re.Match[str]) -> str:
        ups = m.group(2).count("../")
        if ups <= depth:  # still inside docs/: a page of the site, resolved by MyST
            return m.group(0)
        return f"{m.group(1)} (`{m.group(3)}`)"

    source[0] = _OUTSIDE_LINK.sub(repl, source[0])


def _root_outdated(app: Any, env: Any, added: set[str], changed: set[str],
                   removed: set[str]) -> list[str]:
    """Pages were added or removed: the root's ``smpy-more`` list must be read again."""
    return [env.config.root_doc] if added or removed else []


def setup(app: Any) -> dict[str, Any]:
    app.connect("env-get-outdated", _root_outdated)
    app.connect("source-read", _outside_links)
    directives.register_directive("smpy-more", MoreDirective)
    directives.register_directive("smpy-modules", ModulesDirective)
    directives.register_directive("smpy-cfg", CfgDirective)
    directives.register_directive("smpy-collectives", CollectivesDirective)
    directives.register_directive("smpy-cli", CliDirective)
    directives.register_directive("smpy-schema", SchemaDirective)
    directives.register_directive("smpy-layers", LayersDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
