"""dsv4-launch's own settings, read from ``DSV4_LAUNCH_*`` environment variables (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .gpus import parse_capability
from .records import Record

TRUE = {"1", "true", "yes", "on"}
FALSE = {"", "0", "false", "no", "off"}
PREFLIGHT_MODES = ("refuse", "warn", "off")
GPU_CAPABILITY = "DSV4_LAUNCH_GPU_CAPABILITY"
GPU_MEMORY = "DSV4_LAUNCH_GPU_MEMORY"
LOG_FORMAT = "DSV4_LAUNCH_LOG_FORMAT"
LOG_FORMATS = ("text", "json")


class SettingsError(ValueError):
    """A DSV4_LAUNCH_* variable holds a value dsv4-launch cannot use."""


class Settings(Record):
    """The settings a run works with; DSV4_LAUNCH_DISABLE is read before them (``disable_switch``)."""

    quiet: bool = False  # DSV4_LAUNCH_QUIET
    gpu_capabilities: tuple[tuple[int, int], ...] | None = None  # DSV4_LAUNCH_GPU_CAPABILITY
    gpu_capability_text: str | None = None
    gpu_memory_bytes: int | None = None  # DSV4_LAUNCH_GPU_MEMORY: per GPU
    preflight: str = "refuse"  # DSV4_LAUNCH_PREFLIGHT: refuse, warn, off
    debug: bool = False  # DSV4_LAUNCH_DEBUG: internal errors raise instead of passing through
    log_format: str = "text"  # DSV4_LAUNCH_LOG_FORMAT: text (default) or json (one object per line on stderr)
    warnings: tuple[str, ...] = ()  # flags whose values were not understood, and what was assumed


def read_flag(env: Mapping[str, str], name: str, unclear: bool = False) -> tuple[bool, str | None]:
    """An on/off variable: (value, None), or (``unclear``, a warning) for a value that is neither
    — never an error: a typo in a flag must not stop vLLM from starting."""
    raw = env.get(name)
    if raw is None:
        return False, None
    value = raw.strip().lower()
    if value in TRUE or value in FALSE:
        return value in TRUE, None
    return unclear, f"{name}={raw!r} is not 1 (on) or 0 (off); taken as {'on' if unclear else 'off'}"


def read_log_format(env: Mapping[str, str]) -> tuple[str, str | None]:
    """DSV4_LAUNCH_LOG_FORMAT: ``text`` (default) or ``json``. A value that is neither is a warning
    and text, like an unclear on/off flag: how lines look must never stop vLLM from starting."""
    raw = env.get(LOG_FORMAT)
    value = (raw or "text").strip().lower()
    if value in LOG_FORMATS:
        return value, None
    return "text", f"{LOG_FORMAT}={raw!r} is not text or json; plain text lines are written"


def disable_switch(env: Mapping[str, str]) -> tuple[bool, str | None]:
    """DSV4_LAUNCH_DISABLE, read the same way everywhere (dsv4-serve, plan, doctor, the plugin):
    any value that is not clearly off turns dsv4-launch off — the safe side is vLLM untouched."""
    return read_flag(env, "DSV4_LAUNCH_DISABLE", unclear=True)


def is_disabled(env: Mapping[str, str]) -> bool:
    """Is dsv4-launch switched off (``disable_switch`` without its warning for an unclear value)?"""
    return disable_switch(env)[0]


_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SIZE = r"(?a)(\d{1,15}(?:\.\d{1,6})?)\s*([a-z]{0,3})"  # compiled on first use


def parse_size(text: str, unit_required: bool = False) -> int:
    """``96GiB`` → 103079215104; ``80GB``, ``81920MiB``, plain bytes too (GB/G powers of ten, GiB
    of two). ValueError for anything else, and with ``unit_required`` for a bare number (``96`` is
    not 96 bytes of GPU memory anyone means)."""
    m = re.fullmatch(_SIZE, text.strip().lower())
    if m is None or m.group(2) not in _UNITS:
        raise ValueError(f"not a size: {text!r}")
    if unit_required and m.group(2) in ("", "b"):
        raise ValueError(f"{text.strip()!r} has no unit: write {m.group(1)}GiB (or {m.group(1)}GB)")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def parse_capabilities(text: str) -> tuple[tuple[int, int], ...]:
    """``12.0`` or ``9.0,9.0,12.0`` (one per GPU). ValueError for anything that is not one: a
    capability below 3.0 is no CUDA GPU, and ``9,0`` — SM 9.0 written with a comma — would read
    as two GPUs, SM 9.0 and SM 0.0."""
    parts = [part for part in text.split(",") if part.strip()]
    if len(parts) > 1 and any(part.strip().isascii() and part.strip().isdigit() for part in parts):
        raise ValueError(f"{text.strip()!r}: write each GPU's capability with a dot (9.0, not 9,0)")
    caps = tuple(parse_capability(part) for part in parts)
    if any(major < 3 for major, _ in caps):
        raise ValueError(f"{text.strip()!r}: no CUDA GPU has a compute capability below 3.0")
    return caps


def read_settings(env: Mapping[str, str]) -> Settings:
    caps = None
    text = env.get(GPU_CAPABILITY)
    if text is not None and text.strip():
        try:
            caps = parse_capabilities(text)
        except ValueError:
            raise SettingsError(f"{GPU_CAPABILITY}={text!r} is not a compute capability; use e.g. 12.0 (RTX PRO "
                                "6000), 10.0 (B200) or 9.0 (H100/H200), comma-separated per GPU") from None
    memory = None
    raw_memory = env.get(GPU_MEMORY)
    if raw_memory is not None and raw_memory.strip():
        why = "is not a memory size"
        try:
            memory = parse_size(raw_memory, unit_required=True)
        except ValueError as exc:
            memory = 0
            if "no unit" in str(exc):
                why = "has no unit"
        if memory <= 0:
            raise SettingsError(f"{GPU_MEMORY}={raw_memory!r} {why}; use e.g. 96GiB, 80GB or 143771MiB (the memory "
                                "of one GPU)")
    raw_preflight = env.get("DSV4_LAUNCH_PREFLIGHT")
    preflight = (raw_preflight or "refuse").strip().lower()
    if preflight not in PREFLIGHT_MODES:
        raise SettingsError(f"DSV4_LAUNCH_PREFLIGHT={raw_preflight!r} is not understood; use refuse (default), warn "
                            "or off")
    quiet, w1 = read_flag(env, "DSV4_LAUNCH_QUIET")
    debug, w2 = read_flag(env, "DSV4_LAUNCH_DEBUG")
    log_format, w3 = read_log_format(env)
    return Settings(preflight=preflight, quiet=quiet, debug=debug, log_format=log_format,
                    warnings=tuple(w for w in (w1, w2, w3) if w), gpu_capabilities=caps,
                    gpu_capability_text=text.strip() if caps and text else None,  # caps come from a text
                    gpu_memory_bytes=memory)


# Every environment variable dsv4-launch reads, with its effect: `dsv4-serve --help` and README's
# table are made from these rows.
ENV_VARS: tuple[tuple[str, str], ...] = (
    ("DSV4_LAUNCH_DISABLE=1", "no reading, probing or rewriting: arguments go to vLLM unchanged (one line says so); "
     "also turns the vLLM plugin off. Any value other than 0/false/no/off counts as on"),
    ("DSV4_LAUNCH_QUIET=1",
     "print only changes (`changed:` lines: a change to your command is never quiet), warnings and errors"),
    ("DSV4_LAUNCH_PREFLIGHT=refuse|warn|off",
     "pre-flight problems stop dsv4-serve (default), only warn, or are not checked"),
    (f"{GPU_CAPABILITY}=12.0",
     "use this compute capability instead of probing (hosts that cannot see the GPUs; comma-separated per GPU); "
     f"the memory stays NVML's where NVML can be read, else it is said to be not checked (set {GPU_MEMORY})"),
    (f"{GPU_MEMORY}=96GiB",
     "the memory of one GPU, used instead of what NVML reports (memory fit; a unit is required)"),
    ("DSV4_LAUNCH_DEBUG=1", "an internal error raises with its traceback instead of passing the arguments through"),
    (f"{LOG_FORMAT}=json", "one JSON object per line on stderr (time, level, logger, message, rule/option where "
     "there is one) for everything printed before vLLM starts; default text"),
    ("NO_COLOR, TERM=dumb", "plain output even on a terminal (either wins over FORCE_COLOR)"),
    ("FORCE_COLOR", "styled output even when not a terminal (CI logs): any non-empty value, as Rich reads it"),
    ("CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER", "which GPUs count, as for CUDA"),
    ("HF_HUB_CACHE, HF_HOME, HF_HUB_OFFLINE", "where to look for the model's files; whether vLLM may download"),
    ("HUGGINGFACE_HUB_CACHE, XDG_CACHE_HOME, TRANSFORMERS_OFFLINE",
     "the same, read as huggingface_hub reads them (its precedence, ~ and $VAR expanded)"),
    ("VLLM_PP_LAYER_PARTITION", "the layers of each pipeline stage, as vLLM splits them (memory fit)"),
    ("VLLM_USE_V2_MODEL_RUNNER, VLLM_USE_RAY_V2_EXECUTOR_BACKEND",
     "the model runner and Ray executor vLLM picks (rows; the tokens in flight in the memory fit)"),
    ("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
     "0: vLLM subtracts no CUDA-graph estimate before the KV cache, and the memory fit counts none"),
)
