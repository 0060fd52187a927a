"""``dsv4-launch`` and ``python -m dsv4_launch``: serve, plan, doctor, fit.

``serve``, ``plan``, ``doctor`` and ``fit`` go straight to their work: their own options are
picked out by ``own_options`` (a handful of names), so the start-up budget is not spent on
click. click renders the help (``--help``, ``--version``, no command) and the errors for
unknown commands: the command surface, loaded only when needed (``click_app.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from . import exit_codes
from .own_options import HelpRequested, OptionSpec, UsageError, split_own_options

JSON_ONLY: OptionSpec = {"--json": None}


def _gpus(text: str):
    """``8``, ``8xH200``, ``2xRTXPRO6000``, ``GB10``: a count and a preset (core/memory/presets.py)."""
    from ..core.memory.presets import parse_gpus

    return parse_gpus(text)


def _size(text: str) -> int:
    from ..core.settings import parse_size

    value = parse_size(text, unit_required=True)
    if value <= 0:
        raise ValueError("expected a memory size such as 96GiB or 80GB")
    return value


def _release(text: str) -> str:
    """A vLLM release with a recorded option table (``data/serve-options-X.json``); a local
    build of one (``0.30.0+cu130``) is that release."""
    from ..core.versions import same_release
    from ..vllm_cli.option_table import available_versions

    known = available_versions()
    try:
        if any(same_release(text, v) for v in known):
            return text
    except ValueError:
        pass
    raise ValueError(f"no recorded option table for that release; known: {', '.join(known)}")


VLLM_VERSION: OptionSpec = {"--vllm-version": _release}  # plan for this release, without vLLM installed
OWN_OPTIONS: dict[str, OptionSpec] = {
    "plan": {**JSON_ONLY, **VLLM_VERSION},
    "doctor": {**JSON_ONLY, **VLLM_VERSION},
    "fit": {"--json": None, "--gpus": _gpus, "--gpu-memory": _size, **VLLM_VERSION},
}


def _stderr_error(text: str) -> None:
    from ..output.lines import safe_write

    safe_write(sys.stderr, f"{text}\n")


def _json_usage_error(line: str) -> int:
    """A bad own option of a ``--json`` run: the document every command prints on an error
    (``schema_version``, ``exit_status``, ``error``; output/render.py), and the line on stderr."""
    from ..output.render import Result, render

    result = Result(exit_codes.USAGE, "dsv4-launch", error=line, document={}, plain_error=True)
    return render(result, as_json=True, stdout=sys.stdout, stderr=sys.stderr, env={})


def main(argv: Sequence[str] | None = None) -> int:
    """Console script ``dsv4-launch``. ``argv`` None: this process's own command (``sys.argv``),
    which ends with it — plan, doctor and fit then leave the heap frozen for the exit
    (commands/collector.py); a caller that passes ``argv`` keeps its collector as it was."""
    args = sys.argv[1:] if argv is None else list(argv)
    command = args[0] if args else None
    if command in ("--version", "-V"):
        if len(args) > 1:  # nothing is read after it: say so rather than ignore it (the words are not echoed)
            _stderr_error(f"dsv4-launch: {command} takes nothing after it (see: dsv4-launch --help)")
            return exit_codes.USAGE
        from .version import run_version

        return run_version("dsv4-launch")
    if command == "serve":
        from .serve import run_serve

        return run_serve(args[1:])
    if command == "completion" and not (len(args) == 2 and args[1] in ("-h", "--help")):
        from .completion import run_completion  # each Tab press: no click for the candidates

        return run_completion(args[1:])
    if command == "check":  # a running server; reads its own options (commands/check.py)
        from .check import run_check

        return run_check(args[1:])
    if command == "explain":  # a vLLM log; reads its own options (commands/explain.py)
        from .explain import main as run_explain_cli

        return run_explain_cli(args[1:])
    if command in OWN_OPTIONS:
        try:
            own, rest = split_own_options(command, args[1:], OWN_OPTIONS[command])
        except HelpRequested:
            return _click(args)
        except UsageError as exc:
            line = f"{exc} (see: dsv4-launch {command} --help)"
            if "--json" in args[1:]:  # the one error shape, as for every other error of a --json run
                return _json_usage_error(line)
            _stderr_error(line)
            return exit_codes.USAGE
        from .collector import Paused  # the collector off for the run (commands/collector.py)

        with Paused(ending=argv is None):  # argv None: the console script, the process ends with it
            return run(command, own, rest)
    return _click(args)


def run(command: str, own: dict, rest: list[str]) -> int:
    from .context import Context

    ctx = Context()
    if own.get("vllm_version"):
        from ..adapters.vllm_install import assumed_vllm

        ctx = Context(vllm=assumed_vllm(str(own["vllm_version"])))
    if command == "plan":
        from .plan import run_plan

        return run_plan(rest, as_json=bool(own.get("json")), ctx=ctx)
    if command == "doctor":
        from .doctor import run_doctor

        return run_doctor(rest, as_json=bool(own.get("json")), ctx=ctx)
    from .fit import run_fit

    gpus, preset = own.get("gpus") or (None, None)
    return run_fit(rest, as_json=bool(own.get("json")), gpus=gpus, preset=preset, gpu_memory=own.get("gpu_memory"),
                   ctx=ctx)


def _click(args: list[str]) -> int:
    from .click_app import run_click

    return run_click(args)
