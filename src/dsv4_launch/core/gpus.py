"""Which GPUs a CUDA process will use: pure data and CUDA's ``CUDA_VISIBLE_DEVICES`` rules.

NVML numbers GPUs in PCI bus order and ignores ``CUDA_VISIBLE_DEVICES``; CUDA applies that
variable to its own enumeration. This module maps one onto the other as CUDA documents it
(docs/rules.md, "GPUs"): unset is every GPU, set but blank none; integer indices, full or
unique-prefix ``GPU-`` UUIDs, ``MIG-`` UUIDs (its parent GPU's capability); the list stops at the
first invalid, unknown, ambiguous or repeated entry (``0,2,-1,1``: GPUs 0 and 2). Integer indices
count in CUDA's order; with FASTEST_FIRST over GPUs that differ, which NVML cannot reproduce, the
selection says so (``ambiguous``) and lists every GPU an index could be, so that a rule holds for
whichever CUDA picks. Nothing here touches NVML or CUDA.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .records import Record


class GpuInfo(Record):
    """One physical GPU as NVML (or nvidia-smi) reports it; unknown fields are None."""

    index: int  # NVML index (PCI bus order)
    name: str | None = None
    uuid: str | None = None
    capability: tuple[int, int] | None = None
    memory_total_bytes: int | None = None
    mig_uuids: tuple[str, ...] = ()
    error: str | None = None  # why some fields are unknown

    @property
    def capability_str(self) -> str | None:
        return None if self.capability is None else f"{self.capability[0]}.{self.capability[1]}"

    def describe(self) -> str:
        """``NVIDIA RTX PRO 6000 (SM 12.0)``; unknown parts are said, not guessed."""
        name = self.name or f"GPU {self.index}"
        cc = f"SM {self.capability_str}" if self.capability else "compute capability unknown"
        return f"{name} ({cc})"


class GpuSelection(Record):
    """The GPUs a process started with the given environment may run on."""

    gpus: tuple[GpuInfo, ...]
    ambiguous: bool = False  # True: ``gpus`` lists candidates, not a known set
    notes: tuple[str, ...] = ()
    count: int | None = None  # how many GPUs CUDA will show (None: len(gpus))
    # False: CUDA numbers these GPUs in an order NVML cannot tell (FASTEST_FIRST over GPUs that
    # differ): which of them are vLLM's first N devices is not known.
    order_known: bool = True

    @property
    def visible_count(self) -> int:
        return len(self.gpus) if self.count is None else self.count


def describe_kinds(gpus: Iterable[GpuInfo]) -> str:
    """``NVIDIA H200 (SM 9.0), NVIDIA RTX PRO 6000 (SM 12.0)``: each kind of GPU once."""
    return ", ".join(sorted({g.describe() for g in gpus}))


def is_ascii_int(text: str) -> bool:
    """``"12"`` yes; ``"²"``, ``"１"`` (which ``str.isdigit`` accepts), ``"-1"``, ``""`` no.

    CUDA, nvidia-smi and vLLM read numbers as ASCII digits; so does everything here."""
    return text.isascii() and text.isdigit()


# --- GPU families: sets of compute capabilities, never numeric floors ----------------------
# A family is written "12" (every 12.x) or "12.1" (exactly 12.1). SM 12.x is not "≥ 10": the
# Blackwell workstation parts (12.x) lack the data-centre Blackwell (10.x) kernels.

# The families DeepSeek-V4 has kernels for, and a stand-in of each for a GPU of unknown type
# (index -1: no real GPU).
DSV4_FAMILIES = frozenset({"9", "10", "12"})
UNKNOWN_GPU_STAND_INS = tuple(GpuInfo(index=-1, capability=(int(f), 0)) for f in sorted(DSV4_FAMILIES, key=int))


def in_family(capability: tuple[int, int], family: str) -> bool:
    major, _, minor = family.partition(".")
    if capability[0] != int(major):
        return False
    return not minor or capability[1] == int(minor)


def in_families(capability: tuple[int, int], families: Iterable[str]) -> bool:
    return any(in_family(capability, f) for f in families)


def family_words(families: Iterable[str]) -> str:
    """``SM 9.x, SM 12.x``: short names, in order."""
    def key(f: str) -> tuple[int, int]:
        major, _, minor = f.partition(".")
        return int(major), int(minor or -1)

    return ", ".join(f"SM {f}" if "." in f else f"SM {f}.x" for f in sorted(families, key=key))


def parse_capability(text: str) -> tuple[int, int]:
    """``"12.0"`` → ``(12, 0)``; also ``"9"`` and ``"sm_120"``/``"sm120"``. ValueError otherwise."""
    value = text.strip().lower()
    value = value[3:] if value.startswith("sm_") else value.removeprefix("sm")
    if "." in value:
        major, _, minor = value.partition(".")
    elif is_ascii_int(value) and len(value) >= 2 and text.strip().lower().startswith("sm"):
        major, minor = value[:-1], value[-1]  # sm_120 → 12.0, sm_90 → 9.0
    else:
        major, minor = value, "0"
    if not (is_ascii_int(major) and is_ascii_int(minor)):
        raise ValueError(f"not a compute capability: {text!r} (expected e.g. 12.0 or 9.0)")
    return int(major), int(minor)


def select_visible(gpus: Sequence[GpuInfo], cuda_visible_devices: str | None,
                   cuda_device_order: str | None = None) -> GpuSelection:
    """Apply ``CUDA_VISIBLE_DEVICES`` (None = unset) to NVML's GPU list."""
    all_gpus = tuple(gpus)
    pci_order = (cuda_device_order or "").strip().upper() == "PCI_BUS_ID"
    uniform = (len({(g.capability, g.memory_total_bytes) for g in all_gpus}) <= 1
               and all(g.capability is not None for g in all_gpus))
    if cuda_visible_devices is None:
        # CUDA's default FASTEST_FIRST order puts the fastest GPU first and leaves the rest
        # unspecified: with GPUs that differ, which are devices 0..N-1 is not known.
        return GpuSelection(all_gpus, order_known=pci_order or uniform)
    entries = cuda_visible_devices.split(",")
    if cuda_visible_devices.strip() == "":
        return GpuSelection((), notes=("CUDA_VISIBLE_DEVICES is empty: no GPU is visible",))

    chosen: list[GpuInfo] = []
    seen: set[int] = set()
    used_index = False
    notes: list[str] = []
    for position, raw in enumerate(entries):
        entry = raw.strip()
        gpu = _resolve_entry(entry, all_gpus)
        if gpu is None or gpu.index in seen:
            why = "repeats an earlier device" if gpu is not None else "matches no GPU"
            rest = ",".join(entries[position:])
            notes.append(f"CUDA_VISIBLE_DEVICES entry {entry!r} {why}; CUDA ignores it and everything after it "
                         f"({rest!r})")
            break
        used_index = used_index or is_ascii_int(entry)
        seen.add(gpu.index)
        chosen.append(gpu)

    if used_index and not pci_order and not uniform and len(all_gpus) > 1:
        # CUDA's FASTEST_FIRST order is not NVML's: an index may be any GPU; count them all.
        notes.append("CUDA_DEVICE_ORDER is not PCI_BUS_ID and the GPUs differ, so CUDA's device numbers cannot be "
                     "matched to NVML's; every GPU is considered (set CUDA_DEVICE_ORDER=PCI_BUS_ID or use GPU UUIDs "
                     "to be exact)")
        return GpuSelection(all_gpus, ambiguous=True, notes=tuple(notes), count=len(chosen), order_known=False)
    return GpuSelection(tuple(chosen), notes=tuple(notes))


def _resolve_entry(entry: str, gpus: Sequence[GpuInfo]) -> GpuInfo | None:
    """One ``CUDA_VISIBLE_DEVICES`` entry → the GPU it names, or None if CUDA would stop."""
    if is_ascii_int(entry):
        index = int(entry) if len(entry) < 10 else len(gpus)  # no machine has a billion GPUs
        return gpus[index] if index < len(gpus) else None
    if entry.startswith("MIG-"):
        # Current form MIG-<uuid>; legacy form MIG-GPU-<parent uuid>/<gi>/<ci>.
        if entry.startswith("MIG-GPU-"):
            parent = entry[4:].split("/", 1)[0]
            return _unique(g for g in gpus if g.uuid == parent)
        return _unique(g for g in gpus if entry in g.mig_uuids)
    if entry.startswith("GPU-") and len(entry) > 4:
        return _unique(g for g in gpus if g.uuid and g.uuid.startswith(entry))
    return None


def _unique(candidates) -> GpuInfo | None:
    found = list(candidates)
    return found[0] if len(found) == 1 else None
