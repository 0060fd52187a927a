"""``dsv4-serve``: prepare, say it, hand over to ``vllm serve`` (the imperative shell).

Takes exactly the arguments of ``vllm serve``. No click here: every millisecond before vLLM
starts is the user's, and nothing in this path parses options of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..adapters.handover import NoVllm, exec_failure, hand_over
from ..core.rules.plan import DISABLED_NOTE
from ..core.settings import ENV_VARS
from ..output.lines import Reporter, make_lenient, safe_write
from ..output.report import report_plan
from . import HELP_WIDTH, VERSION_FLAGS, exit_codes
from . import SERVE_PROGRAM as PROGRAM
from .context import Context, here
from .pipeline import SERVE, prepare_in

USAGE = """\
usage: dsv4-serve [VLLM SERVE ARGUMENTS...]

A drop-in for `vllm serve` that knows DeepSeek-V4: it reads the GPUs (NVML), the model's
config.json and the installed vLLM, sets --kv-cache-dtype fp8 where vLLM would otherwise
crash on `auto` (vLLM #47174), refuses settings vLLM would certainly die on minutes later,
says each decision in one line on stderr, then runs vLLM's own CLI in this process (same PID,
signals and exit status). Every argument is vLLM's; other models pass through unchanged.

Dry run: dsv4-launch plan [--json] ARGS...   This machine: dsv4-launch doctor [ARGS...]
Versions (dsv4-launch, the vLLM it runs, Python): dsv4-serve --version (alone; also -V)

environment:
{env}

vLLM's options: `vllm serve --help` (shown below when vLLM is installed), or
https://docs.vllm.ai/en/latest/cli/serve.html
"""


def usage_text() -> str:
    """Our usage, each variable on its line and its effect wrapped below it, within HELP_WIDTH."""
    import textwrap

    rows = []
    for name, effect in ENV_VARS:
        rows.append(f"  {name}")
        rows.extend(textwrap.wrap(effect, HELP_WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 6,
                                  break_on_hyphens=False))
    return USAGE.format(env="\n".join(rows))


def run_serve(argv: Sequence[str], ctx: Context | None = None) -> int:
    """Everything ``dsv4-serve ARGV`` does; returns the exit status (vLLM's, once it ran).

    ``ctx``: the world it reads — environment, streams, GPU reader, vLLM install, the hand-over
    itself (None: this process's)."""
    ctx = here(ctx)
    env, stdout, stderr = ctx.env or {}, ctx.stdout, ctx.stderr
    if len(argv) == 1 and argv[0] in VERSION_FLAGS:  # alone: no vLLM release has it on `serve`
        from .version import run_version

        return run_version(PROGRAM, ctx)
    prepared = prepare_in(ctx, argv, SERVE)
    quiet = prepared.settings.quiet if prepared.settings else False
    reporter = Reporter(stderr, env, prefix=PROGRAM, quiet=quiet, scrub=prepared.redact)
    if prepared.error:
        reporter.error(prepared.error)
        return prepared.status
    if prepared.help_requested:
        make_lenient(stdout)
        found = prepared.vllm.importable or prepared.vllm.executable
        written = safe_write(stdout, usage_text() + ("\n" if found else ""))
        if not found:
            from ..output.render import finish  # our usage is all the help there is without vLLM

            return finish(written, exit_codes.OK, stdout, stderr, env, PROGRAM, "the help")
    elif prepared.plan.disabled:
        reporter.info(DISABLED_NOTE)
        for warning in prepared.plan.warnings:
            reporter.warning(warning)
    else:
        shown = prepared.redact.shown_argv
        report_plan(reporter, prepared.plan, prepared.facts, shown, with_facts=False)
        if prepared.status != exit_codes.OK:
            return prepared.status
    try:
        return (ctx.hand_over or hand_over)(prepared.argv, prepared.vllm, env)
    except NoVllm as exc:
        reporter.error(str(exc))
        return exit_codes.NO_VLLM
    except OSError as exc:  # exec of the `vllm` on PATH failed
        if prepared.vllm.importable or prepared.vllm.executable is None:
            raise  # vLLM's own error, raised in this process: shown as plain `vllm serve` shows it
        reporter.error(exec_failure(prepared.vllm.executable, exc, env.get("PATH")))
        return exit_codes.EXEC_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Console script ``dsv4-serve``."""
    return run_serve(sys.argv[1:] if argv is None else list(argv))


def _run(own: dict, rest: list[str], ctx: Context | None = None) -> int:
    return run_serve(rest, ctx)


def __getattr__(name: str):
    """``COMMAND``: `dsv4-launch serve` as the door and the help show it (``own_options.load``); it runs
    as dsv4-serve (no options of its own). Made when asked: the declarations are not on dsv4-serve's path."""
    if name != "COMMAND":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .own_options import Command

    return Command("serve", "Same as dsv4-serve: plan, then run `vllm serve VLLM_ARGS` in this process.", (), _run,
                   vllm_args=True, arguments="[VLLM_ARGS]...")
