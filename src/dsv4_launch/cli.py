"""``dsv4-launch`` and ``python -m dsv4_launch``: serve, plan (and their wiring only)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Optional, Sequence

import click

from . import __version__, exit_codes
from .serve import run_serve

PASS_THROUGH = {"ignore_unknown_options": True, "allow_interspersed_args": False}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dsv4-launch")
def cli() -> None:
    """Run DeepSeek-V4 on vLLM without the known start-up crashes.

    `dsv4-launch serve ARGS` (or `dsv4-serve ARGS`) takes exactly the arguments of
    `vllm serve`, fixes the settings vLLM is known to crash on, says so, and runs vLLM.
    """


@cli.command(context_settings={**PASS_THROUGH, "help_option_names": []}, add_help_option=False)
@click.argument("vllm_args", nargs=-1, type=click.UNPROCESSED)
def serve(vllm_args: tuple[str, ...]) -> None:
    """Same as dsv4-serve: plan, then run `vllm serve VLLM_ARGS` in this process."""
    sys.exit(run_serve(vllm_args))  # reached only through click; main() routes serve directly


@cli.command(context_settings=PASS_THROUGH)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as one JSON object.")
@click.argument("vllm_args", nargs=-1, type=click.UNPROCESSED)
def plan(as_json: bool, vllm_args: tuple[str, ...]) -> None:
    """Show what dsv4-serve would hand to vLLM, and why, without running it.

    Give the arguments of `vllm serve` after the options (use `--` first if they start with
    an option this command also has, such as --json or --help).
    """
    from .plan_command import run_plan

    sys.exit(run_plan(list(vllm_args), as_json=as_json))


@cli.command(context_settings=PASS_THROUGH)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.argument("vllm_args", nargs=-1, type=click.UNPROCESSED)
def doctor(as_json: bool, vllm_args: tuple[str, ...]) -> None:
    """Check everything that decides whether DeepSeek-V4 will start here.

    GPUs, driver, Python, vLLM, PyTorch and its CUDA architectures, FlashInfer, the model given
    in VLLM_ARGS and the plan for it. Exit 0 when nothing fails, 1 when something would.
    """
    from .doctor_command import run_doctor

    sys.exit(run_doctor(list(vllm_args), as_json=as_json))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console script ``dsv4-launch``; ``serve`` goes straight to vLLM's argument handling."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["serve"]:
        return run_serve(args[1:])
    try:
        cli.main(args=args, prog_name="dsv4-launch", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return exit_codes.OK
