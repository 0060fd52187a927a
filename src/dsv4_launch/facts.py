"""The facts a plan is made from: pure data, gathered by ``gather.py``."""

from __future__ import annotations

import json
TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Optional

from .gpus import GpuSelection
from .model import ModelFacts
from .serve_args import ServeArgs
from .records import record


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
