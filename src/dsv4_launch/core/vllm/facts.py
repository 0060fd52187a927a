"""What dsv4-launch believes about vLLM's code, release by release: one table, cited and checked.

A ``Fact`` is an id, its value per release range (``by_release``: most facts are one range whose
value is ``True``, "this holds in these releases"; a table fact has a value per range), the vLLM
lines it rests on (``cites``) and the oracle test that runs that code where one exists. Rows,
signatures, memory constants and completion name a fact (``vllm=fact("v41-kv").range``) instead
of writing a range; a release change is one edited fact.

A citation is written ``"vllm/config/vllm.py:3336@0.33.0 Model Runner V1 does not support"``: the
file, the line, the release it was read in, and its anchor, a fragment of that line as vLLM
writes it. tests/vllm_real/test_citations.py checks every citation whose release is the
installed vLLM's: the anchor is on the cited line or within ``WINDOW`` lines of it (a line number
alone passes by accident, a fragment found anywhere in the file too). Every open-ended fact cites
the newest release CI pins (tests/test_vllm_facts.py), so each is checked on every change;
citations at other releases are history (the code moved) and are checked where a venv of that
release runs the test. ``tools/new_release.py`` lists the open-ended facts whose cited files or
anchors changed between the newest verified release and a new one.
"""

from __future__ import annotations

from ..records import Record
from ..versions import VersionRange

WINDOW = 2  # lines either side of a citation's line where its anchor may sit (a statement's lines)


class Cite(Record):
    path: str  # vllm/config/vllm.py
    line: int
    release: str  # 0.33.0
    anchor: str  # a fragment of the line, as written there

    @classmethod
    def parse(cls, text: str) -> Cite:
        """``"path:line@release anchor"`` → a Cite; ValueError for another shape."""
        where, _, anchor = text.partition(" ")
        place, _, release = where.rpartition("@")
        path, _, line = place.rpartition(":")
        if not (path and line.isdigit() and release and anchor.strip()):
            raise ValueError(f"not a citation 'path:line@release anchor': {text!r}")
        return cls(path, int(line), release, anchor.strip())

    def __str__(self) -> str:
        return f"{self.path}:{self.line}@{self.release} {self.anchor}"


class Fact(Record):
    id: str
    by_release: tuple[tuple[VersionRange, object], ...]
    cites: tuple[Cite, ...] = ()
    oracle: str | None = None  # tests/vllm_real/<file>::<test> that runs the cited code

    @property
    def range(self) -> VersionRange:
        """The releases a one-range fact holds in; ValueError for a table fact."""
        if len(self.by_release) != 1:
            raise ValueError(f"fact {self.id!r} has {len(self.by_release)} ranges: use .at(version)")
        return self.by_release[0][0]

    def at(self, version: str | None) -> object:
        """The value in ``version``'s range; None outside every range or for an unreadable version."""
        return next((value for r, value in self.by_release if r.contains(version) is True), None)

    @property
    def open_ended(self) -> bool:
        """True when a range has no end: the next vLLM release may change it."""
        return any(r.before is None for r, _ in self.by_release)


def _f(id: str, since: str | None = None, before: str | None = None, *cites: str, oracle: str | None = None) -> Fact:
    return Fact(id, ((VersionRange(since, before), True),), tuple(map(Cite.parse, cites)), oracle)


def _table(id: str, rows: tuple[tuple[VersionRange, object], ...], *cites: str, oracle: str | None = None) -> Fact:
    return Fact(id, rows, tuple(map(Cite.parse, cites)), oracle)


FACTS: tuple[Fact, ...] = ()

_BY_ID = {f.id: f for f in FACTS}


def fact(id: str) -> Fact:
    """The fact ``id``; KeyError (at import, for a module naming one) when there is none."""
    return _BY_ID[id]
