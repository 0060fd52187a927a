"""What the oracle harness changes in vLLM and dsv4-launch for a test session, and nothing else.

On ``sys.path`` through ``PYTHONPATH`` (conftest.py puts this folder there, so vLLM processes the
oracles start get it too, through ``sitecustomize``), a hook patches each module when it is first
imported, or at once if it already is:

1. ``DSV4_ORACLE_AS_VERIFIED=X`` (set by tools/new_release.py step 4): dsv4-launch's release table
   (``core/vllm/releases.py``) treats X as verified — the newest verified release — so the oracles
   judge X's rows as X (a refusal stays a refusal, the plugin patches) instead of the warnings of an
   unverified release. A harness switch only: dsv4-launch itself never reads this variable.
2. vLLM's x86 CPU platform refuses every engine config without Triton's CPU backend (triton-cpu,
   which the package index lacks): ``raise RuntimeError("vLLM on x86 CPUs requires Triton
   (triton-cpu).")`` in ``CpuPlatform.check_and_update_config``, vllm/platforms/cpu.py:242-243@0.34.0.
   The oracles build configs and plan the KV cache; they run no kernel. That one ``raise`` is
   removed from the method's own source (recompiled in place, same file and line numbers); the
   rest of the method, and everything else that reads ``HAS_TRITON``, is vLLM's as released. A
   release without that exact line is left as it is.
"""

from __future__ import annotations

import importlib.abc
import os
import sys

TRITON_CHECK = 'raise RuntimeError("vLLM on x86 CPUs requires Triton (triton-cpu).")'


def as_verified(module) -> None:
    release = os.environ.get("DSV4_ORACLE_AS_VERIFIED")
    if not release or release in module.VERIFIED_RELEASES:
        return
    old = (module.VERIFIED_RELEASES, module.NEWEST_VERIFIED)
    module.VERIFIED_RELEASES, module.NEWEST_VERIFIED = (*old[0], release), release
    for name, other in list(sys.modules.items()):  # names bound by ``from … import`` before this ran
        if name.startswith("dsv4_launch.") and other is not module:
            for attr, was in zip(("VERIFIED_RELEASES", "NEWEST_VERIFIED"), old):
                if getattr(other, attr, None) is was:
                    setattr(other, attr, getattr(module, attr))


def without_triton_check(module) -> None:
    import inspect
    import textwrap

    platform = module.CpuPlatform
    method = platform.__dict__.get("check_and_update_config")
    func = getattr(method, "__func__", None)
    if func is None or getattr(func, "_oracle_stand_in", False):
        return
    lines, first = inspect.getsourcelines(func)
    source = "".join(lines)
    if source.count(TRITON_CHECK) != 1:
        return
    source = source.replace(TRITON_CHECK, "pass  # oracle harness: stands in for triton-cpu")
    namespace: dict = {}
    code = compile("\n" * (first - 1) + textwrap.dedent(source), inspect.getsourcefile(func) or "<cpu>", "exec")
    exec(code, module.__dict__, namespace)  # the module's own globals: the method sees what it saw
    patched = namespace["check_and_update_config"]
    patched.__func__._oracle_stand_in = True
    platform.check_and_update_config = patched


PATCHES = {"dsv4_launch.core.vllm.releases": as_verified, "vllm.platforms.cpu": without_triton_check}


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                run = spec.loader.exec_module

                def exec_module(module, run=run):
                    run(module)
                    PATCHES[name](module)

                spec.loader.exec_module = exec_module
                return spec
        return None


def install() -> None:
    if not any(isinstance(f, _Hook) for f in sys.meta_path):
        sys.meta_path.insert(0, _Hook())
    for name, patch in PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
