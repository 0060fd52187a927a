"""``dsv4-launch plan``: everything dsv4-serve does except running vLLM."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Mapping, Optional, TextIO

from . import exit_codes
from .gather import Gathered, gather
from .nvml import GpuProbe, probe_gpus
from .plan import Plan, make_plan
from .redact import Redactor
from .report import Reporter, plan_json, report_plan
from .serve_args import ConfigFileError
from .settings import SettingsError, read_settings
from .vllm_install import VllmInstall


def prepare(
    argv: list[str],
    env: Mapping[str, str],
    stderr: TextIO,
    *,
    probe: Callable[[], GpuProbe],
    vllm: Optional[VllmInstall],
    probe_even_if_disabled: bool = False,
) -> Optional[tuple[Redactor, Gathered, Plan]]:
    """Redactor, facts and plan (shared by ``plan`` and ``doctor``); None after reporting bad
    input (a DSV4_LAUNCH_* value, a --config file) in one line on ``stderr``. The GPUs are
    probed unless DSV4_LAUNCH_DISABLE is set and the caller only plans."""
    redactor = Redactor()
    redactor.remember_env(env)
    try:
        settings = read_settings(env)
        gathered = gather(
            argv,
            env,
            settings,
            redactor,
            probe_gpus_when="never" if settings.disabled and not probe_even_if_disabled else "always",
            probe=probe,
            vllm=vllm,
        )
    except (SettingsError, ConfigFileError) as exc:
        Reporter(stderr, env, redactor).error(str(exc))
        return None
    plan = make_plan(gathered.facts, settings.preflight)
    if settings.disabled:
        plan = plan._replace(
            argv=tuple(argv),
            changes=(),
            notes=("DSV4_LAUNCH_DISABLE is set: dsv4-serve hands the arguments over unchanged",),
        )
    return redactor, gathered, plan


def run_plan(
    argv: list[str],
    *,
    as_json: bool,
    env: Optional[Mapping[str, str]] = None,
    stdout: Optional[TextIO] = None,
    stderr: Optional[TextIO] = None,
    probe: Callable[[], GpuProbe] = probe_gpus,
    vllm: Optional[VllmInstall] = None,
) -> int:
    env = os.environ if env is None else env
    stdout = sys.stdout if stdout is None else stdout
    prepared = prepare(argv, env, sys.stderr if stderr is None else stderr, probe=probe, vllm=vllm)
    if prepared is None:
        return exit_codes.USAGE
    redactor, gathered, plan = prepared
    if as_json:
        stdout.write(plan_json(plan, redactor, gathered.table) + "\n")
    else:
        report_plan(plan, Reporter(stdout, env, redactor), gathered.table, with_facts=True)
    return exit_codes.OK
