"""Find the vLLM that will run, and its version, without importing it (adapter): ``import vllm``
costs seconds and happens only at the hand-over. The version comes from the package metadata, or,
vLLM not importable here (dsv4-launch installed with pipx), from the metadata beside the
interpreter of the ``vllm`` script on PATH.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping

from ..core.records import Record


class VllmInstall(Record):
    version: str | None
    importable: bool  # vLLM can run in this process
    executable: str | None = None  # the `vllm` on PATH, used when not importable
    note: str | None = None  # how the version was found, or why it is unknown
    location: str | None = None  # the vllm package folder, when importable
    assumed: bool = False  # the version was given (--vllm-version), not found: nothing installed is consulted


def assumed_vllm(version: str) -> VllmInstall:
    """The install ``plan/doctor/fit --vllm-version X`` plan for: release X's recorded option
    table and rows, whatever is (or is not) installed here."""
    return VllmInstall(version=version, importable=False, assumed=True,
                       note="assumed with --vllm-version: planned with that release's recorded option table and rules; "
                            "the installed vLLM, if any, is not consulted")


def find_vllm(env: Mapping[str, str]) -> VllmInstall:
    spec, broken = None, None
    try:
        spec = _find_spec("vllm")
    except Exception as exc:  # a broken ``vllm`` entry on sys.path, or a broken import hook
        broken = f"vLLM cannot be found in this environment ({type(exc).__name__})"
    if spec is not None:
        version = _version_beside_package(spec) or _version_from_metadata() or _version_file(spec)
        note = None if version else "vLLM is importable but its version could not be read"
        folders = list(spec.submodule_search_locations or ())
        location = folders[0] if folders else spec.origin
        return VllmInstall(version=version, importable=True, note=note, location=location)
    import shutil  # only here: vLLM is not importable, look on PATH

    exe = shutil.which("vllm", path=env.get("PATH"))
    if exe is None:
        unusable = _non_executable_vllm(env.get("PATH"))
        if unusable:
            note = f"{unusable} is not executable (chmod +x it, or put vLLM's own bin/ on PATH)"
        else:
            note = broken or "vLLM is not installed here"
        return VllmInstall(version=None, importable=False, note=note)
    version = _version_beside_script(exe)
    note = f"vLLM runs from {exe}" + (" (another environment)" if version else "; its version could not be read")
    return VllmInstall(version=version, importable=False, executable=exe, note=note)


def _find_spec(name: str):
    """``importlib.util.find_spec`` for a top-level name, without importing importlib.util (and
    contextlib with it) on every start: the import system's own finders, asked in order."""
    module = sys.modules.get(name)
    if module is not None:
        spec = getattr(module, "__spec__", None)
        if spec is None:
            raise ValueError(f"{name}.__spec__ is None")  # as importlib.util.find_spec says
        return spec
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = find(name, None) if find is not None else None
        if spec is not None:
            return spec
    return None


def _dist_info_metadata(site: str) -> list[str]:
    """``site/vllm-*.dist-info/METADATA`` files, sorted (glob without importing glob)."""
    try:
        names = os.listdir(site)
    except OSError:
        return []
    found = (os.path.join(site, n, "METADATA") for n in sorted(n for n in names if n.startswith("vllm-")
                                                                and n.endswith(".dist-info")))
    return [m for m in found if os.path.isfile(m)]


def _non_executable_vllm(path: str | None) -> str | None:
    """A file named ``vllm`` on PATH that shutil.which skipped because it cannot be run."""
    for folder in (path or "").split(os.pathsep):
        candidate = os.path.join(folder or ".", "vllm")
        if os.path.isfile(candidate) and not os.access(candidate, os.X_OK):
            return candidate
    return None


def _read_metadata_version(metadata: str) -> str | None:
    try:
        with open(metadata, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip() or None
                if not line.strip():
                    break  # end of the headers
    except OSError:
        pass
    return None


def _version_beside_package(spec) -> str | None:
    """``site-packages/vllm-X.dist-info/METADATA`` next to ``site-packages/vllm/``.

    The same answer as ``importlib.metadata.version("vllm")`` for a normal install, without
    importing importlib.metadata (it pulls in email, zipfile, socket…: ~15 ms per start)."""
    for folder in spec.submodule_search_locations or ():
        site = os.path.dirname(os.path.abspath(folder))
        found = _dist_info_metadata(site)
        if len(found) == 1:
            return _read_metadata_version(found[0])
    return None


def _version_from_metadata() -> str | None:
    """Editable and unusual installs: ask importlib.metadata (slower, always right)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("vllm")
    except Exception:  # PackageNotFoundError, or metadata too broken to read
        return None


def _version_file(spec) -> str | None:
    """Source checkouts: vllm/_version.py written by setuptools-scm."""
    for folder in spec.submodule_search_locations or ():
        try:
            with open(os.path.join(folder, "_version.py"), encoding="utf-8", errors="replace") as handle:
                text = handle.read(65536)
        except OSError:
            continue
        m = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", text)
        if m:
            return m.group(1)
    return None


# pip writes this second line when the interpreter's path is too long for a ``#!`` line:
#   #!/bin/sh
#   '''exec' "/very/long/venv/bin/python" "$0" "$@"
_PIP_SH_EXEC = r"""^'''exec' (?:"([^"]+)"|(\S+)) "\$0" "\$@"$"""
_PYTHON_NAME = r"^(python|pypy)(\d+(\.\d+)*)?$"


def script_lines(exe: str) -> list[str]:
    """The first two lines of a script (decoded leniently); [] when unreadable."""
    try:
        with open(exe, "rb") as handle:
            head = handle.read(8192)
    except (OSError, ValueError):
        return []
    return [line.decode("utf-8", "replace").strip() for line in head.splitlines()[:2]]


def script_interpreter(exe: str, env_path: str | None = None) -> tuple[str | None, str | None]:
    """The program a script's ``#!`` line runs (resolving ``/usr/bin/env NAME`` and pip's
    ``/bin/sh`` trampoline), and its name as written; (None, None) when it has none."""
    lines = script_lines(exe)
    if not lines or not lines[0].startswith("#!"):
        return None, None
    words = lines[0][2:].split()
    if not words:
        return None, None
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        import shutil

        name = words[-1] if words[1] == "-S" and len(words) > 2 else words[1]
        return shutil.which(name, path=env_path), name
    if os.path.basename(words[0]) == "sh" and len(lines) > 1:
        m = re.match(_PIP_SH_EXEC, lines[1])
        if m:
            target = m.group(1) or m.group(2)
            return target, target
    return words[0], words[0]


def is_python(path: str | None) -> bool:
    """An executable file whose name says it is a Python interpreter."""
    if not path or not re.match(_PYTHON_NAME, os.path.basename(path)):
        return False
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _version_beside_script(exe: str) -> str | None:
    """Read ``vllm-X.dist-info`` in the environment of the script's interpreter."""
    interpreter, written = script_interpreter(exe)
    if written is None:
        return None
    if "/" in written and os.path.basename(os.path.dirname(written)) == "bin":
        prefix = os.path.dirname(os.path.dirname(written))
    else:  # `#!/usr/bin/env python3` and the like: the script's own environment
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(exe)))
    from .installer import site_dirs_of

    for metadata in (m for site in site_dirs_of(prefix) for m in _dist_info_metadata(site)):
        version = _read_metadata_version(metadata)
        if version:
            return version
    return None


def interpreter_of(install: VllmInstall, env_path: str | None = None) -> tuple[str | None, str | None]:
    """The Python that runs vLLM, verified to be one: this one, or the one the `vllm` script
    starts. (None, why not) when it cannot be told — a shell wrapper, a missing interpreter."""
    if install.importable:
        return sys.executable, None
    if install.executable is None:
        return None, "no vLLM installed"
    interpreter, written = script_interpreter(install.executable, env_path)
    if written is None:
        return None, f"{install.executable} is not a script with a #! line"
    if interpreter is None or not os.path.exists(interpreter):
        return None, f"{install.executable} runs {written}, which does not exist"
    if not is_python(interpreter):
        return None, f"{install.executable} is run by {written}, not by a Python interpreter"
    return interpreter, None
