"""Speculative decoding, as rows: DSpark and MTP against the checkpoint, the release, the
parallel layout and the model runner. Each check sits under its row (``@row``; ``core/rules/engine.py``).
"""

from __future__ import annotations

from ..facts import Facts, as_int, json_option
from ..gpus import DSV4_FAMILIES, GpuInfo
from ..vllm.facts import fact
from .engine import CITED, DERIVED, REFUSE, REPORTED, WARN, Rule, row, v2_runner_env
from .kv import ASSERTS_UNTIL, effective_transfer_config, is_nvfp4_on_mla
from .kv_paths import FP8_DS_MLA, dsv4_backend, kv_path

ROWS: list[Rule] = []  # filled by @row, in this module's order


def spec_config(facts: Facts) -> dict:
    return json_option(facts.args, "speculative_config") or {}


def spec_method(facts: Facts) -> str | None:
    method = spec_config(facts).get("method")
    return method.lower() if isinstance(method, str) else None


def _has_dspark(facts: Facts) -> bool:
    """The checkpoint ships a DSpark module: vLLM reads ``config.dspark_target_layer_ids``
    unconditionally (nvidia/dspark.py); ``dspark_block_size`` alone (Vision-Exp) is not one."""
    return "dspark_target_layer_ids" in (facts.model.config or {})


# Features that make vLLM fall back to the V1 model runner (_get_v2_model_runner_unsupported_features,
# config/vllm.py), with the releases each one does it in: (dest, words, releases).
V2_UNSUPPORTED = (
    ("enable_dbo", "--enable-dbo (dual batch overlap)", fact("v2-unsupported-dbo").range),
    ("enable_elastic_ep", "--enable-elastic-ep (elastic expert parallelism)", fact("v2-unsupported-elastic-ep").range),
    ("logits_processors", "--logits-processors (custom logits processors)",
     fact("v2-unsupported-logits-processors").range),
    ("kv_sharing_fast_prefill", "--kv-sharing-fast-prefill (KV sharing fast prefill)",
     fact("v2-unsupported-kv-sharing-fast-prefill").range))


@row(
    ROWS, id="dspark-before-0.25", topic="speculative", level=REFUSE, evidence=CITED,
    title="`--speculative-config.method dspark` on vLLM < {before:minor}",
    effect="ValidationError: no such method, when the engine config is made",
    message="--speculative-config method dspark: {vllm} has no DSpark (added in {before}) and rejects the method",
    fix="vLLM {before} or later, or method mtp on a checkpoint with an MTP head",
    reference="vllm/config/speculative.py", vllm=fact("dspark-before-0.25").range)
def dspark_too_old(facts: Facts, gpu: GpuInfo | None):
    return {} if spec_method(facts) == "dspark" else None


@row(
    ROWS, id="dspark-without-module", topic="speculative", level=REFUSE, evidence=CITED,
    title="`method dspark` on a checkpoint without a DSpark module (no `dspark_target_layer_ids`: preview, "
    "NVFP4, Vision-Exp)",
    effect="AttributeError ('dspark_target_layer_ids') when the draft is built, after the weights load",
    message="--speculative-config method dspark: {arch}'s config.json has no dspark_target_layer_ids (this "
    "checkpoint ships no DSpark module), so {vllm} fails when it builds the draft, after loading the weights",
    fix="method mtp (the preview and NVFP4 checkpoints carry an MTP head), or a DSpark checkpoint (-0731, -0813)",
    reference="vllm/models/deepseek_v4/nvidia/dspark.py; recipes DeepSeek-V4-Flash.yaml",
    vllm=fact("dspark-without-module").range)
def dspark_without_module(facts: Facts, gpu: GpuInfo | None):
    if (spec_method(facts) != "dspark" or spec_config(facts).get("model") or facts.model.config is None
            or _has_dspark(facts)):
        return None
    return {"arch": facts.model.architecture or "the model"}


@row(
    ROWS, id="dspark-pp", topic="speculative", level=REFUSE, evidence=CITED,
    title="`method dspark` with `--pipeline-parallel-size` > 1, vLLM {since:minor}–{before:last}",
    effect="`NotImplementedError: DSpark does not support pipeline parallelism.` after the weights load",
    message="--speculative-config method dspark with --pipeline-parallel-size {pp}: {vllm} raises "
    "NotImplementedError ('DSpark does not support pipeline parallelism.') after loading the weights",
    fix="--pipeline-parallel-size 1 (tensor or data parallel instead), or vLLM {before} and later",
    reference="vllm/v1/worker/gpu/spec_decode/dspark/utils.py", vllm=fact("dspark-pp").range)
def dspark_with_pp(facts: Facts, gpu: GpuInfo | None):
    pp = as_int(facts.args.value("pipeline_parallel_size")) or 1
    return {"pp": pp} if spec_method(facts) == "dspark" and pp > 1 else None


@row(
    ROWS, id="dspark-k-below-block", topic="speculative", level=REFUSE, evidence=CITED,
    title="`method dspark` with `num_speculative_tokens` below the checkpoint's `dspark_block_size`, "
    "vLLM {since:minor}–{before:last}",
    effect="ValueError when the engine config is made",
    message="--speculative-config num_speculative_tokens {k}: {vllm} requires at least dspark_block_size ({block}) "
    "for DSpark",
    fix="--speculative-config.num_speculative_tokens {block}",
    reference="vllm/config/speculative.py", vllm=fact("dspark-k-below-block").range)
def dspark_k_below_block(facts: Facts, gpu: GpuInfo | None):
    block = facts.model.number("dspark_block_size")
    k = as_int(spec_config(facts).get("num_speculative_tokens"))
    return None if spec_method(facts) != "dspark" or not block or k is None or k >= block else {"k": k, "block": block}


@row(
    ROWS, id="dspark-v1-runner", topic="speculative", level=REFUSE, evidence=CITED,
    title="`method dspark` with `VLLM_USE_V2_MODEL_RUNNER=0`, vLLM ≥ {since:minor}",
    effect="`Model Runner V1 does not support: dspark speculative decoding` when the engine config is made",
    message="VLLM_USE_V2_MODEL_RUNNER=0 with DSpark: {vllm}'s V1 model runner does not support DSpark and "
    "refuses the configuration",
    fix="unset VLLM_USE_V2_MODEL_RUNNER", reference="vllm/config/vllm.py", vllm=fact("dspark-v1-runner").range)
def dspark_on_v1_runner(facts: Facts, gpu: GpuInfo | None):
    return None if spec_method(facts) != "dspark" or v2_runner_env(facts) is not False else {}


@row(
    ROWS, id="dspark-v2-unsupported", topic="speculative", level=REFUSE, evidence=CITED,
    releases={dest: releases for dest, _, releases in V2_UNSUPPORTED},
    title="`method dspark` with a feature the V2 model runner lacks ("
    + "; ".join(f"{words.split(' ')[0]} {{{dest}}}" for dest, words, _ in V2_UNSUPPORTED) + ")",
    effect="vLLM falls back to the V1 runner by itself: `Model Runner V1 does not support: dspark speculative "
    "decoding` when the engine config is made",
    message="--speculative-config method dspark with {used}: {how}, and {vllm} refuses the configuration with "
    "ValueError ({error})",
    fix="drop {used} (DSpark runs only on the V2 model runner), or method mtp on a checkpoint with an MTP head",
    reference="vllm/config/vllm.py _get_v2_model_runner_unsupported_features, "
    "_get_v1_model_runner_unsupported_features", vllm=fact("dspark-v2-unsupported").range)
def dspark_v2_unsupported(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) != "dspark" or v2_runner_env(facts) is False or isinstance(v2_runner_env(facts), str):
        return None  # V1 forced: dspark-v1-runner; unreadable: v2-runner-env-not-int
    used = [words for dest, words, releases in V2_UNSUPPORTED
            if facts.args.value(dest) not in (None, False, [], "")
            and releases.contains(facts.vllm_version) is not False]
    if not used:
        return None
    forced = v2_runner_env(facts) is True
    error = ("'Model Runner V2 does not yet support: …'" if forced
             else "'Model Runner V1 does not support: dspark speculative decoding'")
    how = "VLLM_USE_V2_MODEL_RUNNER=1 makes V2 refuse it" if forced else "vLLM falls back to the V1 model runner for it"
    return {"used": " and ".join(used), "error": error, "how": how}


@row(
    ROWS, id="draft-kv-not-fp8", topic="speculative", level=WARN, evidence=DERIVED, releases={"asserts": ASSERTS_UNTIL},
    title="`method dspark` with a non-fp8 `kv_cache_dtype` in `--speculative-config` (`auto` too before "
    "{asserts_before})",
    effect="the draft's DeepSeek-V4 attention goes through the same KV resolver: AssertionError / ValueError "
    "when the draft is built, after the weight load",
    message="--speculative-config kv_cache_dtype {kv}: vLLM gives the DSpark draft this KV-cache dtype, and the "
    "draft's DeepSeek-V4 attention layers on {gpus} store fp8_ds_mla, which has no {kv} variant; {vllm} is "
    "expected to fail when it builds the draft, after loading the weights",
    fix="drop kv_cache_dtype from --speculative-config (the draft then uses the target's), or set it to fp8",
    reference="vllm/v1/worker/gpu/spec_decode/dspark/utils.py; vllm/models/deepseek_v4/attention.py "
    "_resolve_dsv4_kv_cache_dtype", families=DSV4_FAMILIES, vllm=fact("draft-kv-not-fp8").range)
def draft_kv_not_fp8(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) != "dspark":
        return None
    kv = spec_config(facts).get("kv_cache_dtype")
    if not isinstance(kv, str) or kv.startswith("fp8") or is_nvfp4_on_mla(kv, facts.vllm_version):
        return None
    if kv == "auto" and ASSERTS_UNTIL.contains(facts.vllm_version) is False:
        return None  # 0.30+ resolve auto to fp8_ds_mla themselves
    if gpu is None or gpu.capability is None:
        return None
    path = kv_path(gpu.capability, dsv4_backend(facts.args))
    return None if path is None or path.layout != FP8_DS_MLA else {"kv": kv}


@row(
    ROWS, id="mtp-on-dspark-checkpoint", topic="speculative", level=WARN, evidence=REPORTED,
    title="`method mtp` on a DSpark checkpoint (-0731, -0813)",
    effect="boots, with about 8× the per-token KV of the preview",
    message="--speculative-config method mtp on {arch}: this checkpoint ships a DSpark module, not an MTP head; "
    "vLLM boots but with about 8× the KV cache per token",
    fix="method dspark (the recipes' default for these checkpoints)",
    reference="vllm#51041; recipes DeepSeek-V4-Flash.yaml", vllm=fact("mtp-on-dspark-checkpoint").range)
def mtp_on_dspark_checkpoint(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) not in ("mtp", "deepseek_mtp") or not _has_dspark(facts):
        return None
    return {"arch": facts.model.known_id or facts.model.name or "this checkpoint"}


# The native offloading connectors (config/vllm.py _post_init_kv_transfer_config; also named directly).
OFFLOADING_CONNECTORS = frozenset({"OffloadingConnector", "SimpleCPUOffloadConnector"})


@row(
    ROWS, id="dspark-kv-offload", topic="speculative", level=WARN, evidence=REPORTED,
    title="`method dspark` with native KV offloading (`OffloadingConnector`, `SimpleCPUOffloadConnector`)",
    effect="starts and serves, then reported to die after days: `AssertionError: Block … not found in cache` in "
    "the offloading load path (EngineDeadError)",
    message="--speculative-config method dspark with {connector} ({how}): a DeepSeek-V4-Pro deployment with this "
    "pair on vLLM {reported_since} served for days and then died with AssertionError ('Block … not found in cache') in "
    "the CPU offloading path; {vllm} is not known to have fixed it",
    fix="watch for EngineDeadError and restart (a supervisor), or serve DSpark without KV offloading",
    reference="vLLM #54914; vllm/v1/kv_offload/", vllm=fact("dspark-kv-offload").range,
    releases={"reported": fact("dspark-kv-offload-reported").range})
def dspark_kv_offload(facts: Facts, gpu: GpuInfo | None):
    if spec_method(facts) != "dspark":
        return None
    config, how = effective_transfer_config(facts)
    name = (config or {}).get("kv_connector")
    children = ((config or {}).get("kv_connector_extra_config") or {}).get("connectors") \
        if name == "MultiConnector" and isinstance((config or {}).get("kv_connector_extra_config"), dict) else None
    names = [c.get("kv_connector") for c in children if isinstance(c, dict)] if isinstance(children, list) else [name]
    found = next((n for n in names if n in OFFLOADING_CONNECTORS), None)
    return {"connector": found, "how": how} if found else None
