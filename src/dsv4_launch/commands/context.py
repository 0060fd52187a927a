"""What a command reads and writes: one ``Context`` (HTTPie's ``Environment``).

Everything a command takes from outside itself — the environment, the three streams, the GPU
reader, the vLLM install, the hand-over, doctor's runtime reader, check's HTTP client and clock
— is one field here. ``Context()`` is this process: each field left None is the real thing,
resolved when the command starts (``here``); a test gives the fields it fakes
(``tests/planning.make_context``) and reads what was written from the streams it gave.
Kept apart from ``pipeline.py`` so that ``check``, ``explain`` and ``--version`` do not import the
pipeline; nothing is imported here at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..core.records import Record

TYPE_CHECKING = False  # type checkers read this as True; nothing is imported for them at run time
if TYPE_CHECKING:
    from ..adapters.vllm_install import VllmInstall
    from ..core.facts import GpuReport, HostFacts


class Context(Record):
    """The world a command reads and writes; None: this process's own (``here``)."""

    env: Mapping[str, str] | None = None  # None: os.environ
    stdin: object = None  # None: sys.stdin (explain reads a log from it)
    stdout: object = None  # None: sys.stdout
    stderr: object = None  # None: sys.stderr
    read_gpus: Callable[[], GpuReport] | None = None  # None: NVML, else nvidia-smi (adapters/nvml)
    vllm: VllmInstall | None = None  # None: found as the hand-over finds it (adapters/vllm_install)
    hand_over: Callable[[Sequence[str], VllmInstall, Mapping[str, str]], int] | None = None  # None: adapters/handover
    read_runtime: Callable[..., tuple[dict | None, str | None]] | None = None  # doctor; None: adapters/runtime_probe
    http_client: str | None = None  # check: "httpx" or "stdlib"; None: httpx where importable
    fetch: Callable[..., object] | None = None  # check: one HTTP request; None: adapters/http_client.request
    clock: Callable[[], float] | None = None  # check: None: time.monotonic
    read_host: Callable[[str], HostFacts] | None = None  # the host's memory and download space; None: adapters/host


def here(ctx: Context | None = None) -> Context:
    """``ctx`` with the environment and the streams it leaves None taken from this process
    (looked up now, not at import: a test's or a caller's replaced ``sys.stdout`` counts)."""
    import os
    import sys

    ctx = ctx or Context()
    return ctx._replace(env=os.environ if ctx.env is None else ctx.env,
                        stdin=sys.stdin if ctx.stdin is None else ctx.stdin,
                        stdout=sys.stdout if ctx.stdout is None else ctx.stdout,
                        stderr=sys.stderr if ctx.stderr is None else ctx.stderr)

