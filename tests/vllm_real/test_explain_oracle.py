"""`explain` against the real exceptions of the installed vLLM (marker ``vllm_real``).

Where the failing code runs on the CPU, the test makes the installed vLLM raise it — the
DeepSeek-V4 KV-cache resolver, the block-size selection, the FP8 weight post-processing that
divides by ``o_groups // TP``, the attention-config validation, the attention selector, the
hybrid-KV promotion (``replace_as``), vLLM's real ``serve`` parser — formats the real
traceback with ``traceback.format_exc()`` (or takes argparse's real error output), writes it
the way vLLM's logger does (process prefix and record header on every line), feeds it to
``dsv4-launch explain`` and asserts the rule. Nothing is faked.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import traceback
from types import SimpleNamespace

import pytest

from dsv4_launch.commands.context import Context
from dsv4_launch.commands.explain import run_explain
from dsv4_launch.core.versions import is_older

from .conftest import real_parse, vllm_symbol

M = "deepseek-ai/DeepSeek-V4-Flash"


def raised(call) -> str | None:
    """The real traceback of what ``call`` raises, or None."""
    try:
        call()
    except BaseException:  # noqa: BLE001 - whatever vLLM raises is the oracle
        return traceback.format_exc()
    return None


def explained(tmp_path, version: str, text: str, *, proc: str = "EngineCore_DP0") -> list[str]:
    lines = [f"(APIServer pid=1) INFO 12-01 08:00:00 [entrypoints/.../utils/api_utils.py:339] vLLM server version "
             f"{version}, serving model {M}"]
    if proc:
        lines += [f"({proc} pid=77) ERROR 12-01 08:00:01 [v1/engine/core.py:1231] {line}"
                  for line in ["EngineCore failed to start.", *text.rstrip("\n").split("\n")]]
    else:  # argparse's own output: no logger
        lines += text.rstrip("\n").split("\n")
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = io.StringIO()
    status = run_explain([str(path)], as_json=True, ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
    doc = json.loads(out.getvalue())
    assert status == (0 if doc["explained"] else 1)
    return [item["rule"] for item in doc["explained"]]


@pytest.fixture(scope="module")
def version(real_vllm):
    return real_vllm[2]


@pytest.mark.rule("kv-not-fp8")
def test_the_kv_resolver(tmp_path, version):
    resolver = vllm_symbol("vllm.models.deepseek_v4.attention", "_resolve_dsv4_kv_cache_dtype")
    auto = raised(lambda: resolver(True, "auto", None))
    if is_older(version, "0.30.0"):
        assert auto and "got auto" in auto
        assert explained(tmp_path, version, auto) == ["kv-auto"]
    else:
        assert auto is None  # vLLM #45091: 0.30 resolves auto itself
    bf16 = raised(lambda: resolver(True, "bfloat16", None))
    assert bf16 is not None
    assert "kv-not-fp8" in explained(tmp_path, version, bf16)


@pytest.mark.rule("block-size")
def test_no_common_block_size(tmp_path, version):
    utils = importlib.import_module("vllm.v1.worker.utils")
    flashmla = vllm_symbol("vllm.models.deepseek_v4.nvidia.flashmla", "DeepseekV4FlashMLAAttention")
    text = raised(lambda: utils.select_common_block_size(64, [flashmla.backend_cls]))
    assert text and "No common block size" in text
    assert "block-size" in explained(tmp_path, version, text)


@pytest.mark.rule("tp-o-groups")
def test_tp_above_o_groups_divides_by_zero(tmp_path, version):
    import torch

    post = vllm_symbol("vllm.model_executor.layers.quantization.utils.fp8_utils",
                       "deepgemm_post_process_fp8_weight_block")
    wq = torch.zeros((1024, 512), dtype=torch.float8_e4m3fn)
    ws = torch.ones((8, 4), dtype=torch.float32)
    text = raised(lambda: post(wq, ws, [128, 128], False, is_bmm=True, bmm_batch_size=0))
    assert text and "ZeroDivisionError" in text
    assert explained(tmp_path, version, text) == ["tp-o-groups"]
    # the same ZeroDivisionError from elsewhere is not this rule
    assert explained(tmp_path, version, raised(lambda: 1 // 0)) == []


@pytest.mark.rule("fp4-indexer-removed")
def test_use_fp4_indexer_cache(tmp_path, version, real_vllm, capsys):
    top = real_vllm[0]
    attention_config = vllm_symbol("vllm.config.attention", "AttentionConfig")
    text = raised(lambda: attention_config(use_fp4_indexer_cache=True))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status, _ = real_parse(top, [M, "--attention_config.use_fp4_indexer_cache=True"])
    if is_older(version, "0.30.0"):
        assert text is None and status == "ok"
        return
    assert text is not None and status == "reject"
    assert "fp4-indexer-removed" in explained(tmp_path, version, text)
    assert "fp4-indexer-removed" in explained(tmp_path, version, err.getvalue(), proc="")  # argparse's real error


@pytest.mark.rule("kv-invalid")
def test_an_invalid_kv_dtype(tmp_path, version, real_vllm):
    top = real_vllm[0]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status, _ = real_parse(top, [M, "--kv-cache-dtype", "fp9"])
    if status == "reject":  # argparse choices (≤ 0.32)
        assert "kv-invalid" in explained(tmp_path, version, err.getvalue(), proc="")
    else:  # 0.33: pydantic, when the engine config is made
        cache_config = vllm_symbol("vllm.config", "CacheConfig")
        text = raised(lambda: cache_config(cache_dtype="fp9"))
        assert text is not None
        assert "kv-invalid" in explained(tmp_path, version, text)


@pytest.mark.rule("backend-not-dsv4")
@pytest.mark.parametrize("name", ["FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120"])
def test_a_backend_that_is_not_dsv4s(tmp_path, version, name):
    select = vllm_symbol("vllm.models.deepseek_v4.nvidia.model", "_select_dsv4_attn_cls")
    enum = vllm_symbol("vllm.v1.attention.backends.registry", "AttentionBackendEnum")
    config = SimpleNamespace(attention_config=SimpleNamespace(backend=enum[name]))
    text = raised(lambda: select(config))
    assert text and "is not a DeepSeek V4 attention backend" in text
    assert explained(tmp_path, version, text) == ["backend-not-dsv4"]


@pytest.mark.rule("hma-disabled")
def test_hybrid_kv_manager_off_promotes_sliding_window_specs(tmp_path, version):
    import torch

    spec = importlib.import_module("vllm.v1.kv_cache_interface")
    if not hasattr(spec, "SlidingWindowMLASpec") or not hasattr(spec, "replace_as"):
        pytest.skip(f"vLLM {version} has no SlidingWindowMLASpec/replace_as (before 0.28)")
    module = next((m for m in ("vllm.v1.core.kv_cache_planning", "vllm.v1.core.kv_cache_utils")
                   if hasattr(_maybe(m), "_promote_local_kv_cache_specs")), None)
    if module is None:
        pytest.skip(f"vLLM {version} has no _promote_local_kv_cache_specs")
    promote = getattr(importlib.import_module(module), "_promote_local_kv_cache_specs")
    common = {"block_size": 256, "num_kv_heads": 1, "head_size": 512, "dtype": torch.uint8,
              "cache_dtype_str": "fp8_ds_mla"}
    specs = {"layers.0.attn": spec.MLAAttentionSpec(**common),
             "layers.1.attn": spec.SlidingWindowMLASpec(**common, sliding_window=128)}
    text = raised(lambda: promote(specs))
    if is_older(version, "0.31.0") or not is_older(version, "0.34.0"):
        # the field arrives in 0.31; 0.34 drops it when it promotes (kv_cache_planning.py:845@0.34.0)
        assert text is None or "bounded_replay" not in text
        return
    assert text and "bounded_replay" in text
    rules = explained(tmp_path, version, text)
    assert set(rules) == {"hma-disabled", "connector-turns-hma-off"}  # the arguments would tell them apart


def _maybe(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


@pytest.mark.rule("mxfp4-indexer-off-sm10")
@pytest.mark.parametrize("setting", [{"indexer_kv_dtype": "mxfp4"}, {"use_fp4_indexer_cache": True}])
def test_the_mxfp4_indexer_off_sm10(tmp_path, version, setting):
    """0.28+: the MXFP4 indexer cache on a non-SM 10.x device (this CPU) raises in
    dsa_indexer_uses_fp4; on 0.28–0.29 use_fp4_indexer_cache=True is its alias and raises the
    same text, so without the logged arguments both rows are named."""
    if is_older(version, "0.28.0"):
        pytest.skip("before 0.28 the indexer check is in the metadata builder (a CUDA device is needed)")
    attention_config = vllm_symbol("vllm.config.attention", "AttentionConfig")
    uses_fp4 = vllm_symbol("vllm.v1.attention.backends.mla.indexer", "dsa_indexer_uses_fp4")
    try:
        config = attention_config(**setting)
    except Exception:  # noqa: BLE001 - 0.30+: use_fp4_indexer_cache is gone (the other oracle)
        assert "use_fp4_indexer_cache" in setting and not is_older(version, "0.30.0")
        return
    text = raised(lambda: uses_fp4(SimpleNamespace(attention_config=config)))
    assert text and "requires Blackwell datacenter GPUs" in text
    rules = set(explained(tmp_path, version, text))
    expected = {"mxfp4-indexer-off-sm10"} | ({"fp4-indexer-off-sm10"} if is_older(version, "0.30.0") else set())
    assert rules == expected


def _non_default_args_line(top, argv: list[str]) -> tuple[str, object]:
    """vLLM's own `non-default args` line for ``argv`` (its parser, get_non_default_args, and
    from 0.29 its redaction), as `vllm serve` logs it: (line, the parsed namespace)."""
    try:
        startup = importlib.import_module("vllm.entrypoints.common.startup")
    except ImportError:
        startup = importlib.import_module("vllm.entrypoints.serve.utils.api_utils")
    status, namespace = real_parse(top, argv)
    assert status == "ok", namespace
    namespace.model = namespace.model_tag  # what ServeSubcommand.cmd does before the server logs
    found = startup.get_non_default_args(namespace)
    redact = getattr(startup, "redact_sensitive_args", None)
    return f"non-default args: {redact(found) if redact else found}", namespace


@pytest.mark.parametrize("argv", [
    [M, "-tp", "2", "--max-model-len", "32768", "--api-key", "sk-oracle-1", "sk-oracle-2", "--port", "8001",
     "--enable-expert-parallel", "--served-model-name", "a", "b", "--hf-overrides", '{"x": 1}',
     "--no-enable-prefix-caching"],
    [M, "--block-size", "64", "--kv-cache-dtype", "bfloat16", "--gpu-memory-utilization", "0.85",
     "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}'],
    # config dataclasses are logged as their reprs (every field, an enum for the backend)
    [M, "--attention-config", '{"backend": "FLASHMLA_SPARSE"}', "--attention-backend", "FLASHMLA_SPARSE",
     "--kv-transfer-config", '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}'],
])
def test_the_logged_arguments_are_vllms_own(tmp_path, version, real_vllm, argv):
    """The args line made by vLLM's own code from ``argv`` is read back into arguments that vLLM's
    parser reads as the same values (secrets masked, never echoed)."""
    top = real_vllm[0]
    line, namespace = _non_default_args_line(top, argv)
    path = tmp_path / "vllm.log"
    path.write_text(f"(APIServer pid=1) INFO 12-01 08:00:00 [entrypoints/common/startup.py:96] vLLM server version "
                    f"{version}, serving model {M}\n(APIServer pid=1) INFO 12-01 08:00:00 "
                    f"[entrypoints/common/startup.py:97] {line}\nAssertionError: DeepseekV4 fp8_ds_mla layout only "
                    "supports fp8 kv-cache, got auto\n", encoding="utf-8")
    out = io.StringIO()
    run_explain([str(path)], as_json=True, ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
    assert "sk-oracle" not in out.getvalue()
    doc = json.loads(out.getvalue())
    shown = doc["corrected"]["argv"]
    if "--kv-transfer-config" in shown:  # a JSON option that may carry credentials: masked as plan masks it
        assert shown[shown.index("--kv-transfer-config") + 1] == "***"
    from dsv4_launch.commands.explain import rebuild_argv
    from dsv4_launch.core.explain.scanner import parse_args_text
    from dsv4_launch.vllm_cli.option_table import load_table

    rebuilt, _ = rebuild_argv(parse_args_text(line.split(": ", 1)[1], 1).values, load_table(version))
    status, again = real_parse(top, rebuilt)
    assert status == "ok", again
    for dest in ("tensor_parallel_size", "max_model_len", "port", "enable_expert_parallel", "served_model_name",
                 "hf_overrides", "enable_prefix_caching", "block_size", "gpu_memory_utilization",
                 "speculative_config", "model_tag"):
        if hasattr(namespace, dest):
            assert getattr(again, dest) == getattr(namespace, dest), dest
    for dest, field in (("attention_config", "backend"), ("kv_transfer_config", "kv_connector"),
                        ("kv_transfer_config", "kv_role")):
        if getattr(namespace, dest, None) is not None and hasattr(getattr(namespace, dest), field):
            assert getattr(getattr(again, dest), field) == getattr(getattr(namespace, dest), field), (dest, field)
    if "--api-key" in argv:
        assert "--api-key" in shown and "sk-oracle-1" not in shown and "sk-oracle-1" not in rebuilt


def test_vllms_own_logger_output_is_read(tmp_path, version):
    """The lines as vLLM's own logging writes them (its configured handler, format and
    NewLineFormatter; its log_version_and_model and logger.exception), not as this test
    imagines them: the version is read and the resolver's failure is named."""
    import logging

    try:
        startup = importlib.import_module("vllm.entrypoints.common.startup")
    except ImportError:
        startup = importlib.import_module("vllm.entrypoints.serve.utils.api_utils")
    resolver = vllm_symbol("vllm.models.deepseek_v4.attention", "_resolve_dsv4_kv_cache_dtype")
    vllm_logger = importlib.import_module("vllm.logger")
    if not logging.getLogger("vllm").handlers and hasattr(vllm_logger, "configure_logging_if_needed"):
        from vllm.config.logging import LoggingConfig  # 0.33 configures its logging when serve starts

        vllm_logger.configure_logging_if_needed(LoggingConfig())
    handler = next((h for h in logging.getLogger("vllm").handlers if isinstance(h, logging.StreamHandler)), None)
    if handler is None:
        pytest.skip("vLLM's logging is not configured here (VLLM_CONFIGURE_LOGGING=0)")
    kv = "bfloat16"
    buffer = io.StringIO()
    old = handler.setStream(buffer)
    try:
        logger = logging.getLogger("vllm.entrypoints.openai.api_server")
        startup.log_version_and_model(logger, version, M)
        try:
            resolver(True, kv, None)
        except (AssertionError, ValueError):
            logging.getLogger("vllm.v1.engine.core").exception("EngineCore failed to start.")
    finally:
        handler.setStream(old)
    text = buffer.getvalue()
    assert "EngineCore failed to start." in text and "Traceback" in text
    path = tmp_path / "vllm.log"
    path.write_text(text, encoding="utf-8")
    out = io.StringIO()
    assert run_explain([str(path)], as_json=True, ctx=Context(env={}, stdout=out, stderr=io.StringIO())) == 0
    doc = json.loads(out.getvalue())
    assert doc["vllm_version"] == version
    assert [i["rule"] for i in doc["explained"]] == ["kv-not-fp8"]
    assert doc["explained"][0]["text"].startswith(("AssertionError: ", "ValueError: "))


# --- failures no rule row decides (issue 30.2): vLLM's own raise, read back by the signature ----------------

def test_free_gpu_memory_at_start(tmp_path, version):
    """``request_memory`` with a GPU that another process holds: 1.54 of 22.05 GiB free, 0.9 asked."""
    request_memory = vllm_symbol("vllm.v1.worker.utils", "request_memory")
    snapshot = SimpleNamespace(free_memory=int(1.54 * 2**30), total_memory=int(22.05 * 2**30), device_="cuda:0")
    # 0.34 reads resolved_gpu_memory_utilization (v1/worker/utils.py:742@0.34.0), the user's value when
    # set, and enable_extensible_kv_cache
    asked = SimpleNamespace(gpu_memory_utilization=0.9, resolved_gpu_memory_utilization=0.9,
                            enable_extensible_kv_cache=False)
    text = raised(lambda: request_memory(snapshot, asked))
    assert text and "Free memory on device cuda:0" in text
    assert explained(tmp_path, version, text) == ["gpu-memory-not-free"]
    # enough free memory: vLLM raises nothing, and there is nothing to explain
    roomy = SimpleNamespace(free_memory=int(21 * 2**30), total_memory=int(22.05 * 2**30), device_="cuda:0")
    assert raised(lambda: request_memory(roomy, asked)) is None


@pytest.mark.parametrize(("split", "sizes"), [
    ("row", dict(input_size=3072, output_size=7168, input_size_per_partition=192, output_partition_sizes=[7168])),
    ("column", dict(input_size=7168, output_size=3072, input_size_per_partition=7168, output_partition_sizes=[192])),
])
def test_fp8_block_shape_at_tp16(tmp_path, version, monkeypatch, split, sizes):
    """DeepSeek-V4-Pro's 3072-wide expert dimension split 16 ways (vllm#42384): 192 per GPU, block 128.
    Faked: only the tensor-parallel world size (no process group on the CPU); the layer carries its own."""
    import vllm.distributed

    monkeypatch.setattr(vllm.distributed, "get_tensor_model_parallel_world_size", lambda: 16)
    validate = vllm_symbol("vllm.model_executor.layers.quantization.utils.fp8_utils", "validate_fp8_block_shape")
    text = raised(lambda: validate(SimpleNamespace(tp_size=16), block_size=[128, 128], **sizes))
    assert text and "is not divisible by" in text
    assert explained(tmp_path, version, text) == ["tp-fp8-block"]
    # TP 8: 384 per GPU, a multiple of the block — vLLM accepts it
    eight = {k: (v * 2 if k in ("input_size_per_partition",) and split == "row" else v) for k, v in sizes.items()}
    if split == "column":
        eight["output_partition_sizes"] = [384]
    assert raised(lambda: validate(SimpleNamespace(tp_size=8), block_size=[128, 128], **eight)) is None


@pytest.mark.parametrize(("name", "rule"), [("VLLM_USE_DEEP_GEMM", "deep-gemm-env-not-int"),
                                            ("VLLM_USE_V2_MODEL_RUNNER", "v2-runner-env-not-int")])
def test_a_non_numeric_vllm_switch(tmp_path, version, monkeypatch, name, rule):
    """vLLM's envs.py reads these with int(): 'true' raises where vLLM reads it (a real read here)."""
    envs = importlib.import_module("vllm.envs")
    monkeypatch.setenv(name, "true")
    if hasattr(envs, "disable_envs_cache"):
        envs.disable_envs_cache()
    if name not in getattr(envs, "environment_variables", {name: None}):
        # 0.34 no longer reads VLLM_USE_V2_MODEL_RUNNER: validate_environ refuses it (V1 removed)
        platform = importlib.import_module("vllm.platforms").current_platform
        text = raised(lambda: platform.validate_environ(False))
        assert text and "Model Runner V1 has been removed" in text
        assert explained(tmp_path, version, text) == ["v1-runner-removed"]
        return
    text = raised(lambda: getattr(envs, name))
    assert text and "invalid literal for int()" in text
    assert explained(tmp_path, version, text) == [rule]
    monkeypatch.setenv(name, "1")
    assert raised(lambda: getattr(envs, name)) is None


def test_the_draft_model_keeps_expert_parallelism_from_0_30(version):
    """mega-moe-draft-without-ep: before 0.30.0 the speculative draft's parallel config drops
    --enable-expert-parallel (so MegaMoE in the draft refuses although the user set it); the
    release's own create_draft_parallel_config says which."""
    speculative = vllm_symbol("vllm.config.speculative", "SpeculativeConfig")
    parallel = vllm_symbol("vllm.config.parallel", "ParallelConfig")
    draft = speculative.create_draft_parallel_config(parallel(tensor_parallel_size=1, enable_expert_parallel=True), 1)
    assert draft.enable_expert_parallel is (not is_older(version, "0.30.0"))


@pytest.mark.rule("vllm-argument-error")
def test_an_unknown_option_is_answered_with_vllms_message_and_the_nearest_option(tmp_path, version, real_vllm):
    """vLLM's real parser refuses a misspelt option; explain names the argument error, quotes the
    message, and the nearest option of the release's recorded table is the real one."""
    top = real_vllm[0]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status, _ = real_parse(top, [M, "--enable-expert-paralel"])
    assert status == "reject" and ": error: unrecognized arguments: --enable-expert-paralel" in err.getvalue()
    log = tmp_path / "args.log"
    log.write_text(f"vLLM server version {version}, serving model {M}\n" + err.getvalue(), encoding="utf-8")
    out = io.StringIO()
    run_explain([str(log)], as_json=True, ctx=Context(env={}, stdout=out, stderr=io.StringIO()))
    item = json.loads(out.getvalue())["explained"][0]
    assert item["rule"] == "vllm-argument-error"
    assert "--enable-expert-paralel" in item["effect"] and "did you mean --enable-expert-parallel?" in item["fix"]
    _, namespace = real_parse(top, [M, "--enable-expert-parallel"])  # the suggestion is an option vLLM takes
    assert namespace.enable_expert_parallel is True
