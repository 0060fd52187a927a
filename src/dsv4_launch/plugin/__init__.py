"""The dsv4-launch vLLM plugin: the KV-cache fix wherever vLLM starts, with no command to change.

vLLM loads every ``vllm.general_plugins`` entry point in each of its processes
(``load_general_plugins()``: ``EngineArgs.__post_init__``, the engine core, the workers), so
once dsv4-launch is installed in vLLM's environment, plain ``vllm serve``, ``LLM(...)`` and
Ray Serve's engines get the same KV rule as ``dsv4-serve``: where vLLM resolves the KV-cache
dtype (``resolve_kv_cache_dtype_string`` in ``vllm/engine/arg_utils.py``), an ``auto`` that
would crash on the fp8_ds_mla layout becomes ``fp8``, with the same reason, in one line
through vLLM's logger.

Safe by construction: it acts only where ``auto`` resolves to ``auto`` and dsv4-serve's plan
would set fp8 — the same pipeline, rows and facts, from vLLM's own ``EngineArgs`` instead of
argv (``commands/pipeline.prepare_engine``; the API server's own options, such as
``--tool-call-parser``, never reach an engine, so rows on them are dsv4-serve's alone); an
explicit value, another model, the plain-row backend and releases that resolve ``auto``
themselves are left alone. Its findings go to vLLM's log as warnings, what dsv4-serve would
refuse included (it cannot stop vLLM). It patches
nothing on a vLLM release it was not verified against (it says so once), nothing with
``DSV4_LAUNCH_DISABLE=1`` (vLLM's ``VLLM_PLUGINS`` allow-list can leave it unloaded), and
loading it twice is harmless; if anything in it fails, it does nothing and says so once (vLLM
does not catch a plugin's exception). Importing this module imports nothing heavy: the facts are
gathered only when vLLM resolves the dtype.
"""

from __future__ import annotations

import os

from ..core.vllm.releases import VERIFIED_RELEASES as VERIFIED_RELEASES  # the one release table

MARK = "_dsv4_launch_patched"
LOGGER = "vllm.dsv4_launch"  # a child of vLLM's "vllm" logger: vLLM's handler, format and level
_failed: list[str] = []  # why register() did nothing, once said


def register() -> None:
    """The ``vllm.general_plugins`` entry point: patch vLLM's KV-dtype resolution (once).

    vLLM does not catch a plugin's exception (``load_general_plugins`` calls ``func()`` bare), so
    anything raised here would stop every vLLM process: whatever fails, the plugin does nothing
    and says why, once, through vLLM's logger."""
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
        from ..core.args import SecretSpans
        from ..core.credentials import excerpt
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
