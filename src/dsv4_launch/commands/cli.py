"""``dsv4-launch`` and ``python -m dsv4_launch``: the one door to every command.

``main`` imports only the command that runs (``own_options.COMMANDS``), reads its arguments
against its declaration (``own_options.parse``) and runs its entry: no click on this path, so
``plan`` keeps its start-up budget; click (``click_app.py``) prints the help and the errors for an
unknown command (docs/DESIGN.md, "The command door"). ``serve`` is dsv4-serve (``serve.py``): its
arguments reach vLLM untouched.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from . import PROGRAM, VERSION_FLAGS, exit_codes
from .own_options import COMMANDS, JSON, NEAR_MISSES, HelpRequested, UsageError, load, parse

TYPE_CHECKING = False  # type checkers read this as True; nothing is imported for them at run time
if TYPE_CHECKING:
    from ..output.redact import Redactor
    from .context import Context
    from .own_options import Command, NearMiss


def main(argv: Sequence[str] | None = None) -> int:
    """Console script ``dsv4-launch``. ``argv`` None: this process's own command (``sys.argv``),
    which ends with it — plan, doctor and fit then leave the heap frozen for the exit
    (commands/collector.py); a caller that passes ``argv`` keeps its collector as it was."""
    args = sys.argv[1:] if argv is None else list(argv)
    command = args[0] if args else None
    if command in VERSION_FLAGS:
        if len(args) > 1:  # nothing is read after it: say so rather than ignore it (the words are not echoed)
            from ..output.lines import safe_write

            safe_write(sys.stderr, f"{PROGRAM}: {command} takes nothing after it (see: {PROGRAM} --help)\n")
            return exit_codes.USAGE
        from .version import run_version

        return run_version(PROGRAM)
    if command == "completion" and args[1:2] == ["--complete"]:
        from .completion import run_completion  # each Tab press: the candidates, nothing else read

        return run_completion(args[1:])
    if command in COMMANDS:
        return run_command(command, args[1:], ending=argv is None)
    return _click(args)


def run_command(name: str, args: Sequence[str], ctx: Context | None = None, *, ending: bool = False) -> int:
    """Command ``name`` (a key of ``COMMANDS``) with ``args``: read against its declaration, then
    its entry runs; ``--help`` is click's, a bad option one line and exit 2. ``ctx``: the world it
    reads (None: this process's). ``ending``: the process ends with the command."""
    args = list(args)
    if name == "serve":  # dsv4-serve: every argument is vLLM's, --help included
        from .serve import run_serve

        return run_serve(args, ctx)
    from .collector import Paused  # the collector off for the run (commands/collector.py)

    paused = Paused(ending=ending).__enter__()  # from the import on: most of plan's allocations are imports
    try:
        command = load(name)
        if not command.pause_collector:  # check and explain run as long as they must: the collector back on
            paused.ending = False
            paused.__exit__()
        return _run(command, args, ctx)
    finally:
        paused.__exit__()  # once more for check and explain: nothing left to do


def _run(command: Command, args: list[str], ctx: Context | None) -> int:
    refused = command.screen(args) if command.screen else None
    if refused:
        return _usage_error(command, refused, args, ctx)
    warnings: list[NearMiss] = []
    try:
        own, rest = parse(command, args, ctx.env if ctx is not None else None, warnings,
                          ctx.vllm if ctx is not None else None)
    except HelpRequested:
        return _click([command.name, "--help"])
    except UsageError as exc:
        return _usage_error(command, str(exc), args, ctx)
    if warnings:  # a near miss of an own option that may be a newer vLLM's: said, and handed over
        from ..output.lines import Reporter
        from .context import here

        world = here(ctx)
        say = Reporter(world.stderr, world.env or {}, prefix=command.prefix,
                       scrub=_redactor(args, ctx))  # JSON log lines too
        for miss in warnings:
            say.warning(miss.warning)
        own = {**own, NEAR_MISSES: tuple(warnings)}  # and in its --json document (output/documents.near_misses)
    return command.run(own, rest, ctx)


def _usage_error(command: Command, message: str, args: list[str], ctx: Context | None) -> int:
    """One line (``dsv4-launch CMD: …``) and exit 2; with ``--json`` also the one error document
    (``schema_version``, ``exit_status``, ``error``; output/render.py) with the command's keys."""
    from ..output.render import Result, render
    from .context import here

    ctx = here(ctx)
    head = args[: args.index("--")] if "--" in args else args
    as_json = JSON.name in head and JSON in command.options
    line = f"{command.prefix}: {message} (see: {command.prefix} --help)"
    result = Result(exit_codes.USAGE, command.prefix, error=line,
                    document=dict(command.error_document or {}), plain_error=True, scrub=_redactor(args, ctx))
    return render(result, as_json=as_json, stdout=ctx.stdout, stderr=ctx.stderr, env=ctx.env or {})


def _redactor(args: Sequence[str], ctx: Context | None) -> Redactor:
    """The pipeline's masks for a line printed before the pipeline has read ``args``."""
    from .context import here
    from .pipeline import usage_redactor

    return usage_redactor(args, here(ctx).env or {})


def _click(args: list[str]) -> int:
    from .click_app import run_click

    return run_click(args, run_command)
