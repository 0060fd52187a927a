"""Rules as rows: the record every pre-flight rule and doctor check is, and how one is judged.

docs/DESIGN.md ("Rules are rows") explains the fields, the topic modules that hold the rows
(each check under its row; ``registry`` collects them once, in ``TOPICS``' order), how
``evaluate`` — the only interpreter — decides certainty, and the version words the texts name
(``{since}``, ``{NAME_before:minor}``, …; tests/rules/test_rules.py fails on a release number written
into a row's text). Only ``CONFIRMED`` or ``CITED`` rows may refuse; code is read only up to the
newest verified release (core/vllm/releases.py): on a newer vLLM every refusal resting on release
code is a warning that says "verified up to …", in this one place for plan, dsv4-serve, doctor and
the plugin alike. The helpers at the end of this module are the few that several topics share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..facts import Facts, vllm_env_bool
from ..gpus import UNKNOWN_GPU_STAND_INS, GpuInfo, describe_kinds, family_words, in_families
from ..model import V4, V41
from ..records import EMPTY, Record
from ..versions import ANY_VERSION, VersionRange, is_newer
from ..vllm.releases import NEWEST_VERIFIED

REFUSE, WARN = "refuse", "warn"  # what a row does when it certainly applies

# What a plan row's finding is about (``Rule.topic``). Findings are shown topic by topic in this
# order (plan, dsv4-serve, plan --json, the plugin's log, docs/rules.md's table), and within a topic
# in the order of the rows (``registry.PLAN_MODULES``: module by module, each top to bottom).
TOPICS = (
    "kv",  # the KV cache, attention backends
    "gpus",  # GPU families and releases, the environment variables they read
    "recipe",  # the Blackwell data-centre recipe's flags copied elsewhere: MoE backend, sparse indexer
    "parallel",  # parallel sizes, the block size
    "speculative",  # speculative decoding
    "serving",  # vision, the hybrid KV-cache manager, chat
    "memory",  # weights, one request and the checkpoint's shards against the memory
)
FAIL = "fail"  # doctor rows: something on this machine stops DeepSeek-V4

# Evidence levels, strongest first.
CONFIRMED = "confirmed"  # vLLM's own code, called on the CPU by an oracle test, fails
CITED = "cited"  # the failing line is cited for every release in range; it fails unconditionally
REPORTED = "reported"  # upstream reports (kernels, hardware, a given build): a warning only
DERIVED = "derived"  # worked out from vLLM's code, not observed: a warning only
EVIDENCE = (CONFIRMED, CITED, REPORTED, DERIVED)
REFUSAL_EVIDENCE = frozenset({CONFIRMED, CITED})

# Check's values may hold "uncertain": why it may not apply.
Check = Callable[[Facts, "GpuInfo | None"], "Mapping[str, object] | None"]
TYPE_CHECKING = False  # typing is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import Any


class Rule(Record):
    id: str
    level: str  # REFUSE / WARN (plan rows), FAIL / WARN (doctor rows)
    evidence: str
    title: str  # docs/rules.md: the configuration, in a few words
    effect: str  # docs/rules.md: what vLLM does with it
    check: Check  # the rest of the condition; returns the template's values, or None
    message: str  # "{setting} …" — filled from check's values, {gpus} and {vllm}
    fix: str
    reference: str  # vLLM file:line per release, upstream issue
    models: frozenset[str] = frozenset({V4})
    families: frozenset[str] | None = None  # None: the rule does not depend on the GPU
    vllm: VersionRange = ANY_VERSION
    section: str = "preflight"  # doctor's section name for this row
    topic: str = ""  # plan rows: one of TOPICS, where the finding is shown; doctor rows: none
    # The check reads the GPU list itself (memory, mixed kinds): with CUDA's numbering ambiguous
    # it cannot be certain, so a refusal becomes a qualified warning.
    reads_gpus: bool = False
    # Other version facts the texts name, besides ``vllm`` ({NAME_since}, {NAME_before}, {NAME}).
    releases: Mapping[str, VersionRange] = EMPTY
    # The condition is what vLLM's code does (True: nearly every row), so on a release newer than
    # every verified one (vllm.releases.NEWEST_VERIFIED) a refusal is only a warning; False for a
    # fact that holds whatever vLLM's code is (a checkpoint's bytes against the GPUs' memory).
    release_code: bool = True


class Finding(Record):
    rule: str  # Rule.id
    level: str  # REFUSE / WARN / FAIL after certainty is applied
    text: str  # the one line: message. Fix: fix (reference) [qualifier]
    evidence: str
    certain: bool
    section: str = "preflight"


def row(table: list[Rule], **fields: Any) -> Callable[[Check], Check]:
    """``@row(ROWS, id=…, level=…, …)`` above a check: the row it is the check of, appended to
    ``table`` — a topic module reads top to bottom, each row with its check under it."""
    def add(check: Check) -> Check:
        table.append(Rule(check=check, **fields))
        return check

    return add


def _candidates(facts: Facts) -> tuple[list[GpuInfo], bool]:
    """The GPUs to judge, and whether judging them is exact.

    Exact: every GPU vLLM will use is known. Otherwise (ambiguous CUDA numbering, unknown
    types, no GPU read at all) a rule holds for certain only if it holds for every candidate;
    GPUs of unknown type stand in as each family DeepSeek-V4 runs on.
    """
    known = facts.known_gpus
    ambiguous = facts.gpus.ambiguous
    if not facts.gpu_type_unknown and not ambiguous:
        return known, True
    return known + (list(UNKNOWN_GPU_STAND_INS) if facts.gpu_type_unknown else []), False


def evaluate(rule: Rule, facts: Facts) -> Finding | None:
    """The finding ``rule`` makes on ``facts``, or None when it does not apply."""
    if facts.model.family not in rule.models:
        return None
    in_range = rule.vllm.contains(facts.vllm_version)
    early = rule.vllm.early(facts.vllm_version)  # 0.30.0rc1 for a rule since 0.30.0: in range or not is unknown
    if in_range is False or (in_range is None and not early and facts.newest_release
                             and rule.vllm.contains(facts.newest_release) is False):
        return None  # version unknown: a rule about old releases only is not guessed at (plan says so)
    qualifiers = [] if in_range else [
        f"if vLLM {facts.vllm_version} has {rule.vllm.since}'s code: it is a pre-release of it" if early
        else f"if vLLM is {rule.vllm.short()}: the installed version is unknown"]
    ambiguous = facts.gpus.ambiguous
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
                qualifiers.append("only if CUDA's device numbers name that GPU: "
                                  "set CUDA_DEVICE_ORDER=PCI_BUS_ID to know")
            else:
                qualifiers.append(f"if the GPUs are {family_words({_family(g) for g in hits})}: "
                                  "their type is unknown here")
        hit_gpus = real
        certain = gpu_certain and in_range is True
        if not certain and rule.level == WARN and not real:
            return None  # a warning about GPUs that may not exist here is noise
    doubts = _doubts(rule, facts)
    if doubts:
        certain = False
        qualifiers += doubts
    fill = dict(values)
    doubt = fill.pop("uncertain", None)  # the check's own reason it may not apply (e.g. an assert under -O)
    if doubt:
        certain = False
        qualifiers.append(str(doubt))
    for name, value in version_words(rule).items():
        fill.setdefault(name, value)
    if rule.families is not None:
        fill.setdefault("gpus", describe_kinds(hit_gpus) or family_words({_family(g) for g in hits}))
    fill.setdefault("vllm", facts.vllm_words())
    text = f"{rule.message.format_map(fill)}. Fix: {rule.fix.format_map(fill)} ({rule.reference})"
    if qualifiers:
        text += f" [{'; '.join(qualifiers)}]"
    level = rule.level if certain else WARN
    return Finding(rule.id, level, text, rule.evidence, certain, rule.section)


def _doubts(rule: Rule, facts: Facts) -> list[str]:
    """Why a refusing row cannot be certain here, whatever its check says."""
    if rule.level == WARN:
        return []
    said = []
    if rule.release_code and unverified(facts.vllm_version):
        # The row's bounds were read in releases up to NEWEST_VERIFIED; an open-ended one (no
        # ``before``) carried past it is a guess, and a guess never refuses.
        said.append(f"verified up to vLLM {NEWEST_VERIFIED}; vLLM {facts.vllm_version} may differ")
    if facts.args.model_doubt:  # the word judged as the model may be an unknown option's value
        said.append(f"if {facts.args.model_doubt} takes no value: the model is not read for sure")
    return said


def unverified(version: str | None) -> bool:
    """A vLLM newer than every release dsv4-launch was verified against (``0.34.0``,
    ``0.33.0.post1``, ``0.34.0rc1``; not ``0.33.0+cu130``). Unknown or unreadable: False — an
    unknown version is the in-range question's (``Rule.vllm.contains`` None), said apart."""
    return bool(is_newer(version, NEWEST_VERIFIED))


def _family(gpu: GpuInfo) -> str:
    return str(gpu.capability[0]) if gpu.capability else "?"


def evaluate_all(rules: tuple[Rule, ...], facts: Facts) -> list[Finding]:
    return [f for rule in rules if (f := evaluate(rule, facts)) is not None]


class Release(str):
    """A release bound as a row's text shows it: ``{before}`` 0.30.0, ``{before:minor}`` 0.30,
    ``{before:last}`` 0.29 (the release line before a ``x.y.0`` bound: every release < 0.30.0)."""

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        if spec == "minor":
            return ".".join(self.split(".")[:2])
        if spec == "last":
            major, minor, *rest = self.split(".")
            if not minor.isdigit() or int(minor) == 0 or any(part != "0" for part in rest):
                raise ValueError(f"{self}: no release line just before it")
            return f"{major}.{int(minor) - 1}"
        return format(str(self), spec)


def version_words(rule: Rule) -> dict[str, object]:
    """The values a row's texts may name for its version fields (only the bounds it has)."""
    words: dict[str, object] = {}
    for prefix, bounds in (("", rule.vllm), *((f"{name}_", r) for name, r in rule.releases.items())):
        if prefix:
            words[prefix[:-1]] = bounds.short()
        if bounds.since:
            words[f"{prefix}since"] = Release(bounds.since)
        if bounds.before:
            words[f"{prefix}before"] = Release(bounds.before)
    return words


def words(rule: Rule, field: str) -> str:
    """A row's ``title`` or ``effect`` as docs/rules.md and explain show it (its version words filled)."""
    text: str = getattr(rule, field)
    return text.format_map(version_words(rule)) if "{" in text else text


# --- helpers several topic modules share ----------------------------------------------------

BOTH = frozenset({V4, V41})
NOT_SM10 = frozenset({"9", "12"})  # the families DeepSeek-V4 runs on, but for SM 10.x
RECIPES = "vllm-project/recipes"


def setting(facts: Facts, dest: str, option: str) -> str:
    """``--block-size 64 (config file)``: an option as the user set it, and where."""
    value = facts.args.value(dest)
    source = facts.args.source(dest)
    where = f" ({source})" if source and source != "command line" else ""
    return f"{option} {value}{where}"


def v2_runner_env(facts: Facts) -> bool | str | None:
    """VLLM_USE_V2_MODEL_RUNNER as vLLM reads it (envs.py maybe_convert_bool: ``bool(int(v))``):
    None when unset, True/False, or the text itself when int() fails on it (vLLM raises)."""
    return vllm_env_bool(facts.rule_env.get("VLLM_USE_V2_MODEL_RUNNER"))
