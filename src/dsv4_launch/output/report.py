"""A plan as lines (``dsv4-serve`` on stderr, ``dsv4-launch plan`` on stdout)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.facts import Facts
from ..core.rules.kv_paths import Change
from ..core.rules.plan import Plan
from .lines import Reporter

REFUSAL_HINT = "DSV4_LAUNCH_PREFLIGHT=warn starts anyway, =off skips the checks"


def describe_change(change: Change) -> str:
    before = change.before if change.before is not None else "(not set)"
    return f"{change.option} {before} → {change.after}: {change.reason} ({change.reference})"


_SHELL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def rule_of(plan: Plan, text: str) -> str | None:
    """The rule row a warning or refusal line came from (its id goes into JSON log lines)."""
    for finding in plan.findings:
        if text == finding.text or text.startswith(f"{finding.text} [DSV4_LAUNCH_PREFLIGHT="):
            return finding.rule
    return None


def command_line(argv: Sequence[str]) -> str:
    """``shlex.join``'s line, quoted by ``shlex.quote``'s rule: shlex itself is a module more before
    every start (vLLM 0.34's CLI does not import it; tests/output/test_report.py compares the two)."""
    return " ".join(w if w and _SHELL_SAFE.issuperset(w) else "'" + w.replace("'", "'\"'\"'") + "'"
                    for w in ("vllm", "serve", *argv))


def model_line(facts: Facts | None, plan: Plan) -> str:
    if facts is None:
        return "not read (DSV4_LAUNCH_DISABLE is set)" if plan.disabled else "not read"
    model = facts.model
    if facts.args.rejection:
        return "not read (vLLM will reject these arguments)"
    if facts.args.unread:
        return "not read (some of vLLM's arguments are not visible here)"
    name = model.name or "(vLLM's default model)"
    if model.source is None:
        return f"{name}: architecture unknown"
    what = model.architecture or model.model_type or "architecture unknown"
    return f"{name}: {what} (from {model.source})"


def gpus_line(facts: Facts | None, plan: Plan) -> str:
    if facts is None:
        return "not probed (DSV4_LAUNCH_DISABLE is set)" if plan.disabled else "not probed"
    gpus = facts.gpus
    if gpus.selection is not None:
        listed = "; ".join(f"{g.index}: {g.describe()}" for g in gpus.selection.gpus) or "none visible"
        return f"{listed} [{gpus.source}]"
    if not gpus.read:
        if facts.args.rejection or facts.args.unread:
            return "not probed (the model is not known)"
        return "not probed (the model is not DeepSeek-V4)"
    return f"unknown ({gpus.error})" if gpus.error else "none found"


def vllm_line(version: str | None, note: str | None) -> str:
    text = version or "version unknown"
    return f"{text} ({note})" if note else text


def report_plan(reporter: Reporter, plan: Plan, facts: Facts | None, argv_shown: Sequence[str], *, with_facts: bool,
                vllm_version: str | None = None, vllm_note: str | None = None, memory_line: str | None = None) -> None:
    """Facts (``plan`` only), notes, changes, warnings, refusals, then the command — or, for
    ``dsv4-serve`` with refusals, the line saying vLLM is not started."""
    if with_facts:
        reporter.info(model_line(facts, plan), label="model")
        reporter.info(gpus_line(facts, plan), label="gpus")
        reporter.info(vllm_line(vllm_version, vllm_note), label="vllm")
        if memory_line:
            reporter.info(memory_line, label="memory")
    for note in plan.notes:
        reporter.info(note)
    for change in plan.changes:
        reporter.changed(describe_change(change), option=change.option)
    for warning in plan.warnings:
        reporter.warning(warning, rule=rule_of(plan, warning))
    for refusal in plan.refusals:
        reporter.error(f"pre-flight: {refusal}", rule=rule_of(plan, refusal))
    if plan.refusals:
        n = len(plan.refusals)
        problems = f"{n} pre-flight problem{'s' if n > 1 else ''} above would make it fail later"
        if with_facts:
            reporter.error(f"dsv4-serve would not start vLLM: {problems} ({REFUSAL_HINT})")
        else:
            reporter.error(f"not starting vLLM: {problems} ({REFUSAL_HINT})")
            return
    reporter.info(command_line(argv_shown), label="command")
