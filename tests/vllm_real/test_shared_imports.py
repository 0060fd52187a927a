"""The recorded import sets are what the real vLLM imports: ``import vllm.entrypoints.cli.main``
in a fresh interpreter of this release leaves in ``sys.modules`` exactly the standard-library
modules and third-party packages benchmarks/vllm_imports/vllm-<release>.json says
(tools/record_vllm_imports.py). The benchmark's stand-in for vLLM imports that set, and
tests/project/test_imports.py allows on the hand-over path what every recorded release imports itself
(pynvml's ctypes.util, subprocess, shutil, tempfile) — so a start pays nothing for those.

Nothing is faked: the real vLLM (CPU build), in a fresh interpreter.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_recorded_import_set_is_this_releases(real_vllm):
    sys.path.insert(0, str(ROOT / "tools"))
    from record_vllm_imports import record

    version = importlib.metadata.version("vllm").split("+")[0]
    now = record(sys.executable)
    # what tests/project/test_imports.py lets dsv4-serve import before the hand-over: every release imports it too
    assert {"ctypes.util", "subprocess", "shutil", "tempfile", "json", "argparse"} <= set(now["stdlib"])
    path = ROOT / "benchmarks" / "vllm_imports" / f"vllm-{version}.json"
    pinned = f" {version} " in " " + _pinned_releases() + " "
    if not path.exists() and not pinned:  # the benchmark measures the releases CI pins (CI_RELEASES)
        pytest.skip(f"no recorded import set for vLLM {version} (recorded: the releases .ci/run pins)")
    assert path.exists(), f"no recorded import set for vLLM {version}: tools/record_vllm_imports.py --write"
    recorded = json.loads(path.read_text(encoding="utf-8"))
    assert set(now["stdlib"]) == set(recorded["stdlib"])
    assert set(now["third_party"]) == set(recorded["third_party"])


def _pinned_releases() -> str:
    from dsv4_launch.core.vllm.releases import CI_RELEASES  # what .ci/run pins

    return " ".join(CI_RELEASES)
