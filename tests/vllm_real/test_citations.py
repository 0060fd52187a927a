"""Every citation of a fact (core/vllm/facts.py) read in the installed vLLM's release is a line of
that vLLM's code that still says what the fact rests on.

Which citations: those whose release is the installed one (``Cite.release``, as
``versions.same_release`` reads it: a ``+cu130`` build counts). A citation at another release is
history, checked where a venv of that release runs this file (a release with none: nothing to
check, no skip). tests/releases/test_vllm_facts.py requires a citation at CI's newest pin
for every open-ended fact, so CI checks each fact the next release may change.

The check: the cited file exists in the installed vllm package and the anchor, a fragment of the
line as vLLM writes it, is on the cited line or within ``WINDOW`` lines of it. A line number alone
would pass by accident (any long file has the line), and a fragment alone too (common code);
both together do not. Nothing is imported from vLLM: its files are read as text.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path

import pytest

from dsv4_launch.core.versions import same_release
from dsv4_launch.core.vllm.facts import FACTS, WINDOW, Cite


def _installed() -> tuple[str | None, Path | None]:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.origin:
        return None, None
    return importlib.metadata.version("vllm"), Path(spec.origin).parent.parent


VERSION, SITE = _installed()
HERE = [(f.id, c) for f in FACTS for c in f.cites if VERSION is not None and same_release(c.release, VERSION)]


def anchor_lines(text: str, cite: Cite) -> tuple[bool, list[int]]:
    """(the anchor is within WINDOW of the cited line, every line of the file that holds it)."""
    lines = text.splitlines()
    near = lines[max(cite.line - 1 - WINDOW, 0): cite.line + WINDOW]
    return any(cite.anchor in line for line in near), [n for n, line in enumerate(lines, 1) if cite.anchor in line]


def test_vllm_is_installed():
    if VERSION is None:
        if os.environ.get("DSV4_REQUIRE_VLLM") == "1":
            pytest.fail("DSV4_REQUIRE_VLLM=1 but vLLM is not importable here")
        pytest.skip("needs a real vLLM: the citations are checked against the installed vLLM's files")


def test_every_citation_at_this_release_holds_its_anchor():
    # one test for all (a release with no citation passes empty instead of skipping an empty
    # parameter set); the message lists each citation that does not hold, with where the anchor is
    assert SITE is not None or not HERE
    wrong = []
    for fact_id, cite in HERE:
        path = SITE / cite.path
        if not path.is_file():
            wrong.append(f"{fact_id}: {cite.path} is not a file of vLLM {VERSION}")
            continue
        near, found = anchor_lines(path.read_text(encoding="utf-8"), cite)
        if not near:
            wrong.append(f"{fact_id}: {cite.path}:{cite.line} does not hold {cite.anchor!r} within {WINDOW} lines; "
                         f"it is on lines {found or 'none'}")
    assert not wrong, f"{len(wrong)} of {len(HERE)} citations at vLLM {VERSION} do not hold:\n" + "\n".join(wrong)


def test_the_check_fails_for_a_wrong_line_or_a_wrong_anchor():
    text = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n"
    assert anchor_lines(text, Cite("vllm/x.py", 3, "0.33.0", "e = 5")) == (True, [5])
    assert anchor_lines(text, Cite("vllm/x.py", 1, "0.33.0", "f = 6")) == (False, [6])  # the line moved
    assert anchor_lines(text, Cite("vllm/x.py", 3, "0.33.0", "g = 7")) == (False, [])  # the code changed
