"""The KV-cache rule (vLLM #47174): where vLLM stores DeepSeek-V4's KV cache as fp8_ds_mla,
``--kv-cache-dtype auto`` (or none) crashes vLLM before 0.30, and ``fp8`` is the fix.

``KV_PATHS`` is the table of how vLLM's DeepSeek-V4 attention stores the KV cache per GPU
family and forced attention backend; ``kv_decision`` reads it and nothing else. Sources:
``_select_dsv4_attn_cls`` (vllm/models/deepseek_v4/nvidia/model.py),
``_resolve_dsv4_kv_cache_dtype`` (vllm/models/deepseek_v4/attention.py) and
``supports_combination`` (vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py), vLLM 0.24.0 …
0.33.0 (docs/rules-evidence.md).
"""

from __future__ import annotations

from ..facts import Facts, attention_backend
from ..gpus import UNKNOWN_GPU_STAND_INS, GpuInfo, describe_kinds, in_families
from ..records import Record
from ..versions import VersionRange
from ..vllm.facts import fact

FP8_DS_MLA = "fp8_ds_mla"
PLAIN_ROWS = "plain rows"

KV_FIX_VALUE = "fp8"  # what dsv4-launch writes; vLLM upgrades it to fp8_ds_mla itself
AUTO_VALUES = (None, "auto")  # missing, or exactly "auto" (values are case-sensitive)
KV_OPTION = "--kv-cache-dtype"

CRASH_REFERENCE = "vLLM #47174"
FIX_REFERENCE = "vLLM #45091"


class KvPath(Record):
    """How vLLM's DeepSeek-V4 attention stores the KV cache on one GPU family and backend.

    ``backends`` holds ``--attention-backend`` values (upper case) that lead here; None is "no
    backend forced" (missing or ``auto``).
    """

    name: str
    families: frozenset[str]
    backends: frozenset[str | None]
    layout: str  # FP8_DS_MLA or PLAIN_ROWS
    auto_crashes: VersionRange | None  # releases where `auto` crashes on this path
    # Rewrite `auto` → fp8 even where vLLM resolves it itself (the layout has no other
    # variant, so it changes nothing there and keeps every version safe).
    always_rewrite: bool
    reference: str


DEFAULT_BACKENDS = frozenset({None, "FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4"})
FLASHMLA_BACKENDS = frozenset({"FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4"})
FLASHINFER_DSV4 = "FLASHINFER_MLA_SPARSE_DSV4"
# Names `_select_dsv4_attn_cls` acts on; every other --attention-backend is ignored by
# DeepSeek-V4 (the default class is used), identical in 0.24–0.33 (docs/rules-evidence.md §1).
DSV4_BACKEND_NAMES = FLASHMLA_BACKENDS | {FLASHINFER_DSV4, "FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120"}
CRASHES_BEFORE_FIX = fact("dsv4-kv-auto-crash").range

KV_PATHS: tuple[KvPath, ...] = (
    KvPath(name="FlashMLA sparse", families=frozenset({"9", "10"}), backends=DEFAULT_BACKENDS, layout=FP8_DS_MLA,
           auto_crashes=CRASHES_BEFORE_FIX, always_rewrite=False,
           reference=f"{CRASH_REFERENCE}; {FIX_REFERENCE} made vLLM 0.30.0 resolve auto itself"),
    KvPath(name="FlashInfer sparse MLA (plain rows)", families=frozenset({"9", "10"}),
           backends=frozenset({"FLASHINFER_MLA_SPARSE_DSV4"}), layout=PLAIN_ROWS,
           auto_crashes=None,  # auto = bf16 rows; fp8 would mean per-tensor FP8 instead
           always_rewrite=False, reference="vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py"),
    KvPath(name="FlashInfer SM120 sparse MLA", families=frozenset({"12"}),
           backends=frozenset({None, "FLASHINFER_MLA_SPARSE_DSV4"}), layout=FP8_DS_MLA,
           auto_crashes=CRASHES_BEFORE_FIX, always_rewrite=True, reference=CRASH_REFERENCE),
    KvPath(name="FlashMLA sparse forced on SM 12.x", families=frozenset({"12"}), backends=FLASHMLA_BACKENDS,
           layout=FP8_DS_MLA, auto_crashes=CRASHES_BEFORE_FIX, always_rewrite=False, reference=CRASH_REFERENCE))


def dsv4_backend(args) -> str | None:
    """The attention backend DeepSeek-V4's selector acts on: a forced name it knows, else None
    (missing, ``auto``, or a name it ignores such as ``TRITON_MLA``)."""
    name = attention_backend(args)
    return name if name in DSV4_BACKEND_NAMES else None


def kv_path(capability: tuple[int, int], backend: str | None) -> KvPath | None:
    """The KV path vLLM takes for DeepSeek-V4 on a GPU of this capability and backend."""
    for path in KV_PATHS:
        if in_families(capability, path.families) and backend in path.backends:
            return path
    return None


class Change(Record):
    """One argument dsv4-launch sets: ``option`` (canonical spelling) from ``before`` to ``after``."""

    option: str
    before: str | None  # None: not set
    after: str
    reason: str
    reference: str
    rule: str = "kv-auto"


class KvDecision(Record):
    change: Change | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


class _Verdict(Record):
    """What the KV rule says for one possible GPU."""

    family: str
    gpu: GpuInfo | None  # None: a GPU of unknown type that may be of this family
    path: KvPath | None
    rewrite: bool


def _verdicts(facts: Facts, backend: str | None) -> list[_Verdict]:
    candidates: list[tuple[tuple[int, int], GpuInfo | None]] = [
        (g.capability, g) for g in facts.known_gpus if g.capability is not None]  # known: all of them
    if facts.gpu_type_unknown:
        candidates += [(g.capability, None) for g in UNKNOWN_GPU_STAND_INS if g.capability is not None]
    verdicts = []
    for capability, gpu in candidates:
        path = kv_path(capability, backend)
        rewrite = False
        if path is not None and path.layout == FP8_DS_MLA:
            crashes = path.auto_crashes.contains(facts.vllm_version) if path.auto_crashes else False
            rewrite = path.always_rewrite or crashes is not False  # unknown version: rewrite
        verdicts.append(_Verdict(str(capability[0]), gpu, path, rewrite))
    return verdicts


def _gpu_words(verdicts: list[_Verdict]) -> str:
    named = [describe_kinds(v.gpu for v in verdicts if v.gpu is not None)]
    if any(v.gpu is None for v in verdicts):
        named.append("GPU of unknown type")
    return ", ".join(n for n in named if n)


def kv_decision(facts: Facts) -> KvDecision:
    """Whether ``--kv-cache-dtype`` becomes fp8, and the one line that says why (or why not)."""
    model = facts.model
    if not model.is_dsv4:
        return KvDecision()
    arch = model.architecture or "DeepSeek-V4"
    current = facts.args.value("kv_cache_dtype")
    if current not in AUTO_VALUES:
        source = facts.args.source("kv_cache_dtype")
        return KvDecision(notes=(f"{KV_OPTION} {current} ({source}) kept: values you set are never changed",))

    backend = dsv4_backend(facts.args)
    verdicts = _verdicts(facts, backend)
    needing = [v for v in verdicts if v.rewrite]
    plain = [v for v in verdicts if v.path is not None and v.path.layout == PLAIN_ROWS]
    shown = "auto" if current else "not set"
    if needing and plain:
        unknown = any(v.gpu is None for v in (*needing, *plain))
        advice = (f"set DSV4_LAUNCH_GPU_CAPABILITY or {KV_OPTION} yourself" if unknown
                  else f"run one GPU kind per server, or set {KV_OPTION} yourself")
        return KvDecision(warnings=(f"{KV_OPTION} left {shown}: with --attention-backend {backend}, "
                                    f"{_gpu_words(plain)} stores plain KV rows (auto is right) but "
                                    f"{_gpu_words(needing)} needs fp8; {advice}",))
    if needing:
        path = needing[0].path
        if path is None:  # never: a verdict rewrites only on a path
            return KvDecision()
        crashes = path.auto_crashes.contains(facts.vllm_version) if path.auto_crashes else None
        where = f"{arch} on {_gpu_words(needing)}"
        if any(v.gpu is None for v in needing):
            backend_words = "the default attention backend" if backend is None else backend
            where = f"{arch} with {backend_words} on any GPU it runs on (GPU type unknown)"
        fixed_in = path.auto_crashes.before if path.auto_crashes else None
        if crashes is False:
            cause = (f"{where} stores the KV cache as fp8_ds_mla, whose only dtype is fp8 "
                     f"({facts.vllm_words()} picks it too; vLLM before {fixed_in} crashes on 'auto')")
        elif crashes is None:
            cause = (f"{where} stores the KV cache as fp8_ds_mla, and vLLM before {fixed_in} crashes on "
                     "'auto' there (installed version unknown)")
        else:
            cause = f"{where} stores the KV cache as fp8_ds_mla, and {facts.vllm_words()} crashes on 'auto' there"
        return KvDecision(change=Change(KV_OPTION, current, KV_FIX_VALUE, cause, CRASH_REFERENCE))
    fine = [v for v in verdicts if v.path is not None]
    if plain and len(plain) == len(fine):
        return KvDecision(notes=(f"{KV_OPTION} left {shown}: {_gpu_words(plain)} with --attention-backend "
                                 f"{backend} stores plain KV rows, where auto means bf16 and fp8 would mean "
                                 "per-tensor FP8",))
    if fine:
        return KvDecision(notes=(f"{KV_OPTION} left {shown}: {facts.vllm_words()} resolves auto to fp8_ds_mla "
                                 f"itself on {_gpu_words(fine)} ({FIX_REFERENCE}, vLLM 0.30.0)",))
    return KvDecision()
