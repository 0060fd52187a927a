"""vLLM's own ``EngineArgs`` read into the same ``ServeArgs`` the replica parser gives (the
plugin's source: docs/DESIGN.md, "The vLLM plugin"). Every field whose name is a dest of the
release's option table is read; one equal to its dataclass default is left out (vLLM's CLI
defaults are these very defaults), and inside a config object only the keys that differ from the
default object's, as a dotted ``--x.key value`` reads. Values arrive typed (``2``, a dict, an enum);
the core's readers (``core/facts.as_int``, ``json_option``) read both alike. Pure: vLLM is never
imported here.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.facts import ServeArgs
from .option_table import OptionTable

# Credentials that no rule reads: never copied out of vLLM's objects.
_NEVER_READ = frozenset({"api_key", "hf_token"})
_MISSING = object()


def read_engine_args(engine: object, table: OptionTable, model: str | None = None) -> ServeArgs:
    """``engine``: an ``EngineArgs`` (or None: nothing known but the model); ``model``: the
    model vLLM loads, when the engine object does not say it."""
    values: dict[str, object] = {}
    if engine is not None:
        defaults = _field_defaults(type(engine))
        for dest in dict.fromkeys(a.dest for a in table.actions):
            if dest in _NEVER_READ:
                continue
            raw = getattr(engine, dest, None)
            if raw is None or callable(raw) and not isinstance(raw, type):
                continue
            value = _changed(plain(raw), defaults.get(dest, _MISSING))
            if value is not _MISSING:
                values[dest] = value
        name = getattr(engine, "model", None)
        model = name if isinstance(name, str) and name else model
    return ServeArgs(tokens=(), values=values, cli_values=values, model=model, model_source="engine" if model else None)


_DEFAULTS: dict[type, dict[str, object]] = {}  # per EngineArgs class: read once per process


def _field_defaults(cls: type) -> dict[str, object]:
    """Each dataclass field's default, as a plain value (default factories are called once)."""
    if cls not in _DEFAULTS:
        _DEFAULTS[cls] = _read_defaults(cls)
    return _DEFAULTS[cls]


def _read_defaults(cls: type) -> dict[str, object]:
    import dataclasses  # vLLM's process has it already: EngineArgs is a dataclass

    out: dict[str, object] = {}
    for name, f in getattr(cls, "__dataclass_fields__", {}).items():
        try:
            if f.default is not dataclasses.MISSING:
                out[name] = plain(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                out[name] = plain(f.default_factory())
        except Exception:  # a factory that needs more than nothing: no default known
            continue
    return out


def _changed(value: object, default: object) -> object:
    """``value`` without what equals ``default`` (_MISSING when nothing is left)."""
    if value == default:
        return _MISSING
    if isinstance(value, dict) and isinstance(default, dict):
        kept = {key: left for key, item in value.items()
                if (left := _changed(item, default.get(key, _MISSING))) is not _MISSING}
        return kept or _MISSING
    return value


def plain(value: object) -> object:
    """Configs as dicts, enums as their names (as the CLI spells them), the rest as is."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str) and hasattr(type(value), "__members__"):
        return name  # an enum
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    fields = getattr(value, "__dataclass_fields__", None)
    if fields:
        return {k: plain(getattr(value, k, None)) for k in fields}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return plain(dump())
        except Exception:
            pass
    return str(value)
