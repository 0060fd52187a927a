"""Rules as rows: the record every pre-flight rule and doctor check is, and how one is judged.

A ``Rule`` holds everything about one known failure: the models and GPU families it concerns
(families are sets of compute capabilities, never numeric floors), the vLLM releases it holds
for, a ``check`` for the rest of its condition (arguments, config.json, environment), its
message and fix as templates, the evidence behind it and the upstream reference. Plan, doctor,
``plan --json`` and README's tables all read these rows; ``evaluate`` is the only interpreter.

Certainty decides the level. A row says what it does when it certainly applies (``level``:
refuse or warn); when the GPU type or the vLLM version is unknown, or CUDA's numbering may
name another GPU, a refusal becomes a warning that says what would make it apply. Only rows
whose evidence is the installed vLLM's own code (``CONFIRMED`` by an oracle test that calls it,
or ``CITED`` file:line for every release in range) may refuse — tests/test_rules.py holds the
table to that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .facts import Facts
from .gpus import UNKNOWN_GPU_STAND_INS, GpuInfo, describe_kinds, family_words, in_families
from .model import V4
from .records import record
from .versions import ANY_VERSION, VersionRange

REFUSE, WARN = "refuse", "warn"  # what a row does when it certainly applies
FAIL = "fail"  # doctor rows: something on this machine stops DeepSeek-V4

# Evidence levels, strongest first.
CONFIRMED = "confirmed"  # vLLM's own code, called on the CPU by an oracle test, fails
CITED = "cited"  # the failing line is cited for every release in range; it fails unconditionally
REPORTED = "reported"  # upstream reports (kernels, hardware, a given build): a warning only
DERIVED = "derived"  # worked out from vLLM's code, not observed: a warning only
EVIDENCE = (CONFIRMED, CITED, REPORTED, DERIVED)
REFUSAL_EVIDENCE = frozenset({CONFIRMED, CITED})

Check = Callable[[Facts, "GpuInfo | None"], "Mapping[str, object] | None"]  # values may hold "uncertain": why it may not apply


@record
class Rule:
    id: str
    level: str  # REFUSE / WARN (plan rows), FAIL / WARN (doctor rows)
    evidence: str
    title: str  # README: the configuration, in a few words
    effect: str  # README: what vLLM does with it
    check: Check  # the rest of the condition; returns the template's values, or None
    message: str  # "{setting} …" — filled from check's values, {gpus} and {vllm}
    fix: str
    reference: str  # vLLM file:line per release, upstream issue
    models: frozenset[str] = frozenset({V4})
    families: frozenset[str] | None = None  # None: the rule does not depend on the GPU
    vllm: VersionRange = ANY_VERSION
    section: str = "preflight"  # doctor's section name for this row
    # The check reads the GPU list itself (memory, mixed kinds): with CUDA's numbering ambiguous
    # it cannot be certain, so a refusal becomes a qualified warning.
    reads_gpus: bool = False


@record
class Finding:
    rule: str  # Rule.id
    level: str  # REFUSE / WARN / FAIL after certainty is applied
    text: str  # the one line: message. Fix: fix (reference) [qualifier]
    evidence: str
    certain: bool
    section: str = "preflight"


def _candidates(facts: Facts) -> tuple[list[GpuInfo], bool]:
    """The GPUs to judge, and whether judging them is exact.

    Exact: every GPU vLLM will use is known. Otherwise (ambiguous CUDA numbering, unknown
    types, no GPU read at all) a rule holds for certain only if it holds for every candidate;
    GPUs of unknown type stand in as each family DeepSeek-V4 runs on.
    """
    known = facts.known_gpus
    ambiguous = bool(facts.gpus and facts.gpus.ambiguous)
    if not facts.gpu_type_unknown and not ambiguous:
        return known, True
    return known + (list(UNKNOWN_GPU_STAND_INS) if facts.gpu_type_unknown else []), False


def evaluate(rule: Rule, facts: Facts) -> Finding | None:
    """The finding ``rule`` makes on ``facts``, or None when it does not apply."""
    if facts.model.family not in rule.models:
        return None
    in_range = rule.vllm.contains(facts.vllm_version)
    if in_range is False:
        return None
    if in_range is None and facts.newest_release and rule.vllm.contains(facts.newest_release) is False:
        return None  # version unknown: a rule about old releases only is not guessed at (plan says so)
    qualifiers: list[str] = []
    if in_range is None:
        qualifiers.append(f"if vLLM is {rule.vllm.short()}: the installed version is unknown")
    ambiguous = bool(facts.gpus and facts.gpus.ambiguous)
    if rule.families is None:
        values = rule.check(facts, None)
        if values is None:
            return None
        hit_gpus: list[GpuInfo] = []
        certain = in_range is True
        if rule.reads_gpus and ambiguous:
            certain = False
            qualifiers.append("only if CUDA's device numbers name those GPUs: set CUDA_DEVICE_ORDER=PCI_BUS_ID to know")
    else:
        candidates, exact = _candidates(facts)
        hits = []
        values = None
        for gpu in candidates:
            if gpu.capability is None or not in_families(gpu.capability, rule.families):
                continue
            found = rule.check(facts, gpu)
            if found is not None:
                hits.append(gpu)
                values = values or found
        if values is None:
            return None
        real = [g for g in hits if g.index >= 0]
        # A known GPU that is certainly in use decides; otherwise every candidate must agree.
        gpu_certain = exact or (bool(real) and not ambiguous) or len(hits) == len(candidates)
        if not gpu_certain:
            if ambiguous and real:
                qualifiers.append(
                    "only if CUDA's device numbers name that GPU: set CUDA_DEVICE_ORDER=PCI_BUS_ID to know"
                )
            else:
                qualifiers.append(
                    f"if the GPUs are {family_words({_family(g) for g in hits})}: their type is unknown here"
                )
        hit_gpus = real
        certain = gpu_certain and in_range is True
        if not certain and rule.level == WARN and not real:
            return None  # a warning about GPUs that may not exist here is noise
    fill = dict(values)
    doubt = fill.pop("uncertain", None)  # the check's own reason it may not apply (e.g. an assert under -O)
    if doubt:
        certain = False
        qualifiers.append(str(doubt))
    fill.setdefault("since", rule.vllm.since)
    fill.setdefault("before", rule.vllm.before)
    if rule.families is not None:
        fill.setdefault("gpus", describe_kinds(hit_gpus) or family_words({_family(g) for g in hits}))
    fill.setdefault("vllm", facts.vllm_words())
    text = f"{rule.message.format_map(fill)}. Fix: {rule.fix.format_map(fill)} ({rule.reference})"
    if qualifiers:
        text += f" [{'; '.join(qualifiers)}]"
    level = rule.level if certain else WARN
    return Finding(rule.id, level, text, rule.evidence, certain, rule.section)


def _family(gpu: GpuInfo) -> str:
    return str(gpu.capability[0]) if gpu.capability else "?"


def evaluate_all(rules: tuple[Rule, ...], facts: Facts) -> list[Finding]:
    return [f for rule in rules if (f := evaluate(rule, facts)) is not None]
