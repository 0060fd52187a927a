"""Pure planning for tests: facts built by hand (no NVML, no files, no vLLM), planned by the
real core, argv edited by the real vllm_cli. What a command would hand to vLLM, without one."""

from __future__ import annotations

from typing import Optional

from dsv4_launch.core.facts import Facts, GpuFacts
from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from dsv4_launch.core.model import classify
from dsv4_launch.core.records import Record
from dsv4_launch.core.rules.plan import make_plan
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import apply_changes, read_serve_args
from tests.conftest import V4_CONFIG as V4

M = "deepseek-ai/DeepSeek-V4-Flash"
V41 = {"architectures": ["DeepseekV41ForCausalLM"], "model_type": "deepseek_v41", "num_attention_heads": 64}
LLAMA = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 6}
NAMES = {12: "NVIDIA RTX PRO 6000", 10: "NVIDIA B200", 9: "NVIDIA H200", 8: "NVIDIA A100"}
SM120, SM121, SM100, SM103, SM90, SM80 = (12, 0), (12, 1), (10, 0), (10, 3), (9, 0), (8, 0)
UNSET = object()


def gpus(*ccs, memory: Optional[int] = None) -> GpuSelection:
    return GpuSelection(tuple(GpuInfo(i, NAMES.get(cc[0], "GPU"), f"GPU-{i}", cc, memory) for i, cc in enumerate(ccs)))


class Planned(Record):
    argv: tuple
    plan: object
    facts: object

    def __getattr__(self, name):  # plan fields read directly: .changes, .refusals, …
        return getattr(self.plan, name)


def facts_for(tokens, *, gpu=UNSET, version: Optional[str] = "0.33.0", config=V4, source="nvml", env=None,
              loader=None, name=M, values=None) -> Facts:
    table = load_table(version or "0.33.0")
    args = read_serve_args(tokens, table, loader or (lambda p: {}))
    return Facts(
        args=args,
        model=classify(name, config, "test"),
        gpus=GpuFacts(gpus(SM120) if gpu is UNSET else gpu, source=source, read=True),
        vllm_version=version,
        rule_env=env or {},
        accepted_values=table.accepted_values if values is None else values,
        accepted_values_exact=table.exact,
    )


def planned(tokens, *, mode="refuse", **kw) -> Planned:
    facts = facts_for(tokens, **kw)
    plan = make_plan(facts, mode)
    return Planned(apply_changes(facts.args.tokens, plan.changes), plan, facts)


def make_context(*, env=None, gpus=None, vllm=None, **fields):
    """A ``Context`` for a command under test: ``env`` (default: empty), fresh ``io.StringIO``
    streams unless given (read them back from ``ctx.stdout.getvalue()``), the GPUs the fake
    reader returns (a ``GpuReport``, a tuple of ``GpuInfo``, or a callable), ``vllm`` (default:
    an importable 0.33.0); any other ``Context`` field as given. Faked: NVML (the reader) and
    the vLLM lookup; nothing else."""
    import io

    from dsv4_launch.adapters.vllm_install import VllmInstall
    from dsv4_launch.commands.context import Context
    from dsv4_launch.core.facts import GpuReport

    if gpus is not None and not callable(gpus):
        report = gpus if isinstance(gpus, GpuReport) else GpuReport(gpus=tuple(gpus), source="nvml")
        gpus = lambda: report  # noqa: E731
    fields.setdefault("stdin", io.StringIO())
    fields.setdefault("stdout", io.StringIO())
    fields.setdefault("stderr", io.StringIO())
    return Context(env={} if env is None else env, read_gpus=gpus,
                   vllm=VllmInstall(version="0.33.0", importable=True) if vllm is None else vllm, **fields)


def plan_on_bytes(argv, env=None, vllm=None, as_json=False):
    """``plan`` in process on byte streams, as the console script's (stdout surrogateescape, stderr
    backslashreplace): (status, stdout, stderr). ``vllm``: a release the option tables do not
    record (0.35.0) unless given; the GPUs: DSV4_LAUNCH_GPU_CAPABILITY 12.0. Faked: the vLLM lookup."""
    import io

    from dsv4_launch.adapters.vllm_install import VllmInstall
    from dsv4_launch.commands.context import Context
    from dsv4_launch.commands.plan import run_plan

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)
    ctx = Context(env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0", **(env or {})}, stdout=out, stderr=err,
                  vllm=VllmInstall("0.35.0", True) if vllm is None else vllm)
    rc = run_plan(list(argv), as_json=as_json, ctx=ctx)
    return rc, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()
