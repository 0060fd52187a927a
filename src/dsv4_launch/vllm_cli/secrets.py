"""Which ``vllm serve`` options carry secrets, and where their values sit in an argv.

The exact positions come from the parse itself (``serve_args`` records which tokens argparse
gave to these options: every spelling, abbreviation, ``=`` form, repeat and dotted form). When
vLLM will reject the arguments there is no parse to ask, and ``conservative_spans`` masks
everything that could be such a value instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..core.records import record

SECRET_OPTIONS = frozenset(
    {
        "api-key",
        "hf-token",
        "watermark-config",
        # JSON options that may carry credentials
        "kv-transfer-config",
        "ec-transfer-config",
        "model-loader-extra-config",
        "additional-config",
    }
)
SECRET_DESTS = frozenset(o.replace("-", "_") for o in SECRET_OPTIONS)

# Words that make an option *unknown to the table* look like it carries a credential
# (a misspelt ``--api-keyy``, an option of a newer vLLM): its value is masked too.
SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "credential", "auth")

WHOLE, AFTER_EQ = "whole", "after="  # a span is a whole token, or the part after its first "="


@record
class SecretSpans:
    """Positions in the user's argv whose text is a secret: ``(token index, WHOLE|AFTER_EQ)``."""

    spans: frozenset[tuple[int, str]] = frozenset()


def option_name(token: str) -> str | None:
    """The option a ``--name``/``--name=value`` token names, normalised as vLLM does.

    ``--kv_cache_dtype=auto`` → ``kv-cache-dtype``; ``--speculative_config.kv_cache_dtype`` →
    ``speculative-config.kv_cache_dtype`` (only the part before the first ``.`` is normalised).
    Returns None for anything that is not a long option.
    """
    if not token.startswith("--") or token == "--":
        return None
    name = token[2:].split("=", 1)[0]
    root, dot, rest = name.partition(".")
    return root.replace("_", "-") + dot + rest


def _resolves_to_secret(root: str, known: frozenset[str]) -> bool | None:
    """True: names a secret option; False: names another known option; None: unknown."""
    if root in SECRET_OPTIONS:
        return True
    if root in known:
        return False
    matches = [o for o in known if o.startswith(root)] if len(root) >= 2 else []
    if matches and all(m not in SECRET_OPTIONS for m in matches):
        return False  # an abbreviation of other options only
    if matches:
        return True  # a unique or ambiguous abbreviation that may be a secret option
    return None


def conservative_spans(tokens: Sequence[str], known_options: Iterable[str]) -> SecretSpans:
    """Every span that may hold a secret when there is no parse to ask (vLLM rejects the
    arguments): after a secret option (or an unknown option whose name looks like one), every
    token up to the next token naming a known option."""
    options = list(known_options)
    known = frozenset(o[2:] for o in options if o.startswith("--"))
    short = frozenset(o for o in options if not o.startswith("--"))
    spans: set[tuple[int, str]] = set()
    masking = False
    for i, token in enumerate(tokens):
        name = option_name(token)
        if name is None:
            if token == "--" or token.split("=", 1)[0] in short:
                masking = False
            elif masking:
                spans.add((i, WHOLE))
            continue
        root = name.split(".", 1)[0].rstrip("+")
        secret = _resolves_to_secret(root, known)
        if secret is None and masking:
            spans.add((i, WHOLE))  # an unknown "--x" right among a secret's values: maybe the secret
            continue
        if secret is None:
            secret = any(word in root.lower() for word in SECRET_WORDS)
        masking = secret and "=" not in token
        if secret and "=" in token:
            spans.add((i, AFTER_EQ))
    return SecretSpans(frozenset(spans))


def secret_texts(tokens: Sequence[str], spans: SecretSpans) -> list[str]:
    """The secret strings the spans point at (to scrub from a message that quotes tokens)."""
    found = []
    for i, token in enumerate(tokens):
        if (i, WHOLE) in spans.spans:
            found.append(token)
        elif (i, AFTER_EQ) in spans.spans:
            found.append(token.partition("=")[2])
    return [t for t in found if t]
