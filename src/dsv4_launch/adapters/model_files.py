"""Find and read a model's config.json offline: a local directory or the Hugging Face cache.

Adapter: file reads only, never the network. Where vLLM would look: ``--hf-config-path`` when
given, else the model; a local directory holding config.json; the hub cache (``--download-dir``,
then huggingface_hub's own: ``hub_cache``), ``models--ORG--NAME/snapshots/<commit>/config.json``
with the commit from ``refs/<revision>`` (default ``main``) or the revision itself. Offline mode
(``hf_offline``) is read here only. Only regular files are opened, never in a way that can block
(``open_regular``: a FIFO named config.json), and every problem — an incomplete download, a ref
that names a missing snapshot, bytes that are not JSON — becomes a one-line reason.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping

from ..core.credentials import excerpt
from ..core.model import ModelFacts, classify

_COMMIT = r"^[0-9a-f]{40}$"
MAX_CONFIG_BYTES = 64 * 2**20  # a config.json is kilobytes; anything this big is not one


# huggingface_hub/constants.py (2.4.0, in the vLLM 0.24.0-0.33.0 environments; the same
# reading since the 0.2x releases vLLM 0.24 allows):
#   ENV_VARS_TRUE_VALUES = {"1", "ON", "YES", "TRUE"};  _is_true(v) = v.upper() in it
#   default_home = join(expanduser("~"), ".cache")
#   HF_HOME = expandvars(expanduser(getenv("HF_HOME", join(getenv("XDG_CACHE_HOME", default_home), "huggingface"))))
#   HUGGINGFACE_HUB_CACHE = getenv("HUGGINGFACE_HUB_CACHE", join(HF_HOME, "hub"))
#   HF_HUB_CACHE = expandvars(expanduser(getenv("HF_HUB_CACHE", HUGGINGFACE_HUB_CACHE)))
#   HF_HUB_OFFLINE = _is_true(environ.get("HF_HUB_OFFLINE") or environ.get("TRANSFORMERS_OFFLINE"))
# and every download does cache_dir = str(Path(cache_dir).expanduser().resolve())
# (file_download.py, _snapshot_download.py): vLLM passes --download-dir as cache_dir, and reads
# huggingface_hub.constants.HF_HUB_OFFLINE itself (vllm/engine/arg_utils.py,
# vllm/transformers_utils/config.py).
HF_TRUE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})


def hf_offline(env: Mapping[str, str]) -> bool:
    """Offline mode as huggingface_hub (and so vLLM and transformers) reads it: ``HF_HUB_OFFLINE``,
    or when that is unset or empty ``TRANSFORMERS_OFFLINE``, is ``1``/``ON``/``YES``/``TRUE`` in
    any case — no blanks stripped (``" 1"`` is not on), and ``HF_HUB_OFFLINE=0`` wins over
    ``TRANSFORMERS_OFFLINE=1``. The one reader of offline mode in dsv4-launch."""
    value = env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE")
    return value is not None and value.upper() in HF_TRUE_VALUES


def expand_user(path: str, env: Mapping[str, str]) -> str:
    """``os.path.expanduser`` (posixpath) with ``HOME`` taken from ``env``: ``~`` and ``~/x`` →
    ``$HOME`` (the password database when HOME is unset), ``~name`` → that user's home; left as
    it is when there is none."""
    if not path.startswith("~"):
        return path
    end = path.find("/", 1)
    end = len(path) if end < 0 else end
    try:
        import pwd

        if end == 1:
            home = env["HOME"] if "HOME" in env else pwd.getpwuid(os.getuid()).pw_dir
        else:
            home = pwd.getpwnam(path[1:end]).pw_dir
    except (KeyError, ValueError, OSError, ImportError):
        return path
    return (home.rstrip("/") + path[end:]) or "/"


_VAR = r"\$(\w+|\{[^}]*\})"  # posixpath.expandvars' own pattern (re.ASCII)


def expand_vars(path: str, env: Mapping[str, str]) -> str:
    """``os.path.expandvars`` (posixpath) over ``env``: ``$NAME`` and ``${NAME}`` replaced when
    set (an empty value too), left as written when not; no recursion into the values (each match
    is replaced once, left to right, as posixpath's loop does)."""
    if "$" not in path:
        return path

    def value(m: re.Match) -> str:
        name = m.group(1)
        return env.get(name[1:-1] if name.startswith("{") else name, m.group(0))

    return re.sub(_VAR, value, path, flags=re.ASCII)


def hub_cache(env: Mapping[str, str]) -> str:
    """``huggingface_hub.constants.HF_HUB_CACHE`` for ``env``, as a download then uses it
    (``Path(cache_dir).expanduser()``): precedence HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE,
    HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub — a variable set to
    the empty string counts as set, as ``os.getenv`` has it."""
    default_home = os.path.join(expand_user("~", env), ".cache")
    hf_home = env.get("HF_HOME", os.path.join(env.get("XDG_CACHE_HOME", default_home), "huggingface"))
    hf_home = expand_vars(expand_user(hf_home, env), env)
    legacy = env.get("HUGGINGFACE_HUB_CACHE", os.path.join(hf_home, "hub"))
    cache = expand_vars(expand_user(env.get("HF_HUB_CACHE", legacy), env), env)
    return expand_user(cache, env) or "."


def hub_cache_dirs(env: Mapping[str, str], download_dir: str | None) -> list[str]:
    """Where vLLM's downloads look: ``--download-dir`` (``~`` expanded, as huggingface_hub
    expands a cache_dir; no ``$VAR``), then huggingface_hub's own cache."""
    return ([expand_user(download_dir, env)] if download_dir else []) + [hub_cache(env)]


def is_hub_id(model: str) -> bool:
    """``org/name``, or a bare ``name`` (the hub's older ids, cached as ``models--name``)."""
    return bool(model) and model.count("/") <= 1 and not model.startswith(("/", ".", "~")) and "\\" not in model


# vLLM reads the model's config first (ModelConfig.__post_init__: get_config(self.hf_config_path or
# self.model, …, self.config_format), vllm/config/model.py:681@0.33.0, :621@0.29.0, :535@0.24.0). With
# config_format "auto", a model that is not an existing path is looked up as a Hugging Face repository
# id, which huggingface_hub validates before any network or cache access (at most one "/", no leading
# "/", ".", "~"); every failure there becomes ValueError("Invalid repository ID or local directory
# specified") — vllm/transformers_utils/config.py:923@0.33.0, :734@0.29.0, :697@0.24.0. vLLM expands
# no "~" (repo_utils.file_or_path_exists: Path(model).exists()).
MISSING_MODEL_REFERENCE = "vllm/transformers_utils/config.py:923@0.33.0"


def looks_like_path(model: str) -> bool:
    """A model argument that can only be a path: a Hugging Face repository id has at most one
    "/" and never starts with "/", "." or "~" (a URI such as ``s3://…`` is not one)."""
    if "://" in model:
        return False
    return model.startswith(("/", "./", "../", "~")) or model in (".", "..") or model.count("/") > 1


def missing_local_model(args, env: Mapping[str, str]) -> str | None:
    """The one line for a model path vLLM certainly fails on — it does not exist, and nothing
    else supplies the config (``--hf-config-path``, a ``--config-format`` other than auto, a
    redirect, ModelScope) — else None. ``args``: the ``ServeArgs``."""
    model = args.model
    if not isinstance(model, str) or not model or args.model_source in (None, "vLLM default"):
        return None
    if not looks_like_path(model) or args.value("hf_config_path") or args.value("config_format") not in (None, "auto"):
        return None
    if env.get("VLLM_MODEL_REDIRECT_PATH") or env.get("VLLM_USE_MODELSCOPE", "").strip().lower() in ("1", "true"):
        return None
    try:
        if os.path.lexists(model):
            return None
    except (OSError, ValueError):  # a NUL byte: no file of that name either, but let vLLM say so
        return None
    hint = ""
    if model.startswith("~"):
        hint = " (vLLM does not expand '~': the shell left it as written, e.g. after '--model=' or in quotes)"
    return (f"model {model}: no such file or directory{hint}; vLLM fails on it before loading anything "
            f"(\"Invalid repository ID or local directory specified\", {MISSING_MODEL_REFERENCE}); "
            "give the directory that holds the checkpoint's config.json, or a Hugging Face repository id")


class NotRegular(OSError):
    """The path names a FIFO, a device, a socket or a directory: never read (it may block)."""


def open_regular(path: str):
    """``open(path, "rb")`` for a regular file only (links followed), without ever blocking: opened
    non-blocking (a FIFO with no writer, a tty), then checked on the open file itself — so
    nothing can swap a FIFO in between. Raises NotRegular for anything else, OSError/ValueError
    as ``open`` does. Every checkpoint or config file dsv4-launch reads goes through here."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{path}: not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _regular_file(path: str) -> str | None:
    """None when ``path`` is a regular file (links followed); otherwise why it is not usable."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "dangling link" if os.path.islink(path) else "missing"
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte or an unencodable name
        return getattr(exc, "strerror", None) or "not a usable path"
    return None if stat.S_ISREG(st.st_mode) else "not a regular file"


def locate_config(model: str, env: Mapping[str, str], revision: str | None = None,
                  download_dir: str | None = None) -> tuple[str | None, str]:
    """Path of config.json for ``model`` and how it was found, or (None, why not).

    The model is a local directory exactly as written, as vLLM tests it (``Path(model).exists()``
    in vllm/transformers_utils/repo_utils.py file_or_path_exists, 0.24.0-0.33.0): a ``~`` the shell
    did not expand (``--model=~/x``, a quoted ``'~/x'``) is not the home directory for vLLM, so
    not here either."""
    if os.path.isdir(model):
        candidate = os.path.join(model, "config.json")
        problem = _regular_file(candidate)
        if problem is None:
            return candidate, f"config.json in {model}"
        return None, f"{model} has no config.json" if problem == "missing" else f"{candidate}: {problem}"
    if not is_hub_id(model):
        return None, f"{model} is neither a local directory nor a Hugging Face repository id"
    rev = revision or "main"
    folder = "models--" + model.replace("/", "--")
    looked: list[str] = []
    incomplete: list[str] = []
    for cache in hub_cache_dirs(env, download_dir):
        repo = os.path.join(cache, folder)
        looked.append(cache)
        commit, why = (rev, None) if re.match(_COMMIT, rev) else _read_ref(os.path.join(repo, "refs", rev))
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
        with open_regular(path) as handle:
            raw = handle.read(256)
    except NotRegular:
        return None, None
    except OSError as exc:
        return None, f"cannot read {path} ({exc.strerror or exc})"
    except ValueError as exc:  # a NUL byte: no strerror
        return None, f"cannot read {path} ({exc})"
    text = raw.decode("ascii", "replace").strip()
    return (text, None) if re.match(_COMMIT, text) else (None, f"{path} does not hold a commit hash")


def read_json_file(path: str) -> tuple[object | None, str | None]:
    """A JSON file's content, or (None, a one-line reason). Never raises."""
    problem = _regular_file(path)
    if problem is not None:
        return None, f"{path}: {problem}"
    try:
        with open_regular(path) as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except NotRegular:
        return None, f"{path}: not a regular file"
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    except ValueError as exc:  # a NUL byte: no strerror
        return None, f"cannot read {path}: {exc}"
    if len(raw) > MAX_CONFIG_BYTES:
        return None, f"{path} is larger than {MAX_CONFIG_BYTES // 2**20} MiB"
    try:
        return json.loads(raw), None
    except RecursionError:
        return None, f"{path} is nested too deeply to read"
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, 5000-digit numbers
        return None, f"{path} is not valid JSON ({excerpt(str(exc), 120)})"


def read_config(path: str) -> tuple[dict[str, object] | None, str | None]:
    """config.json as a dict, or (None, a one-line reason)."""
    data, problem = read_json_file(path)
    if problem is not None:
        return None, problem
    return (data, None) if isinstance(data, dict) else (None, f"{path} is not a JSON object")


def model_facts(model: str | None, env: Mapping[str, str], hf_config_path: str | None = None,
                revision: str | None = None, download_dir: str | None = None, hf_overrides: object = None,
                known=None) -> ModelFacts:
    """Everything that can be said offline about the model vLLM will load.

    ``known``: a function giving the known-checkpoint table entry for ``model``'s name (or
    None); called only when no config.json can be read."""
    where = hf_config_path or model
    if where is None:
        return ModelFacts(name=None, note="no model given: vLLM serves its default model")
    how: str | None
    path, how = locate_config(where, env, revision if not hf_config_path else None, download_dir)
    if path is not None:
        config, problem = read_config(path)
        if config is not None:
            if hf_config_path:
                how = f"--hf-config-path: {how}"
            facts = classify(model, config, how, hf_overrides)
            return facts if hf_config_path else facts._replace(directory=os.path.dirname(path))
        how = problem
    facts = classify(model, None, None, hf_overrides, missing_reason=how, known=known() if known else None)
    if model and facts.known_id is None and facts.source in (None, "the name") and not hf_config_path:
        near = near_checkpoint(model)
        if near:
            facts = facts._replace(note=f"{facts.note}; not a known checkpoint: did you mean {near}?")
    return facts


def near_checkpoint(name: str) -> str | None:
    """The known checkpoint (data/checkpoints/) a Hugging Face id not in the table is a near miss
    of (``DeepSeek-V4-Flsh`` → ``deepseek-ai/DeepSeek-V4-Flash``), as the table spells it; None
    when none is close or the name is no repository id. Read only on this path: the name is
    neither downloaded nor known."""
    wanted = name.strip().rstrip("/").lower()
    if not wanted or looks_like_path(wanted) or "://" in wanted or "\\" in wanted or len(wanted) > 200:
        return None
    import difflib

    from .checkpoints import load_checkpoints

    table = load_checkpoints()
    org, _, repo = wanted.rpartition("/")
    # Judged on the repository's name (a shared organisation makes any two ids look alike:
    # deepseek-ai/DeepSeek-V3 is no near miss of deepseek-ai/DeepSeek-V4-Pro); of equally near
    # names, the one in the organisation given.
    scored = sorted(((difflib.SequenceMatcher(None, repo, key.split("/", 1)[1]).ratio(), key.split("/", 1)[0] == org,
                      key) for key in table), reverse=True)
    close = [key for ratio, _, key in scored[:1] if ratio >= 0.88]
    return None if not close or close[0] == wanted else str(table[close[0]].get("id") or close[0])
