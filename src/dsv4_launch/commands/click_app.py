"""The command surface as click sees it: help texts, ``--version``, errors for unknown
commands. ``cli.main`` sends only those here; the commands themselves run without click."""

from __future__ import annotations

import click

from . import exit_codes

PASS_THROUGH = {"ignore_unknown_options": True, "allow_interspersed_args": False, "help_option_names": ["-h", "--help"]}


def _version(ctx: click.Context, _param, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from .version import run_version

        ctx.exit(run_version("dsv4-launch"))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show dsv4-launch's version, the vLLM it would run (and where) and Python's, then exit.")
def cli() -> None:
    """Run DeepSeek-V4 on vLLM without the known start-up crashes.

    `dsv4-launch serve ARGS` (or `dsv4-serve ARGS`) takes exactly the arguments of
    `vllm serve`, fixes the settings vLLM is known to crash on, says so, and runs vLLM.
    """


@cli.command(context_settings={**PASS_THROUGH, "help_option_names": []}, add_help_option=False)
@click.argument("vllm_args", nargs=-1, type=click.UNPROCESSED)
def serve(vllm_args: tuple[str, ...]) -> None:
    """Same as dsv4-serve: plan, then run `vllm serve VLLM_ARGS` in this process."""
    from .serve import run_serve

    raise SystemExit(run_serve(list(vllm_args)))


@cli.command(context_settings=PASS_THROUGH)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as one JSON object.")
@click.option("--vllm-version", metavar="X.Y.Z",
              help="Plan for this vLLM release (its recorded option table and rules) instead of the installed one.")
@click.argument("vllm_args", nargs=-1, type=click.UNPROCESSED)
def plan(as_json: bool, vllm_version: str | None, vllm_args: tuple[str, ...]) -> None:
    """Show what dsv4-serve would hand to vLLM, and why, without running it.

    VLLM_ARGS are the arguments of `vllm serve`; --json may come anywhere before `--`, and
    everything after `--` is vLLM's. Exit status: what dsv4-serve's would be before vLLM
    starts (0, or 2 when it would refuse), so it can gate a deployment.
    """
    from .cli import run

    raise SystemExit(run("plan", {"json": as_json, "vllm_version": _release(vllm_version)}, list(vllm_args)))


@cli.command(context_settings=PASS_THROUGH)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--vllm-version", metavar="X.Y.Z",
              help="Plan for this vLLM release (its recorded option table and rules) instead of the installed one.")
@click.argument("vllm_args", nargs=-1, type=click.UNPROCESSED)
def doctor(as_json: bool, vllm_version: str | None, vllm_args: tuple[str, ...]) -> None:
    """Check everything that decides whether DeepSeek-V4 will start here.

    GPUs, driver, Python, vLLM, PyTorch and its CUDA architectures, FlashInfer, the vLLM
    plugin, the model given in VLLM_ARGS (DeepSeek-V4-Flash when none is given) and the plan
    for it. Exit 0 when nothing fails, 1 when something would.
    """
    from .cli import run

    raise SystemExit(run("doctor", {"json": as_json, "vllm_version": _release(vllm_version)}, list(vllm_args)))


@cli.command(context_settings=PASS_THROUGH)
@click.option("--json", "as_json", is_flag=True, help="Print the table as one JSON object.")
@click.option("--vllm-version", metavar="X.Y.Z",
              help="Plan for this vLLM release (its recorded option table and rules) instead of the installed one.")
@click.option("--gpus", metavar="N|NxGPU", help="How many GPUs (default: those visible here), or a preset to plan "
              "for from anywhere: 8xH200, 2xRTXPRO6000, 8xB200, 4xH100, 1xRTX5090, GB10, …")
@click.option("--gpu-memory", metavar="SIZE", help="Memory of one GPU, e.g. 96GiB (default: read through NVML).")
@click.argument("vllm_args", nargs=-1, type=click.UNPROCESSED)
def fit(as_json: bool, vllm_version: str | None, gpus: str | None, gpu_memory: str | None,
        vllm_args: tuple[str, ...]) -> None:
    """Will it fit? Every tensor/pipeline/data-parallel layout of MODEL on these GPUs.

    VLLM_ARGS: the model (DeepSeek-V4-Flash when none is given) and any `vllm serve` options
    that change memory (--gpu-memory-utilization, --max-model-len, --max-num-batched-tokens,
    --cpu-offload-gb, ...). Shows weights per GPU, KV cache left, the longest single request
    and the concurrency at --max-model-len (65,536 when not given), per DP replica and in all; the
    layout your arguments give is marked, and the fewest of these GPUs that fit is named. An
    estimate. Exit status: 1 when every layout is known not to fit, 0 otherwise, 2 for bad input.
    """
    from .cli import _gpus, run

    own: dict[str, object] = {"json": as_json, "vllm_version": _release(vllm_version)}
    if gpus:
        try:
            own["gpus"] = _gpus(gpus)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--gpus") from None
    if gpu_memory:
        from .cli import _size

        try:
            own["gpu_memory"] = _size(gpu_memory)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--gpu-memory") from None
    raise SystemExit(run("fit", own, list(vllm_args)))


@cli.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("url", required=False, default="http://127.0.0.1:8000")
@click.option("--model", metavar="NAME", help="The served model to probe (default: the first /v1/models lists).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--timeout", metavar="S", default="30", show_default=True,
              help="Seconds for the whole check; each request gets what is left.")
@click.option("--api-key-env", metavar="NAME",
              help="The environment variable that holds the server's API key (e.g. VLLM_API_KEY). "
                   "A key on the command line is refused: ps and shell history would show it.")
def check(url: str, model: str | None, as_json: bool, timeout: str, api_key_env: str | None) -> None:
    """Check a running OpenAI-compatible server (vLLM) at URL: is it serving correctly?

    GET /health, GET /v1/models, one short deterministic chat completion (temperature 0,
    16 tokens, thinking off) and one tool-call request. Finds: not reachable / not ready;
    empty or degenerate output (one token repeated, only special tokens such as BOS); DSML or
    tool-call markup in `content`; reasoning in `content`, or the whole answer in the reasoning
    field; and says the probe's tokens per second. The API key is never printed.

    \b
    Exit status:
      0  healthy
      1  a problem found in the server's answers
      2  bad input (a bad URL or --timeout, an unknown option, a key on the command line)
      3  not reachable, not ready (503, still loading) or no answer within --timeout
    As a Kubernetes startupProbe/readinessProbe: exec `dsv4-launch check --api-key-env VLLM_API_KEY`.
    """
    from .check import run_check

    args = [url, "--timeout", timeout] + (["--model", model] if model else []) + (["--json"] if as_json else [])
    raise SystemExit(run_check(args + (["--api-key-env", api_key_env] if api_key_env else [])))


def _release(text: str | None) -> str | None:
    if text is None:
        return None
    from .cli import _release as release

    try:
        return release(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--vllm-version") from None


@cli.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as one JSON object.")
@click.argument("log", required=False, default="-", metavar="[FILE|-]")
def explain(as_json: bool, log: str) -> None:
    """Explain a vLLM crash from its log: which known DeepSeek-V4 failure, the fix, and the command that works.

    FILE is vLLM's output (a terminal's, `journalctl -u vllm`, `kubectl logs`); `-` or nothing
    reads standard input. Large logs are streamed; ANSI colour and journald, kubectl and vLLM
    prefixes are tolerated. Where the log shows vLLM's version and its `non-default args`, the
    corrected command is planned as dsv4-serve would run it. Secrets are never printed.

    \b
    Exit status:
      0  a known failure is explained
      1  none found (the root-cause lines are shown; see `dsv4-launch doctor`)
      2  bad input (a missing file, a directory)
    """
    from .explain import run_explain

    raise SystemExit(run_explain([log], as_json=as_json))


@cli.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the completion script for SHELL (dsv4-launch and dsv4-serve, which completes vLLM's
    `serve` options for the installed release from the recorded option table).

    \b
    bash: dsv4-launch completion bash > ~/.local/share/bash-completion/completions/dsv4-launch
          (and the same as .../completions/dsv4-serve), or in ~/.bashrc:
          eval "$(dsv4-launch completion bash)"
    zsh:  dsv4-launch completion zsh > "${fpath[1]}/_dsv4-launch" (then a new shell), or in
          ~/.zshrc after compinit: eval "$(dsv4-launch completion zsh)"
    fish: dsv4-launch completion fish > ~/.config/fish/completions/dsv4-launch.fish (and the
          same as dsv4-serve.fish), or: dsv4-launch completion fish | source
    """
    from .completion import run_completion

    raise SystemExit(run_completion([shell]))


def run_click(args: list[str]) -> int:
    try:
        cli.main(args=args, prog_name="dsv4-launch", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except OSError:  # help or an error message that stdout/stderr cannot take (a full disk)
        return _cannot_write()
    return exit_codes.OK


def _cannot_write() -> int:
    """The help could not be written: decided where every command's broken stream is
    (output/render.finish: one line and 74 for a full disk; click itself handles a closed pipe)."""
    import sys

    from ..output.render import finish

    return finish(False, exit_codes.OK, sys.stdout, sys.stderr, {}, "dsv4-launch", "the help")
