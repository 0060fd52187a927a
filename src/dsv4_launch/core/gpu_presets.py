"""GPUs to plan for from a laptop (``dsv4-launch fit --gpus 8xH200``): name → what NVML reports.

``memory`` is the total NVML reports for one GPU (``nvidia-smi --query-gpu=memory.total``, MiB),
which is what vLLM's memory checks and its batch defaults see; ``capability`` the compute
capability. Figures marked ``spec`` are the data sheet's, where no NVML report was at hand.
"""

from __future__ import annotations

from .gpus import GpuInfo
from .records import record

MiB = 2**20


@record
class Preset:
    key: str  # what the user types, normalised (upper case, no spaces, dashes or underscores)
    name: str  # as NVML names it
    capability: tuple[int, int]
    memory: int  # bytes per GPU
    source: str  # "nvidia-smi" or "spec"


PRESETS: tuple[Preset, ...] = (
    Preset("H200", "NVIDIA H200", (9, 0), 143_771 * MiB, "nvidia-smi"),
    Preset("H100", "NVIDIA H100 80GB HBM3", (9, 0), 81_559 * MiB, "nvidia-smi"),
    Preset("H20", "NVIDIA H20", (9, 0), 96 * 10**9, "spec"),
    Preset("B200", "NVIDIA B200", (10, 0), 183_359 * MiB, "nvidia-smi"),
    Preset("B300", "NVIDIA B300", (10, 3), 288 * 10**9, "spec"),
    Preset("GB200", "NVIDIA GB200", (10, 0), 186 * 10**9, "spec"),
    Preset("RTXPRO6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), 97_887 * MiB, "nvidia-smi"),
    Preset("RTX5090", "NVIDIA GeForce RTX 5090", (12, 0), 32_607 * MiB, "nvidia-smi"),
    Preset("GB10", "NVIDIA GB10", (12, 1), 128 * 10**9, "spec"),
    Preset("A100", "NVIDIA A100-SXM4-80GB", (8, 0), 81_920 * MiB, "nvidia-smi"),
)
_BY_KEY = {p.key: p for p in PRESETS}
ALIASES = {"RTXPRO6000BLACKWELL": "RTXPRO6000", "PRO6000": "RTXPRO6000", "DGXSPARK": "GB10",
           "H100SXM": "H100", "B300SXM": "B300"}
MAX_GPUS = 4096


def _key(text: str) -> str:
    return "".join(ch for ch in text.upper() if ch.isascii() and ch.isalnum())


def parse_gpus(text: str) -> tuple[int, Preset | None]:
    """``8`` → (8, None); ``8xH200``, ``8×H200``, ``8*H200`` → (8, H200); ``GB10`` → (1, GB10).
    ValueError with the known names for anything else."""
    raw = text.strip()
    for sep in ("x", "X", "×", "*"):
        count, found, name = raw.partition(sep)
        if found and count.strip().isascii() and count.strip().isdigit():
            return _count(count.strip()), _preset(name)
    if raw.isascii() and raw.isdigit():
        return _count(raw), None
    return 1, _preset(raw)


def _count(text: str) -> int:
    n = int(text) if len(text) <= 5 else MAX_GPUS + 1
    if not 1 <= n <= MAX_GPUS:
        raise ValueError(f"expected 1 to {MAX_GPUS} GPUs")
    return n


def _preset(name: str) -> Preset:
    key = _key(name)
    key = ALIASES.get(key, key)
    if key in _BY_KEY:
        return _BY_KEY[key]
    raise ValueError(f"unknown GPU {name.strip()!r}; known: {', '.join(p.key for p in PRESETS)} "
                     "(or a number, with --gpu-memory)")


def preset_gpus(count: int, preset: Preset) -> tuple[GpuInfo, ...]:
    return tuple(GpuInfo(i, preset.name, None, preset.capability, preset.memory) for i in range(count))
