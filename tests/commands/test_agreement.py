"""One pipeline: every case through `plan`, `plan --json`, `dsv4-serve` and `doctor --json`
gives the same argv, changes, warnings, refusals and exit status (doctor fails exactly when plan
refuses); and the vLLM plugin, fed vLLM's EngineArgs instead of argv, plans the same — on these
cases end to end and on every case of the rule matrix (tests/rules/test_rules.py CASES).

In-process, with honest fakes at the boundaries only: the GPU probe returns fixed GPUs (what
NVML would report), the vLLM install is a fixed version, and the hand-over to vLLM is replaced
by a recorder (what vLLM's entry point would receive). Model files are real config.json files.
"""

from __future__ import annotations

import dataclasses
import io
import json

import pytest

from dsv4_launch.adapters.nvml import GpuReport
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands import serve as serve_command
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.doctor import run_doctor
from dsv4_launch.commands.pipeline import SERVE, prepare, prepare_engine
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.core.facts import as_human_int, as_int
from dsv4_launch.core.gpus import GpuInfo
from dsv4_launch.core.rules.plan import make_plan
from dsv4_launch.vllm_cli.engine_args import read_engine_args
from dsv4_launch.vllm_cli.option_table import load_table
from tests.planning import LLAMA, V4, V41
from tests.rules.test_rules import CASES as RULE_CASES
from tests.rules.test_rules import judge

RTX, H200, B200, A100 = (GpuInfo(0, "NVIDIA RTX PRO 6000", "GPU-r", (12, 0), 97887 * 2**20),
                         GpuInfo(0, "NVIDIA H200", "GPU-h", (9, 0), 143771 * 2**20),
                         GpuInfo(0, "NVIDIA B200", "GPU-b", (10, 0), 183359 * 2**20),
                         GpuInfo(0, "NVIDIA A100", "GPU-a", (8, 0), 81920 * 2**20))
FI = ["--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"]


def two(gpu):
    return (gpu, gpu._replace(index=1, uuid=gpu.uuid + "2"))


CASES = [
    # (id: what happens, tokens after the model, gpus, vLLM version, config, env)
    ("sm120-0.24-auto-set-to-fp8-with-a-warning", [], (RTX,), "0.24.0", V4, {}),
    ("sm120-0.33-auto-set-to-fp8", [], (RTX,), "0.33.0", V4, {}),
    ("h200-0.24-auto-set-to-fp8", ["--port", "8000"], (H200,), "0.24.0", V4, {}),
    ("h200-0.33-auto-left-to-vllm", [], (H200,), "0.33.0", V4, {}),
    ("b200-flashinfer-plain-rows-left-alone", FI, (B200,), "0.24.0", V4, {}),
    ("typed-auto-rewritten-in-place", ["--kv_cache_dtype=auto", "-tp", "2"], two(RTX), "0.24.0", V4, {}),
    ("explicit-fp8-e4m3-kept", ["--kv-cache-dtype", "fp8_e4m3"], (RTX,), "0.24.0", V4, {}),
    ("bfloat16-refused", ["--kv-cache-dtype", "bfloat16"], (RTX,), "0.33.0", V4, {}),
    ("block-size-64-refused", ["--block-size", "64"], (RTX,), "0.24.0", V4, {}),
    ("tp-4-on-2-gpus-refused", ["-tp", "4"], two(RTX), "0.24.0", V4, {}),
    ("a100-warned-not-refused", [], (A100,), "0.33.0", V4, {}),
    ("warn-mode-block-size-64-warned", ["--block-size", "64"], (RTX,), "0.24.0", V4, {"DSV4_LAUNCH_PREFLIGHT": "warn"}),
    ("off-mode-block-size-64-not-judged", ["--block-size", "64"], (RTX,), "0.24.0", V4,
     {"DSV4_LAUNCH_PREFLIGHT": "off"}),
    ("disabled-passed-through", ["--block-size", "64"], (RTX,), "0.24.0", V4, {"DSV4_LAUNCH_DISABLE": "1"}),
    ("v41-fp8-e4m3-refused", ["--kv-cache-dtype", "fp8_e4m3"], (RTX,), "0.33.0", V41, {}),
    ("llama-passed-through", ["--block-size", "16"], (RTX,), "0.24.0", LLAMA, {}),
    ("ambiguous-option-left-to-vllm", ["--kv-cache-dt", "auto"], (RTX,), "0.24.0", V4, {}),
    ("dash-secret-left-to-vllm-masked", ["--api-key", "-sk_live_1"], (RTX,), "0.24.0", V4, {}),
    ("unclear-setting-warned-auto-set-to-fp8", [], (RTX,), "0.24.0", V4, {"DSV4_LAUNCH_QUIET": "perhaps"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_command_agrees(case, tmp_path, monkeypatch):
    _, rest, gpus, version, config, extra = case
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config))
    argv = [str(model), *rest]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **extra}
    fakes = {"read_gpus": lambda: GpuReport(gpus=gpus, source="nvml", driver_version="580.1"),
             "vllm": VllmInstall(version=version, importable=True)}

    handed = []
    monkeypatch.setattr(serve_command, "hand_over", lambda a, vllm, env: handed.append(list(a)) or 0)
    serve_err = io.StringIO()
    serve_status = serve_command.run_serve(argv, Context(env=env, stderr=serve_err, stdout=io.StringIO(), **fakes))

    text_out, json_out, doctor_out = io.StringIO(), io.StringIO(), io.StringIO()
    text_status = run_plan(argv, as_json=False, ctx=Context(**fakes, env=env, stdout=text_out, stderr=io.StringIO()))
    json_status = run_plan(argv, as_json=True, ctx=Context(**fakes, env=env, stdout=json_out, stderr=io.StringIO()))
    doctor_status = run_doctor(argv, as_json=True,
                               ctx=Context(**fakes, env=env, stdout=doctor_out, stderr=io.StringIO(),
                                           read_runtime=lambda python, shapes: (None, "not inspected in this test")))
    plan = json.loads(json_out.getvalue())
    doctor = json.loads(doctor_out.getvalue())

    # exit status: plan's (text and JSON) is dsv4-serve's before the hand-over — or 2 where vLLM's own
    # parser rejects the arguments (dsv4-serve hands those over; vLLM exits 2 itself)
    assert text_status == json_status == plan["exit_status"] == (2 if plan["rejected_by_vllm"] else serve_status)
    if handed:  # serve started vLLM: with exactly the planned argv (secrets are masked only in print)
        assert serve_status == 0
        shown = plan["argv"]
        assert len(handed[0]) == len(shown)
        assert [h for h, s in zip(handed[0], shown) if s != "***"] == [s for s in shown if s != "***"]
    else:
        assert serve_status == 2
    # changes and refusals: the same in plan, dsv4-serve's log and doctor
    err = serve_err.getvalue()
    for change in plan["changes"]:
        assert f"changed: {change['option']}" in err and change["reason"] in err
    assert err.count("changed:") == len(plan["changes"])
    assert err.count("error: pre-flight:") == len(plan["refusals"])
    if "error" not in plan or not plan["error"]:
        assert doctor["plan"]["argv"] == plan["argv"]
        assert doctor["plan"]["changes"] == plan["changes"]
        assert doctor["plan"]["refusals"] == plan["refusals"]
        failed = [c["detail"] for c in doctor["checks"] if c["section"] == "preflight" and c["status"] == "FAIL"]
        assert failed == plan["refusals"]
        warned = [c["detail"] for c in doctor["checks"] if c["section"] == "plan" and c["status"] == "WARN"]
        assert warned == plan["warnings"]
        # doctor fails exactly when plan refuses: the machine here is a fake with GPUs and vLLM,
        # so no machine check can fail, and every verdict is a row's (equivalence, both ways)
        assert (doctor_status == 1) == bool(plan["refusals"] or plan["rejected_by_vllm"])
        assert bool(plan["refusals"]) == (serve_status == 2)
        assert all(c["status"] != "FAIL" or c["section"] in ("preflight", "arguments") for c in doctor["checks"])
    text = text_out.getvalue()
    assert text.count("error: pre-flight:") == len(plan["refusals"])
    for change in plan["changes"]:
        assert change["reason"] in text


# --- The plugin: vLLM's EngineArgs as the source of the same pipeline ----------------------
#
# Faked here: vLLM's EngineArgs itself. `engine_for` builds a dataclass whose fields are exactly
# the real option table's dests (every action of data/serve-options-<release>.json), with
# defaults None except a few that are vLLM's own (kv_cache_dtype "auto", tensor_parallel_size 1,
# enable_expert_parallel False, an attention_config object of defaults), and fills it the way
# vLLM's argparse types would from the replica's reading (ints, floats, JSON objects as dicts,
# --max-model-len auto as -1). The real EngineArgs judges the same in
# tests/vllm_real/test_plugin.py.

@dataclasses.dataclass
class _AttentionConfig:  # a config object with defaults, as vLLM's AttentionConfig is
    backend: object = None
    use_fp4_indexer_cache: bool = False


_VLLM_DEFAULTS = {"kv_cache_dtype": "auto", "tensor_parallel_size": 1, "enable_expert_parallel": False}


def _typed(dest, value):
    """A replica value (text) as vLLM's argparse types give it in EngineArgs."""
    if dest == "max_model_len" and isinstance(value, str):
        return -1 if value.strip().lower() in ("auto", "-1") else as_human_int(value)
    if not isinstance(value, str):
        return value
    if value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if as_int(value) is not None:
        return as_int(value)
    try:
        return float(value) if "." in value else value
    except ValueError:
        return value


def engine_for(args, version):
    table = load_table(version)
    fields = []
    for dest in dict.fromkeys(a.dest for a in table.actions):
        if dest == "attention_config":
            fields.append((dest, object, dataclasses.field(default_factory=_AttentionConfig)))
        else:
            fields.append((dest, object, dataclasses.field(default=_VLLM_DEFAULTS.get(dest))))
    EngineArgs = dataclasses.make_dataclass("EngineArgs", fields)  # noqa: N806
    given = {k: _typed(k, v) for k, v in args.values.items() if v is not None and k in EngineArgs.__dataclass_fields__}
    if isinstance(given.get("attention_config"), dict):
        known = {k: v for k, v in given["attention_config"].items() if k in ("backend", "use_fp4_indexer_cache")}
        if len(known) == len(given["attention_config"]):
            given["attention_config"] = _AttentionConfig(**known)
    given["model"] = args.model
    return EngineArgs(**given)


def _said(plan):
    return (plan.changes, plan.warnings, plan.refusals,
            sorted((f.rule, f.level, f.certain, f.text) for f in plan.findings))


MATRIX = [pytest.param(case, id=f"{rule}-{way}")
          for rule, pair in RULE_CASES.items() for way, case in zip(("trips", "passes"), pair)]


@pytest.mark.parametrize("case", MATRIX)
def test_the_plugin_reads_the_rule_matrix_as_dsv4_serve_does(case):
    """Every rule row, tripped and passed: the plan from vLLM's EngineArgs (what the plugin is
    given) equals the plan from the same arguments as dsv4-serve reads them — changes,
    warnings, refusals (would-refuse) and every finding."""
    _, kw = case
    serve_plan, facts = judge(case)
    version = kw.get("version", "0.33.0")
    engine = engine_for(facts.args, version)
    plugin_args = read_engine_args(engine, load_table(version or "0.33.0"))
    plugin_plan = make_plan(facts._replace(args=plugin_args))
    assert _said(plugin_plan) == _said(serve_plan)
    assert plugin_args.values  # it did read the engine (at least the model's own settings)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_plugin_and_dsv4_serve_gather_the_same(case, tmp_path):
    """The whole pipeline both ways (model files on disk, the GPU probe, settings): prepare()
    from argv and prepare_engine() from the EngineArgs vLLM would build from that argv say
    the same changes, warnings and refusals. Arguments vLLM itself rejects never become an
    engine: those cases check that dsv4-serve does not start them either."""
    _, rest, gpus, version, config, extra = case
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config))
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **extra}
    probe = lambda: GpuReport(gpus=gpus, source="nvml", driver_version="580.1")  # noqa: E731
    served = prepare([str(model), *rest], env, SERVE, read_gpus=probe,
                     vllm=VllmInstall(version=version, importable=True))
    if served.facts is None or served.facts.args.rejection:
        assert served.error or served.plan.disabled or served.status != 0 or served.facts.args.rejection
        if served.facts is None:
            plugged = prepare_engine(None, str(model), None, version, env, read_gpus=probe)
            assert (plugged.error is None) == (served.error is None) and plugged.plan.disabled == served.plan.disabled
        return
    engine = engine_for(served.facts.args, version)
    plugged = prepare_engine(engine, None, None, version, env, read_gpus=probe)
    # One thing the plugin cannot know: whether `--kv-cache-dtype auto` was typed. vLLM's
    # EngineArgs holds "auto" either way, so the change starts from "not set".
    served_changes = tuple(c._replace(before=None) if c.before == "auto" else c for c in served.plan.changes)
    assert (plugged.plan.changes, plugged.plan.warnings, plugged.plan.refusals) == \
        (served_changes, served.plan.warnings, served.plan.refusals)
    assert plugged.facts.model == served.facts.model and plugged.facts.gpus == served.facts.gpus
    assert plugged.facts.weights == served.facts.weights
