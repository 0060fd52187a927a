"""The patch itself: wrap ``resolve_kv_cache_dtype_string`` as ``vllm.engine.arg_utils`` calls it,
and remember which ``EngineArgs`` is being turned into a config (for its attention backend).
Only vLLM modules that are already imported when plugins load are touched."""

from __future__ import annotations

import contextvars
import os

from . import MARK, VERIFIED_RELEASES

_engine_args: contextvars.ContextVar = contextvars.ContextVar("dsv4_launch_engine_args", default=None)
_said: set[str] = set()


def _logger():
    from vllm.logger import init_logger

    return init_logger("dsv4_launch")


def _once(key: str, level: str, message: str, *args) -> None:
    if key not in _said:
        _said.add(key)
        getattr(_logger(), level)(message, *args)


def install() -> bool:
    """Patch vLLM if this release is verified; True when the patch is (now) in place."""
    import vllm
    import vllm.engine.arg_utils as arg_utils

    version = str(getattr(vllm, "__version__", None) or "")
    # The release itself, with or without a local build label (0.33.0+cu130); never a
    # pre-release or dev build of it, whose code may differ.
    verified = version.split("+", 1)[0] in VERIFIED_RELEASES
    resolver = getattr(arg_utils, "resolve_kv_cache_dtype_string", None)
    engine_args = getattr(arg_utils, "EngineArgs", None)
    if not verified or resolver is None or engine_args is None:
        _once("unverified", "warning",
              "dsv4-launch plugin: vLLM %s is not a release it was verified against; it does nothing "
              "(dsv4-serve still applies the KV-cache fix)", version or "(version unknown)")
        return False
    if getattr(resolver, MARK, False):
        return True  # loaded twice: already in place
    arg_utils.resolve_kv_cache_dtype_string = _wrap_resolver(resolver, version)
    engine_args.create_engine_config = _wrap_create(engine_args.create_engine_config)
    return True


def _wrap_create(original):
    if getattr(original, MARK, False):
        return original

    def create_engine_config(self, *args, **kwargs):
        token = _engine_args.set(self)
        try:
            return original(self, *args, **kwargs)
        finally:
            _engine_args.reset(token)

    setattr(create_engine_config, MARK, True)
    create_engine_config.__wrapped__ = original
    return create_engine_config


def _wrap_resolver(original, version: str):
    def resolve_kv_cache_dtype_string(kv_cache_dtype, model_config):
        resolved = original(kv_cache_dtype, model_config)
        if resolved != "auto" or kv_cache_dtype != "auto":
            return resolved  # an explicit value, or one the checkpoint itself sets
        try:
            changed = _decide(model_config, version)
        except Exception as exc:  # never stop vLLM: say it, and leave vLLM's own answer
            _once("error", "warning", "dsv4-launch plugin could not check this engine (%s: %s)",
                  type(exc).__name__, str(exc)[:200])
            return resolved
        return changed or resolved

    setattr(resolve_kv_cache_dtype_string, MARK, True)
    resolve_kv_cache_dtype_string.__wrapped__ = original
    return resolve_kv_cache_dtype_string


def _values(engine_args) -> dict[str, object]:
    """The engine's arguments the rules read, as plain values (configs as dicts, enums as names)."""
    if engine_args is None:
        return {"kv_cache_dtype": "auto"}
    names = ("kv_cache_dtype", "attention_backend", "attention_config", "tensor_parallel_size",
             "pipeline_parallel_size", "data_parallel_size", "block_size", "distributed_executor_backend",
             "nnodes", "headless", "speculative_config", "moe_backend", "enable_expert_parallel",
             "tokenizer_mode", "tool_call_parser", "reasoning_parser", "max_model_len",
             "disable_hybrid_kv_cache_manager", "kv_transfer_config", "gpu_memory_utilization")
    return {n: _plain(getattr(engine_args, n, None)) for n in names if getattr(engine_args, n, None) is not None}


def _plain(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str) and type(value).__module__ != "builtins" and hasattr(type(value), "__members__"):
        return name  # an enum: its name, as the CLI spells it
    for method in ("model_dump", "to_dict"):
        if callable(getattr(value, method, None)):
            try:
                return {k: _plain(v) for k, v in getattr(value, method)().items()}
            except Exception:
                break
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    fields = getattr(value, "__dataclass_fields__", None)
    if fields:
        return {k: _plain(getattr(value, k, None)) for k in fields}
    return str(value)


def _decide(model_config, version: str) -> str | None:
    """The pipeline's plan for this engine; "fp8" when it sets --kv-cache-dtype fp8."""
    from ..commands.pipeline import prepare_engine
    from ..output.escape import printable
    from ..output.report import describe_change

    hf_config = getattr(model_config, "hf_config", None)
    as_dict = hf_config.to_dict() if callable(getattr(hf_config, "to_dict", None)) else None
    prepared = prepare_engine(_values(_engine_args.get()), getattr(model_config, "model", None), as_dict,
                              version, os.environ)
    log = _logger()
    if prepared.error:
        _once("settings", "warning", "dsv4-launch plugin does nothing: %s", printable(prepared.error))
        return None
    plan = prepared.plan
    for warning in (*plan.warnings, *(f"pre-flight: {r}" for r in plan.refusals)):
        _once("w:" + warning, "warning", "dsv4-launch: %s", printable(warning))
    for change in plan.changes:
        if change.option == "--kv-cache-dtype":
            log.info("dsv4-launch: changed: %s", printable(describe_change(change)))
            return change.after
    return None
