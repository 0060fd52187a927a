"""The facts a plan is made from: pure data, gathered by ``gather.py``."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Optional

from .gpus import GpuInfo, GpuSelection
from .model import ModelFacts
from .records import record
from .serve_args import ServeArgs


@record
class Facts:
    """Everything the plan depends on, gathered before any decision."""

    args: ServeArgs
    model: ModelFacts
    gpus: Optional[GpuSelection]  # None: the GPUs could not be read
    gpu_error: Optional[str] = None  # why they could not, or why some fields are unknown
    gpu_source: Optional[str] = None  # "nvml", "nvidia-smi", "DSV4_LAUNCH_GPU_CAPABILITY"
    gpu_notes: tuple[str, ...] = ()  # how the GPUs were learnt, when it is worth saying
    vllm_version: Optional[str] = None
    vllm_note: Optional[str] = None
    env_attention_backend: Optional[str] = None  # VLLM_ATTENTION_BACKEND (ignored by vLLM)

    @property
    def all_gpus(self) -> tuple[GpuInfo, ...]:
        """The GPUs vLLM may use (every candidate when CUDA's numbering is ambiguous)."""
        return self.gpus.gpus if self.gpus else ()

    @property
    def known_gpus(self) -> list[GpuInfo]:
        """Those of ``all_gpus`` whose compute capability is known."""
        return [g for g in self.all_gpus if g.capability is not None]


def attention_backend(args: ServeArgs) -> Optional[str]:
    """The forced attention backend, upper case; None when vLLM picks (missing or ``auto``).

    ``--attention-backend`` or the ``backend`` key of ``--attention-config`` (JSON, dotted or
    ``-ac``); vLLM matches the name case-insensitively (``vllm/config/attention.py``).
    """
    value = args.value("attention_backend")
    if value is None:
        config = args.value("attention_config")
        if isinstance(config, str):
            try:
                config = json.loads(config)
            except json.JSONDecodeError:
                config = None
        if isinstance(config, dict):
            value = config.get("backend")
    if not isinstance(value, str) or value.lower() == "auto":
        return None
    return value.upper()
