"""The dsv4-launch vLLM plugin: the KV-cache fix wherever vLLM starts, with no command to change.

vLLM loads every ``vllm.general_plugins`` entry point in each of its processes
(``load_general_plugins()``: ``EngineArgs.__post_init__``, the engine core, the workers), so
plain ``vllm serve``, ``LLM(...)`` and Ray Serve's engines get dsv4-serve's KV rule where vLLM
resolves the dtype: the same pipeline from vLLM's ``EngineArgs`` (``pipeline.prepare_engine``;
the API server's own options never reach an engine, so rows on them are dsv4-serve's alone).
What it changes, logs and leaves alone (an explicit value, unverified releases,
``DSV4_LAUNCH_DISABLE=1``; twice loaded is harmless): docs/DESIGN.md, "The vLLM plugin".
"""

from __future__ import annotations

import os

from ..core.vllm.releases import VERIFIED_RELEASES as VERIFIED_RELEASES  # the one release table

MARK = "_dsv4_launch_patched"
LOGGER = "vllm.dsv4_launch"  # a child of vLLM's "vllm" logger: vLLM's handler, format and level
_failed: list[str] = []  # why register() did nothing, once said


def register() -> None:
    """The ``vllm.general_plugins`` entry point: patch vLLM's KV-dtype resolution (once). vLLM
    calls it bare (``load_general_plugins``): whatever fails, it does nothing and says why, once."""
    try:
        from ..core.settings import is_disabled

        if is_disabled(os.environ):
            return
        from .kv_patch import install

        install()
    except Exception as exc:  # never into vLLM: a failing import or patch leaves vLLM as it is
        _say_failed(exc)


def _say_failed(exc: Exception) -> None:
    if _failed:
        return
    try:  # the environment's credentials and URL credentials masked, then cut (credentials.excerpt)
        from ..core.credentials import excerpt
        from ..core.facts import SecretSpans
        from ..output.escape import printable
        from ..output.redact import Redactor

        redact = Redactor.for_argv((), SecretSpans(), env=os.environ)
        detail = printable(excerpt(redact(str(exc)), 200), redact)
    except Exception:  # the message is not worth a failure of its own
        detail = "(its message is not shown)"
    _failed.append(detail)
    import logging

    logging.getLogger(LOGGER).warning(
        "dsv4-launch plugin does nothing in this process: %s: %s (dsv4-serve still applies the KV-cache fix)",
        type(exc).__name__, detail)
