"""``dsv4-serve --version`` / ``-V`` and ``dsv4-launch --version`` / ``-V``.

Three lines on stdout: dsv4-launch's version, the vLLM it would hand over to (version, and
where: the package folder when it runs in this process, the `vllm` script on PATH otherwise),
and the Python running it. vLLM is found the way the hand-over finds it
(``adapters/vllm_install.find_vllm``) and is not imported or started. ``vllm serve`` has no
``--version``/``-V`` in any release 0.24.0 … 0.33.0 (``data/serve-options-*.json``; only the
top-level ``vllm --version`` exists), so the bare flag is dsv4-serve's own.
"""

from __future__ import annotations

import sys

from .. import __version__
from ..adapters.vllm_install import VllmInstall, find_vllm
from ..output.escape import printable
from ..output.render import Result, render
from . import exit_codes
from .context import Context, here


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


def version_result(prog: str, ctx: Context) -> Result:
    install = ctx.vllm if ctx.vllm is not None else find_vllm(ctx.env or {})
    lines = "\n".join(version_lines(install)) + "\n"
    return Result(exit_codes.OK, prog, "the version", text=lambda out: out.verbatim(lines))


def run_version(prog: str, ctx: Context | None = None) -> int:
    """Print the version lines; 74 with one line on stderr when stdout cannot take them."""
    ctx = here(ctx)
    return render(version_result(prog, ctx), as_json=False, stdout=ctx.stdout, stderr=ctx.stderr, env=ctx.env or {})
