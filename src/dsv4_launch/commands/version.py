"""``dsv4-serve --version`` / ``-V`` and ``dsv4-launch --version`` / ``-V``.

Three lines on stdout: dsv4-launch's version, the vLLM it would hand over to (version, and
where: the package folder when it runs in this process, the `vllm` script on PATH otherwise),
and the Python running it. vLLM is found the way the hand-over finds it
(``adapters/vllm_install.find_vllm``) and is not imported or started. ``vllm serve`` has no
``--version``/``-V`` in any release 0.24.0 … 0.33.0 (``data/serve-options-*.json``; only the
top-level ``vllm --version`` exists), so the bare flag is dsv4-serve's own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from .. import __version__
from ..adapters.vllm_install import VllmInstall, find_vllm
from ..output.escape import printable
from ..output.lines import Reporter, make_lenient, safe_write, silence
from . import exit_codes

VERSION_FLAGS = ("--version", "-V")


def version_lines(install: VllmInstall) -> list[str]:
    version = install.version or "version unknown"
    if install.importable:
        vllm = f"vLLM {version} ({install.location or 'this environment'}, runs in this process)"
    elif install.executable:
        vllm = f"vLLM {version} ({install.executable}, started in place of this process)"
    else:
        vllm = f"vLLM: none ({install.note or 'not installed here'})"
    python = f"Python {sys.version.split()[0]} ({sys.executable or 'interpreter path unknown'})"
    return [f"dsv4-launch {__version__}", printable(vllm), printable(python)]


def run_version(prog: str, env: Mapping[str, str] | None = None, stdout=None, stderr=None,
                vllm: VllmInstall | None = None) -> int:
    """Print the version lines; 74 with one line on stderr when stdout cannot take them."""
    env = os.environ if env is None else env
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    make_lenient(stdout)
    install = vllm if vllm is not None else find_vllm(env)
    if safe_write(stdout, "\n".join(version_lines(install)) + "\n"):
        return exit_codes.OK
    silence(stdout)
    Reporter(stderr, env, prefix=prog).error("cannot write the version to standard output")
    return exit_codes.OUTPUT_FAILED
