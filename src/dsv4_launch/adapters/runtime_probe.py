"""What the Python that runs vLLM has: torch and its CUDA architectures, FlashInfer and its
SM120 DeepSeek-V4 kernels, vLLM's own requirements, the vLLM plugins installed (adapter).

The probe runs in a child process of *that* interpreter (verified a Python first:
``vllm_install.interpreter_of``), so importing torch costs this process nothing; it never touches
a GPU (``CUDA_VISIBLE_DEVICES=""``; the arch list is a build-time string). **Isolation**: the child
never imports code from the current directory or the model's folder (a ``json.py`` there): a fresh
empty temporary directory, ``PYTHONSAFEPATH=1`` and ``''`` removed from ``sys.path`` first (3.10
has no ``-P``), stdin closed, ``PYTHONINSPECT``/``PYTHONSTARTUP`` dropped. Not ``-I``: that also
ignores ``PYTHONPATH`` and the user's site-packages, which vLLM itself will see. What the
installation runs at start-up (``sitecustomize``, ``.pth``) is vLLM's environment too.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence

from ..core.credentials import excerpt

PLUGIN_GROUP = "vllm.general_plugins"

# Reads torch._C._cuda_getArchFlags (no CUDA init); the FlashInfer entry points vLLM's
# has_flashinfer_sparse_mla_sm120() checks, and asks the SM120 DSv4 decode dispatch table the
# (heads, top-k) membership has_flashinfer_sparse_mla_sm120_config() asks
# (vllm/utils/flashinfer.py); vLLM's pinned requirements; the entry points of vLLM's plugin group.
PROBE_SOURCE = r"""
import sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
import importlib.metadata as md, importlib.util as iu, json, sys
out = {"python": sys.version.split()[0], "torch": None, "flashinfer": None, "vllm": None, "plugins": None}
if iu.find_spec("torch"):
    try:
        import torch
        flags = torch._C._cuda_getArchFlags() if hasattr(torch._C, "_cuda_getArchFlags") else ""
        out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda,
                        "arch_flags": (flags or "").split()}
    except Exception as exc:
        out["torch_error"] = type(exc).__name__ + ": " + str(exc)[:4000]  # bounded; cut by the parent, masked first
if iu.find_spec("flashinfer"):
    fi = {"version": None, "sm120_sparse_mla": False, "sm120_dsv4_decode": None}
    for dist in ("flashinfer-python", "flashinfer"):
        try:
            fi["version"] = md.version(dist)
            break
        except md.PackageNotFoundError:
            pass
    try:
        from flashinfer.autotuner import autotune
        from flashinfer.decode import trtllm_batch_decode_sparse_mla_dsv4, trtllm_batch_decode_with_kv_cache_mla
        fi["sm120_sparse_mla"] = all(map(callable, (autotune, trtllm_batch_decode_sparse_mla_dsv4,
                                                    trtllm_batch_decode_with_kv_cache_mla)))
    except Exception:
        pass
    try:
        import importlib
        table = getattr(importlib.import_module("flashinfer.mla._sparse_mla_sm120"), "_DECODE_DSV4_DISPATCH", None)
        if table is not None:
            pairs = json.loads(sys.argv[1]) if len(sys.argv) > 1 else []
            fi["sm120_dsv4_decode"] = {"%d,%d" % (h, k): (h, k) in table for h, k in pairs}
    except Exception:
        pass
    out["flashinfer"] = fi
try:
    out["vllm"] = {"version": md.version("vllm"),
                   "requires": [r.split(";")[0].strip() for r in (md.requires("vllm") or [])]}
except Exception:
    pass
try:
    eps = md.entry_points()
    group = eps.select(group="%(group)s") if hasattr(eps, "select") else eps.get("%(group)s", [])
    out["plugins"] = sorted(({"name": ep.name, "value": ep.value} for ep in group), key=lambda e: e["name"])
except Exception:
    pass
print(json.dumps(out))
""".replace("%(group)s", PLUGIN_GROUP)


def read_runtime(python: str, sm120_shapes: Sequence[tuple[int, int]] = (), timeout: float = 120,
                 env: Mapping[str, str] | None = None) -> tuple[dict | None, str | None]:
    """Run the probe with ``python``; (result, None) or (None, why not).

    ``sm120_shapes``: the (query heads, top-k) pairs vLLM will ask FlashInfer's SM120 DSv4
    decode table for; the answer is ``flashinfer.sm120_dsv4_decode["h,k"]``."""
    import tempfile

    child_env = dict(os.environ if env is None else env)
    child_env["CUDA_VISIBLE_DEVICES"] = ""  # the probe needs no GPU: nothing it imports may touch one
    child_env["PYTHONSAFEPATH"] = "1"  # 3.11+: no script directory on sys.path (the source does it too)
    for name in ("PYTHONINSPECT", "PYTHONSTARTUP"):
        child_env.pop(name, None)
    shapes = json.dumps([list(p) for p in sm120_shapes])
    try:
        with tempfile.TemporaryDirectory(prefix="dsv4-probe-") as neutral:  # nothing to import from
            done = subprocess.run([python, "-c", PROBE_SOURCE, shapes], capture_output=True, timeout=timeout,
                                  env=child_env, cwd=neutral, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"{python} did not answer within {timeout:.0f} s"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot run {python}: {getattr(exc, 'strerror', None) or exc}"
    stdout = done.stdout.decode("utf-8", "backslashreplace")
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "backslashreplace").strip().splitlines() or ["no output"])[-1]
        return None, f"{python} failed: {excerpt(last, 200)}"
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = None
    if not isinstance(result, dict):
        return None, f"{python} printed no result"
    if isinstance(result.get("torch_error"), str):  # the child's exception message: masked, then cut
        result["torch_error"] = excerpt(result["torch_error"], 200)
    return result, None
