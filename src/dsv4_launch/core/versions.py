"""Version arithmetic: what a vLLM version is to a rule, pure and import-light.

Every bound a rule or an option table names is a final release (``0.30.0``), so a version is
read only as far as that needs: its release (``0.30``, trailing zeros trimmed, and its epoch),
and whether it comes before that release (a pre-release or dev build: ``0.30.0rc1``,
``0.30.0.dev5``), is it (``0.30.0``, and a build of it: ``0.30.0+cu130``), or comes after it
(``0.30.0.post1``).
Against any final release that orders exactly as PEP 440 does (tests/releases/test_versions.py checks it
against ``packaging.version``, which this avoids importing for ``plan``'s sake); two
pre-releases of one release are not told apart, and nothing here needs them to be.
"""

from __future__ import annotations

import re

from .records import Record

_PEP440_SOURCE = (
    r"""^\s*v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?P<pre>[-_.]?(?:alpha|beta|preview|pre|rc|a|b|c)[-_.]?\d*)?
    (?P<post>-\d+|[-_.]?(?:post|rev|r)[-_.]?\d*)?
    (?P<dev>[-_.]?dev[-_.]?\d*)?
    (?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?
    \s*$"""
)
BEFORE, AT, AFTER = 0, 1, 2  # where a version sits against its own final release


_PARSED: dict[str, tuple[int, tuple[int, ...], int]] = {}  # a plan's ~60 rows ask about the same few versions


def parse_version(text: str) -> tuple[int, tuple[int, ...], int]:
    """``"0.30.0rc1"`` → ``(0, (0, 30), BEFORE)``, comparable with ``<``; ValueError for text
    that is not a version."""
    found = _PARSED.get(text) if isinstance(text, str) else None
    if found is None:
        found = _parse_version(text)
        if isinstance(text, str):
            _PARSED[text] = found
    return found


def _parse_version(text: str) -> tuple[int, tuple[int, ...], int]:
    parts = text.split(".")
    if text.isascii() and all(p.isdigit() for p in parts):  # "0.24.0": no regex needed
        epoch, release, where = 0, [int(p) for p in parts], AT
    else:
        m = re.match(_PEP440_SOURCE, text, re.VERBOSE | re.IGNORECASE | re.ASCII)  # compiled on first use
        if m is None:
            raise ValueError(f"not a version: {text!r}")
        epoch, release = int(m.group("epoch") or 0), [int(p) for p in m.group("release").split(".")]
        where = AFTER if m.group("post") and not m.group("pre") else BEFORE if m.group("pre") or m.group("dev") else AT
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    return epoch, tuple(release), where


def is_older(version: str | None, than: str) -> bool | None:
    """True when ``version`` comes before release ``than``; None when it is unknown/unreadable.

    Pre-releases and dev builds of a release come before it (``0.30.0rc1`` < ``0.30``), so a
    fix that first shipped in ``than`` is not assumed in them."""
    if version is None:
        return None
    try:
        return parse_version(version) < parse_version(than)
    except ValueError:
        return None


def is_newer(version: str | None, than: str) -> bool | None:
    """True when ``version`` comes after release ``than``: a later release, a pre-release or dev
    build of one (``0.34.0rc1``), a post-release (``0.33.0.post1``); a build label of ``than``
    itself (``0.33.0+cu130``) is not newer. None when the version is unknown or unreadable."""
    if version is None:
        return None
    try:
        return parse_version(version) > parse_version(than)
    except ValueError:
        return None


def same_release(a: str, b: str) -> bool:
    """``0.24.0+cu130`` and ``0.24.0`` are the same release; ``0.24.0rc1`` and ``0.24.0.post1`` are not."""
    return parse_version(a) == parse_version(b)


class VersionRange(Record):
    """The vLLM releases a rule holds for: ``since`` ≤ version < ``before`` (None: open).

    Pre-releases of ``before`` are inside (``0.30.0rc1`` < ``0.30.0``): a fix first shipped in a
    release is not assumed in its release candidates. A pre-release or dev build of ``since``'s
    release is unknown (None): a release candidate almost always carries its release's change, but
    not certainly."""

    since: str | None = None
    before: str | None = None

    def contains(self, version: str | None) -> bool | None:
        """True/False; None when the version is unknown or unreadable and the range is bounded, or
        a pre-release of ``since``'s release (``0.30.0rc1`` for ``since="0.30.0"``) below ``before``."""
        if self.since is None and self.before is None:
            return True
        if version is None:
            return None
        try:
            v = parse_version(version)
            if self.before is not None and not v < parse_version(self.before):
                return False
            if self.since is not None and v < parse_version(self.since):
                return None if self.early(version) else False
            return True
        except ValueError:
            return None

    def early(self, version: str | None) -> bool:
        """Whether ``version`` is a pre-release or dev build of ``since``'s release (``0.30.0rc1``
        for ``since="0.30.0"``): whether it carries that release's change is unknown."""
        try:
            if self.since is None or version is None:
                return False
            v, since = parse_version(version), parse_version(self.since)
        except ValueError:
            return False
        return v[:2] == since[:2] and v[2] == BEFORE < since[2]

    def short(self) -> str:
        """``≥ 0.24.0, < 0.30.0``, ``≥ 0.30.0``, ``< 0.30.0``, ``all`` (messages and tables)."""
        if self.since and self.before:
            return f"≥ {self.since}, < {self.before}"
        if self.since:
            return f"≥ {self.since}"
        if self.before:
            return f"< {self.before}"
        return "all"


ANY_VERSION = VersionRange()
