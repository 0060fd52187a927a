"""The in-flight tokens of ``core/memory/estimate.py`` where vLLM turns async scheduling off by itself,
release by release (config/vllm.py's ``async_scheduling is None`` branch: :1059@0.26, :1185@0.28,
:1576@0.31, :1685@0.33; ``max_concurrent_batches``: :512@0.26, :588@0.33). Pure: facts by hand;
tests/vllm_real/test_async_oracle.py runs vLLM's own code on the same settings."""

from __future__ import annotations

import json

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.facts import Facts
from dsv4_launch.core.memory.vllm_config import UNKNOWN, in_flight_tokens, speculative_method
from dsv4_launch.core.model import classify
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args

FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
N = 8192


def facts(version, tokens=(), env=None) -> Facts:
    args = read_serve_args([FLASH["id"], *tokens], load_table(version), lambda p: {})
    assert args.rejection is None, args.rejection
    return Facts(args=args, model=classify(FLASH["id"], FLASH["config"], "test"), vllm_version=version,
                 rule_env=env or {})


def spec(**config) -> list[str]:
    return ["--speculative-config", json.dumps({"num_speculative_tokens": 1, **config})]


def batches(version, tokens=(), env=None, pp=1, world=None) -> int:
    return in_flight_tokens(facts(version, tokens, env), N, pp, world or pp) // N


V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
V2 = {"VLLM_USE_V2_MODEL_RUNNER": "1"}
RAY_V1 = {"VLLM_USE_RAY_V2_EXECUTOR_BACKEND": "0"}

CASES = [
    # (what, version, tokens, env, pp, batches in flight)
    ("0.33 default: async, V2 runner", "0.33.0", [], None, 1, 2),
    ("0.33 default, PP 2: PP + 1", "0.33.0", ["-pp", "2"], None, 2, 3),
    ("suffix: the V2 runner refuses it, V1 cannot run it async", "0.33.0", spec(method="suffix"), None, 1, 1),
    ("suffix forced onto V2: async stays on", "0.33.0", spec(method="suffix"), V2, 1, 2),
    ("custom_class proposer: V1, no async", "0.33.0", spec(model="my_pkg.MyProposer"), None, 1, 1),
    ("0.33 ngram on V2: the speculative conditions bind V1 only", "0.33.0", spec(method="ngram"), None, 1, 2),
    ("0.33 ngram on V1", "0.33.0", spec(method="ngram"), V1, 1, 1),
    ("0.33 disable_padded_drafter_batch on V2: on", "0.33.0", spec(method="mtp", disable_padded_drafter_batch=True),
     None, 1, 2),
    ("0.33 disable_padded_drafter_batch on V1: off", "0.33.0",
     spec(method="mtp", disable_padded_drafter_batch=True), V1, 1, 1),
    ("0.32 disable_padded_drafter_batch: off on any runner", "0.32.0",
     spec(method="mtp", disable_padded_drafter_batch=True), None, 1, 1),
    ("0.31 ngram: V1 (V2 refuses it), no async", "0.31.0", spec(method="ngram"), None, 1, 1),
    ("0.31 ngram, PP 2: PP batches", "0.31.0", spec(method="ngram") + ["-pp", "2"], None, 2, 2),
    ("0.32 ngram: V2 takes it, async off by the method", "0.32.0", spec(method="ngram"), None, 1, 1),
    ("0.31 PP 2 on V1: async off, PP batches", "0.31.0", ["-pp", "2"], V1, 2, 2),
    ("0.30 PP 2 on V1: async on, still PP batches", "0.30.0", ["-pp", "2"], V1, 2, 2),
    ("0.30 draft_model: V1 runner (V2 refuses it), async on", "0.30.0", spec(method="draft_model"), None, 1, 2),
    ("0.29 draft_model, PP 2: V1 (not in V2's list)", "0.29.0", spec(method="draft_model") + ["-pp", "2"], None, 2, 2),
    ("0.27 draft_model: async off", "0.27.0", spec(method="draft_model"), None, 1, 1),
    ("0.28 draft_model: async on", "0.28.0", spec(method="draft_model"), None, 1, 2),
    ("0.26 mtp: async on, V1", "0.26.0", spec(method="mtp"), None, 1, 2),
    ("0.26 deepseek_mtp is mtp", "0.26.0", spec(method="deepseek_mtp"), None, 1, 2),
    ("0.26 medusa: off", "0.26.0", spec(method="medusa", model="x/medusa-head"), None, 1, 1),
    ("0.29 eagle3 with PP 2: V1 runner", "0.29.0", spec(method="eagle3", model="x/eagle3-head") + ["-pp", "2"],
     None, 2, 2),
    ("0.30 eagle3 with PP 2: V2 runner", "0.30.0", spec(method="eagle3", model="x/eagle3-head") + ["-pp", "2"],
     None, 2, 3),
    ("0.29 dspark: V2", "0.29.0", spec(method="dspark"), None, 1, 2),
    ("pooling runner: off", "0.33.0", ["--runner", "pooling"], None, 1, 1),
    ("--convert embed: a pooling runner, off", "0.33.0", ["--convert", "embed"], None, 1, 1),
    ("0.32 ray with VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0: Ray's V1 executor, off", "0.32.0",
     ["--distributed-executor-backend", "ray"], RAY_V1, 1, 1),
    ("0.32 ray: its V2 executor by default, on", "0.32.0", ["--distributed-executor-backend", "ray"], None, 1, 2),
    ("0.33 ray: always the V2 executor", "0.33.0", ["--distributed-executor-backend", "ray"], RAY_V1, 1, 2),
    ("0.30 --data-parallel-backend ray picks the ray executor", "0.30.0",
     ["-dp", "2", "--data-parallel-backend", "ray"], RAY_V1, 1, 1),
    ("external_launcher: UniProc's subclass, on", "0.33.0", ["--distributed-executor-backend", "external_launcher"],
     None, 1, 2),
    ("--no-async-scheduling", "0.33.0", ["--no-async-scheduling"], None, 1, 1),
    ("--async-scheduling with ngram on 0.31: on (vLLM refuses the mix itself)", "0.31.0",
     spec(method="ngram") + ["--async-scheduling"], None, 1, 2),
    ("before 0.26: the batched tokens alone", "0.25.1", spec(method="ngram"), None, 1, 1),
]


@pytest.mark.parametrize("what,version,tokens,env,pp,expected", CASES, ids=[c[0] for c in CASES])
def test_batches_in_flight(what, version, tokens, env, pp, expected):
    world = 2 if "-dp" in tokens else pp
    assert batches(version, tokens, env, pp, world) == expected


@pytest.mark.parametrize("config,method", [
    ({"method": "mtp"}, "mtp"), ({"method": "glm4_moe_mtp"}, "mtp"), ({"model": "ngram"}, "ngram"),
    ({"model": "[ngram]"}, "ngram"), ({"method": "[ngram]"}, "ngram"), ({"model": "pkg.mod.Proposer"}, "custom_class"),
    ({"model": "org/EAGLE3-Llama"}, "eagle3"), ({"model": "yuhuili/EAGLE-LLaMA3"}, "eagle"),
    ({"model": "z/dflash-qwen"}, "dflash"), ({"model": "deepseek-ai/dspark_qwen3_8b"}, "dspark"),
    ({"model": "org/some-draft"}, UNKNOWN), ({"method": "draft_model", "model": "org/small"}, UNKNOWN),
    ({"model": "https://x.y/z"}, UNKNOWN), ({"method": 5}, UNKNOWN),
])
def test_the_speculative_method_as_vllm_settles_it(config, method):
    assert speculative_method(facts("0.33.0", spec(**config))) == method


def test_a_method_only_the_draft_models_config_tells_counts_async_on():
    # vLLM reads the draft's architecture/model_type (medusa off, mtp on): unknown here, so the
    # larger in-flight count stays (a warning can only be too cautious, never too hopeful)
    assert batches("0.27.0", spec(model="org/some-draft")) == 2
