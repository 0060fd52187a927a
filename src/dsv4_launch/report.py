"""Say what dsv4-launch decided: plain greppable lines, Rich styling on a terminal, or JSON.

Plain lines (``dsv4-serve: …``) are used when the stream is not a terminal (journald, pipes,
files), when ``NO_COLOR`` is set to anything non-empty, or when ``TERM=dumb``. Rich is imported
only when it will style something. Every line passes through the Redactor.
"""

from __future__ import annotations

import json
import shlex

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional, TextIO

from .option_table import OptionTable
from .plan import Change, Plan, plan_summary
from .redact import Redactor

PREFIX = "dsv4-serve"
SCHEMA_VERSION = 1


def use_style(stream: TextIO, env: Mapping[str, str]) -> bool:
    if env.get("NO_COLOR", "") != "" or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):
        return False


class Reporter:
    """Writes one-line messages to a stream; ``quiet`` keeps only warnings and errors."""

    def __init__(
        self,
        stream: TextIO,
        env: Mapping[str, str],
        redactor: Redactor,
        quiet: bool = False,
    ) -> None:
        self.stream = stream
        self.redactor = redactor
        self.quiet = quiet
        self._console: Any = None
        self.styled = use_style(stream, env)

    def _write(self, label: Optional[str], text: str, style: str = "") -> None:
        text = self.redactor.text(text)
        if not self.styled:
            head = f"{PREFIX}: {label}: " if label else f"{PREFIX}: "
            self.stream.write(head + text + "\n")
            self.stream.flush()
            return
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream, highlight=False, soft_wrap=True)
        from rich.text import Text

        line = Text(f"{PREFIX}: ", style="bold")
        if label:
            line.append(f"{label}: ", style=style or "bold")
        line.append(text, style="" if label else style)
        self._console.print(line)

    def info(self, text: str, label: Optional[str] = None) -> None:
        if not self.quiet:
            self._write(label, text, "cyan")

    def change(self, change: Change) -> None:
        if not self.quiet:
            self._write("changed", describe_change(change), "bold green")

    def warning(self, text: str) -> None:
        self._write("warning", text, "bold yellow")

    def error(self, text: str) -> None:
        self._write("error", text, "bold red")


def describe_change(change: Change) -> str:
    before = change.before if change.before is not None else "(not set)"
    return f"{change.option} {before} → {change.after}: {change.reason} ({change.reference})"


def command_line(argv: list[str]) -> str:
    return shlex.join(["vllm", "serve", *argv])


def report_plan(plan: Plan, reporter: Reporter, table: OptionTable, *, with_facts: bool) -> None:
    """The plan as lines: facts (``plan`` only), notes, changes, warnings, refusals, command."""
    facts = plan.facts
    if with_facts:
        model = facts.model
        what = model.architecture or model.model_type or "architecture unknown"
        reporter.info(
            f"{model.name or '(vLLM default)'}: {what} (from {model.source})", label="model"
        )
        if facts.gpus is not None:
            gpus = facts.gpus.gpus
            listed = "; ".join(f"{g.index}: {g.describe()}" for g in gpus) or "none visible"
            reporter.info(f"{listed} [{facts.gpu_source}]", label="gpus")
        elif facts.gpu_error:
            reporter.info(f"unknown ({facts.gpu_error})", label="gpus")
        else:
            reporter.info("not probed (model is not DeepSeek-V4)", label="gpus")
        vllm = facts.vllm_version or "version unknown"
        reporter.info(f"{vllm} ({facts.vllm_note})" if facts.vllm_note else vllm, label="vllm")
    for note in plan.notes:  # how facts were learnt, and what was left alone
        reporter.info(note)
    for change in plan.changes:
        reporter.change(change)
    for warning in plan.warnings:
        reporter.warning(warning)
    for refusal in plan.refusals:
        reporter.error(f"pre-flight: {refusal}")
    if plan.refusals and not with_facts:
        n = len(plan.refusals)
        reporter.error(
            f"not starting vLLM: {n} pre-flight problem{'s' if n > 1 else ''} above would make it "
            "fail later (DSV4_LAUNCH_PREFLIGHT=warn starts anyway, =off skips the checks)"
        )
        return
    reporter.info(command_line(reporter.redactor.argv(plan.argv, table)), label="command")


def plan_json(plan: Plan, redactor: Redactor, table: OptionTable) -> str:
    """The versioned JSON object of ``dsv4-launch plan --json``; secrets are ``***``."""
    data = plan_summary(plan)
    data["argv"] = redactor.argv(plan.argv, table)
    out = {"schema_version": SCHEMA_VERSION, **data}
    return redactor.text(json.dumps(out, indent=2, ensure_ascii=False))
