"""Version arithmetic (PEP 440, via ``packaging``): pure, no I/O."""

from __future__ import annotations

from typing import Optional

from packaging.version import InvalidVersion, Version


def parse_version(text: str) -> Version:
    """``"0.24.0"`` → Version; a string packaging cannot read raises ValueError."""
    try:
        return Version(text)
    except InvalidVersion as exc:
        raise ValueError(f"not a version: {text!r}") from exc


def is_older(version: Optional[str], than: str) -> Optional[bool]:
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
    return va.release == vb.release and va.pre == vb.pre and va.dev == vb.dev
