"""Keep secrets out of everything dsv4-launch prints.

Secret values are those of ``--api-key`` (one or more), ``--hf-token`` (optional value),
``--watermark-config``, and the JSON options that may carry credentials; their dotted forms
(``--kv-transfer-config.token=…``), ``_`` spellings and unique abbreviations (``--api-k``)
count too. Matching is by option name, never by a loose substring: ``--ssl-keyfile`` is a
path and stays visible. The contents of a ``--config`` file are never printed at all.

``Redactor`` also remembers every secret value it removed, so that any other text about to be
printed (an argparse message quoting a token, say) can be scrubbed of them as a last line of
defence.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Iterable, Mapping, Sequence

from .option_table import OptionTable
from .serve_args import option_name

MASK = "***"

SECRET_OPTIONS = frozenset(
    {
        "api-key",
        "hf-token",
        "watermark-config",
        "kv-transfer-config",
        "ec-transfer-config",
        "model-loader-extra-config",
        "additional-config",
    }
)

# Environment variables whose values are credentials (never printed, e.g. by doctor).
SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "MODELSCOPE_API_TOKEN", "OPENAI_API_KEY")
SECRET_ENV_PREFIXES = ("S3_", "AWS_")


def is_secret_env(name: str) -> bool:
    return name in SECRET_ENV or name.startswith(SECRET_ENV_PREFIXES)


def _secret_root(name: str, known: frozenset[str]) -> bool:
    """Does option ``name`` (normalised, without ``--``) carry a secret?"""
    root = name.split(".", 1)[0].rstrip("+")
    if root in SECRET_OPTIONS:
        return True
    if root in known:
        return False  # an exact option that is not secret (``--hf-config-path``)
    # argparse accepts unique prefixes; an ambiguous one is refused, but hide it all the same.
    return len(root) >= 2 and any(s.startswith(root) for s in SECRET_OPTIONS)


class Redactor:
    def __init__(self) -> None:
        self.secrets: set[str] = set()

    def argv(self, tokens: Sequence[str], table: OptionTable) -> list[str]:
        """``tokens`` with every secret value replaced by ``***``."""
        known = frozenset(o[2:] for o in table.option_strings if o.startswith("--"))
        out: list[str] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            name = option_name(token)
            if name is None or not _secret_root(name, known):
                out.append(token)
                i += 1
                continue
            if "=" in token:
                key, value = token.split("=", 1)
                self._remember(value)
                out.append(f"{key}={MASK}")
                i += 1
                continue
            out.append(token)
            i += 1
            # Values follow until the next option-like token; argparse reads them the same way.
            action = table.action_for("--" + name.split(".", 1)[0])
            many = action is not None and action.nargs in ("+", "*")
            while i < len(tokens) and not _looks_like_option(tokens[i]):
                self._remember(tokens[i])
                out.append(MASK)
                i += 1
                if not many:
                    break
        return out

    def text(self, message: str) -> str:
        """``message`` with every remembered secret value masked."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            message = message.replace(secret, MASK)
        return message

    def remember_env(self, env: Mapping[str, str]) -> None:
        for name, value in env.items():
            if is_secret_env(name):
                self._remember(value)

    def _remember(self, value: str) -> None:
        if len(value) >= 3:  # masking "a" everywhere would only garble the output
            self.secrets.add(value)

    def remember(self, values: Iterable[str]) -> None:
        for v in values:
            self._remember(v)


def _looks_like_option(token: str) -> bool:
    """argparse never takes these as option values (a negative number excepted)."""
    if not token.startswith("-") or token == "-":
        return False
    try:
        float(token)
    except ValueError:
        return True
    return False
