"""The patch itself: wrap ``resolve_kv_cache_dtype_string`` as ``vllm.engine.arg_utils`` calls it,
and remember which ``EngineArgs`` is being turned into a config — the plugin's source of arguments
for dsv4-serve's pipeline (``commands/pipeline.prepare_engine``). Only vLLM modules already
imported when plugins load are touched; it logs through ``vllm.dsv4_launch`` (docs/DESIGN.md,
"The vLLM plugin").
"""

from __future__ import annotations

import contextvars
import os

from . import LOGGER, MARK, VERIFIED_RELEASES

_engine_args: contextvars.ContextVar = contextvars.ContextVar("dsv4_launch_engine_args", default=None)
_said: set[str] = set()


def _logger():
    from vllm.logger import init_logger

    return init_logger(LOGGER)


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
        # Only an `auto` vLLM leaves at `auto` may change; an explicit value, or one the
        # checkpoint itself sets, is vLLM's. The findings are said for every engine.
        may_change = resolved == "auto" and kv_cache_dtype == "auto"
        try:
            changed = _decide(model_config, version, may_change)
        except Exception as exc:  # never stop vLLM: say it, and leave vLLM's own answer
            _once("error", "warning", "dsv4-launch plugin could not check this engine (%s: %s)",
                  type(exc).__name__, _shown(exc))
            return resolved
        return changed or resolved

    setattr(resolve_kv_cache_dtype_string, MARK, True)
    setattr(resolve_kv_cache_dtype_string, "__wrapped__", original)  # a function attribute, as functools.wraps sets it
    return resolve_kv_cache_dtype_string


def _shown(exc: Exception) -> str:
    """An exception's message as the plugin may log it: the engine's and the environment's
    credentials masked, URL credentials masked, then cut (``credentials.excerpt``), escaped."""
    try:
        from ..core.credentials import excerpt
        from ..output.escape import printable
        from ..output.redact import Redactor

        redact = Redactor.for_engine(_engine_args.get(), os.environ)
        return printable(excerpt(redact(str(exc)), 200), redact)
    except Exception:  # the message is not worth a failure of its own
        return "(its message is not shown)"


def _decide(model_config, version: str, may_change: bool = True) -> str | None:
    """The pipeline's plan for this engine, said in vLLM's log; "fp8" when it sets
    --kv-cache-dtype fp8 (and ``may_change``). What dsv4-serve would refuse is a warning that
    says so: a plugin cannot stop vLLM."""
    from ..commands.pipeline import prepare_engine
    from ..output.escape import printable
    from ..output.report import describe_change

    hf_config = getattr(model_config, "hf_config", None)
    to_dict = getattr(hf_config, "to_dict", None)
    as_dict = to_dict() if callable(to_dict) else None
    prepared = prepare_engine(_engine_args.get(), getattr(model_config, "model", None), as_dict, version, os.environ)
    redact = prepared.redact  # the engine's and the environment's credentials (pipeline.prepare_engine)
    if prepared.error:
        _once("settings", "warning", "dsv4-launch plugin does nothing: %s", printable(prepared.error, redact))
        return None
    plan = prepared.plan
    for warning in plan.warnings:
        _once("w:" + warning, "warning", "dsv4-launch: %s", printable(warning, redact))
    for refusal in plan.refusals:
        _once("r:" + refusal, "warning", "dsv4-launch: dsv4-serve would refuse to start this (exit 2; the "
              "plugin cannot stop vLLM): pre-flight: %s", printable(refusal, redact))
    for change in plan.changes if may_change else ():
        if change.option == "--kv-cache-dtype":
            # vLLM's EngineArgs holds "auto" whether or not it was typed: say what it holds.
            said = change._replace(before=change.before or "auto")
            _logger().info("dsv4-launch: changed: %s", printable(describe_change(said), redact))
            return change.after
    return None
