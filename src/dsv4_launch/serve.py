"""``dsv4-serve``: plan, say it, hand over to ``vllm serve`` (the imperative shell).

Takes exactly the arguments of ``vllm serve``. No click here: every millisecond before vLLM
starts is the user's, and nothing in this path parses options of its own.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Mapping, Optional, Sequence, TextIO

from . import exit_codes
from .gather import gather
from .handover import NoVllm, hand_over, run_vllm_in_process
from .nvml import GpuProbe, probe_gpus
from .plan import make_plan
from .redact import Redactor
from .report import Reporter, report_plan
from .serve_args import ConfigFileError
from .settings import SettingsError, read_settings
from .vllm_install import VllmInstall, find_vllm


def run_serve(
    argv: Sequence[str],
    env: Optional[Mapping[str, str]] = None,
    stderr: Optional[TextIO] = None,
    *,
    probe: Callable[[], GpuProbe] = probe_gpus,
    vllm: Optional[VllmInstall] = None,
    in_process: Callable[[Sequence[str]], int] = run_vllm_in_process,
    execute=None,
) -> int:
    """Everything ``dsv4-serve ARGV`` does; returns the exit status (vLLM's, once it ran)."""
    env = os.environ if env is None else env
    stderr = sys.stderr if stderr is None else stderr
    redactor = Redactor()
    redactor.remember_env(env)
    try:
        settings = read_settings(env)
    except SettingsError as exc:
        Reporter(stderr, env, redactor).error(str(exc))
        return exit_codes.USAGE
    reporter = Reporter(stderr, env, redactor, quiet=settings.quiet)
    vllm = vllm or find_vllm(env)
    argv = list(argv)

    if settings.disabled:
        reporter.info("DSV4_LAUNCH_DISABLE is set: arguments go to vLLM unchanged, nothing checked")
    else:
        try:
            gathered = gather(argv, env, settings, redactor, probe=probe, vllm=vllm)
        except ConfigFileError as exc:
            reporter.error(str(exc))
            return exit_codes.USAGE
        except KeyboardInterrupt:  # Ctrl-C while probing: vLLM has not started
            reporter.error("interrupted before vLLM started")
            return exit_codes.INTERRUPTED
        if not gathered.facts.args.help_requested:
            plan = make_plan(gathered.facts, settings.preflight)
            report_plan(plan, reporter, gathered.table, with_facts=False)
            if plan.refusals:
                return exit_codes.REFUSED
            argv = list(plan.argv)
    try:
        return hand_over(argv, vllm, env, in_process=in_process, execute=execute)
    except NoVllm as exc:
        reporter.error(str(exc))
        return exit_codes.NO_VLLM
    except OSError as exc:  # exec of the `vllm` on PATH failed
        reporter.error(f"cannot run {vllm.executable}: {exc.strerror or exc}")
        return exit_codes.EXEC_FAILED


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console script ``dsv4-serve``."""
    args = sys.argv[1:] if argv is None else list(argv)
    return run_serve(args)
