"""Outside text (config values, names, paths, argv) made safe to print on a terminal or in a log.

Control characters (ESC sequences, newlines that could forge a ``dsv4-serve: changed:`` line),
bidirectional and other invisible format characters, and the lone surrogates that stand for
undecodable bytes are shown as Python-style escapes (``\\x1b``, ``\\n``, ``\\u202e``, ``\\xff``).
"""

from __future__ import annotations

from ..core.credentials import mask_url_credentials as mask_url_credentials  # the one URL masker

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escape(text: str) -> str:
    """``text`` with every non-printable character written as an escape."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
            continue
        code = ord(ch)
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif 0xDC80 <= code <= 0xDCFF:  # surrogateescape: an undecodable byte
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def printable(text: str, scrub=None) -> str:
    """Outside text ready to print: secrets masked (``scrub``, a ``redact.Redactor``; without
    one, URL credentials), then every non-printable character escaped."""
    return escape(scrub(text) if scrub else mask_url_credentials(text))
