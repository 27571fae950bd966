"""Parsing of unittest's verbose output (``main.py -v``) into per-test outcomes.

A test is reported as ``name (module.Class.name) ... <outcome>``; with a docstring the
description takes two lines (the id line, then the docstring's first line ending with
`` ... <outcome>``); a test that writes output may put its outcome on a later line; failing
subtests are listed indented below their test. The ``ERROR:``/``FAIL:`` blocks at the end give
each failure's traceback, from which the first line of the (last) exception is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: outcomes, most severe first; 'crash' = the module's run died or timed out,
#: 'missing' = not reported although the run completed, 'excluded' = in exclusions.txt
SEVERITY = ["crash", "ERROR", "FAIL", "unexpected success", "missing", "excluded",
            "skipped", "expected failure", "ok"]
PASSED = frozenset({"ok", "expected failure"})

_START = re.compile(r"^(?P<indent> *)(?P<name>\w+) \((?P<id>[A-Za-z_][\w.]*)\)(?P<rest>.*)$")
_OUTCOME = re.compile(r"(?P<outcome>ok|FAIL|ERROR|skipped|expected failure|unexpected success)"
                      r"(?: (?P<reason>.*))?")
_BLOCK = re.compile(r"^(?P<kind>ERROR|FAIL|UNEXPECTED SUCCESS): (?P<desc>.*)$")
_RAN = re.compile(r"^Ran (\d+) tests? in ", re.M)
_FIXTURES = ("setUpClass", "tearDownClass", "setUpModule", "tearDownModule")
_SEP1 = "=" * 70
_SEP2 = "-" * 70


def severity(outcome: str) -> int:
    return SEVERITY.index(outcome) if outcome in SEVERITY else 0


def worst(a: str, b: str) -> str:
    return a if severity(a) <= severity(b) else b


@dataclass
class RankReport:
    """What one rank's output says."""

    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> outcome
    details: dict[str, str] = field(default_factory=dict)  # test id -> skip reason
    messages: dict[str, str] = field(default_factory=dict)  # test id -> first error line
    #: errors not tied to one test: 'module.Class' (setUpClass...) or 'module' (import error)
    fixture_errors: dict[str, str] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)  # test ids in the order they started
    completed: bool = False  # unittest printed 'Ran N tests'

    @property
    def unfinished(self) -> list[str]:
        return [t for t in self.started if t not in self.outcomes]


def _parse_outcome(text: str) -> tuple[str, str] | None:
    m = _OUTCOME.fullmatch(text.strip())
    if m is None:
        return None
    return m["outcome"], (m["reason"] or "")


def _exception_line(body: list[str]) -> str:
    """First line of the last exception of a traceback (``Type: message``)."""
    start = max((i for i, line in enumerate(body) if line.startswith("Traceback (most recent call last)")),
                default=-1)
    if start < 0:
        return next((line.strip() for line in body if line.strip()), "")
    for line in body[start + 1:]:
        if line.strip() and not line.startswith((" ", "\t")):
            return line.strip()
    return ""


def _block_target(desc: str) -> tuple[str, str] | None:
    """('test', id) or ('fixture', 'module.Class' / 'module') for an ERROR/FAIL header."""
    m = _START.match(desc)
    if m is None:
        return None
    name, tid = m["name"], m["id"]
    if tid.startswith("unittest.loader._FailedTest."):  # the module could not be imported
        return "fixture", name
    if name in _FIXTURES:
        return "fixture", tid
    if tid.endswith("." + name):
        return "test", tid
    return None


def _read_summary_blocks(lines: list[str], rep: RankReport) -> None:
    """The summary blocks after the run: '=====' / 'KIND: desc' / '-----' / traceback ...;
    a test's ERROR/FAIL and its message, or a fixture's (setUpClass, a module import) error."""
    for j, line in enumerate(lines):
        if line != _SEP1 or j + 1 >= len(lines):
            continue
        b = _BLOCK.match(lines[j + 1])
        if b is None:
            continue
        start = j + 2  # after the header (and a docstring line, if any) comes '-----'
        while start < len(lines) and start < j + 4 and lines[start] != _SEP2:
            start += 1
        k = start = start + 1
        while k < len(lines) and lines[k] not in (_SEP1, _SEP2):
            k += 1
        body = lines[start:k]
        msg = _exception_line(body) or b["kind"]
        target = _block_target(b["desc"])
        if target is None:
            continue
        kind, key = target
        if kind == "fixture":
            rep.fixture_errors.setdefault(key, msg)
            continue
        rep.messages.setdefault(key, msg)
        outcome = {"ERROR": "ERROR", "FAIL": "FAIL"}.get(b["kind"], "unexpected success")
        rep.outcomes[key] = worst(rep.outcomes.get(key, "ok"), outcome)


def parse_rank_output(text: str) -> RankReport:
    rep = RankReport(completed=_RAN.search(text) is not None)
    lines = text.splitlines()
    current: str | None = None  # the test whose own outcome is still awaited
    expect_doc = False
    sub_worst: dict[str, str] = {}

    def record(tid: str, outcome_text: str, *, sub: bool = False) -> bool:
        parsed = _parse_outcome(outcome_text)
        if parsed is None:
            return False
        outcome, reason = parsed
        if sub:
            if outcome not in PASSED and outcome != "skipped":
                sub_worst[tid] = worst(sub_worst.get(tid, "ok"), outcome)
            return True
        rep.outcomes[tid] = outcome
        if reason:
            rep.details[tid] = reason.strip("'\"")
        return True

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line == _SEP1:  # the summary blocks start; handled below
            break
        m = _START.match(line)
        if m is not None and m["id"].endswith("." + m["name"]):
            tid, rest = m["id"], m["rest"]
            if m["indent"]:  # a subtest of `tid`
                if " ... " in rest:
                    record(tid, rest.rsplit(" ... ", 1)[1], sub=True)
                continue
            rep.started.append(tid)
            current = tid
            if " ... " in rest:
                if record(tid, rest.split(" ... ", 1)[1]):
                    current = None
                expect_doc = False
            else:  # docstring case: the outcome ends the next line
                expect_doc = True
            continue
        if current is None:
            continue
        if expect_doc:
            expect_doc = False
            if " ... " in line:
                if record(current, line.rsplit(" ... ", 1)[1]):
                    current = None
                continue
        if record(current, line):  # the outcome after the test's own output
            current = None

    _read_summary_blocks(lines, rep)
    for tid, out in sub_worst.items():
        rep.outcomes[tid] = worst(rep.outcomes.get(tid, "ok"), out)
        if tid not in rep.started:
            rep.started.append(tid)
    return rep


def banner_library(text: str) -> str:
    """The 'MPI x.y (vendor a.b.c)' line of main.py's banner, if any."""
    m = re.search(r"^\[0@[^\]]*\] (MPI \d+\.\d+.*)$", text, re.M)
    return m[1] if m else ""
