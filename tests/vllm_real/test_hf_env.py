"""The Hugging Face cache and offline mode as the installed huggingface_hub reads them (the one
in the vLLM environment), against dsv4-launch's reading (``adapters/model_files.py``): each
environment is given to a fresh interpreter that imports ``huggingface_hub.constants``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dsv4_launch.adapters.model_files import hf_offline, hub_cache

pytest.importorskip("huggingface_hub")

ASK = ("import json, pathlib, huggingface_hub.constants as c; "
       "print(json.dumps([str(pathlib.Path(c.HF_HUB_CACHE).expanduser()), c.HF_HUB_OFFLINE]))")

SPELLINGS = ["1", "0", "true", "TRUE", "On", "yes", "y", " 1", "", "2", "off"]


def _envs(home: str) -> list[dict[str, str]]:
    envs = [{"HOME": home, "HF_HUB_OFFLINE": s} for s in SPELLINGS]
    envs += [{"HOME": home, "TRANSFORMERS_OFFLINE": s} for s in SPELLINGS]
    envs += [{"HOME": home, "HF_HUB_OFFLINE": a, "TRANSFORMERS_OFFLINE": b} for a in ("", "0", "1") for b in ("0", "1")]
    envs += [
        {"HOME": home}, {"HOME": home, "HF_HOME": "~/hf"}, {"HOME": home, "HF_HOME": "$HOME/hf"},
        {"HOME": home, "HF_HOME": "${HOME}/hf"}, {"HOME": home, "HF_HOME": "$NOPE/x"}, {"HOME": home, "HF_HOME": ""},
        {"HOME": home, "HF_HUB_CACHE": "~/c", "HF_HOME": "/x"}, {"HOME": home, "HUGGINGFACE_HUB_CACHE": "$HOME/c2"},
        {"HOME": home, "HF_HUB_CACHE": "/a", "HUGGINGFACE_HUB_CACHE": "/b"}, {"HOME": home, "XDG_CACHE_HOME": "~/x"},
        {"HOME": home, "XDG_CACHE_HOME": "$HOME/x", "HF_HOME": "~/h"}, {"HOME": home, "HF_HOME": "$V", "V": "~/t"},
        {"HOME": home, "XDG_CACHE_HOME": ""}, {"HOME": home, "HF_HUB_CACHE": "~root/c"},
    ]
    return envs


def test_cache_and_offline_agree_with_huggingface_hub(tmp_path):
    home = str(tmp_path / "home")
    for env in _envs(home):
        full = {"PATH": "/usr/bin:/bin", **env}
        done = subprocess.run([sys.executable, "-c", ASK], env=full, capture_output=True, text=True, timeout=60,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        cache, offline = json.loads(done.stdout)
        ours = hub_cache(full)
        assert (str(Path(ours)) if ours else ".", hf_offline(full)) == (cache, offline), env
