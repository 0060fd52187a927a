"""The vLLM room's fact table (core/vllm/facts.py): its shape, and what makes it checkable.

The citations themselves are checked against vLLM's code in tests/vllm_real/test_citations.py;
here: every open-ended fact cites the newest release CI pins (so CI checks it on every change),
ids are unique, and every fact is named by the code that uses it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsv4_launch.core.versions import VersionRange, parse_version, same_release
from dsv4_launch.core.vllm.facts import FACTS, Cite, Fact, fact
from dsv4_launch.core.vllm.releases import CI_RELEASES, VERIFIED_RELEASES

SRC = Path(__file__).resolve().parents[2] / "src" / "dsv4_launch"


def test_a_citation_reads_and_prints_back():
    cite = Cite.parse("vllm/config/vllm.py:3336@0.33.0 Model Runner V1 does not support")
    assert cite == Cite("vllm/config/vllm.py", 3336, "0.33.0", "Model Runner V1 does not support")
    assert Cite.parse(str(cite)) == cite


@pytest.mark.parametrize("text", ["vllm/config/vllm.py:3336@0.33.0", "vllm/config/vllm.py@0.33.0 x",
                                  "vllm/config/vllm.py:x@0.33.0 y", "vllm/config/vllm.py:12 y"])
def test_a_citation_without_line_release_or_anchor_is_refused(text):
    with pytest.raises(ValueError, match="not a citation"):
        Cite.parse(text)


def test_a_fact_has_a_value_per_release():
    table = Fact("t", ((VersionRange(before="0.30.0"), "old"), (VersionRange(since="0.30.0"), "new")))
    assert ((table.at("0.29.0"), table.at("0.30.0rc1"), table.at("0.30.0"), table.at("junk"))
            == ("old", "old", "new", None))
    assert table.open_ended
    with pytest.raises(ValueError, match="2 ranges"):
        table.range
    one = Fact("o", ((VersionRange(since="0.24.0", before="0.28.0"), True),))
    assert one.range == VersionRange(since="0.24.0", before="0.28.0") and not one.open_ended
    assert one.at("0.28.0") is None and one.at("0.27.1") is True


def test_ids_are_unique_and_named():
    ids = [f.id for f in FACTS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert all(fact(i) is f for i, f in zip(ids, FACTS))
    with pytest.raises(KeyError):
        fact("no-such-fact")


def test_every_open_ended_fact_cites_the_newest_pinned_release():
    # tests/vllm_real/test_citations.py checks the citations at the installed release: one at
    # CI's newest pin means CI checks every fact the next release may change, on every change
    missing = [
        f.id for f in FACTS if f.open_ended and not any(same_release(c.release, CI_RELEASES[-1]) for c in f.cites)]
    assert not missing, f"open-ended facts without a citation @{CI_RELEASES[-1]}: {missing}"


def test_citations_name_verified_releases_and_vllm_files():
    for f in FACTS:
        for c in f.cites:
            assert c.release in VERIFIED_RELEASES, (f.id, str(c))
            assert c.path.startswith("vllm/") and c.path.endswith(".py") and c.line > 0, (f.id, str(c))


def test_every_fact_is_named_by_the_code():
    text = "\n".join(p.read_text(encoding="utf-8") for p in SRC.rglob("*.py") if p.parent.name != "vllm")
    named = set(re.findall(r"""fact\(["']([a-z0-9.-]+)["']\)""", text))
    assert not {f.id for f in FACTS} - named, "facts nobody names (dead): " + ", ".join(
        sorted({f.id for f in FACTS} - named))


def test_a_table_facts_ranges_are_ordered_and_disjoint():
    # .at() answers with the first range holding the version: two ranges holding one release would
    # hide the second's value
    for f in FACTS:
        ranges = [r for r, _ in f.by_release]
        for a, b in zip(ranges, ranges[1:]):
            assert a.before is not None and b.since is not None, f.id
            assert parse_version(a.before) <= parse_version(b.since), f.id


def test_a_facts_oracle_is_a_test_file_of_the_oracle_suite():
    root = SRC.parents[1]
    for f in FACTS:
        if f.oracle:
            path = f.oracle.split("::")[0]
            assert path.startswith("tests/vllm_real/test_") and (root / path).is_file(), (f.id, f.oracle)
