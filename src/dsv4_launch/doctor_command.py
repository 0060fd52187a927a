"""``dsv4-launch doctor``: gather the facts, diagnose, print a table / plain lines / JSON."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Optional, TextIO

from . import exit_codes
from .doctor import Diagnosis, Environment, diagnose
from .nvml import GpuProbe, probe_gpus
from .plan import plan_summary
from .plan_command import prepare
from .redact import Redactor
from .report import SCHEMA_VERSION, use_style
from .vllm_install import VllmInstall, interpreter_of

# Runs in the interpreter that will run vLLM, in a child process, so that importing torch and
# FlashInfer costs this process nothing. Reads torch's compiled arch list without touching CUDA
# (torch._C._cuda_getArchFlags is a build-time string), and checks the FlashInfer entry points
# vLLM's has_flashinfer_sparse_mla_sm120() (vllm/utils/flashinfer.py) checks.
RUNTIME_PROBE = r"""
import importlib.metadata as md, importlib.util as iu, json
out = {"torch": None, "flashinfer": None}
if iu.find_spec("torch"):
    try:
        import torch
        flags = torch._C._cuda_getArchFlags() if hasattr(torch._C, "_cuda_getArchFlags") else ""
        out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda,
                        "arch_flags": (flags or "").split()}
    except Exception as exc:
        out["torch_error"] = repr(exc)
if iu.find_spec("flashinfer"):
    fi = {"version": None, "sm120_sparse_mla": False}
    for dist in ("flashinfer-python", "flashinfer"):
        try:
            fi["version"] = md.version(dist)
            break
        except md.PackageNotFoundError:
            pass
    try:
        from flashinfer.autotuner import autotune
        from flashinfer.decode import trtllm_batch_decode_sparse_mla_dsv4, trtllm_batch_decode_with_kv_cache_mla
        fi["sm120_sparse_mla"] = all(map(callable, (autotune, trtllm_batch_decode_sparse_mla_dsv4,
                                                    trtllm_batch_decode_with_kv_cache_mla)))
    except Exception:
        pass
    out["flashinfer"] = fi
print(json.dumps(out))
"""


def probe_runtime(python: str, timeout: float = 120) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """Run RUNTIME_PROBE with ``python``; (result, None) or (None, why not)."""
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""  # the probe needs no GPU: nothing it imports may touch one
    try:
        done = subprocess.run(
            [python, "-c", RUNTIME_PROBE], capture_output=True, text=True, timeout=timeout, env=env
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot run {python}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{python} failed: {last}"
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), None
    except (json.JSONDecodeError, IndexError):
        return None, f"{python} printed no result"


def run_doctor(
    argv: list[str],
    *,
    as_json: bool,
    env: Optional[Mapping[str, str]] = None,
    stdout: Optional[TextIO] = None,
    stderr: Optional[TextIO] = None,
    probe: Callable[[], GpuProbe] = probe_gpus,
    vllm: Optional[VllmInstall] = None,
    runtime: Callable[[str], tuple[Optional[dict], Optional[str]]] = probe_runtime,
) -> int:
    env = os.environ if env is None else env
    stdout = sys.stdout if stdout is None else stdout
    prepared = prepare(
        argv, env, sys.stderr if stderr is None else stderr, probe=probe, vllm=vllm, probe_even_if_disabled=True
    )
    if prepared is None:
        return exit_codes.USAGE
    redactor, gathered, plan = prepared
    install = gathered.vllm
    python = interpreter_of(install) or sys.executable
    result, why = runtime(python)
    where = None
    if install.importable:
        where = "this environment"
    elif install.executable:
        where = install.executable
    environment = Environment(
        python=f"{platform.python_version()} ({sys.executable})",
        vllm_version=install.version,
        vllm_where=where,
        runtime=result,
        runtime_error=why,
    )
    diagnosis = diagnose(plan, gathered.probe, environment)
    if as_json:
        data = {
            "schema_version": SCHEMA_VERSION,
            "ok": not diagnosis.failed,
            "checks": [{"section": c.section, "status": c.status, "detail": c.detail} for c in diagnosis.checks],
            "plan": {**plan_summary(plan), "argv": redactor.argv(plan.argv, gathered.table)},
        }
        stdout.write(redactor.text(json.dumps(data, indent=2, ensure_ascii=False)) + "\n")
    else:
        render(diagnosis, stdout, env, redactor)
    return 1 if diagnosis.failed else exit_codes.OK


def render(diagnosis: Diagnosis, stream: TextIO, env: Mapping[str, str], redactor: Redactor) -> None:
    if not use_style(stream, env):
        for c in diagnosis.checks:
            stream.write(redactor.text(f"{c.status:<4}  {c.section:<10}  {c.detail}") + "\n")
        verdict = "FAIL: DeepSeek-V4 would not start here" if diagnosis.failed else "OK: nothing known to fail"
        stream.write(verdict + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    colours = {"OK": "green", "WARN": "yellow", "FAIL": "bold red"}
    table = Table(title="dsv4-launch doctor", show_lines=False)
    table.add_column("", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("detail")
    for c in diagnosis.checks:
        table.add_row(f"[{colours[c.status]}]{c.status}[/]", c.section, redactor.text(c.detail).replace("[", r"\["))
    console = Console(file=stream, highlight=False)
    console.print(table)
    console.print("[bold red]DeepSeek-V4 would not start here[/]" if diagnosis.failed else "[green]nothing known to fail[/]")
