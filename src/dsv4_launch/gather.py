"""Gather the facts a plan needs (adapter): vLLM install, arguments, model files, GPUs."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Mapping, Optional, Sequence

from .config_file import load_config_file
from .facts import Facts
from .gpus import GpuInfo, GpuSelection, select_visible
from .model import ModelFacts
from .model_files import model_facts
from .nvml import GpuProbe, probe_gpus
from .option_table import OptionTable, load_table
from .records import record
from .redact import SECRET_OPTIONS, Redactor
from .serve_args import read_serve_args
from .settings import Settings
from .vllm_install import VllmInstall, find_vllm

OVERRIDE = "DSV4_LAUNCH_GPU_CAPABILITY"


@record
class Gathered:
    facts: Facts
    table: OptionTable
    vllm: VllmInstall
    probe: Optional[GpuProbe] = None


def gather(
    argv: Sequence[str],
    env: Mapping[str, str],
    settings: Settings,
    redactor: Redactor,
    *,
    probe_gpus_when: str = "dsv4",  # "dsv4" (model is DeepSeek-V4), "always", "never"
    probe: Callable[[], GpuProbe] = probe_gpus,
    vllm: Optional[VllmInstall] = None,
) -> Gathered:
    """Read everything the plan depends on. Raises ConfigFileError for a bad --config file.

    By default the GPUs are probed only when the model is DeepSeek-V4: NVML start-up costs
    time on big machines, and nothing else depends on it.
    """
    vllm = vllm or find_vllm(env)
    table = load_table(vllm.version)
    redactor.argv(argv, table)  # learn the secret values before anything is printed

    def load(path: str):
        config = load_config_file(path)
        redactor.remember(
            str(v) for k, v in config.items() if str(k).replace("_", "-") in SECRET_OPTIONS
        )
        return config

    args = read_serve_args(argv, table, load)
    if args.help_requested or args.rejection:
        model = ModelFacts(name=args.model, source="not read")
        facts = Facts(args=args, model=model, gpus=None, vllm_version=vllm.version, vllm_note=vllm.note)
        return Gathered(facts, table, vllm)

    model = model_facts(
        args.model,
        env,
        hf_config_path=args.value("hf_config_path"),
        revision=args.value("revision"),
        download_dir=args.value("download_dir"),
        hf_overrides=args.value("hf_overrides"),
    )
    selection: Optional[GpuSelection] = None
    gpu_error = gpu_source = None
    gpu_notes: tuple[str, ...] = ()
    result = None
    if settings.gpu_capabilities:
        gpus = tuple(GpuInfo(index=i, capability=cc) for i, cc in enumerate(settings.gpu_capabilities))
        selection = GpuSelection(gpus)
        gpu_source = OVERRIDE
        gpu_notes = (f"GPUs not probed: {OVERRIDE}={settings.gpu_capability_text} is used instead",)
    elif probe_gpus_when == "always" or (probe_gpus_when == "dsv4" and model.is_dsv4_family):
        result = probe()
        gpu_source, gpu_error, gpu_notes = result.source, result.error, result.notes
        if result.gpus:
            selection = select_visible(
                result.gpus, env.get("CUDA_VISIBLE_DEVICES"), env.get("CUDA_DEVICE_ORDER")
            )
    facts = Facts(
        args=args,
        model=model,
        gpus=selection,
        gpu_error=gpu_error,
        gpu_source=gpu_source,
        gpu_notes=gpu_notes,
        vllm_version=vllm.version,
        vllm_note=vllm.note,
        env_attention_backend=env.get("VLLM_ATTENTION_BACKEND") or None,
    )
    return Gathered(facts, table, vllm, result)
