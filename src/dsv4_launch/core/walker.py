"""One walk over the quotes and brackets of a Python repr, for its three readers: explain's log
masker (``explain/masking.py``: where a credential's bracketed value ends, ``'api_key': [...]``),
explain's scanner (``explain/scanner.py``: the items of vLLM's ``non-default args: {...}`` dict
repr, read without evaluating anything) and the secret masker (``vllm_cli/secrets.py``: every item
of a credential's list or object). A change to how quoting is read is made here, once; it lies flat
in core/ because two rooms use it.

How a repr is read: a string runs from a quote to the same quote, backslash escapes skipped, or
to the end of the text when left open (a repr cut by the line's end); outside strings any of
``[ { (`` opens and any of ``] } )`` closes (the walk reads depth, not pairs). Linear in the text:
the regular expression jumps over plain text and whole strings, one loop step per run of brackets.

Pure: no I/O.
"""

from __future__ import annotations

import re

# A string, quote to quote, escapes skipped (unrolled: linear); left open where the text ends first.
_STRING = r"""'[^'\\]*(?:\\.[^'\\]*)*'?|"[^"\\]*(?:\\.[^"\\]*)*"?"""
# Brackets come in runs ("[[[", "}]}"): one step of the loop per run, however deep the nesting.
_BRACKETS = re.compile(rf"{_STRING}|[\[{{(]+|[\]}})]+", re.S)
_BRACKETS_AND_COMMAS = re.compile(rf"{_STRING}|[\[{{(]+|[\]}})]+|,", re.S)


def _walk(text: str, start: int, commas: list[int] | None) -> int | None:
    """Past the bracket that closes the one opening at ``start`` (the depth back to 0 after a
    closer), or None where the text ends first. With ``commas``, the commas directly inside it
    (depth 1) are appended to it."""
    depth = 0
    for m in (_BRACKETS if commas is None else _BRACKETS_AND_COMMAS).finditer(text, start):
        at = m.start()
        ch = text[at]
        if ch in "[{(":
            depth += m.end() - at
        elif ch in "]})":
            run = m.end() - at
            if 0 < depth <= run:  # the run's depth-th closer brings the depth to 0
                return at + depth
            depth -= run
        elif ch == ",":
            if depth == 1 and commas is not None:
                commas.append(at)
        # else a string: skipped whole
    return None


def closing(text: str, start: int) -> int:
    """The end of the bracketed value opening at ``start`` (just past its closing bracket), or
    ``len(text)`` where the text ends first (an unterminated string, a repr cut by the line)."""
    end = _walk(text, start, None)
    return len(text) if end is None else end


def bracket_items(text: str, start: int = 0) -> tuple[list[tuple[int, int]], bool]:
    """The items of the bracketed value opening at ``start``, split at its own commas: their
    ``(start, end)`` spans in ``text`` (without the commas and brackets), and whether the value
    closes. Where it does not (a repr cut by the line's end), its last, cut item is left out."""
    commas: list[int] = []
    end = _walk(text, start, commas)
    bounds = [start, *commas] if end is None else [start, *commas, end - 1]
    return [(bounds[k] + 1, bounds[k + 1]) for k in range(len(bounds) - 1)], end is not None
