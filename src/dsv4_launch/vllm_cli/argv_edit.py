"""Write a planned change into the user's argv so that vLLM reads it, touching nothing else: a
value replaced in place or two tokens inserted before a bare ``--`` (if any), so every other token
keeps its bytes and every token before the insertion its position — the secret positions found by
the parse stay valid, as argparse gives no option a value after a bare ``--``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .secrets import option_name


def set_option(argv: Sequence[str], option: str, value: str, replaces: str = "auto") -> list[str]:
    """``option`` set to ``value``: the last command-line occurrence rewritten in place, in the
    user's own spelling, when its value is ``replaces``; otherwise ``option value`` appended —
    before a bare ``--`` if there is one (after it, everything is a positional to argparse).
    Never inserted right after ``serve`` (vLLM's positional-model checks would fail); the pipeline
    re-reads the result (``pipeline._verified``)."""
    out = list(argv)
    name = option[2:]
    last = None
    end = out.index("--") if "--" in out else len(out)
    for i, token in enumerate(out[:end]):
        if option_name(token) == name:
            last = i
    if last is not None:
        head, eq, current = out[last].partition("=")
        if eq and current == replaces:
            out[last] = f"{head}={value}"
            return out
        if not eq and last + 1 < len(out) and out[last + 1] == replaces:
            out[last + 1] = value
            return out
    return out[:end] + [option, value] + out[end:]


def apply_changes(argv: Sequence[str], changes: Iterable) -> tuple[str, ...]:
    """Every ``core.kv.Change`` (``option``, ``after``) written into ``argv``."""
    out = list(argv)
    for change in changes:
        out = set_option(out, change.option, change.after)
    return tuple(out)
