"""Find the vLLM that will run, and its version, without importing it (adapter).

``import vllm`` costs seconds and must happen only at the hand-over. The version comes from
the package metadata; when vLLM is not importable here (dsv4-launch installed with pipx, say),
from the metadata next to the interpreter of the ``vllm`` script on PATH.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping, Optional

from .records import record


@record
class VllmInstall:
    version: Optional[str]
    importable: bool  # vLLM can run in this process
    executable: Optional[str] = None  # the `vllm` on PATH, used when not importable
    note: Optional[str] = None  # how the version was found, or why it is unknown


def find_vllm(env: Mapping[str, str]) -> VllmInstall:
    spec = importlib.util.find_spec("vllm")
    if spec is not None:
        version = _version_beside_package(spec) or _version_from_metadata() or _version_file(spec)
        note = None if version else "vLLM is importable but its version could not be read"
        return VllmInstall(version=version, importable=True, note=note)
    import shutil  # only here: vLLM is not importable, look on PATH

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


def _read_metadata_version(metadata: str) -> Optional[str]:
    try:
        with open(metadata, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
                if not line.strip():
                    break  # end of the headers
    except OSError:
        pass
    return None


def _version_beside_package(spec) -> Optional[str]:
    """``site-packages/vllm-X.dist-info/METADATA`` next to ``site-packages/vllm/``.

    The same answer as ``importlib.metadata.version("vllm")`` for a normal install, without
    importing importlib.metadata (it pulls in email, zipfile, socket…: ~15 ms per start).
    """
    for folder in spec.submodule_search_locations or ():
        site = os.path.dirname(os.path.abspath(folder))
        found = sorted(glob.glob(os.path.join(glob.escape(site), "vllm-*.dist-info", "METADATA")))
        if len(found) == 1:
            return _read_metadata_version(found[0])
    return None


def _version_from_metadata() -> Optional[str]:
    """Editable and unusual installs: ask importlib.metadata (slower, always right)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return None


def _version_file(spec) -> Optional[str]:
    """Source checkouts: vllm/_version.py written by setuptools-scm."""
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            with open(os.path.join(folder, "_version.py"), encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            continue
        m = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", text)
        if m:
            return m.group(1)
    return None


def _shebang(exe: str) -> Optional[list[str]]:
    """The words of a script's ``#!`` line (``[]`` for a bare one); None when it has none."""
    try:
        with open(exe, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return first[2:].split() if first.startswith("#!") else None


def _version_beside_script(exe: str) -> Optional[str]:
    """Read ``vllm-X.dist-info`` in the environment of the script's interpreter."""
    words = _shebang(exe)
    if words is None:
        return None
    interpreter = words[0] if words else ""
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(exe)))
    if interpreter and not interpreter.endswith("/env"):
        prefix = os.path.dirname(os.path.dirname(interpreter))
    pattern = os.path.join(glob.escape(prefix), "lib", "python3*", "site-packages", "vllm-*.dist-info", "METADATA")
    for metadata in sorted(glob.glob(pattern)):
        version = _read_metadata_version(metadata)
        if version:
            return version
    return None


def interpreter_of(install: VllmInstall) -> Optional[str]:
    """The Python that runs vLLM: this one, or the one in the `vllm` script's shebang."""
    import sys

    if install.importable:
        return sys.executable
    if install.executable is None:
        return None
    words = _shebang(install.executable) or []
    if words and not words[0].endswith("/env"):
        return words[0]
    if len(words) > 1:
        import shutil

        return shutil.which(words[1])
    return None
