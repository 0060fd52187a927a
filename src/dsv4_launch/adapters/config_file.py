"""Read vLLM's ``--config`` YAML file (adapter). PyYAML is imported only when one is given.

Only a regular file is read: vLLM reads the file again after us, and a FIFO or ``/dev/stdin``
read here would be consumed before vLLM sees it. Such a file is left to vLLM (ConfigNotRead).
"""

from __future__ import annotations

import os
import stat

from ..vllm_cli.serve_args import ConfigFileError, ConfigNotRead

MAX_BYTES = 64 * 2**20

_KINDS = {
    stat.S_IFIFO: "FIFO (named pipe)",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFSOCK: "socket",
}


def load_config_file(path: str) -> dict[str, object]:
    """The YAML mapping vLLM would read, or ConfigFileError with a one-line reason.

    vLLM itself (``FlexibleArgumentParser.load_config_file``) uses ``yaml.safe_load`` and dies
    with a traceback on any of these problems, after its slow imports. PyYAML's C loader is
    used when present (4–5× faster); where it fails, the pure-Python loader vLLM uses decides.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConfigFileError(f"--config {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise ConfigFileError(f"--config {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigFileError(f"--config {path}: is a directory, not a YAML file")
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "special file")
        raise ConfigNotRead(
            f"--config {path} is a {kind}, not a regular file: dsv4-launch leaves it to vLLM unread, "
            "so the options in it are unknown here"
        )
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)[:120]
        raise ConfigFileError(f"--config {path}: cannot read it ({reason})") from None
    if len(text) > MAX_BYTES:
        raise ConfigNotRead(
            f"--config {path} is larger than {MAX_BYTES // 2**20} MiB: dsv4-launch leaves it to vLLM unread"
        )

    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    try:
        data = yaml.load(text, Loader=fast) if fast is not None else yaml.safe_load(text)
    except Exception:
        data = _load_like_vllm(yaml, path, text)
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise ConfigFileError(f"--config {path}: vLLM needs a mapping of option: value, but the file is {kind}")
    return data


def _load_like_vllm(yaml, path: str, text: str):
    """``yaml.safe_load`` — vLLM's own loader — and its error as one line."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise ConfigFileError(f"--config {path}: not valid YAML{where} ({problem})") from None
    except RecursionError:
        raise ConfigFileError(f"--config {path}: nested too deeply for vLLM's YAML reader") from None
    except (ValueError, OverflowError, TypeError) as exc:  # e.g. a 5000-digit integer
        raise ConfigFileError(f"--config {path}: vLLM's YAML reader fails on it ({str(exc)[:120]})") from None
