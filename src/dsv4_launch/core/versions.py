"""Version arithmetic (PEP 440 ordering), pure and import-light.

``packaging.version`` would do this, but importing it (and the ``typing`` module it pulls in)
costs ~10 ms on every dsv4-serve start. This covers the PEP 440 forms
vLLM releases and builds use — epochs, pre/post/dev releases, local labels (``+cu130``) — and
tests/test_versions.py checks its ordering against ``packaging.version`` on generated versions.
"""

from __future__ import annotations

import re

from .records import record

_PEP440_SOURCE = (
    r"""^\s*v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|rc|a|b|c)[-_.]?(?P<pre_n>\d+)?)?
    (?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$"""
)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")


class Version:
    """A parsed version that compares by PEP 440 rules."""

    __slots__ = ("text", "release", "pre", "dev", "key")

    def __init__(self, text: str) -> None:
        parts = text.split(".")
        if text.isascii() and all(p.isdigit() for p in parts):  # "0.24.0": no regex needed
            self.text, self.release, self.pre, self.dev = text, tuple(int(p) for p in parts), None, None
            trimmed = list(self.release)
            while len(trimmed) > 1 and trimmed[-1] == 0:
                trimmed.pop()
            self.key = (0, tuple(trimmed), (_INF,), (-_INF,), (_INF,), ((-_INF, ""),))
            return
        m = re.match(_PEP440_SOURCE, text, re.VERBOSE | re.IGNORECASE | re.ASCII)  # compiled on first use
        if m is None:
            raise ValueError(f"not a version: {text!r}")
        self.text = text
        release = tuple(int(p) for p in m.group("release").split("."))
        self.release = release
        pre = None
        if m.group("pre_l"):
            pre = (_PRE[m.group("pre_l").lower()], int(m.group("pre_n") or 0))
        self.pre = pre
        post = None
        if m.group("post_n1") or m.group("post_l"):
            post = int(m.group("post_n1") or m.group("post_n2") or 0)
        dev = int(m.group("dev_n") or 0) if m.group("dev_l") else None
        self.dev = dev
        trimmed = list(release)
        while len(trimmed) > 1 and trimmed[-1] == 0:
            trimmed.pop()
        if pre is None and post is None and dev is not None:
            pre_key: tuple = (-_INF,)  # 1.0.dev0 sorts before 1.0a0
        elif pre is None:
            pre_key = (_INF,)
        else:
            pre_key = pre
        local = m.group("local")
        local_key: tuple = ((-_INF, ""),)
        if local:
            local_key = tuple(
                (int(part), "") if part.isdigit() else (-_INF, part.lower())
                for part in re.split(r"[-_.]", local)
            )
        self.key = (
            int(m.group("epoch") or 0),
            tuple(trimmed),
            pre_key,
            (-_INF,) if post is None else (post,),
            (_INF,) if dev is None else (dev,),
            local_key,
        )

    def __lt__(self, other: "Version") -> bool:
        return self.key < other.key

    def __le__(self, other: "Version") -> bool:
        return self.key <= other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Version({self.text!r})"


def parse_version(text: str) -> Version:
    """``"0.24.0"`` → Version; a string that is not a version raises ValueError."""
    return Version(text)


def is_older(version: str | None, than: str) -> bool | None:
    """True when ``version`` comes before release ``than``; None when it is unknown/unreadable.

    Pre-releases and dev builds of a release come before it (``0.30.0rc1`` < ``0.30``), so a
    fix that first shipped in ``than`` is not assumed in them.
    """
    if version is None:
        return None
    try:
        return parse_version(version) < parse_version(than)
    except ValueError:
        return None


def same_release(a: str, b: str) -> bool:
    """``0.24.0+cu130`` and ``0.24.0`` are the same release; ``0.24.0rc1`` is not."""
    va, vb = parse_version(a), parse_version(b)
    return va.key[:5] == vb.key[:5]


@record
class VersionRange:
    """The vLLM releases a rule holds for: ``since`` ≤ version < ``before`` (None: open).

    Pre-releases of ``before`` are inside (``0.30.0rc1`` < ``0.30.0``): a fix first shipped in a
    release is not assumed in its release candidates.
    """

    since: str | None = None
    before: str | None = None

    def contains(self, version: str | None) -> bool | None:
        """True/False; None when the version is unknown or unreadable and the range is bounded."""
        if self.since is None and self.before is None:
            return True
        if version is None:
            return None
        try:
            v = parse_version(version)
            if self.since is not None and v < parse_version(self.since):
                return False
            return not (self.before is not None and not v < parse_version(self.before))
        except ValueError:
            return None

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
