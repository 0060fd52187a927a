"""Doctor's rules: what the Python that runs vLLM must have for DeepSeek-V4, as rows.

They read ``Facts.runtime`` (the answer of ``adapters/runtime_probe.py``: torch, FlashInfer,
vLLM's own requirements) and are judged by ``rules.evaluate`` like the pre-flight rows.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..facts import Facts, as_int
from ..gpus import GpuInfo
from ..model import V4
from ..vllm.facts import fact
from .engine import CITED, FAIL, WARN, Rule, row
from .kv_paths import dsv4_backend
from .speculative import spec_config, spec_method

ROWS: list[Rule] = []  # filled by @row, in this module's order
SM120_HEADS = (8, 16, 32, 64, 128)  # _SPARSE_MLA_SUPPORTED_Q_HEADS (flashinfer_sparse.py)
DSPARK_INDEX_ALIGNMENT = 64  # _DSPARK_SWA_INDEX_ALIGNMENT (v1/attention/backends/mla/compressor_utils.py)


def _flashinfer(facts: Facts) -> Mapping | None:
    fi = (facts.runtime or {}).get("flashinfer")
    return fi if isinstance(fi, Mapping) else None


def _on_sm120_path(facts: Facts) -> bool:
    return dsv4_backend(facts.args) in (None, "FLASHINFER_MLA_SPARSE_DSV4")


def sm120_decode_shapes(facts: Facts) -> list[tuple[int, int]]:
    """The (query heads, top-k) pairs vLLM's SM120 DSv4 attention asks FlashInfer for
    (``_required_sm120_sparse_topk``, ``get_padded_num_q_heads``): the main model's sliding
    window, and the DSpark draft's non-causal width ``ceil((window + n) / 64) * 64``."""
    heads = facts.model.number("num_attention_heads")
    window = facts.model.number("sliding_window") or 128
    if not heads or not 0 < window <= 1 << 20:
        return []  # absent, or no real model's: nothing to ask FlashInfer about
    tp = as_int(facts.args.value("tensor_parallel_size")) or 1
    local = max(heads // max(tp, 1), 1)
    padded = next((h for h in SM120_HEADS if local <= h), None)
    if padded is None:
        return []
    shapes = [(padded, window)]
    if spec_method(facts) == "dspark":
        n = min(max(as_int(spec_config(facts).get("num_speculative_tokens")) or 1, 1), 1 << 10)
        width = -(-(window + n) // DSPARK_INDEX_ALIGNMENT) * DSPARK_INDEX_ALIGNMENT
        shapes.append((padded, width))
    return shapes


@row(
    ROWS, id="flashinfer-missing", level=FAIL, evidence=CITED,
    title="SM 12.x without FlashInfer in vLLM's environment",
    effect="DeepSeek-V4's SM 12.x attention is FlashInfer's: the model cannot be built",
    message="FlashInfer is not installed where vLLM runs, and DeepSeek-V4 on {gpus} runs on FlashInfer's SM120 kernels",
    fix="install the flashinfer-python version vLLM pins (pip install vllm pulls it in)",
    reference="vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py", families=frozenset({"12"}), section="flashinfer")
def flashinfer_missing(facts: Facts, gpu: GpuInfo | None):
    return {} if _on_sm120_path(facts) and _flashinfer(facts) is None else None


@row(
    ROWS, id="flashinfer-sm120-api", level=FAIL, evidence=CITED,
    title="SM 12.x with a FlashInfer lacking the sparse-MLA SM120 decode API",
    effect="`RuntimeError: FLASHINFER_MLA_SPARSE_DSV4 on SM120 requires …` when the model is built",
    message="FlashInfer {version} lacks the SM120 sparse-MLA decode API (trtllm_batch_decode_sparse_mla_dsv4) "
    "that DeepSeek-V4 on {gpus} needs; vLLM raises RuntimeError when it builds the model",
    fix="install the flashinfer-python version vLLM pins",
    reference="vllm/utils/flashinfer.py has_flashinfer_sparse_mla_sm120", families=frozenset({"12"}),
    section="flashinfer")
def sm120_api_missing(facts: Facts, gpu: GpuInfo | None):
    fi = _flashinfer(facts)
    if fi is None or not _on_sm120_path(facts) or fi.get("sm120_sparse_mla"):
        return None
    return {"version": fi.get("version") or "(version unknown)"}


@row(
    ROWS, id="flashinfer-sm120-shape", level=FAIL, evidence=CITED,
    title="SM 12.x with a FlashInfer lacking the DSv4 decode shape (heads, top-k) this model needs (DSpark: 192/256)",
    effect="`RuntimeError: … requires a FlashInfer DSV4 sparse MLA decode specialization` when the model is built",
    message="FlashInfer {version} has no SM120 DeepSeek-V4 decode kernel for {shapes}; {vllm} raises "
    "RuntimeError when it builds the attention layers",
    fix="install a FlashInfer build containing flashinfer-ai/flashinfer#4380 (DSpark on SM 12.x needs top-k 192/256)",
    reference="vllm/models/deepseek_v4/nvidia/flashinfer_sparse.py _required_sm120_sparse_topk; recipes#818",
    families=frozenset({"12"}), vllm=fact("flashinfer-sm120-shape").range, section="flashinfer")
def sm120_shape_missing(facts: Facts, gpu: GpuInfo | None):
    fi = _flashinfer(facts)
    answers = fi.get("sm120_dsv4_decode") if fi else None
    if fi is None or not isinstance(answers, Mapping) or not fi.get("sm120_sparse_mla") or not _on_sm120_path(facts):
        return None
    missing = [(h, k) for h, k in sm120_decode_shapes(facts) if answers.get(f"{h},{k}") is False]
    return None if not missing else {"version": fi.get("version") or "(version unknown)",
                                     "shapes": ", ".join(f"num_q_heads={h}, top_k={k}" for h, k in missing)}


@row(
    ROWS, id="flashinfer-pin", level=WARN, evidence=CITED,
    title="FlashInfer other than the version the installed vLLM pins",
    effect="kernels vLLM was not built or tested against (pip only warns)",
    message="FlashInfer {found} is installed, but vLLM {vllm_version} pins flashinfer-python=={pinned}",
    fix="pip install 'flashinfer-python=={pinned}' in vLLM's environment",
    reference="vLLM's package metadata (Requires-Dist)", models=frozenset({V4, "deepseek_v41"}), section="flashinfer")
def flashinfer_off_pin(facts: Facts, gpu: GpuInfo | None):
    fi = _flashinfer(facts)
    vllm = (facts.runtime or {}).get("vllm")
    if fi is None or not isinstance(vllm, Mapping):
        return None
    pins = [r.split("==", 1)[1].strip() for r in vllm.get("requires") or ()
            if r.replace("_", "-").lower().startswith("flashinfer-python==")]
    found = fi.get("version")
    return None if not pins or not found or found == pins[0] else {
        "found": found, "pinned": pins[0], "vllm_version": vllm.get("version") or "?"}
