"""Find and read a model's config.json offline: a local directory or the Hugging Face cache.

Adapter: file reads only, never the network. Where vLLM would look:

* ``--hf-config-path`` when given (vLLM loads the config from there), else the model;
* a local directory holding config.json;
* the Hugging Face hub cache: ``--download-dir`` (vLLM downloads there), then
  ``HF_HUB_CACHE`` / ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
  ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``; inside it
  ``models--ORG--NAME/snapshots/<commit>/config.json``, the commit taken from
  ``refs/<revision>`` (``--revision``, default ``main``) or given as the revision itself.
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional

from .model import ModelFacts, classify

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def hub_cache_dirs(env: Mapping[str, str], download_dir: Optional[str]) -> list[str]:
    def expand(path: str) -> str:
        if path.startswith("~") and env.get("HOME"):
            path = env["HOME"] + path[1:]
        return os.path.expanduser(path)

    dirs: list[str] = []
    if download_dir:
        dirs.append(expand(download_dir))
    explicit = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        dirs.append(expand(explicit))
    elif env.get("HF_HOME"):
        dirs.append(os.path.join(expand(env["HF_HOME"]), "hub"))
    else:
        xdg = env.get("XDG_CACHE_HOME")
        base = expand(xdg) if xdg else os.path.join(expand(env.get("HOME", "~")), ".cache")
        dirs.append(os.path.join(base, "huggingface", "hub"))
    return dirs


def locate_config(
    model: str,
    env: Mapping[str, str],
    revision: Optional[str] = None,
    download_dir: Optional[str] = None,
) -> tuple[Optional[str], str]:
    """Path of config.json for ``model`` and how it was found, or (None, why not)."""
    local = os.path.expanduser(model)
    if os.path.isdir(local):
        candidate = os.path.join(local, "config.json")
        if os.path.isfile(candidate):
            return candidate, f"config.json in {local}"
        return None, f"{local} has no config.json"
    if model.count("/") != 1 or model.startswith(("/", ".", "~")):
        return None, f"{model} is neither a local directory nor a Hugging Face repository id"
    rev = revision or "main"
    folder = "models--" + model.replace("/", "--")
    looked: list[str] = []
    for cache in hub_cache_dirs(env, download_dir):
        repo = os.path.join(cache, folder)
        looked.append(cache)
        commit = rev if _COMMIT.match(rev) else _read_ref(os.path.join(repo, "refs", rev))
        if commit is None:
            continue
        candidate = os.path.join(repo, "snapshots", commit, "config.json")
        if os.path.isfile(candidate):
            return candidate, f"Hugging Face cache ({os.path.dirname(candidate)})"
    return None, f"{model}@{rev} is not in the Hugging Face cache ({', '.join(looked)})"


def _read_ref(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def read_config(path: str) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """config.json as a dict, or (None, a one-line reason)."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, f"{path} is not valid JSON ({exc})"
    if not isinstance(data, dict):
        return None, f"{path} is not a JSON object"
    return data, None


def model_facts(
    model: Optional[str],
    env: Mapping[str, str],
    hf_config_path: Optional[str] = None,
    revision: Optional[str] = None,
    download_dir: Optional[str] = None,
    hf_overrides: Any = None,
) -> ModelFacts:
    """Everything that can be said offline about the model vLLM will load."""
    if model is None and hf_config_path is None:
        return ModelFacts(name=None, source="none", note="no model given: vLLM serves its default model")
    where = hf_config_path or model
    assert where is not None
    path, how = locate_config(where, env, revision if not hf_config_path else None, download_dir)
    if path is None:
        return classify(model, None, "name", hf_overrides, missing_reason=how)
    config, problem = read_config(path)
    if config is None:
        return classify(model, None, "name", hf_overrides, missing_reason=problem)
    if hf_config_path:
        how = f"--hf-config-path: {how}"
    return classify(model, config, how, hf_overrides)
