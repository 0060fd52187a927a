"""Regenerate src/dsv4_launch/data/serve-options-<vLLM version>.json from a real vLLM.

usage: VLLM_TARGET_DEVICE=cpu <venv with vllm>/bin/python tools/gen_vllm_options.py

dsv4-launch reads ``vllm serve`` arguments with a replica of vLLM's parser (the stdlib's
argparse, given vLLM's option strings and their arity), so that positional/option splitting,
abbreviations and greedy ``nargs='+'`` behave exactly as in vLLM without importing vLLM. This
script records those option strings from the installed vLLM; the oracle tests in
tests/vllm_real/ prove the replica against the real parser.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_serve_parser import make_serve_parser  # noqa: E402


def describe(action: argparse.Action, strings: list[str]) -> dict:
    if isinstance(action, argparse._HelpAction):
        nargs = 0
    elif action.nargs is None:
        nargs = 1
    else:
        nargs = action.nargs  # 0, "?", "+", "*" or an int
    entry = {"dest": action.dest, "nargs": nargs, "options": strings}
    if nargs == 0 and not isinstance(action, argparse._HelpAction):
        # What each spelling stores (--x → true, --no-x / --disable-x → false), asked of
        # the action itself.
        values = {}
        for option in strings:
            namespace = argparse.Namespace()
            action(None, namespace, [], option)
            values[option] = getattr(namespace, action.dest)
        entry["flag_values"] = values
    # Choices are checked after the type conversion; keep them only for plain strings, where
    # the replica can check them the same way.
    if action.choices is not None and action.type in (None, str):
        entry["choices"] = [str(c) for c in action.choices]
    return entry


def _literal_values(tp) -> list[str]:
    """Every string of a (possibly nested, possibly Optional) typing.Literal."""
    import typing

    out: list[str] = []
    for arg in typing.get_args(tp):
        if isinstance(arg, str):
            out.append(arg)
        elif arg is not type(None):
            out.extend(_literal_values(arg))
    return out


def _value_sets() -> dict:
    """Values vLLM accepts for the settings dsv4-launch's rules read, as far as this release
    declares them (each guarded: a release without one simply has no entry)."""
    found: dict = {}

    def attempt(name, fn):
        try:
            value = fn()
        except Exception:  # a release without this setting
            return
        if value:
            found[name] = value

    def kv():
        from vllm.config.cache import CacheDType

        return _literal_values(CacheDType)

    def backends():
        from vllm.v1.attention.backends.registry import AttentionBackendEnum

        return sorted(m.name for m in AttentionBackendEnum)

    def moe():
        from vllm.config.kernel import MoEBackend

        return _literal_values(MoEBackend)

    def spec():
        from vllm.config.speculative import SpeculativeMethod

        return _literal_values(SpeculativeMethod)

    def tokenizer():
        from vllm.config.model import TokenizerMode

        return _literal_values(TokenizerMode)

    def attention_fields():
        from vllm.config.attention import AttentionConfig

        fields = getattr(AttentionConfig, "model_fields", None) or getattr(
            AttentionConfig, "__dataclass_fields__", {}
        )
        return sorted(fields)

    def flashinfer():
        reqs = importlib.metadata.requires("vllm") or []
        return sorted(r.split(";")[0].strip() for r in reqs if r.lower().startswith("flashinfer"))

    attempt("kv_cache_dtype", kv)
    attempt("attention_backend", backends)
    attempt("moe_backend", moe)
    attempt("speculative_method", spec)
    attempt("tokenizer_mode", tokenizer)
    attempt("attention_config_fields", attention_fields)
    attempt("flashinfer_requirements", flashinfer)
    return found


def main() -> None:
    _, serve = make_serve_parser()
    # Every string the parser answers to, hidden ones included (vLLM 0.33 keeps the old
    # --no-enable-x spellings registered but out of the action's help strings).
    strings: dict[int, list[str]] = {}
    for option, action in serve._option_string_actions.items():
        strings.setdefault(id(action), []).append(option)
    actions = [describe(a, strings[id(a)]) for a in serve._actions if a.option_strings]
    positionals = [a.dest for a in serve._actions if not a.option_strings]
    version = importlib.metadata.version("vllm")
    data = {
        "vllm_version": version,
        "positionals": positionals,
        "actions": actions,
        # Defaults the plan reports (vLLM serves this model when none is given).
        "defaults": {"model": serve.get_default("model")},
        # Values the installed vLLM accepts for settings the rules read (not all are argparse
        # choices: from 0.25 on, --kv-cache-dtype takes any string and pydantic rejects it).
        "values": _value_sets(),
    }
    out = Path(__file__).resolve().parent.parent / "src/dsv4_launch/data"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"serve-options-{version}.json"
    path.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    print(path, len(actions), "options")


if __name__ == "__main__":
    main()
