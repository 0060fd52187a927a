"""Find and read a model's config.json offline: a local directory or the Hugging Face cache.

Adapter: file reads only, never the network. Where vLLM would look:

* ``--hf-config-path`` when given (vLLM loads the config from there), else the model;
* a local directory holding config.json;
* the Hugging Face hub cache: ``--download-dir`` (vLLM downloads there), then
  ``HF_HUB_CACHE`` / ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
  ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``; inside it
  ``models--ORG--NAME/snapshots/<commit>/config.json``, the commit taken from
  ``refs/<revision>`` (``--revision``, default ``main``) or given as the revision itself.

Only regular files are opened (a FIFO named config.json would block), and every problem —
an incomplete download, a ref that names a missing snapshot, bytes that are not JSON — becomes
a one-line reason.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping

from ..core.model import ModelFacts, classify

_COMMIT = r"^[0-9a-f]{40}$"
MAX_CONFIG_BYTES = 64 * 2**20  # a config.json is kilobytes; anything this big is not one


def hub_cache_dirs(env: Mapping[str, str], download_dir: str | None) -> list[str]:
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


def is_hub_id(model: str) -> bool:
    return model.count("/") == 1 and not model.startswith(("/", ".", "~")) and "\\" not in model


def _regular_file(path: str) -> str | None:
    """None when ``path`` is a regular file (links followed); otherwise why it is not usable."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "dangling link" if os.path.islink(path) else "missing"
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte or an unencodable name
        return getattr(exc, "strerror", None) or "not a usable path"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    return None


def locate_config(
    model: str,
    env: Mapping[str, str],
    revision: str | None = None,
    download_dir: str | None = None,
) -> tuple[str | None, str]:
    """Path of config.json for ``model`` and how it was found, or (None, why not)."""
    local = os.path.expanduser(model)
    if os.path.isdir(local):
        candidate = os.path.join(local, "config.json")
        problem = _regular_file(candidate)
        if problem is None:
            return candidate, f"config.json in {local}"
        if problem == "missing":
            return None, f"{local} has no config.json"
        return None, f"{candidate}: {problem}"
    if not is_hub_id(model):
        return None, f"{model} is neither a local directory nor a Hugging Face repository id"
    rev = revision or "main"
    folder = "models--" + model.replace("/", "--")
    looked: list[str] = []
    incomplete: list[str] = []
    for cache in hub_cache_dirs(env, download_dir):
        repo = os.path.join(cache, folder)
        looked.append(cache)
        if re.match(_COMMIT, rev):
            commit, why = rev, None
        else:
            commit, why = _read_ref(os.path.join(repo, "refs", rev))
        if commit is None:
            if why:
                incomplete.append(why)
            continue
        snapshot = os.path.join(repo, "snapshots", commit)
        candidate = os.path.join(snapshot, "config.json")
        problem = _regular_file(candidate)
        if problem is None:
            return candidate, f"Hugging Face cache ({snapshot})"
        if not os.path.isdir(snapshot):
            incomplete.append(f"refs/{rev} names snapshot {commit[:12]}, which is missing in {cache}")
        elif problem != "missing":
            incomplete.append(f"{candidate} is a {problem} (incomplete download?)")
        else:
            incomplete.append(f"snapshot {commit[:12]} in {cache} has no config.json (incomplete download?)")
    if incomplete:
        return None, f"{model}@{rev} is only partly in the Hugging Face cache: {'; '.join(incomplete)}"
    return None, f"{model}@{rev} is not in the Hugging Face cache ({', '.join(looked)})"


def _read_ref(path: str) -> tuple[str | None, str | None]:
    """The commit a ``refs/<revision>`` file names; (None, why) when it is there but unusable."""
    if _regular_file(path) is not None:
        return None, None
    try:
        with open(path, "rb") as handle:
            raw = handle.read(256)
    except (OSError, ValueError) as exc:
        return None, f"cannot read {path} ({exc.strerror or exc})"
    text = raw.decode("ascii", "replace").strip()
    if not re.match(_COMMIT, text):
        return None, f"{path} does not hold a commit hash"
    return text, None


def read_json_file(path: str) -> tuple[object | None, str | None]:
    """A JSON file's content, or (None, a one-line reason). Never raises."""
    problem = _regular_file(path)
    if problem is not None:
        return None, f"{path}: {problem}"
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except (OSError, ValueError) as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    if len(raw) > MAX_CONFIG_BYTES:
        return None, f"{path} is larger than {MAX_CONFIG_BYTES // 2**20} MiB"
    try:
        return json.loads(raw), None
    except RecursionError:
        return None, f"{path} is nested too deeply to read"
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, 5000-digit numbers
        return None, f"{path} is not valid JSON ({str(exc)[:120]})"


def read_config(path: str) -> tuple[dict[str, object] | None, str | None]:
    """config.json as a dict, or (None, a one-line reason)."""
    data, problem = read_json_file(path)
    if problem is not None:
        return None, problem
    if not isinstance(data, dict):
        return None, f"{path} is not a JSON object"
    return data, None


def model_facts(
    model: str | None,
    env: Mapping[str, str],
    hf_config_path: str | None = None,
    revision: str | None = None,
    download_dir: str | None = None,
    hf_overrides: object = None,
    known=None,
) -> ModelFacts:
    """Everything that can be said offline about the model vLLM will load.

    ``known``: a function giving the known-checkpoint table entry for ``model``'s name (or
    None); called only when no config.json can be read.
    """
    if model is None and hf_config_path is None:
        return ModelFacts(name=None, note="no model given: vLLM serves its default model")
    where = hf_config_path or model
    path, how = locate_config(where, env, revision if not hf_config_path else None, download_dir)
    if path is not None:
        config, problem = read_config(path)
        if config is not None:
            if hf_config_path:
                how = f"--hf-config-path: {how}"
            facts = classify(model, config, how, hf_overrides)
            return facts if hf_config_path else facts._replace(directory=os.path.dirname(path))
        how = problem
    return classify(model, None, None, hf_overrides, missing_reason=how, known=known() if known else None)
