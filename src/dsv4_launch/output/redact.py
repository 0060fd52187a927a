"""Secrets out of everything printed, applied to values before anything is serialised.

Secret values are found by position: the parse of the arguments records exactly which tokens
vLLM's parser gives to ``--api-key``, ``--hf-token``, ``--watermark-config`` and the JSON
options that may carry credentials, in every spelling (``vllm_cli/secrets.py``) — and, where
the recorded tables cannot say (an option they do not know, a vLLM release they do not
record), to every option whose name looks like a credential (``core/credentials.is_credential_name``).
Those spans become ``***`` whatever their length; credentials in URLs
(``https://user:PASS@host``) are masked in every string, and the ``Scrubber`` masks the secret
values wherever a line quotes them, in every form a message may quote one (``secrets.secret_forms``:
as written, as ``%r`` and JSON quote it; ``secrets.secret_words``, as whole words only: the name
before the ``=`` of one that looks like an option, the value after it, a value glued to a short
option).

Short secrets: a secret (or one of its forms) of three characters or more is masked wherever it
occurs in a line. A 1- or 2-character one is masked only where it stands as its own word —
between blanks, quotes, brackets, ``,;:=`` or the ends of the text (``unrecognized arguments:
-k``, ``'ab'``, ``--api-key=ab``) — never inside a longer word: masking every ``a`` or ``8``
of every line would mangle the output, and a character inside another word gives nothing away.
In the argv shown it is masked by position, as every secret is.
Environment variables are never printed, so there is nothing to mask there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..vllm_cli.secrets import AFTER_EQ, MASK, WHOLE, SecretSpans, mask_secrets, masks_of, secret_texts
from .escape import mask_url_credentials, url_userinfo


def _mask_token(token: str) -> str:
    userinfo = url_userinfo(token)
    if userinfo:
        token = token.replace(userinfo + "@", MASK + "@", 1)
    return mask_url_credentials(token)


def masked_argv(argv: Sequence[str], secrets: SecretSpans) -> list[str]:
    """``argv`` with secret spans as ``***`` and URL credentials masked; linear in its size."""
    out = []
    for i, token in enumerate(argv):
        if (i, WHOLE) in secrets.spans:
            token = MASK
        elif (i, AFTER_EQ) in secrets.spans:
            token = token.partition("=")[0] + "=" + MASK
        out.append(_mask_token(token))
    return out


class Scrubber:
    """Masks, in any printed text, the credentials of URLs the user passed (a model name, an
    endpoint, a path) — also the odd ones a line-level pattern cannot delimit (a password with
    blanks in it) — and every URL credential the pattern can. Built once per run from argv."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Every form of every secret, any length (mask_secrets masks a short one only as its own
        # word). The pattern is built per line from the forms that line holds: compiling one
        # alternation of 10,000 `--api-key` values up front would cost ~90 ms of every such start.
        self._secrets, self._words = masks_of(secrets)

    @classmethod
    def for_argv(cls, argv: Sequence[str], secrets: SecretSpans | None = None) -> "Scrubber":
        """URL credentials of ``argv``; with ``secrets``, also the secret values themselves, so
        that a warning or an error line that quotes one (an exception's message, say) shows
        ``***`` too."""
        found = [u for u in map(url_userinfo, argv) if u]
        if secrets is not None:
            found += secret_texts(argv, secrets)
        return cls(found)

    def __call__(self, text: str) -> str:
        if self._secrets:
            text = mask_secrets(text, self._secrets, self._words)
        return mask_url_credentials(text)


NO_SCRUB = Scrubber()


def masked(data, scrub: Scrubber = NO_SCRUB):
    """A JSON-ready structure with URL credentials masked in every string (argv is masked
    separately, by position, before it gets here)."""
    if isinstance(data, str):
        return scrub(data)
    if isinstance(data, dict):
        return {k: masked(v, scrub) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [masked(v, scrub) for v in data]
    return data
