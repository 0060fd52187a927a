"""Gather the facts a plan needs (adapter): vLLM install, arguments, model files, GPUs.

The arguments come from ``vllm serve``'s argv (``gather``) or vLLM's own ``EngineArgs``
(``gather_engine``: the plugin), then go through the same ``gather_facts``: one ``Facts``. Doctor
reads this machine besides (``gather_machine``). Every source degrades to "unknown, with a reason"
on its own; only a ``--config`` file vLLM cannot use (ConfigFileError) stops here: vLLM would die too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence

from ..core.credentials import clip
from ..core.facts import RULE_ENV, Facts, GpuFacts, GpuReport, HostFacts, ServeArgs, python_optimizes
from ..core.gpus import GpuInfo, GpuSelection, select_visible
from ..core.model import ModelFacts, classify
from ..core.records import Record
from ..core.settings import GPU_CAPABILITY, GPU_MEMORY, Settings
from ..vllm_cli.option_table import OptionTable, available_versions, load_table
from ..vllm_cli.serve_args import read_serve_args
from . import host as host_adapter
from .checkpoints import known_checkpoint
from .model_files import hf_offline, hub_cache_dirs, model_facts
from .model_weights import read_weights
from .nvml import read_gpus
from .vllm_install import VllmInstall, find_vllm

READ_GPUS_WHEN_DSV4, READ_GPUS_ALWAYS = "dsv4", "always"

TYPE_CHECKING = False  # type checkers read this as True; doctor's records are imported only by doctor
if TYPE_CHECKING:
    from ..core.rules.doctor import VllmRuntime


class Gathered(Record):
    """The facts, and the option table the arguments were read with (the pipeline reads the edited
    argv again with it)."""

    facts: Facts
    table: OptionTable


def read_args(argv: Sequence[str], table: OptionTable, env: Mapping[str, str] | None = None) -> ServeArgs:
    """The arguments as vLLM reads them. Raises ConfigFileError for a --config file vLLM cannot
    use; a --config left unread (a FIFO) is said in ``ServeArgs.unread``. ``env``: vLLM's
    environment, for what vLLM checks with a bare assert only (``optimized``)."""
    return read_serve_args(argv, table, _load_config_file, optimized=optimized(env or {}))


def optimized(env: Mapping[str, str]) -> str | None:
    """Why vLLM's bare asserts are skipped (PYTHONOPTIMIZE in ``env``, or this Python's -O: vLLM
    runs in this process), or None."""
    return python_optimizes(env.get("PYTHONOPTIMIZE"), sys.flags.optimize > 0)


def _load_config_file(path: str) -> dict[str, object]:
    from .config_file import load_config_file  # only with --config: not on most starts' path

    return load_config_file(path)


def _model(args: ServeArgs, env: Mapping[str, str]) -> ModelFacts:
    def known():  # read only when no config.json is: the table is parsed on demand
        return known_checkpoint(args.model) if args.model else None

    try:
        return model_facts(args.model, env, hf_config_path=_text(args.value("hf_config_path")),
                           revision=_text(args.value("revision")), download_dir=_text(args.value("download_dir")),
                           hf_overrides=args.value("hf_overrides"), known=known)
    except Exception as exc:  # a model file we did not foresee: unknown, and said
        return ModelFacts(name=args.model,
                          note=f"could not read its files ({type(exc).__name__}: {clip(str(exc), 120)})")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def gather(argv: Sequence[str], env: Mapping[str, str], settings: Settings, *,
           read_gpus_when: str = READ_GPUS_WHEN_DSV4, read_gpus: Callable[[], GpuReport] = read_gpus,
           vllm: VllmInstall | None = None, default_model: str | None = None,
           read_host: Callable[[str], HostFacts] | None = None, layout_for_visible: bool = False) -> Gathered:
    """Read everything the plan depends on from ``vllm serve``'s arguments (ConfigFileError for a
    bad --config file). GPUs by policy: when the model is DeepSeek-V4 (NVML start-up costs time on
    big machines), always (doctor, fit) or never. ``layout_for_visible`` (doctor): with no arguments,
    the visible GPUs' best layout (``core/memory/fit.visible_layout``) instead of vLLM's TP 1."""
    vllm = vllm or find_vllm(env)
    table = load_table(vllm.version)
    args = read_args(argv, table, env)
    if default_model and args.model_source in (None, "vLLM default") and not (args.rejection or args.unread):
        args = read_args([default_model, *argv], table, env)  # doctor and fit: DeepSeek-V4, not vLLM's default
    gathered = gather_facts(args, env, settings, table, vllm, read_gpus_when=read_gpus_when, read_gpus=read_gpus,
                            read_host=read_host)
    if layout_for_visible and default_model and not argv and gathered.facts.model.is_dsv4_family:
        from ..core.memory.fit import flags, visible_layout  # doctor's alone

        layout = visible_layout(gathered.facts)
        if layout is not None and layout.gpus > 1:  # the facts do not depend on the layout: only the arguments change
            args = read_args([default_model, *flags(layout).split()], table, env)
            gathered = gathered._replace(facts=gathered.facts._replace(args=args))
    return gathered


def gather_engine(engine: object, env: Mapping[str, str], settings: Settings, vllm_version: str | None, *,
                  model: str | None = None, hf_config: Mapping[str, object] | None = None,
                  read_gpus: Callable[[], GpuReport] = read_gpus) -> Gathered:
    """The same facts from vLLM's own ``EngineArgs`` (the plugin): every field the release's
    option table names, read by ``vllm_cli/engine_args``, then the same model files, weights
    and GPUs as ``gather``. ``hf_config``: the model config vLLM loaded, used only when no
    config.json can be read here."""
    from ..vllm_cli.engine_args import read_engine_args  # the plugin's alone: not on dsv4-serve's path

    vllm = VllmInstall(version=vllm_version, importable=True, note="the running vLLM")
    table = load_table(vllm_version)
    args = read_engine_args(engine, table, model)
    return gather_facts(args, env, settings, table, vllm, read_gpus_when=READ_GPUS_WHEN_DSV4, read_gpus=read_gpus,
                        hf_config=hf_config)


def gather_facts(args: ServeArgs, env: Mapping[str, str], settings: Settings, table: OptionTable, vllm: VllmInstall,
                 *, read_gpus_when: str = READ_GPUS_WHEN_DSV4, read_gpus: Callable[[], GpuReport] = read_gpus,
                 hf_config: Mapping[str, object] | None = None,
                 read_host: Callable[[str], HostFacts] | None = None) -> Gathered:
    """Facts from arguments however they were read: model files, weights, GPUs, and for
    DeepSeek-V4 this host's memory and the free space where vLLM downloads (``read_host``; None:
    adapters/host.read_host)."""
    model, gpus, weights, host = ModelFacts(name=args.model), GpuFacts(), None, HostFacts()
    if not (args.help_requested or args.rejection or args.unread):
        model = _model(args, env)
        if model.config is None and hf_config is not None:
            model = classify(args.model, hf_config, "vLLM's model config")
        gpus = gather_gpus(settings, env, model, read_gpus_when=read_gpus_when, read_gpus=read_gpus)
        if model.is_dsv4_family:
            weights = _weights(args, model, env)
            try:
                host = (read_host or host_adapter.read_host)(hub_cache_dirs(env, _text(args.value("download_dir")))[0])
            except Exception:  # never stops a start: unknown, said "not checked"
                host = HostFacts()
    facts = Facts(
        args=args, model=model, gpus=gpus, vllm_version=vllm.version,
        rule_env={k: env[k] for k in RULE_ENV if k in env},  # set but empty too: vLLM reads "" (int("") raises)
        interpreter_optimized=sys.flags.optimize > 0, accepted_values=table.accepted_values,
        accepted_values_exact=table.exact, weights=weights, newest_release=available_versions()[-1], host=host)
    return Gathered(facts, table)


def _weights(args: ServeArgs, model: ModelFacts, env: Mapping[str, str]):
    """The checkpoint's size and shards; never raises (unknown is said by the estimate)."""
    import os

    try:
        local = args.model is not None and os.path.isdir(args.model)  # as written: vLLM expands no ~
        offline = hf_offline(env)  # as huggingface_hub reads it (TRANSFORMERS_OFFLINE too)
        known = known_checkpoint(args.model) if args.model else None
        return read_weights(model.directory, local or offline, known)
    except Exception:
        return None


def gather_gpus(settings: Settings, env: Mapping[str, str], model: ModelFacts, *,
                read_gpus_when: str = READ_GPUS_WHEN_DSV4, read_gpus: Callable[[], GpuReport] = read_gpus) -> GpuFacts:
    """The GPUs vLLM will use: NVML (nvidia-smi as a fallback) mapped through
    CUDA_VISIBLE_DEVICES, asked by policy; DSV4_LAUNCH_GPU_CAPABILITY replaces the capability
    only — the memory stays NVML's where NVML can be read (``_capability_override``)."""
    wanted = read_gpus_when == READ_GPUS_ALWAYS or (read_gpus_when == READ_GPUS_WHEN_DSV4 and model.is_dsv4_family)
    if settings.gpu_capabilities:
        return _capability_override(settings, env, read_gpus if wanted else None)
    if not wanted:
        return GpuFacts()
    result = read_gpus()
    selection = None
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if result.gpus and result.source == "nvidia-smi" and visible and "MIG-" in visible:
        # nvidia-smi's list names no MIG devices: which GPUs (and how many) is not known here.
        note = ("CUDA_VISIBLE_DEVICES names MIG devices, which nvidia-smi's GPU list cannot resolve; "
                "every GPU is considered")
        selection = GpuSelection(result.gpus, ambiguous=True, notes=(note,))
    elif result.gpus:
        selection = select_visible(result.gpus, visible, env.get("CUDA_DEVICE_ORDER"))
    notes = result.notes
    if selection is not None and settings.gpu_memory_bytes:  # the override wins over NVML, as the capability's does
        selection = selection._replace(gpus=tuple(g._replace(memory_total_bytes=settings.gpu_memory_bytes)
                                                  for g in selection.gpus))
        notes = (*notes, f"GPU memory: {GPU_MEMORY}={settings.gpu_memory_bytes / 2**30:.1f} GiB per GPU is used "
                 "instead of what NVML reports")
    return GpuFacts(selection, result.error, result.source, notes, True, result)


def _capability_override(settings: Settings, env: Mapping[str, str],
                         read_gpus: Callable[[], GpuReport] | None) -> GpuFacts:
    """DSV4_LAUNCH_GPU_CAPABILITY's GPUs (one per capability given), with DSV4_LAUNCH_GPU_MEMORY's
    memory, else the memory NVML reports for the GPUs visible here (the i-th visible GPU's for the
    i-th; all of them where every visible GPU has the same), else none: unknown, and the plan
    says "memory not checked" (core/rules/memory.py) rather than assume any."""
    memories: list[int | None] = [settings.gpu_memory_bytes] * len(settings.gpu_capabilities or ())
    notes = [f"GPUs not probed for their type: {GPU_CAPABILITY}={settings.gpu_capability_text} is used instead"]
    if settings.gpu_memory_bytes:
        notes.append(f"GPU memory: {GPU_MEMORY}={settings.gpu_memory_bytes / 2**30:.1f} GiB per GPU")
    elif read_gpus is not None:
        try:
            result = read_gpus()
        except Exception:  # the probe never raises by contract; a broken library is "not read"
            result = GpuReport()
        visible = select_visible(result.gpus, env.get("CUDA_VISIBLE_DEVICES"), env.get("CUDA_DEVICE_ORDER")).gpus \
            if result.gpus else ()
        sizes = [g.memory_total_bytes for g in visible]
        if sizes and all(sizes) and len(set(sizes)) == 1:
            memories = [sizes[0]] * len(memories)
        elif sizes:
            memories = [sizes[i] if i < len(sizes) else None for i in range(len(memories))]
        if any(memories):
            shown = sorted({m for m in memories if m})
            notes.append("GPU memory: " + ", ".join(f"{m / 2**30:.1f} GiB" for m in shown) + " per GPU, as NVML "
                         f"reports it here (set {GPU_MEMORY} where vLLM's GPUs are elsewhere)")
    gpus = tuple(GpuInfo(index=i, capability=cc, memory_total_bytes=memories[i])
                 for i, cc in enumerate(settings.gpu_capabilities or ()))
    return GpuFacts(GpuSelection(gpus), source=GPU_CAPABILITY, notes=tuple(notes), read=True)


class Machine(Record):
    """What doctor reads of this machine besides the plan's facts (``gather_machine``)."""

    runtime: VllmRuntime | None = None  # the Python that runs vLLM: its version, vLLM, torch, FlashInfer, plugins
    gpus: GpuReport | None = None  # the machine's GPU report (None: DSV4_LAUNCH_GPU_CAPABILITY replaces the probe)
    install_hint: str = ""  # how to install vLLM where dsv4-launch runs
    plugin_hint: str | None = None  # how to install the plugin where vLLM runs (None: no interpreter found)
    failure: Exception | None = None  # a failure inside dsv4-launch while reading: doctor says it as FAIL


def gather_machine(facts: Facts | None, vllm: VllmInstall, env: Mapping[str, str], *,
                   read_gpus: Callable[[], GpuReport] = read_gpus,
                   read_runtime: Callable[..., tuple[dict | None, str | None]] | None = None) -> Machine:
    """Doctor's reading of this machine: the Python that runs vLLM (the installed vLLM's, even when
    ``--vllm-version`` planned for another) and its runtime report (torch, FlashInfer, plugins;
    ``read_runtime``, None: ``adapters/runtime_probe``), the GPU report (the one the facts were made
    from, ``GpuFacts.report``; read here when the facts were not: off switch, arguments vLLM rejects),
    and the install hints. Each part degrades to unknown with a reason on its own."""
    import platform

    from ..core.rules.doctor import VllmRuntime
    from ..core.rules.doctor_rows import sm120_decode_shapes
    from .handover import install_hint
    from .installer import plugin_command  # the command fits the installer of vLLM's environment
    from .vllm_install import interpreter_of

    install = find_vllm(env) if vllm.assumed else vllm  # --vllm-version is for the plan; the machine is this one
    python, why = interpreter_of(install, env.get("PATH"))
    result = None
    if python is not None:
        shapes = sm120_decode_shapes(facts) if facts is not None else []
        result, why = (read_runtime or _read_runtime)(python, shapes)
    gpus = facts.gpus.report if facts is not None else None
    if gpus is None and (facts is None or facts.gpus.source != GPU_CAPABILITY):
        gpus = read_gpus()
    version = result.get("python") if isinstance(result, dict) and isinstance(result.get("python"), str) else None
    runtime = VllmRuntime(
        python=f"{version} ({python})" if version and python else f"{platform.python_version()} ({sys.executable})",
        vllm_version=install.version, vllm_where="this environment" if install.importable else install.executable,
        report=result, report_error=why)
    return Machine(runtime, gpus, install_hint(), plugin_command(python) if python else None)


def _read_runtime(python: str, shapes) -> tuple[dict | None, str | None]:
    from .runtime_probe import read_runtime  # doctor's alone

    return read_runtime(python, shapes)
