"""Read vLLM's ``--config`` YAML file (adapter). PyYAML is imported only when one is given.

Only a regular file is read: vLLM reads it again after us, and a FIFO or ``/dev/stdin`` read
here would be consumed first; such a file is left to vLLM (ConfigNotRead). **Cost is bounded**:
YAML aliases let 300 bytes stand for hundreds of millions of values, which turning them into
options (``str``, ``json.dumps``, as vLLM does) expands; so the mapping's size *as expanded* is
counted (``expanded_size``, linear in the file) and a file past ``max(EXPANDED_LIMIT, 2 × its
length)`` is left to vLLM unread. A file without aliases never counts above twice its length.
"""

from __future__ import annotations

import os
import stat
from itertools import chain

from ..core.credentials import excerpt
from ..vllm_cli.serve_args import ConfigFileError, ConfigNotRead

MAX_BYTES = 64 * 2**20
EXPANDED_LIMIT = 4 * 2**20  # values + string characters, as the aliases expand

_KINDS = {stat.S_IFIFO: "FIFO (named pipe)", stat.S_IFCHR: "character device", stat.S_IFBLK: "block device",
          stat.S_IFSOCK: "socket"}


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
        raise ConfigNotRead(f"--config {path} is a {kind}, not a regular file: dsv4-launch leaves it to vLLM "
                            "unread, so the options in it are unknown here")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or excerpt(str(exc), 120)
        raise ConfigFileError(f"--config {path}: cannot read it ({reason})") from None
    if len(text) > MAX_BYTES:
        raise ConfigNotRead(f"--config {path} is larger than {MAX_BYTES // 2**20} MiB: dsv4-launch leaves it to vLLM "
                            "unread")

    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    try:
        data = yaml.load(text, Loader=fast) if fast is not None else yaml.safe_load(text)
    except Exception as exc:
        data = _after_the_c_loader(yaml, path, text, exc) if fast is not None else _load_like_vllm(yaml, path, text)
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise ConfigFileError(f"--config {path}: vLLM needs a mapping of option: value, but the file is {kind}")
    limit = max(EXPANDED_LIMIT, 2 * len(text))
    if expanded_size(data, limit) > limit:
        raise ConfigNotRead(f"--config {path}: its YAML aliases expand to more than {limit:,} values and characters: "
                            "dsv4-launch leaves it to vLLM unread, so the options in it are unknown here")
    return data


def expanded_size(data: object, limit: int) -> int:
    """The size of ``data`` with every shared object (a YAML alias) written out in full: one per
    value, plus the characters of each string. Each container is walked once, without recursion,
    stopping past ``limit``; a cycle (``a: &a [*a]``) counts once (vLLM's json.dumps fails on it)."""
    sizes: dict[int, int] = {}
    keep = [data]  # the containers whose id() is in ``sizes``, alive for the whole count

    def children(value):  # a dict's keys and values, a list's items
        return chain.from_iterable(value.items()) if isinstance(value, dict) else iter(value)

    def leaf(value: object) -> int | None:
        if isinstance(value, str):
            return 1 + len(value)
        return sizes.get(id(value)) if isinstance(value, (list, dict)) else 1

    top = leaf(data)
    if top is not None:
        return top
    sizes[id(data)] = 1  # in progress: a cycle back here counts 1
    stack = [(data, children(data), [1])]  # each container being walked, its items left, its size so far
    while stack:
        value, items, total = stack[-1]
        for child in items:
            known = leaf(child)
            if known is None:  # a container not seen yet: walk it first, then come back here
                sizes[id(child)] = 1
                keep.append(child)
                stack.append((child, children(child), [1]))
                break
            total[0] += known
            if total[0] > limit:
                return total[0]
        else:
            sizes[id(value)] = total[0]
            stack.pop()
            if stack:  # add it to its parent
                stack[-1][2][0] += total[0]
    return sizes[id(data)]


PURE_LOADER_BYTES = 2**20  # the pure-Python loader is slow (~1 MB/s, worse when nested): asked only below this


def _after_the_c_loader(yaml, path: str, text: str, exc: Exception):
    """The C loader failed: the pure-Python loader vLLM uses decides — except where that costs
    more than the file is worth. Nesting beyond libyaml's limit (1,000 levels) is past what
    vLLM's recursive reader survives (one Python frame or more per level, recursion limit
    1,000): that is its RecursionError, without paying the pure loader's quadratic scan
    (``"{" * 5000`` takes it 2 s, every time). A file over PURE_LOADER_BYTES gets the C
    loader's own error."""
    if "maximum nesting depth" in str(exc):
        raise ConfigFileError(f"--config {path}: nested too deeply for vLLM's YAML reader") from None
    if len(text) > PURE_LOADER_BYTES:
        raise _not_yaml(path, exc) from None
    return _load_like_vllm(yaml, path, text)


def _not_yaml(path: str, exc: Exception) -> ConfigFileError:
    """A YAML parser's error as one line: where and what, no value quoted."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or "malformed YAML"
    return ConfigFileError(f"--config {path}: not valid YAML{where} ({problem})")


def _load_like_vllm(yaml, path: str, text: str):
    """``yaml.safe_load`` — vLLM's own loader — and its error as one line."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _not_yaml(path, exc) from None
    except RecursionError:
        raise ConfigFileError(f"--config {path}: nested too deeply for vLLM's YAML reader") from None
    except (ValueError, OverflowError, TypeError) as exc:  # e.g. a 5000-digit integer, `api_key: !!int x`
        detail = _without_secrets(yaml, text, str(exc))  # the message may quote a value: masked before the cut
        raise ConfigFileError(f"--config {path}: vLLM's YAML reader fails on it ({excerpt(detail, 120)})") from None


def _without_secrets(yaml, text: str, message: str) -> str:
    """``message`` (vLLM's YAML reader failing on a value it quotes: ``invalid literal for int()
    with base 10: '…'``) with the file's secrets masked — read as plain text, every scalar a
    string (``yaml.BaseLoader``: no constructor runs, so the one that failed does not). PyYAML's
    constructors quote the value as they changed it (``!!float`` lower-cases it, ``!!int`` and
    ``!!float`` drop its ``_``, ``!!int`` quotes one ``:``-part of it): a quoted literal that is
    a piece of a secret so folded is masked too. Where even that reading fails, or its aliases
    expand past the limit, nothing of the message is said."""
    import re

    from ..vllm_cli.secrets import MASK, mask_secrets, masks_of
    from ..vllm_cli.serve_args import config_secrets

    def fold(value: str) -> str:
        return value.lower().replace("_", "")

    try:
        data = yaml.load(text, Loader=yaml.BaseLoader)
        limit = max(EXPANDED_LIMIT, 2 * len(text))
        if not isinstance(data, dict) or expanded_size(data, limit) > limit:
            return "a value it cannot read"
        secrets = config_secrets(data)
    except Exception:  # noqa: BLE001 — whatever fails here, say nothing of the message
        return "a value it cannot read"
    folded = [fold(s) for s in secrets]

    def literal(m: re.Match) -> str:
        quoted = fold(m.group(2))
        return m.group(1) + MASK + m.group(1) if quoted and any(quoted in f for f in folded) else m.group(0)

    message = re.sub(r"""(['"])((?:(?!\1)[^\\]|\\.)*)\1""", literal, message)
    return mask_secrets(message, *masks_of(secrets))
