"""The facts room (core/vllm/facts.py) under odd version strings and misnamed ids."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dsv4_launch.core.vllm.facts import FACTS, fact

SRC = Path(__file__).resolve().parents[2] / "src" / "dsv4_launch"


@pytest.mark.parametrize("version", ["main", "nightly", "", "None", "0.33.0\x00", "0.33.0 rc1", "latest", "0..33"])
def test_an_unreadable_version_is_unknown_in_every_fact(version):
    """Never a crash, never a guess: no value of a bounded fact for text that is not a version."""
    for f in FACTS:
        value = f.at(version)
        bounded = any(r.since or r.before for r, _ in f.by_release)
        assert value is None or not bounded, (f.id, version, value)


@pytest.mark.parametrize(("build", "release"), [("0.33.0+cu129", "0.33.0"), ("v0.33.0", "0.33.0"),
                                                ("0.24.0+cu130", "0.24.0"), (" 0.29.0 ", "0.29.0")])
def test_a_build_of_a_release_reads_as_that_release_in_every_fact(build, release):
    assert [f.at(build) for f in FACTS] == [f.at(release) for f in FACTS]


@pytest.mark.parametrize("version", ["0.34.0rc1", "0.33.0.dev12+gabc", "0.33.0.post1", "1!0.1", "99.0.0", "0.0.1"])
def test_a_pre_post_or_far_release_never_crashes_a_fact(version):
    for f in FACTS:
        f.at(version)
        if len(f.by_release) == 1:  # certain but for a pre-release of its `since` release (its change is likely)
            inside = f.range.contains(version)
            early = (f.range.since is not None and version.startswith(f.range.since)
                     and ("rc" in version or "dev" in version))
            assert (inside is None) if early else (inside in (True, False)), (f.id, version, inside)
            assert not early or f.at(version) is None  # unknown: no value, not the previous release's


def _fact_calls():
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "fact":
                yield path.relative_to(SRC), node


def test_every_fact_named_in_the_code_is_a_literal_id_of_a_fact():
    """fact("typo") at import fails every test; one inside a function body would wait for the
    path that runs it: each call's id is checked here, whatever runs it."""
    calls = list(_fact_calls())
    assert len(calls) > 50
    ids = {f.id for f in FACTS}
    bad = [(str(p), n.lineno, ast.unparse(n)) for p, n in calls
           if len(n.args) != 1 or not isinstance(n.args[0], ast.Constant) or n.args[0].value not in ids]
    assert bad == [], bad
    with pytest.raises(KeyError):
        fact("v41-kv ")  # an id is matched exactly
