"""GPUs to plan for from a laptop (``dsv4-launch fit --gpus 8xH200``): name → what NVML reports.

``memory`` is the total NVML reports for one GPU (``nvidia-smi --query-gpu=memory.total``, MiB),
which is what vLLM's memory checks and its batch defaults see; ``capability`` the compute
capability. Figures marked ``spec`` are the data sheet's, where no NVML report was at hand.
The ``nvidia-smi`` figures are ``memory.total`` as public captures print it: H20 and GH200 480GB
97,871 MiB, H20-3e 143,771 MiB (the same as H200's), GH200 144G HBM3e 146,831 MiB (one capture
only), B300 SXM6 AC 275,040 MiB (johnpfeiffer/source.johnpfeiffer.github.io
content/ai/b300-deepseek-0731.md, one capture; the data sheet's 288 GB before), GB300 256,703 MiB at
capability 10.3 (a DGX Station GB300, driver 595.84: J-M-Recipes/recipes
hardware/dgx-station-gb300.yaml, one capture; the data sheet says 288 GB); the field cases
that use them are tests/fixtures/memory/field.json.
"""

from __future__ import annotations

from ..gpus import GpuInfo
from ..records import Record

MiB = 2**20


class Preset(Record):
    key: str  # what the user types, upper case (matched without blanks, dashes or underscores)
    name: str  # as NVML names it
    capability: tuple[int, int]
    memory: int  # bytes per GPU
    source: str  # "nvidia-smi" or "spec"


PRESETS: tuple[Preset, ...] = (
    Preset("H200", "NVIDIA H200", (9, 0), 143_771 * MiB, "nvidia-smi"),
    Preset("H100", "NVIDIA H100 80GB HBM3", (9, 0), 81_559 * MiB, "nvidia-smi"),
    Preset("H20", "NVIDIA H20", (9, 0), 97_871 * MiB, "nvidia-smi"),
    Preset("H20-3E", "NVIDIA H20-3e", (9, 0), 143_771 * MiB, "nvidia-smi"),
    Preset("GH200", "NVIDIA GH200 480GB", (9, 0), 97_871 * MiB, "nvidia-smi"),
    Preset("GH200-144G", "NVIDIA GH200 144G HBM3e", (9, 0), 146_831 * MiB, "nvidia-smi"),
    Preset("B200", "NVIDIA B200", (10, 0), 183_359 * MiB, "nvidia-smi"),
    Preset("B300", "NVIDIA B300 SXM6 AC", (10, 3), 275_040 * MiB, "nvidia-smi"),
    Preset("GB200", "NVIDIA GB200", (10, 0), 186 * 10**9, "spec"),
    Preset("GB300", "NVIDIA GB300", (10, 3), 256_703 * MiB, "nvidia-smi"),
    Preset("RTXPRO6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), 97_887 * MiB, "nvidia-smi"),
    Preset("RTX5090", "NVIDIA GeForce RTX 5090", (12, 0), 32_607 * MiB, "nvidia-smi"),
    Preset("GB10", "NVIDIA GB10", (12, 1), 128 * 10**9, "spec"),
    Preset("A100", "NVIDIA A100-SXM4-80GB", (8, 0), 81_920 * MiB, "nvidia-smi"),
)
_BY_KEY = {p.key.replace("-", ""): p for p in PRESETS}
ALIASES = {"RTXPRO6000BLACKWELL": "RTXPRO6000", "PRO6000": "RTXPRO6000", "DGXSPARK": "GB10",
           "H100SXM": "H100", "B300SXM": "B300", "H20141G": "H203E", "H20141GB": "H203E",
           "GH200480GB": "GH200", "GH20096GB": "GH200", "GH200144GB": "GH200144G", "GH200144GHBM3E": "GH200144G"}
MAX_GPUS = 4096


# What ``--gpus`` may hold: a count, a separator, a name of ASCII letters and digits with blanks,
# ``-`` or ``_`` between them. Anything else (a control character, a look-alike letter, a
# zero-width space) is refused, never dropped: ``8x\x1bH200`` is not ``8xH200``.
_ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 -_*×")
_SEPARATORS = ("x", "X", "×", "*")


def preset_key(text: str) -> str:
    """Upper case without blanks, ``-`` and ``_`` (``rtx pro-6000`` → ``RTXPRO6000``); a ``×`` or
    ``*`` inside a name stays, so the name is unknown."""
    return "".join(ch for ch in text.upper() if ch not in " -_")


def parse_gpus(text: str) -> tuple[int, Preset | None]:
    """``8`` → (8, None); ``8xH200``, ``8×H200``, ``8*H200``, ``8 x h-200`` → (8, H200); ``GB10``
    → (1, GB10). ValueError (one line, outside characters written with ``ascii()`` escapes) for
    anything else: a character outside ASCII letters, digits, blanks, ``-``, ``_`` and the
    separators; an empty count or name; a count outside 1–4096; a name the table does not know."""
    odd = next((ch for ch in text if ch not in _ALLOWED), None)
    if odd is not None:
        raise ValueError(f"{ascii(odd)} cannot be part of a GPU count or name (ASCII letters, digits, blanks, "
                         f"'-' and '_'; x, × or * between count and name); {_KNOWN}")
    raw = text.strip(" ")
    if not raw:
        raise ValueError(f"no GPUs given; {_KNOWN}")
    for sep in _SEPARATORS:
        count, found, name = raw.partition(sep)
        if found and count.strip(" ").isdigit():
            return _count(count.strip(" ")), _preset(name)
    return (_count(raw), None) if raw.isdigit() else (1, _preset(raw))


def _count(text: str) -> int:
    n = int(text) if len(text) <= 5 else MAX_GPUS + 1
    if not 1 <= n <= MAX_GPUS:
        raise ValueError(f"expected 1 to {MAX_GPUS} GPUs")
    return n


def _preset(name: str) -> Preset:
    if not name.strip(" "):
        raise ValueError(f"no GPU name after the count; {_KNOWN}")
    key = preset_key(name)
    key = ALIASES.get(key, key)
    if key in _BY_KEY:
        return _BY_KEY[key]
    raise ValueError(f"unknown GPU {ascii(name.strip(' '))}; {_KNOWN}")


_KNOWN = f"known: {', '.join(p.key for p in PRESETS)} (or a number, with --gpu-memory)"


def preset_gpus(count: int, preset: Preset) -> tuple[GpuInfo, ...]:
    return tuple(GpuInfo(i, preset.name, None, preset.capability, preset.memory) for i in range(count))
