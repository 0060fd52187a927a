"""How an environment was made, for install hints that work as written (adapter, error paths only),
told by what its installer leaves in it: pipx's ``pipx_metadata.json`` (even over uv) → ``pipx
inject NAME PKG``; uv tool's ``uv-receipt.toml`` → ``uv tool install SOURCE --with PKG`` (no pip in
it); conda's ``conda-meta/`` → that environment's pip (as vLLM's docs install it); else the
package's ``.dist-info/INSTALLER``: ``uv`` → ``uv pip install --python PY PKG``, anything else pip.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Sequence

from ..core.records import Record

PIPX, UV_TOOL, CONDA, UV, PIP = "pipx", "uv tool", "conda", "uv", "pip"


class Installer(Record):
    kind: str  # PIPX, UV_TOOL, CONDA, UV or PIP
    prefix: str  # the environment's root
    python: str  # its interpreter
    name: str | None = None  # pipx/uv tool: the app's environment name
    source: str | None = None  # uv tool: the receipt's local directory, when installed from one


def _dist_info(site_dirs: Sequence[str], project: str) -> str | None:
    """``site/<project>-X.dist-info`` (``project`` with underscores) in the first folder that has one."""
    head = f"{project}-"
    for site in site_dirs:
        try:
            names = sorted(os.listdir(site))
        except (OSError, TypeError):
            continue
        for name in names:
            if name.startswith(head) and name.endswith(".dist-info"):
                return os.path.join(site, name)
    return None


def _read(path: str, limit: int = 65536) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return None


def site_dirs_of(prefix: str) -> list[str]:
    """``prefix/lib/python3.*/site-packages`` (a venv's or conda environment's own)."""
    lib = os.path.join(prefix, "lib")
    try:
        pythons = sorted(n for n in os.listdir(lib) if n.startswith("python3"))
    except OSError:
        return []
    return [os.path.join(lib, n, "site-packages") for n in pythons]


def detect(prefix: str, python: str, site_dirs: Sequence[str] | None = None, project: str = "dsv4_launch") -> Installer:
    """How the environment at ``prefix`` (interpreter ``python``) was made; ``project`` is the
    distribution whose ``INSTALLER`` file is read when no tool marker is there."""
    prefix = os.path.normpath(prefix)
    metadata = os.path.join(prefix, "pipx_metadata.json")
    if os.path.isfile(metadata):
        name = os.path.basename(prefix)
        try:
            main = json.loads(_read(metadata) or "{}").get("main_package") or {}
            name = main.get("package") or name
        except (ValueError, AttributeError):
            pass
        return Installer(PIPX, prefix, python, name=name)
    receipt = os.path.join(prefix, "uv-receipt.toml")
    if os.path.isfile(receipt):
        name = os.path.basename(prefix)
        text = _read(receipt) or ""
        # the first requirement is the tool itself: { name = "dsv4-launch", directory = "/src" }
        m = re.search(r'\{\s*name\s*=\s*"([^"]+)"([^}]*)\}', text)
        source = None
        if m:
            name = m.group(1)
            d = re.search(r'\bdirectory\s*=\s*"([^"]+)"', m.group(2))
            source = d.group(1) if d else None
        return Installer(UV_TOOL, prefix, python, name=name, source=source)
    if os.path.isdir(os.path.join(prefix, "conda-meta")):
        return Installer(CONDA, prefix, python)
    info = _dist_info(site_dirs if site_dirs is not None else site_dirs_of(prefix), project)
    installer = (_read(os.path.join(info, "INSTALLER"), 256) or "").strip().lower() if info else ""
    return Installer(UV if installer == "uv" else PIP, prefix, python)


def this_environment() -> Installer:
    """How dsv4-launch itself was installed (``sys.prefix``, our own ``.dist-info``)."""
    return detect(sys.prefix, sys.executable, [p for p in sys.path if p and os.path.isdir(p)])


_q = shlex.quote


def add_command(env: Installer, package: str) -> str:
    """The one command that makes ``package`` importable in the environment ``env``."""
    if env.kind == PIPX:
        return f"pipx inject {_q(env.name or os.path.basename(env.prefix))} {_q(package)}"
    if env.kind == UV_TOOL:
        return f"uv tool install {_q(env.source or env.name or os.path.basename(env.prefix))} --with {_q(package)}"
    if env.kind == UV:
        return f"uv pip install --python {_q(env.python)} {_q(package)}"
    return f"{_q(env.python)} -m pip install {_q(package)}"


_WHERE = {PIPX: "dsv4-launch's pipx environment at {}",
          UV_TOOL: "dsv4-launch's uv tool environment at {}, which uv re-creates with it added",
          CONDA: "this conda environment at {}, with its pip as vLLM's own docs do"}


def where(env: Installer) -> str:
    return _WHERE.get(env.kind, "this environment").format(env.prefix)


def our_source() -> str:
    """What to install dsv4-launch from elsewhere: the local folder it was installed from (its
    ``direct_url.json``), else its name on the package index."""
    info = _dist_info([p for p in sys.path if p and os.path.isdir(p)], "dsv4_launch")
    text = _read(os.path.join(info, "direct_url.json")) if info else None
    try:
        url = json.loads(text).get("url", "") if text else ""
    except (ValueError, AttributeError):
        url = ""
    if isinstance(url, str) and url.startswith("file://"):
        from urllib.parse import unquote, urlsplit

        path = unquote(urlsplit(url).path)
        if os.path.isdir(path):
            return path
    return "dsv4-launch"


def plugin_command(vllm_python: str, source: str | None = None) -> str:
    """Install dsv4-launch (and so its vLLM plugin) into the environment whose interpreter is
    ``vllm_python``: that environment's own installer decides the command."""
    bindir = os.path.dirname(vllm_python)
    prefix = os.path.dirname(bindir) if os.path.basename(bindir) == "bin" else bindir
    env = detect(prefix, vllm_python, project="vllm")
    return add_command(env, source or our_source())
