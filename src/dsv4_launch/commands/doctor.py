"""``dsv4-launch doctor``: the pipeline's facts, the runtime probe, the diagnosis; a table,
plain lines or JSON. Without a model it checks the machine for DeepSeek-V4-Flash."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable, Mapping

from ..adapters.handover import install_hint
from ..adapters.nvml import probe_gpus
from ..adapters.runtime_probe import probe_runtime
from ..adapters.vllm_install import interpreter_of
from ..core.doctor import FAIL, OK, Diagnosis, DoctorLine, VllmRuntime, diagnose
from ..core.doctor_rules import sm120_decode_shapes
from ..core.settings import GPU_CAPABILITY
from ..output.documents import dump
from ..output.lines import Reporter, make_lenient, safe_write, silence
from ..output.redact import Scrubber
from ..output.tables import render_diagnosis
from . import exit_codes
from .pipeline import DEFAULT_MODEL, DOCTOR, prepare
from .plan import plan_document

PLUGIN_ENTRY = "dsv4_launch"  # the name of our vllm.general_plugins entry point


def run_doctor(
    argv: list[str],
    *,
    as_json: bool,
    env: Mapping[str, str] | None = None,
    stdout=None,
    stderr=None,
    runtime: Callable[..., tuple[dict | None, str | None]] = probe_runtime,
    probe=None,
    vllm=None,
) -> int:
    """``probe``/``vllm``/``runtime``: the GPU probe, vLLM install and runtime probe, replaceable
    by tests (None: the real ones)."""
    env = os.environ if env is None else env
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    make_lenient(stdout)
    # No model given: check this machine for DeepSeek-V4 itself, not vLLM's default model.
    prepared = prepare(argv, env, DOCTOR, default_model=DEFAULT_MODEL, probe=probe, vllm=vllm)
    defaulted = prepared.facts is not None and prepared.facts.args.tokens[:1] == (DEFAULT_MODEL,) and \
        tuple(argv[:1]) != (DEFAULT_MODEL,)
    note = f"no model given: checked for {DEFAULT_MODEL}" if defaulted else None
    scrub = Scrubber.for_argv(prepared.argv)
    err = Reporter(stderr, env, prefix="dsv4-launch doctor", scrub=scrub)
    if prepared.error:
        err.error(prepared.error)
        if as_json:
            safe_write(stdout, dump(_document(prepared, Diagnosis(), prepared.status, prepared.error), scrub) + "\n")
        return prepared.status
    try:
        diagnosis = _diagnose(prepared, env, runtime, probe)
    except Exception as exc:  # never a traceback of ours: say it as a failed check
        if prepared.settings and prepared.settings.debug:
            raise
        diagnosis = Diagnosis((DoctorLine("doctor", FAIL, f"internal error: {type(exc).__name__}: {str(exc)[:160]} "
                                                      "(DSV4_LAUNCH_DEBUG=1 shows the traceback)"),))
    if note:
        diagnosis = diagnosis._replace(checks=(DoctorLine("model", OK, note), *diagnosis.checks))
    status = exit_codes.DOCTOR_FAILED if diagnosis.failed else exit_codes.OK
    if as_json:
        ok = safe_write(stdout, dump(_document(prepared, diagnosis, status, None), scrub) + "\n")
    else:
        ok = render_diagnosis(diagnosis, stdout, env, scrub)
    if not ok:
        silence(stdout)
        err.error("cannot write the report to standard output")
        return exit_codes.OUTPUT_FAILED
    return status


def _document(prepared, diagnosis: Diagnosis, status: int, error: str | None) -> dict:
    """doctor --json: plan's error shape (``exit_status``, ``error``: null or the one line said
    on stderr) plus the checks, and the plan itself (output/documents.py)."""
    return {
        "ok": error is None and not diagnosis.failed,
        "exit_status": status,
        "error": error,
        "checks": [{"section": c.section, "status": c.status, "detail": c.detail} for c in diagnosis.checks],
        "plan": plan_document(prepared),
    }


def _diagnose(prepared, env, runtime, probe) -> Diagnosis:
    facts = prepared.facts
    install = prepared.vllm
    if install is not None and install.assumed:  # --vllm-version is for the plan; the machine is this one
        from ..adapters.vllm_install import find_vllm

        install = find_vllm(env)
    python, why = interpreter_of(install, env.get("PATH"))
    result = None
    if python is not None:
        shapes = sm120_decode_shapes(facts) if facts is not None else []
        result, why = runtime(python, shapes)
    where = "this environment" if install.importable else install.executable
    gpus = prepared.probe
    # Not probed by the pipeline (off switch, arguments vLLM rejects): the machine report still is.
    if gpus is None and (facts is None or facts.gpu_source != GPU_CAPABILITY):
        gpus = (probe or probe_gpus)()
    version = result.get("python") if isinstance(result, dict) and isinstance(result.get("python"), str) else None
    vllm_runtime = VllmRuntime(
        python=f"{version} ({python})" if version and python else f"{platform.python_version()} ({sys.executable})",
        vllm_version=install.version,
        vllm_where=where,
        probe=result,
        probe_error=why,
    )
    from ..adapters.installer import plugin_command  # the command fits the installer of vLLM's environment

    return diagnose(prepared.plan, facts, gpus, vllm_runtime, env, install_hint=install_hint(),
                    plugin_entry=PLUGIN_ENTRY, plugin_hint=plugin_command(python) if python else None)
