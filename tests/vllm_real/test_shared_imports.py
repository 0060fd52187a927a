"""dsv4-serve imports nvidia-ml-py without ``ctypes.util`` (adapters/nvml.py); the real vLLM,
imported after it in the same process as at the hand-over, must still end up with the real
``ctypes.util`` loaded and bound on the ``ctypes`` package — so nothing in vLLM relied on our
import of it, and the ~8 ms are moved, not dropped, for a start.

Nothing is faked: the real vLLM (CPU build) and the real nvidia-ml-py, in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CODE = """
import json, sys
from dsv4_launch.adapters.nvml import _import_pynvml
_import_pynvml()
before = "ctypes.util" in sys.modules
import vllm.entrypoints.cli.main
import ctypes
util = getattr(ctypes, "util", None)
print(json.dumps({"before": before, "loaded": "ctypes.util" in sys.modules,
                  "bound": getattr(util, "__file__", None), "same": util is sys.modules.get("ctypes.util")}))
"""


def test_vllm_imports_ctypes_util_itself_after_our_nvml_import(real_vllm, tmp_path):
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["before"] is False  # our import did skip it
    assert seen["loaded"] is True and seen["same"] is True
    assert seen["bound"] and seen["bound"].endswith("util.py")
