"""Facts in, plan out: the pure core of dsv4-launch.

``make_plan(facts, preflight)`` decides what changes in the arguments handed to ``vllm serve``
and why, and what is refused or worth a warning. It reads the KV-path table (``kv_paths.py``) and
the rule rows of the topic modules (``kv.py``, ``parallel.py``, ``speculative.py``, ``recipe.py``,
``releases.py``, ``memory.py``; ``registry.RULES`` is the order their findings are shown in, by each
row's ``topic``), never touches files, NVML or vLLM, and explains every
decision from the same data that made it. Turning the changes into argv tokens is
``vllm_cli/serve_args.py``'s job; printing them is ``output/``'s.
"""

from __future__ import annotations

from ..facts import Facts
from ..memory.estimate import Estimate, estimate
from ..records import Record
from .engine import REFUSE, Finding, evaluate_all
from .kv_paths import Change, kv_decision
from .registry import RULES

DISABLED_NOTE = "DSV4_LAUNCH_DISABLE is set: arguments go to vLLM unchanged, nothing checked"


class Plan(Record):
    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()  # how facts were learnt, and what was deliberately left alone
    warnings: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()  # every rule that applied, as judged (refusals included)
    preflight: str = "refuse"  # DSV4_LAUNCH_PREFLIGHT mode the plan was made with
    disabled: bool = False  # DSV4_LAUNCH_DISABLE: nothing was looked at
    # The memory picture of the arguments' layout (core/memory.estimate), computed once here for
    # DeepSeek-V4: the memory rows read this very object (estimate's memo), commands may too.
    memory: Estimate | None = None


def disabled_plan(preflight: str = "refuse") -> Plan:
    return Plan(notes=(DISABLED_NOTE,), preflight=preflight, disabled=True)


def make_plan(facts: Facts, preflight: str = "refuse") -> Plan:
    """Decide what ``vllm serve`` gets. Pure: same facts, same plan.

    ``preflight`` is the DSV4_LAUNCH_PREFLIGHT mode: "refuse", "warn" or "off".
    """
    args = facts.args
    model = facts.model
    warnings: list[str] = list(args.warnings)
    notes: list[str] = []
    if args.rejection:
        warnings.append(f"vLLM will reject these arguments ({args.rejection}); handing them over unchanged")
        return Plan(warnings=tuple(warnings), preflight=preflight)
    if args.unread:
        warnings.append(f"{args.unread}; handing the arguments over unchanged")
        return Plan(warnings=tuple(warnings), preflight=preflight)
    if args.unknown_options:
        warnings.append(f"options unknown to dsv4-launch's table of {facts.vllm_words()} options: "
                        f"{', '.join(args.unknown_options)}; passed through unchanged")
    if args.model_doubt:
        warnings.append(f"model not read for sure: {args.model_doubt}, unknown to that table, comes right before "
                        f"the word read as the model ({model.name}); if it takes a value, that word is its value and "
                        "vLLM serves another model: checked as if it takes none, nothing refused. Fix: put the model "
                        f"first, or write {args.model_doubt}=VALUE")
    if model.note:
        if model.is_dsv4_family:
            warnings.append(f"model {model.name}: {model.note}")
        else:
            notes.append(f"model {model.name}: {model.note}; arguments passed through unchanged")
    if model.is_dsv4_family and facts.gpus.error:
        skipped = "; GPU-specific checks skipped" if not facts.known_gpus else ""
        warnings.append(f"GPUs: {facts.gpus.error}{skipped}")
    notes.extend(facts.gpus.notes)
    if facts.gpus.selection is not None:
        notes.extend(facts.gpus.selection.notes)
    if (model.is_dsv4_family and args.value("distributed_executor_backend") == "ray"
            and facts.gpus.source != "DSV4_LAUNCH_GPU_CAPABILITY" and not facts.known_gpus):
        warnings.append("--distributed-executor-backend ray on a host that sees no GPU: this process decides "
                        "the KV-cache dtype for every Ray worker without knowing their GPUs; set "
                        "DSV4_LAUNCH_GPU_CAPABILITY to the workers' compute capability (e.g. 12.0)")
    if model.is_dsv4_family and facts.vllm_version is None and facts.newest_release:
        notes.append(f"vLLM's version is unknown here: checks that concern only releases before "
                     f"{facts.newest_release} were skipped")
    weights = facts.weights
    if weights is not None and weights.shards_missing and not weights.local:
        size = f"about {weights.missing_bytes / 1e9:.0f} GB" if weights.missing_bytes else "the missing shards"
        notes.append(f"vLLM will download {size} first: {weights.shards_missing} of the {weights.shards_total} "
                     "shards model.safetensors.index.json names are not in the Hugging Face cache yet")
    picture = estimate(facts, weights) if model.is_dsv4_family else None  # before the rows: they share it
    kv = kv_decision(facts)
    notes.extend(kv.notes)
    warnings.extend(kv.warnings)

    refusals: list[str] = []
    findings: tuple[Finding, ...] = ()
    if preflight == "off":
        if model.is_dsv4_family:
            notes.append("pre-flight checks are off (DSV4_LAUNCH_PREFLIGHT=off)")
    else:
        findings = tuple(evaluate_all(RULES, facts))
        for finding in findings:
            if finding.level != REFUSE:
                warnings.append(finding.text)
            elif preflight == "warn":
                warnings.append(f"{finding.text} [DSV4_LAUNCH_PREFLIGHT=warn: starting anyway]")
            else:
                refusals.append(finding.text)
    return Plan(changes=(kv.change,) if kv.change else (), notes=tuple(notes), warnings=tuple(warnings),
                refusals=tuple(refusals), findings=findings, preflight=preflight, memory=picture)
