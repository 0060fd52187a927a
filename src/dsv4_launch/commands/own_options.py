"""Each command's options, declared once, and the one reading of an argument list against them.

A command module declares ``COMMAND = Command(name, help, options, run, ...)``; the door
(``cli.py``) reads the arguments with ``parse``, click's help (``click_app.py``) and completion
read the same declaration; nothing here imports click (``plan``'s start-up budget). How a
command that takes vLLM's arguments tells its own options, vLLM's and a near miss of its own
apart, and ``PLANNING``/``planning_context``: docs/DESIGN.md, "The command door".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..core.records import Record
from . import PROGRAM

TYPE_CHECKING = False  # type checkers read this as True; nothing is imported for them at run time
if TYPE_CHECKING:
    from ..adapters.vllm_install import VllmInstall
    from .context import Context


class UsageError(ValueError):
    """An option given wrongly; the message is the one line to print."""


class HelpRequested(Exception):
    """``-h``/``--help`` among the command's own arguments."""


class Option(Record):
    """One option of a command. ``metavar`` empty: a flag; otherwise it takes one value, read by
    ``convert`` (ValueError: a usage error that shows the value; UsageError: one that does not)."""

    name: str  # "--json"
    help: str
    metavar: str = ""
    convert: Callable[[str], object] | None = None
    values: Callable[[], Sequence[str]] | None = None  # what completion offers for the value
    default: str | None = None  # shown in the help only; the body applies its own default

    @property
    def key(self) -> str:
        """The name in the parsed values: ``--gpu-memory`` → ``gpu_memory``."""
        return self.name[2:].replace("-", "_")


class NearMiss(Record):
    """A near miss of a command's own option that the door hands to vLLM (a release without a
    recorded option table may know it): said on stderr, and listed in the ``--json`` document."""

    option: str  # as given, the name before any "="
    meant: str  # the command's own option it is near
    warning: str  # the line said on stderr, without the "dsv4-launch CMD: warning: " before it


NEAR_MISSES = "near_misses"  # the key under which the door hands a command its NearMiss list (cli._run)


class Command(Record):
    """One command, declared once: what the door runs, click's help shows and completion offers."""

    name: str
    help: str  # the first paragraph is the summary in ``dsv4-launch --help``; ``\\b`` keeps a block as written
    options: tuple[Option, ...]
    run: Callable[..., int]  # run(own: dict, rest: list[str], ctx: Context | None) -> exit status
    vllm_args: bool = False  # takes `vllm serve`'s arguments: undeclared options are vLLM's
    arguments: str = ""  # the positional arguments as the usage line names them ("[URL]")
    screen: Callable[[Sequence[str]], str | None] | None = None  # a refusal read before the options (check's key)
    error_document: Mapping[str, object] | None = None  # --json's keys for a usage error (default: none)
    pause_collector: bool = False  # plan, doctor, fit: the collector off for the run (commands/collector.py)

    @property
    def prefix(self) -> str:
        """Who speaks on stderr: ``dsv4-launch plan`` (each line, and ``logger`` in JSON log lines)."""
        return f"{PROGRAM} {self.name}"

    @property
    def summary(self) -> str:
        return self.help.split("\n\n", 1)[0].replace("\n", " ").strip()


def parse(command: Command, tokens: Sequence[str], env: Mapping[str, str] | None = None,
          warnings: list[NearMiss] | None = None,
          vllm: VllmInstall | None = None) -> tuple[dict[str, object], list[str]]:
    """(the command's own option values by ``Option.key``, the rest: vLLM's arguments or the
    operands — after ``--`` every word). Raises HelpRequested or UsageError (the line without the
    command's name). ``env``/``vllm``: where the installed vLLM is looked up (None: this process's),
    only to judge a near miss: a usage error where the release's own recorded table does not know
    it, else it stays vLLM's and a ``NearMiss`` is appended to ``warnings``."""
    by_name = {o.name: o for o in command.options}
    own: dict[str, object] = {}
    rest: list[str] = []
    unknown: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            rest.extend(tokens[i + 1:])
            break
        if token in ("-h", "--help"):
            raise HelpRequested(command.name)
        name, eq, value = token.partition("=")
        option = by_name.get(name)
        if option is not None:
            if not option.metavar:
                if eq:
                    raise UsageError(f"{name} takes no value")
                own[option.key] = True
            else:
                if not eq:
                    if i + 1 >= len(tokens):
                        raise UsageError(f"{name} needs a value ({option.metavar})")
                    i += 1
                    value = tokens[i]
                own[option.key] = _converted(option, value)
        else:
            if token.startswith("-") and token != "-":
                if not command.vllm_args:
                    raise UsageError(f"no such option: {name}{_did_you_mean(_near(name, command))}")
                if token.startswith("--"):
                    unknown.append(name)
            rest.append(token)
        i += 1
    for name in unknown:
        from ..vllm_cli.option_table import load_table

        meant = _near(name, command)
        if meant is None:
            continue
        hint = _did_you_mean(meant)
        found = _installed_version(own.get("vllm_version"), env, vllm)
        table = load_table(found)
        if _vllm_knows(name, table):
            continue
        if table.exact:
            raise UsageError(f"no such option: {name}{hint}")
        if warnings is not None:
            why = (f"vLLM {found} has no recorded option table here" if found else
                   "no vLLM was found here and no --vllm-version given")
            warnings.append(NearMiss(name, meant, f"{name}: not an option of {command.name}{hint}; {why}, so it may be "
                                     "one of vLLM's: passed to vLLM as written"))
    return own, rest


def _converted(option: Option, value: str) -> object:
    if option.convert is None:
        return value
    try:
        return option.convert(value)
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(f"{option.name} {_shown(value)}: {_shown(str(exc), 300, quote=False)}") from None


def _normal(name: str) -> str:
    return name.lower().replace("_", "-")


NEAR = 0.75  # difflib's similarity ratio from which a name is a near miss of an own option


def _did_you_mean(meant: str | None) -> str:
    """`` (did you mean --json?)`` for the option meant, "" for none."""
    return f" (did you mean {meant}?)" if meant else ""


def _near(name: str, command: Command) -> str | None:
    """The command's own option ``name`` is a near miss of (``--jsn`` → ``--json``), else None."""
    from collections import Counter

    typed = _normal(name)
    names = {_normal(o.name): o.name for o in command.options}
    # difflib's quick_ratio, an upper bound of its ratio: most of vLLM's options (--max-model-len)
    # are nowhere near ours, and plan does not import difflib for them
    near = [n for n in names if 2 * sum((Counter(typed) & Counter(n)).values()) >= NEAR * (len(typed) + len(n))]
    close: list[str] = []
    if near:
        import difflib

        close = difflib.get_close_matches(typed, near, n=1, cutoff=NEAR)
    if not close and len(name) > 3:  # a prefix: --vllm-ver, --gpu-mem
        close = [n for n in names if n.startswith(typed)][:1]
    return names[close[0]] if close else None


def _installed_version(version: object, env: Mapping[str, str] | None, vllm: VllmInstall | None) -> str | None:
    """The release the arguments are for: ``--vllm-version``'s, else the installed vLLM's (None:
    none found)."""
    if isinstance(version, str):
        return version
    if vllm is not None:
        return vllm.version
    import os

    from ..adapters.vllm_install import find_vllm

    return find_vllm(os.environ if env is None else env).version


def _vllm_knows(name: str, table) -> bool:
    """Whether vLLM's ``serve`` parser takes ``name`` by ``table``: an option of it, spelt with
    ``_`` or ``-``, dotted (``--x.y``) or abbreviated (argparse's allow_abbrev: any option that
    starts with it — an ambiguous abbreviation is vLLM's to refuse)."""
    base = "--" + name[2:].split(".", 1)[0].replace("_", "-")
    return any(option.startswith(base) for option in table.option_strings)


def _shown(text: str, limit: int = 60, quote: bool = True) -> str:
    """Outside text in an error line: ``repr``'d (control characters escaped), cut at ``limit``
    characters — a 5,000-character value is not worth a 5,000-character line."""
    from ..core.credentials import clip  # marked inside the quotes: the redactor masks a secret's start before it

    cut = clip(text, limit + 1)
    return repr(cut) if quote else cut


# --- the options plan, doctor and fit share --------------------------------------------------


def _gpus(text: str):
    """``8``, ``8xH200``, ``2xRTXPRO6000``, ``GB10``: a count and a preset (core/memory/presets.py)."""
    from ..core.memory.presets import parse_gpus

    return parse_gpus(text)


def _size(text: str) -> int:
    from ..core.settings import parse_size

    try:
        value = parse_size(text, unit_required=True)
    except ValueError:
        try:
            fraction = 0 < float(text) <= 1
        except ValueError:
            fraction = False
        if fraction:  # argparse would have read `--gpu-memory 0.9` as vLLM's --gpu-memory-utilization
            raise ValueError("expected the memory of one GPU, such as 96GiB or 80GB; vLLM's "
                             "--gpu-memory-utilization is written out in full here") from None
        raise
    if value <= 0:
        raise ValueError("expected a memory size such as 96GiB or 80GB")
    return value


def _release(text: str) -> str:
    """A vLLM release with a recorded option table (``data/serve-options-X.json``); a local
    build of one (``0.30.0+cu130``) is that release."""
    from ..core.versions import same_release
    from ..vllm_cli.option_table import available_versions

    known = available_versions()
    try:
        if any(same_release(text, v) for v in known):
            return text
    except ValueError:
        pass
    raise ValueError(f"no recorded option table for that release; known: {', '.join(known)}")


def _releases() -> list[str]:
    from ..vllm_cli.option_table import available_versions

    return list(available_versions())


def _preset_names() -> list[str]:
    from ..core.memory.presets import PRESETS

    return [f"{n}x{p.key}" for p in PRESETS for n in (1, 2, 4, 8)]


JSON = Option("--json", "Print the result as one JSON object.")
VLLM_VERSION = Option("--vllm-version", "Plan for this vLLM release (its recorded option table and rules) instead "
                      "of the installed one.", "X.Y.Z", _release, _releases)
# --gpus is also core/facts.GIVEN_GPUS, the source of the GPUs it gives (tests/door/test_door_names.py)
GPUS = Option("--gpus", "How many GPUs (default: those visible here), or a preset to plan for from anywhere: "
              "8xH200, 2xRTXPRO6000, 8xB200, 4xH100, 1xRTX5090, GB10, …", "N|NxGPU", _gpus, _preset_names)
GPU_MEMORY = Option("--gpu-memory", "Memory of one GPU, e.g. 96GiB (default: the preset's, or read through NVML).",
                    "SIZE", _size)
PLANNING = (JSON, VLLM_VERSION, GPUS, GPU_MEMORY)

# The commands the door knows, and where each is declared (imported only when it runs). serve is
# dsv4-serve's fast path (commands/serve.py), declared here for the help only.
COMMANDS = {name: f"dsv4_launch.commands.{name}"
            for name in ("serve", "plan", "doctor", "fit", "explain", "check", "completion")}


def load(name: str) -> Command:
    """The declaration of command ``name`` (a key of ``COMMANDS``), its module imported now (by
    ``__import__``: the ``importlib`` package is a module more on ``plan``'s path)."""
    import sys

    __import__(COMMANDS[name])
    return sys.modules[COMMANDS[name]].COMMAND


def planning_context(own: Mapping[str, object], ctx: Context | None) -> Context:
    """The world plan and doctor plan in: ``--vllm-version``'s recorded release instead of the
    installed vLLM, and ``--gpus``/``--gpu-memory``'s GPUs instead of the machine's (read through
    the context's GPU reader, so the pipeline's one path reads them: NVML is not asked for a
    preset). The command line wins over DSV4_LAUNCH_GPU_CAPABILITY/_GPU_MEMORY, as over NVML."""
    import os

    from .context import Context

    ctx = ctx or Context()
    version = own.get("vllm_version")
    if isinstance(version, str):
        from ..adapters.vllm_install import assumed_vllm

        ctx = ctx._replace(vllm=assumed_vllm(version))
    gpus, memory = own.get("gpus"), own.get("gpu_memory")
    if gpus is None and memory is None:
        return ctx
    from ..core.settings import GPU_CAPABILITY, GPU_MEMORY

    env = dict(os.environ if ctx.env is None else ctx.env)
    count, preset = gpus if isinstance(gpus, tuple) else (None, None)
    kind = None
    if memory is not None:
        env.pop(GPU_MEMORY, None)
        if gpus is None and env.get(GPU_CAPABILITY) is not None and isinstance(memory, int):
            env[GPU_MEMORY] = _size_text(memory)  # the variable's GPUs: the pipeline gives them this memory
    if gpus is not None and env.get(GPU_CAPABILITY) is not None:
        kind = None if preset is not None else _capability_gpu(env)
        if preset is not None or kind is not None:
            env.pop(GPU_CAPABILITY)  # else a bad value: the pipeline says so, as without --gpus
    return ctx._replace(env=env, read_gpus=_given_gpus(count, preset, memory if isinstance(memory, int) else None,
                                                       ctx.read_gpus, kind))


def _size_text(size: int) -> str:
    """``size`` bytes as DSV4_LAUNCH_GPU_MEMORY reads it back exactly (a unit it takes)."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{-(-size // 2**10)}KiB"  # a size no unit divides: rounded up to the next KiB


def _capability_gpu(env: Mapping[str, str]):
    """``--gpus N`` with DSV4_LAUNCH_GPU_CAPABILITY set: a GPU of the first capability it names
    (and DSV4_LAUNCH_GPU_MEMORY's memory), the kind N of are planned for; None for a bad value."""
    from ..core.gpus import GpuInfo
    from ..core.settings import SettingsError, read_settings

    try:
        settings = read_settings(env)
    except SettingsError:
        return None
    if not settings.gpu_capabilities:
        return None
    return GpuInfo(0, capability=settings.gpu_capabilities[0], memory_total_bytes=settings.gpu_memory_bytes)


def _given_gpus(count: int | None, preset, memory: int | None, machine: Callable | None, kind=None) -> Callable:
    """A GPU reader for ``--gpus N|NxGPU`` and ``--gpu-memory``: the preset's GPUs; or N of
    ``kind`` (from DSV4_LAUNCH_GPU_CAPABILITY), else of this machine's first GPU (N of an unknown
    kind when it has none); each with ``memory`` when given."""

    def read():
        from ..core.facts import GIVEN_GPUS, GpuReport
        from ..core.gpus import GpuInfo
        from ..core.memory.presets import preset_gpus

        notes: tuple[str, ...] = ()
        if preset is not None:
            report = GpuReport(gpus=preset_gpus(count or 1, preset), source=GIVEN_GPUS,
                               notes=(f"GPUs not probed: --gpus {count or 1}x{preset.key} is used instead",))
        elif kind is not None:
            report = GpuReport(gpus=(kind,), source=GIVEN_GPUS)
            notes = (f"GPUs not probed: --gpus {count} of DSV4_LAUNCH_GPU_CAPABILITY's first kind are used instead",)
        else:
            from ..adapters.nvml import read_gpus

            report = (machine or read_gpus)()
            if count is not None:
                one = (f"{report.gpus[0].name or 'GPU 0'} of this machine" if report.gpus
                       else "a GPU of unknown kind (none seen here)")
                notes = (f"--gpus {count}: {count} × {one}",)
        if preset is None and count is not None:
            first = report.gpus[0] if report.gpus else GpuInfo(0)
            listed = tuple(first._replace(index=i, uuid=None, mig_uuids=()) for i in range(count))
            report = report._replace(gpus=listed, source=GIVEN_GPUS, error=None if report.gpus else report.error)
        if memory is not None and report.gpus:
            report = report._replace(gpus=tuple(g._replace(memory_total_bytes=memory) for g in report.gpus))
            notes = (*notes, f"GPU memory: --gpu-memory {memory / 2**30:.1f} GiB per GPU is used")
        return report._replace(notes=(*report.notes, *notes))

    return read
