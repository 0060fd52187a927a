"""A command's own options, picked out of an argument list that is otherwise vLLM's.

``dsv4-launch plan MODEL --json -tp 2`` means ``--json`` for plan and ``MODEL -tp 2`` for vLLM:
the command's options are recognised anywhere before a ``--`` (vLLM's ``serve`` has none of
these names), everything after ``--`` is vLLM's. No click on this path: ``plan`` must answer
within its start-up budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence


class UsageError(ValueError):
    """An own option given wrongly; the message is the one line to print."""


class HelpRequested(Exception):
    """``-h``/``--help`` among the command's own arguments."""


# command -> {option: converter for its value, or None for a flag}
OptionSpec = Mapping[str, "Callable[[str], object] | None"]


def split_own_options(command: str, tokens: Sequence[str], spec: OptionSpec) -> tuple[dict[str, object], list[str]]:
    """(own option values by name without dashes, the rest for vLLM). Raises HelpRequested or
    UsageError."""
    own: dict[str, object] = {}
    rest: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            rest.extend(tokens[i + 1:])
            break
        if token in ("-h", "--help"):
            raise HelpRequested(command)
        name, eq, value = token.partition("=")
        if name in spec:
            convert = spec[name]
            key = name[2:].replace("-", "_")
            if convert is None:
                if eq:
                    raise UsageError(f"dsv4-launch {command}: {name} takes no value")
                own[key] = True
            else:
                if not eq:
                    if i + 1 >= len(tokens):
                        raise UsageError(f"dsv4-launch {command}: {name} needs a value")
                    i += 1
                    value = tokens[i]
                try:
                    own[key] = convert(value)
                except ValueError as exc:
                    raise UsageError(f"dsv4-launch {command}: {name} {_shown(value)}: {_shown(str(exc), 300, quote=False)}") from None
        else:
            rest.append(token)
        i += 1
    return own, rest


def _shown(text: str, limit: int = 60, quote: bool = True) -> str:
    """Outside text in an error line: ``repr``'d (control characters escaped), cut at ``limit``
    characters — a 5,000-character value is not worth a 5,000-character line."""
    cut = text if len(text) <= limit else text[:limit]
    shown = repr(cut) if quote else cut
    return shown + ("…" if len(text) > limit else "")
