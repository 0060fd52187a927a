"""Find the vLLM that will run, and its version, without importing it (adapter).

``import vllm`` costs seconds and must happen only at the hand-over. The version comes from
the package metadata; when vLLM is not importable here (dsv4-launch installed with pipx, say),
from the metadata next to the interpreter of the ``vllm`` script on PATH.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional


@dataclass(frozen=True)
class VllmInstall:
    version: Optional[str]
    importable: bool  # vLLM can run in this process
    executable: Optional[str] = None  # the `vllm` on PATH, used when not importable
    note: Optional[str] = None  # how the version was found, or why it is unknown


def find_vllm(env: Mapping[str, str]) -> VllmInstall:
    if importlib.util.find_spec("vllm") is not None:
        try:
            return VllmInstall(version=importlib.metadata.version("vllm"), importable=True)
        except importlib.metadata.PackageNotFoundError:
            version = _version_file(importlib.util.find_spec("vllm"))
            note = None if version else "vLLM is importable but has no version metadata"
            return VllmInstall(version=version, importable=True, note=note)
    exe = shutil.which("vllm", path=env.get("PATH"))
    if exe is None:
        return VllmInstall(version=None, importable=False, note="vLLM is not installed here")
    version = _version_beside_script(exe)
    note = (
        f"vLLM runs from {exe} (another environment)"
        if version
        else f"vLLM runs from {exe}; its version could not be read"
    )
    return VllmInstall(version=version, importable=False, executable=exe, note=note)


def _version_file(spec) -> Optional[str]:
    """Source checkouts: vllm/_version.py written by setuptools-scm."""
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            text = (Path(folder) / "_version.py").read_text()
        except OSError:
            continue
        m = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", text)
        if m:
            return m.group(1)
    return None


def _version_beside_script(exe: str) -> Optional[str]:
    """Read ``vllm-X.dist-info`` in the environment of the script's interpreter."""
    try:
        with open(exe, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    interpreter = first[2:].strip().split()[0] if first[2:].strip() else ""
    prefix = Path(os.path.realpath(exe)).parent.parent
    if interpreter and not interpreter.endswith("/env"):
        prefix = Path(interpreter).parent.parent
    for metadata in sorted(prefix.glob("lib/python3*/site-packages/vllm-*.dist-info/METADATA")):
        try:
            for line in metadata.read_text(errors="replace").splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
                if not line.strip():
                    break
        except OSError:
            continue
    return None


def interpreter_of(install: VllmInstall) -> Optional[str]:
    """The Python that runs vLLM: this one, or the one in the `vllm` script's shebang."""
    import sys

    if install.importable:
        return sys.executable
    if install.executable is None:
        return None
    try:
        with open(install.executable, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if first.startswith("#!"):
        parts = first[2:].split()
        if parts and not parts[0].endswith("/env"):
            return parts[0]
        if len(parts) > 1:
            return shutil.which(parts[1])
    return None
