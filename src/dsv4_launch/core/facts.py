"""The facts a plan is made from: pure data, gathered by ``adapters/gather.py``.

The GPUs come in two steps: ``GpuReport`` is what the machine said (``adapters/nvml.read_gpus``:
NVML, else nvidia-smi), ``GpuFacts`` what the gathering made of it for vLLM (the
``CUDA_VISIBLE_DEVICES`` selection, ``DSV4_LAUNCH_GPU_*``, whether they were read at all), carried
as ``Facts.gpus``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from .gpus import GpuInfo, GpuSelection
from .model import ModelFacts
from .records import EMPTY, Record
from .settings import TRUE

# Environment variables the rules read (gather copies just these into Facts.rule_env, set-but-empty ones
# too: vLLM reads "" as the text it is, e.g. int("") raises; each reader treats "" as its reader does).
RULE_ENV = (
    "VLLM_ATTENTION_BACKEND", "VLLM_USE_DEEP_GEMM", "VLLM_USE_V2_MODEL_RUNNER", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "HF_HUB_OFFLINE", "VLLM_PLUGINS",
    "PYTHONOPTIMIZE",  # vLLM's bare asserts are skipped under -O
    "VLLM_PP_LAYER_PARTITION",  # the layers of each pipeline stage (get_pp_indices)
    "VLLM_USE_RAY_V2_EXECUTOR_BACKEND",  # Ray's V1/V2 executor (core/memory/estimate.py, in-flight batches)
    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",  # 0: the CUDA-graph estimate is not subtracted (core/memory/budget.py)
    "VLLM_SPARSE_INDEXER_MAX_LOGITS_MB",  # the indexer's logits stand-in in the profile run (core/memory/activation.py)
    "VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB",  # from 0.34: SM 10's decode-chunk cap of that stand-in (the same)
)


# What ``vllm serve`` makes of its arguments (``Facts.args``). Two readings fill it, both outside
# the core: ``vllm_cli/serve_args.read_serve_args`` (the replica of vLLM's argument parsing, for
# dsv4-serve, plan, doctor and fit) and ``vllm_cli/engine_args.read_engine_args`` (vLLM's own
# ``EngineArgs``, for the plugin).


class SecretSpans(Record):
    """Positions in the user's argv whose text is a secret: ``(token index, WHOLE|AFTER_EQ)``."""

    spans: frozenset[tuple[int, str]] = frozenset()


class ServeArgs(Record):
    """What ``vllm serve`` will make of an argument list."""

    tokens: tuple[str, ...]  # the user's arguments after ``serve``, untouched
    values: Mapping[str, object] = EMPTY  # dest -> effective value
    cli_values: Mapping[str, object] = EMPTY  # from the command line alone
    model: str | None = None
    model_source: str | None = None  # "positional", "--model", "config file", "vLLM default", "engine"
    config_path: str | None = None  # the --config file that vLLM reads
    unknown_options: tuple[str, ...] = ()  # option names this vLLM's table does not know
    # An unknown option right before the word read as the model: if it takes a value, that word
    # is its value and the model is another (the option, else "").
    model_doubt: str = ""
    rejection: str | None = None  # why vLLM will refuse these arguments, if it will
    unread: str | None = None  # why some arguments could not be seen (a --config left to vLLM)
    warnings: tuple[str, ...] = ()
    help_requested: bool = False
    secrets: SecretSpans = SecretSpans()
    file_secrets: tuple[str, ...] = ()  # values of the --config file's credential keys (never printed)

    def value(self, dest: str) -> object:
        return self.values.get(dest)

    def source(self, dest: str) -> str | None:
        """Where the effective value of ``dest`` came from."""
        if self.values.get(dest) is None:
            return None
        if self.cli_values.get(dest) is not None:
            return "command line"
        return "config file"


GIVEN_GPUS = "--gpus"  # a GpuReport's source when plan/doctor/fit's --gpus names the GPUs (commands/own_options.py)


class GpuReport(Record):
    """What the machine said about its GPUs (``adapters/nvml.read_gpus``)."""

    gpus: tuple[GpuInfo, ...] = ()
    source: str | None = None  # "nvml", "nvidia-smi", GIVEN_GPUS, or None when nothing answered
    error: str | None = None  # why the list is missing or incomplete
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    notes: tuple[str, ...] = ()


class GpuFacts(Record):
    """The GPUs vLLM will use, as the gathering learnt them (``adapters/gather.gather_gpus``)."""

    selection: GpuSelection | None = None  # None: not read, or nothing answered
    error: str | None = None
    source: str | None = None  # "nvml", "nvidia-smi", "DSV4_LAUNCH_GPU_CAPABILITY"
    notes: tuple[str, ...] = ()
    read: bool = False  # False: not asked (other model, or switched off)
    report: GpuReport | None = None  # the machine's own answer, when it was asked

    @property
    def ambiguous(self) -> bool:
        """CUDA's device numbers may name other GPUs than the ones listed (``GpuSelection.ambiguous``)."""
        return bool(self.selection and self.selection.ambiguous)


class WeightFacts(Record):
    """What is known about the checkpoint's bytes (gathered by adapters/model_weights.py)."""

    total_bytes: int | None = None
    source: str | None = None  # "model.safetensors.index.json", "the known-checkpoint table (…)"
    exact: bool = False  # from the index (or a measured table figure), not a rounded GB figure
    replicated_bytes: int | None = None  # the tensors every TP rank holds (table)
    shards_total: int = 0
    shards_missing: int = 0
    missing_bytes: int | None = None  # about how much of the checkpoint is not on disk
    local: bool = False  # a local directory (or HF_HUB_OFFLINE): vLLM will not download
    # The total is a figure published for this checkpoint (exact, or rounded like a recipe's
    # "~865 GB"), not one derived from its shapes: the shape tally may be checked against it.
    published: bool = False


class HostFacts(Record):
    """This host's memory and the free space where vLLM downloads (adapters/host.py); None: not read."""

    memory_total_bytes: int | None = None  # /proc/meminfo MemTotal
    memory_available_bytes: int | None = None  # /proc/meminfo MemAvailable
    download_free_bytes: int | None = None  # free space of the filesystem vLLM downloads into
    download_dir: str | None = None  # the nearest existing directory of that target (the HF cache or --download-dir)


class Facts(Record):
    """Everything the plan depends on, gathered before any decision."""

    args: ServeArgs  # read by vllm_cli (dsv4-serve's argv) or from vLLM's EngineArgs (the plugin)
    model: ModelFacts
    gpus: GpuFacts = GpuFacts()  # the GPUs vLLM will use, as gathered (selection None: not read, or none)
    vllm_version: str | None = None
    newest_release: str | None = None  # the newest vLLM release dsv4-launch knows (its option tables)
    rule_env: Mapping[str, str] = EMPTY  # the RULE_ENV variables that are set (empty ones included), no other
    accepted_values: Mapping[str, tuple[str, ...]] = EMPTY  # what vLLM accepts per setting (nearest table)
    accepted_values_exact: bool = False  # recorded from this very vLLM release
    weights: WeightFacts | None = None  # the checkpoint's bytes and shards (DeepSeek-V4 only)
    runtime: Mapping[str, object] | None = None  # doctor: torch/FlashInfer in vLLM's Python
    # dsv4-launch's own Python runs with -O (sys.flags.optimize; PYTHONOPTIMIZE is read from
    # rule_env): vLLM run in this process skips its bare asserts too (python_optimizes)
    interpreter_optimized: bool = False
    host: HostFacts = HostFacts()  # this host's memory and download space (DeepSeek-V4 only)

    @property
    def all_gpus(self) -> tuple[GpuInfo, ...]:
        """The GPUs vLLM may use (every candidate when CUDA's numbering is ambiguous)."""
        return self.gpus.selection.gpus if self.gpus.selection else ()

    @property
    def known_gpus(self) -> list[GpuInfo]:
        """Those of ``all_gpus`` whose compute capability is known."""
        return [g for g in self.all_gpus if g.capability is not None]

    @property
    def gpu_type_unknown(self) -> bool:
        """No GPU, or some GPU, whose compute capability is known to be what vLLM will use."""
        return not self.all_gpus or len(self.known_gpus) < len(self.all_gpus)

    def vllm_words(self) -> str:
        return f"vLLM {self.vllm_version}" if self.vllm_version else "vLLM (version unknown)"


def json_option(args: ServeArgs, dest: str) -> dict | None:
    """A JSON-object option (``--attention-config``, ``--speculative-config``) as a dict.

    The replica parser keeps values as text (dotted forms arrive folded into JSON); anything
    that is not a readable JSON object is None."""
    value = args.value(dest)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def attention_backend(args: ServeArgs) -> str | None:
    """The forced attention backend, upper case; None when vLLM picks (missing or ``auto``).

    ``--attention-backend`` or the ``backend`` key of ``--attention-config`` (JSON, dotted or
    ``-ac``); vLLM matches the name case-insensitively (``vllm/config/attention.py``)."""
    value = args.value("attention_backend")
    if value is None:
        value = (json_option(args, "attention_config") or {}).get("backend")
    if not isinstance(value, str) or value.lower() == "auto":
        return None
    return value.upper()


def as_int(value: object) -> int | None:
    """An option value as vLLM's ``int`` would read it; None for anything else (or huge)."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        text = value.strip()
        body = text[1:] if text[:1] in "+-" else text
        if 0 < len(body) <= 18 and body.isascii() and body.isdigit():
            return int(text)
    return None


def as_bool(value: object) -> bool:
    """A flag value as vLLM's pydantic would read it: True, or a true-ish string (a dotted
    ``--x.flag=True`` arrives as the string "True")."""
    return value is True or (isinstance(value, str) and value.strip().lower() in TRUE)


def as_human_int(value: object) -> int | None:
    """vLLM's ``human_readable_int`` (``--max-model-len 128k``): lower-case k/m/g/t are powers of
    ten, upper-case K/M/G/T powers of two (whole numbers only); plain integers as ``as_int``."""
    n = as_int(value)
    if n is not None or not isinstance(value, str):
        return n
    text = value.strip()
    if len(text) < 2 or len(text) > 20 or text[-1] not in "kmgtKMGT":
        return None
    number, suffix = text[:-1], text[-1]
    try:
        if suffix in "kmgt":
            if not number.replace(".", "", 1).isdigit():
                return None
            return int(float(number) * 10 ** (3 * ("kmgt".index(suffix) + 1)))
        return int(number) * 2 ** (10 * ("KMGT".index(suffix) + 1)) if number.isascii() and number.isdigit() else None
    except (ValueError, OverflowError):
        return None


_C_INT = r"[ \t\n\v\f\r]*[+-]?([0-9]+)"  # what C's strtol(s, &end, 10) reads


def python_optimizes(value: str | None, interpreter: bool = False) -> str | None:
    """Why vLLM's Python skips bare ``assert`` statements (-O), or None. ``value``: PYTHONOPTIMIZE as
    CPython reads it (Python/initconfig.c get_env_flag, 3.10–3.13): the empty text is unset; else
    ``_Py_str_to_int`` (strtol: leading blanks, a sign, digits, and nothing after them) — a number
    above 0 is -O, 0 is not, anything else (``" "``, ``"0 "``, ``"yes"``, a negative number)
    counts as 1. ``interpreter``: this Python runs with -O, and vLLM runs in it (in process; where
    it is exec'd instead, a refusal turned warning is only a warning more, never a start refused)."""
    if value:
        number = re.fullmatch(_C_INT, value)
        if number is None or number.group(1).strip("0"):  # unreadable, or a number other than 0
            return "PYTHONOPTIMIZE is set"
    return "Python runs with -O" if interpreter else None


def vllm_env_bool(value: str | None) -> bool | str | None:
    """A vLLM boolean environment variable as ``envs.py`` reads it (``bool(int(v))``, e.g.
    VLLM_USE_V2_MODEL_RUNNER): None when unset, True/False, or the text itself when ``int()``
    fails on it (vLLM raises) — the empty text too. Python's own ``int`` judges it (blanks around
    it, a sign, ``1_0``, non-ASCII digits, as vLLM's Python reads them); longer than Python's
    4300-digit limit for ``int`` counts as failing."""
    if value is None:
        return None
    if len(value) > 4300:
        return value
    try:
        return int(value) != 0
    except ValueError:
        return value
