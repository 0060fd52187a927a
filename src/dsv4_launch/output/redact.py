"""Secrets out of everything printed, applied to values before anything is serialised.

Secret values are found by position: the parse of the arguments records exactly which tokens
vLLM's parser gives to ``--api-key``, ``--hf-token``, ``--watermark-config`` and the JSON
options that may carry credentials, in every spelling (``vllm_cli/secrets.py``). Those spans
become ``***``; credentials in URLs (``https://user:PASS@host``) are masked in every string.
Environment variables are never printed, so there is nothing to mask there.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..vllm_cli.secrets import AFTER_EQ, WHOLE, SecretSpans
from .escape import mask_url_credentials

MASK = "***"


def masked_argv(argv: Sequence[str], secrets: SecretSpans) -> list[str]:
    """``argv`` with secret spans as ``***`` and URL credentials masked; linear in its size."""
    out = []
    for i, token in enumerate(argv):
        if (i, WHOLE) in secrets.spans:
            token = MASK
        elif (i, AFTER_EQ) in secrets.spans:
            token = token.partition("=")[0] + "=" + MASK
        out.append(mask_url_credentials(token))
    return out


def masked(data):
    """A JSON-ready structure with URL credentials masked in every string (argv is masked
    separately, by position, before it gets here)."""
    if isinstance(data, str):
        return mask_url_credentials(data)
    if isinstance(data, dict):
        return {k: masked(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [masked(v) for v in data]
    return data
