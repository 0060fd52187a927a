"""A pre-release of the release a rule starts at (``0.34.0rc1`` for ``since="0.34.0"``) is neither
inside nor outside the rule for sure (hostile finding 11): the row warns with the reason, never
refuses, and is not dropped as "about old releases only"; the final release refuses, the release
before says nothing, and a pre-release of a rule's ``before`` stays inside it (a fix is not assumed
in its release candidates). Pure: facts by hand, the registry's own rows."""

from __future__ import annotations

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.facts import Facts
from dsv4_launch.core.model import classify
from dsv4_launch.core.rules.engine import REFUSE, WARN, evaluate
from dsv4_launch.core.rules.registry import RULES
from dsv4_launch.core.versions import VersionRange
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args

FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
V1_RUNNER = {"VLLM_USE_V2_MODEL_RUNNER": "0"}


def _rule(rule_id: str):
    (rule,) = [r for r in RULES if r.id == rule_id]
    return rule


def _facts(version: str | None, env: dict[str, str]) -> Facts:
    args = read_serve_args([FLASH["id"]], load_table(version), lambda p: {})
    return Facts(args=args, model=classify(FLASH["id"], FLASH["config"], "test"), vllm_version=version,
                 rule_env=env, newest_release="0.34.0")


def test_the_rows_this_file_uses_have_the_bounds_it_assumes():
    assert _rule("v1-runner-removed").vllm.short() == "≥ 0.34.0" and _rule("v1-runner-removed").level == REFUSE
    assert _rule("dspark-v1-runner").vllm.short() == "≥ 0.29.0, < 0.34.0"


@pytest.mark.parametrize("version", ["0.34.0rc1", "0.34.0rc2+cu129", "0.34.0.dev7+g1a2b"])
def test_a_pre_release_of_since_warns_with_its_reason_and_never_refuses(version):
    found = evaluate(_rule("v1-runner-removed"), _facts(version, V1_RUNNER))
    assert found is not None and found.level == WARN and not found.certain
    assert f"[if vLLM {version} has 0.34.0's code: it is a pre-release of it]" in found.text
    assert "the installed version is unknown" not in found.text


def test_the_final_release_refuses_and_the_one_before_says_nothing():
    final = evaluate(_rule("v1-runner-removed"), _facts("0.34.0", V1_RUNNER))
    assert final is not None and final.level == REFUSE and final.certain and "[" not in final.text
    assert evaluate(_rule("v1-runner-removed"), _facts("0.33.0", V1_RUNNER)) is None
    assert evaluate(_rule("v1-runner-removed"), _facts("0.34.0rc1", {})) is None  # its check still decides


def test_an_unknown_version_still_says_so():
    found = evaluate(_rule("v1-runner-removed"), _facts(None, V1_RUNNER))
    assert found is not None and found.level == WARN
    assert "[if vLLM is ≥ 0.34.0: the installed version is unknown]" in found.text


def test_a_pre_release_of_since_is_not_dropped_as_a_rule_about_old_releases():
    # a window that ends before the newest release: an unknown version skips it (plan says so), an rc
    # of its first release is judged, as a warning
    window = _rule("v1-runner-removed")._replace(vllm=VersionRange(since="0.30.0", before="0.31.0"))
    assert evaluate(window, _facts(None, V1_RUNNER)) is None
    found = evaluate(window, _facts("0.30.0rc1", V1_RUNNER))
    assert found is not None and found.level == WARN and "it is a pre-release of it]" in found.text
    assert evaluate(window, _facts("0.30.0", V1_RUNNER)).level == REFUSE
    assert evaluate(window, _facts("0.31.0rc1", V1_RUNNER)).level == REFUSE  # `before`'s rc: inside, as documented


def _explained(tmp_path, rule_id: str, version: str) -> tuple[int, list[str]]:
    from tests.explain.test_explain import CASES, explain, version_line

    lines = next(lines for rule, at, lines in CASES if rule == rule_id and at == "0.26.0")
    status, doc, _ = explain(tmp_path, [version_line(version), *lines])
    return status, [e["rule"] for e in doc["explained"]]


def test_explain_names_a_release_only_signature_for_a_log_of_its_pre_release(tmp_path):
    # flashmla-sparse-prefill-0.26: the same text has another cause outside 0.26 (release_only)
    assert _explained(tmp_path, "flashmla-sparse-prefill-0.26", "0.26.0")[1] == ["flashmla-sparse-prefill-0.26"]
    assert _explained(tmp_path, "flashmla-sparse-prefill-0.26", "0.26.0rc1")[1] == ["flashmla-sparse-prefill-0.26"]
    assert "flashmla-sparse-prefill-0.26" not in _explained(tmp_path, "flashmla-sparse-prefill-0.26", "0.25.1")[1]
