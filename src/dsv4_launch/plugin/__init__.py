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
loading it twice is harmless. Importing this module imports nothing heavy: the facts are
gathered only when vLLM resolves the dtype.
"""

from __future__ import annotations

import os

# Releases whose real code the plugin is tested against (tests/vllm_real/test_plugin.py, run
# for every release by tools/oracle_sweep.py; results in docs/release-matrix.md).
VERIFIED_RELEASES = ("0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0",
                     "0.30.0", "0.31.0", "0.32.0", "0.33.0")
MARK = "_dsv4_launch_patched"


def register() -> None:
    """The ``vllm.general_plugins`` entry point: patch vLLM's KV-dtype resolution (once)."""
    from ..core.settings import disable_switch

    if disable_switch(os.environ)[0]:
        return
    from .kv_patch import install

    install()
