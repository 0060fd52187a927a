"""The known vLLM DeepSeek-V4 quirks, as data. Every rule dsv4-launch applies starts here.

Each entry names the vLLM file that decides it and the upstream reference. Adding the next
quirk means adding a row; ``plan.py`` only interprets these tables.

Source of the facts: ``vllm/models/deepseek_v4/nvidia/model.py`` (``_select_dsv4_attn_cls``),
``vllm/models/deepseek_v4/attention.py`` (``_resolve_dsv4_kv_cache_dtype``) and
``vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py`` (``supports_combination``), vLLM
0.24.0 and 0.33.0.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Optional

from .records import record

FP8_DS_MLA = "fp8_ds_mla"
PLAIN_ROWS = "plain rows"

# What ``auto`` becomes, and what dsv4-launch writes instead.
KV_FIX_VALUE = "fp8"
AUTO_VALUES = (None, "auto")  # missing, or exactly "auto" (values are case-sensitive)

CRASH_REFERENCE = "vLLM #47174"
FIX_REFERENCE = "vLLM #45091"


@record
class KvPath:
    """How vLLM's DeepSeek-V4 attention stores the KV cache on one kind of GPU and backend.

    ``backends`` holds ``--attention-backend`` values (upper case) that lead here; None is
    "no backend forced" (missing or ``auto``).
    """

    name: str
    majors: frozenset[int]  # compute-capability major versions
    backends: frozenset[Optional[str]]
    layout: str  # FP8_DS_MLA or PLAIN_ROWS
    # ``auto`` crashes on this path in vLLM releases before this one (None: no crash).
    auto_fixed_in: Optional[str]
    # Rewrite ``auto`` → fp8 even where vLLM resolves it itself (the layout has no other
    # variant, so it changes nothing there and keeps every version safe).
    always_rewrite: bool
    reference: str


DEFAULT_BACKENDS = frozenset({None, "FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4"})

KV_PATHS: tuple[KvPath, ...] = (
    KvPath(
        name="FlashMLA sparse",
        majors=frozenset({9, 10}),
        backends=DEFAULT_BACKENDS,
        layout=FP8_DS_MLA,
        auto_fixed_in="0.30.0",
        always_rewrite=False,
        reference=f"{CRASH_REFERENCE}; {FIX_REFERENCE} made vLLM 0.30.0 resolve auto itself",
    ),
    KvPath(
        name="FlashInfer sparse MLA (plain rows)",
        majors=frozenset({10}),
        backends=frozenset({"FLASHINFER_MLA_SPARSE_DSV4"}),
        layout=PLAIN_ROWS,
        auto_fixed_in=None,  # auto = bf16 rows; fp8 would mean per-tensor FP8 instead
        always_rewrite=False,
        reference="vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py",
    ),
    KvPath(
        name="FlashInfer SM120 sparse MLA",
        majors=frozenset({12}),
        backends=frozenset({None, "FLASHINFER_MLA_SPARSE_DSV4"}),
        layout=FP8_DS_MLA,
        auto_fixed_in="0.30.0",
        always_rewrite=True,
        reference=CRASH_REFERENCE,
    ),
)

# Compute capabilities a GPU of unknown type may have, among those DeepSeek-V4 runs on.
DSV4_MAJORS = frozenset({9, 10, 12})


def kv_path(major: int, backend: Optional[str]) -> Optional[KvPath]:
    """The KV path vLLM takes for DeepSeek-V4 on a GPU of this major and this backend."""
    for path in KV_PATHS:
        if major in path.majors and backend in path.backends:
            return path
    return None


# --- pre-flight refusals: configurations vLLM accepts at first and fails on later ---------

# Attention backends that are not DeepSeek-V4 backends at all: ValueError in
# ``_select_dsv4_attn_cls`` (vllm/models/deepseek_v4/nvidia/model.py).
NOT_DSV4_BACKENDS = frozenset({"FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120"})
# FlashMLA ships only sm_90a / sm_100f kernels: forcing it on SM 12.x cannot work.
FLASHMLA_BACKENDS = frozenset({"FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4"})
FLASHINFER_DSV4 = "FLASHINFER_MLA_SPARSE_DSV4"

MIN_MAJOR = 9  # DeepSeek-V4 kernels exist for SM 9.x, 10.x, 12.x only
MIN_VLLM_FOR_SM12 = "0.24.0"  # no SM 12.x DeepSeek-V4 path before
ATTENTION_ENV_IGNORED_FROM = "0.26.0"  # VLLM_ATTENTION_BACKEND no longer read (vLLM #50292)

# Block sizes must be a multiple of this (vllm/models/deepseek_v4/sparse_mla.py,
# get_supported_kernel_block_sizes; "No common block size" after the weights load).
BLOCK_MULTIPLE = {"deepseek_v4": 256, "deepseek_v41": 128}

# DeepSeek-V4.1's own resolver rejects these explicit values (vLLM >= 0.30).
DSV41_REJECTED_KV = frozenset({"fp8_e4m3", "bfloat16"})
