"""dsv4-launch doctor: every section with its subject present and missing.

Faked: the GPU probe result (GpuReport values, as nvml.py returns them) and the runtime probe
(the JSON the child interpreter prints about torch and FlashInfer); the real runtime probe
runs once against this test interpreter, and against real torch in tests/vllm_real.
"""

from __future__ import annotations

import io
import json
import sys

import pytest

from dsv4_launch.adapters.nvml import GpuReport
from dsv4_launch.adapters.runtime_probe import read_runtime
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.doctor import run_doctor
from dsv4_launch.core.facts import Facts, GpuFacts
from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from dsv4_launch.core.model import classify
from dsv4_launch.core.rules.doctor import FAIL, OK, WARN, VllmRuntime, arch_coverage, diagnose
from dsv4_launch.core.rules.plan import make_plan
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args

M = "deepseek-ai/DeepSeek-V4-Flash"
V4 = {"architectures": ["DeepseekV4ForCausalLM"], "num_attention_heads": 64}
RTX = GpuInfo(0, "NVIDIA RTX PRO 6000", "GPU-r", (12, 0), 97887 * 2**20)
A100 = GpuInfo(1, "NVIDIA A100", "GPU-a", (8, 0), 80 * 2**30)
TORCH_OK = {"version": "2.11.0+cu130", "cuda": "13.0", "arch_flags": ["sm_90", "sm_100", "sm_120"]}
FI_OK = {"version": "0.6.12", "sm120_sparse_mla": True}


def make(gpus=(RTX,), visible=None, tokens=(M,), version="0.24.0", runtime=None, where="this environment",
         error=None, source="nvml", config=V4):
    report = GpuReport(gpus=tuple(gpus), source=source, error=error, driver_version="550.54.15",
                       cuda_driver_version="12.4") if gpus or error else None
    selection = GpuSelection(tuple(visible if visible is not None else gpus)) if gpus else None
    args = read_serve_args(list(tokens), load_table(version or "0.33.0"), lambda p: {})
    facts = Facts(args=args, model=classify(tokens[0], config, "config.json"),
                  gpus=GpuFacts(selection, error, source if gpus else None, read=True, report=report),
                  vllm_version=version)
    rt = VllmRuntime(python="3.11.7", vllm_version=version, vllm_where=where,
                     report=runtime if runtime is not None else {"torch": TORCH_OK, "flashinfer": FI_OK})
    if runtime is False:
        rt = VllmRuntime(python="3.11.7", vllm_version=version, vllm_where=where, report=None,
                         report_error="no interpreter")
    return diagnose(make_plan(facts), facts, report, rt, {}, install_hint="HINT", plugin_entry="dsv4_launch")


def statuses(diagnosis, section):
    return [c.status for c in diagnosis.lines if c.section == section]


def details(diagnosis, section):
    return " | ".join(c.detail for c in diagnosis.lines if c.section == section)


def test_all_present_and_fine():
    d = make(version="0.33.0")
    assert not d.failed
    assert statuses(d, "gpu") == [OK] and "95.6 GiB" in details(d, "gpu") and "GPU-r" in details(d, "gpu")
    assert "visible to CUDA" in details(d, "gpu")
    assert (statuses(d, "driver") == [OK] and "550.54.15" in details(d, "driver")
            and "CUDA driver 12.4" in details(d, "driver"))
    assert statuses(d, "vllm") == [OK]
    assert statuses(d, "torch") == [OK, OK] and "has kernels for GPU 0 (SM 12.0)" in details(d, "torch")
    assert statuses(d, "flashinfer") == [OK] and "present" in details(d, "flashinfer")
    assert statuses(d, "model") == [OK] and statuses(d, "preflight") == [OK]


def test_no_gpus():
    d = make(gpus=(), error="NVML: NVIDIA driver not loaded")
    assert statuses(d, "gpu") == [FAIL] and "driver not loaded" in details(d, "gpu")
    assert d.failed


def test_gpu_hidden_by_cuda_visible_devices_and_too_old():
    d = make(gpus=(RTX, A100), visible=(RTX,))
    assert statuses(d, "gpu") == [OK, OK]
    assert "hidden by CUDA_VISIBLE_DEVICES" in details(d, "gpu")
    assert not d.failed and "SM 8.0" not in details(d, "plan")
    # A visible A100: the gpu-too-old row's verdict (a warning, as in plan), not doctor's own FAIL
    torch = {**TORCH_OK, "arch_flags": ["sm_80", "sm_90", "sm_100", "sm_120"]}
    d = make(gpus=(A100,), version="0.33.0", runtime={"torch": torch, "flashinfer": FI_OK})
    assert statuses(d, "gpu") == [OK] and not d.failed
    (line,) = [c for c in d.lines if "NVIDIA A100" in c.detail and c.section == "plan"]
    assert line.status == WARN
    args = read_serve_args([M], load_table("0.33.0"), lambda p: {})
    plan = make_plan(Facts(args=args, model=classify(M, V4, "config.json"),
                           gpus=GpuFacts(GpuSelection((A100,)), source="nvml"),
                           vllm_version="0.33.0"))
    assert line.detail in plan.warnings and not plan.refusals


def test_capability_override_is_said():
    d = make(source="DSV4_LAUNCH_GPU_CAPABILITY")
    assert statuses(d, "gpu") == [WARN] and "DSV4_LAUNCH_GPU_CAPABILITY" in details(d, "gpu")


def test_vllm_with_and_without_the_crash_and_missing():
    assert statuses(make(version="0.24.0"), "vllm") == [WARN]
    assert "has the `auto` KV-cache crash" in details(make(version="0.24.0"), "vllm")
    assert statuses(make(version="0.33.0"), "vllm") == [OK]
    d = make(version=None, where=None)
    assert statuses(d, "vllm") == [FAIL] and d.failed
    assert statuses(make(version=None), "vllm") == [WARN]


def test_torch_missing_cpu_build_and_arch_gaps():
    d = make(runtime={"torch": None, "flashinfer": FI_OK})
    assert statuses(d, "torch") == [FAIL] and "not installed" in details(d, "torch")
    d = make(runtime={"torch": {"version": "2.13.0+cpu", "cuda": None, "arch_flags": []}, "flashinfer": FI_OK})
    assert statuses(d, "torch") == [FAIL] and "CPU-only" in details(d, "torch")
    old = {"version": "2.5.0", "cuda": "12.4", "arch_flags": ["sm_80", "sm_90"]}
    d = make(runtime={"torch": old, "flashinfer": FI_OK})
    assert statuses(d, "torch") == [OK, FAIL] and "no kernels for GPU 0 (SM 12.0)" in details(d, "torch")


def test_runtime_not_inspectable():
    d = make(runtime=False)
    assert statuses(d, "torch") == [WARN] and "no interpreter" in details(d, "torch")


def test_flashinfer_missing_or_without_sm120_api():
    # Missing on SM 12.x: the row's FAIL alone (never `OK not installed` beside it)
    d = make(runtime={"torch": TORCH_OK, "flashinfer": None})
    assert statuses(d, "flashinfer") == [FAIL] and "not installed" in details(d, "flashinfer")
    d = make(runtime={"torch": TORCH_OK, "flashinfer": {"version": "0.2.0", "sm120_sparse_mla": False}})
    assert statuses(d, "flashinfer") == [OK, FAIL] and "missing" in details(d, "flashinfer")
    h200 = GpuInfo(0, "NVIDIA H200", "GPU-h", (9, 0))
    d = make(gpus=(h200,), runtime={"torch": TORCH_OK, "flashinfer": None}, version="0.33.0")
    assert statuses(d, "flashinfer") == [OK]


def test_plan_section_has_changes_and_refusals():
    d = make()
    assert "will set --kv-cache-dtype fp8" in details(d, "plan")
    d = make(tokens=(M, "--kv-cache-dtype", "bfloat16"))
    assert statuses(d, "preflight") == [FAIL] and d.failed


@pytest.mark.parametrize(
    "cc,flags,verdict",
    [
        ((12, 0), ["sm_90", "sm_120"], OK),
        ((12, 1), ["sm_120"], OK),  # same major, lower minor cubin runs
        ((12, 0), ["sm_121"], FAIL),
        ((9, 0), ["sm_90a"], OK),
        ((10, 0), ["sm_90a"], FAIL),  # arch-specific cubins do not carry over
        ((12, 0), ["sm_90", "compute_90"], WARN),  # PTX only: JIT at start-up
        ((12, 0), ["sm_80", "sm_90"], FAIL),
    ],
)
def test_arch_coverage(cc, flags, verdict):
    assert arch_coverage(cc, flags) == verdict


def test_runtime_probe_really_runs():
    result, error = read_runtime(sys.executable)
    assert error is None and set(result) >= {"torch", "flashinfer"}
    result, error = read_runtime("/nonexistent/python")
    assert result is None and "cannot run" in error


def test_doctor_command_json_and_exit_codes():
    out = io.StringIO()
    gpus = GpuReport(gpus=(RTX, RTX._replace(index=1, uuid="GPU-r2")), source="nvml", driver_version="550.54.15")
    code = run_doctor(
        [M, "-tp", "2", "--api-key", "sk-doc-1"], as_json=True,
        ctx=Context(env={"HOME": "/nonexistent"}, stdout=out, stderr=io.StringIO(), read_gpus=lambda: gpus,
                    vllm=VllmInstall(version="0.33.0", importable=True),
                    read_runtime=lambda python, shapes: ({"torch": TORCH_OK, "flashinfer": FI_OK}, None))
    )
    data = json.loads(out.getvalue())
    assert code == 0 and data["ok"] is True and data["schema_version"] == 1
    assert ({"gpu", "driver", "python", "vllm", "torch", "flashinfer", "model", "plan"}
            <= {c["section"] for c in data["checks"]})
    assert data["plan"]["argv"] == [M, "-tp", "2", "--api-key", "***", "--kv-cache-dtype", "fp8"]
    assert "sk-doc-1" not in out.getvalue()
    out = io.StringIO()
    code = run_doctor([M], as_json=False,
                      ctx=Context(env={"HOME": "/nonexistent"}, stdout=out, stderr=io.StringIO(),
                                  read_gpus=lambda: GpuReport(error="NVML: driver not loaded"),
                                  vllm=VllmInstall(version=None, importable=False),
                                  read_runtime=lambda python, shapes: (None, "no vLLM")))
    assert code == 1
    assert out.getvalue().splitlines()[-1] == "FAIL: DeepSeek-V4 would not start here"
    assert out.getvalue().splitlines()[0].startswith("FAIL  gpu ")


def test_doctor_table_on_a_terminal_and_plain_elsewhere():
    from dsv4_launch.output.tables import render_diagnosis

    class Tty(io.StringIO):
        def isatty(self):
            return True

    d = make(version="0.33.0")
    out = Tty()
    render_diagnosis(d, out, {"TERM": "xterm-256color", "COLUMNS": "200"})
    text = out.getvalue()
    assert "\x1b[" in text and "dsv4-launch doctor" in text and "NVIDIA RTX PRO 6000" in text
    plain = io.StringIO()
    render_diagnosis(d, plain, {"NO_COLOR": "1"})
    assert "\x1b[" not in plain.getvalue()
    assert plain.getvalue().splitlines()[0].startswith("OK    driver ")


@pytest.mark.parametrize("command", ["plan", "doctor"])
def test_bad_input_is_one_line_and_exit_2(command):
    from dsv4_launch.commands.plan import run_plan

    run = run_plan if command == "plan" else run_doctor
    out, err = io.StringIO(), io.StringIO()
    code = run([M], as_json=True, ctx=Context(env={"DSV4_LAUNCH_PREFLIGHT": "maybe"}, stdout=out, stderr=err,
                                              read_gpus=lambda: GpuReport(),
                                              vllm=VllmInstall(version="0.33.0", importable=True)))
    # --json still prints one valid object (with the error), the one line goes to stderr
    assert code == 2 and json.loads(out.getvalue())["error"].startswith("DSV4_LAUNCH_PREFLIGHT='maybe'")
    assert err.getvalue().splitlines() == [
        f"dsv4-launch {command}: error: DSV4_LAUNCH_PREFLIGHT='maybe' is not understood; use refuse (default), "
        "warn or off"
    ]


# --- every doctor row, both ways ----------------------------------------------------------------
from dsv4_launch.core.rules.registry import DOCTOR_RULES  # noqa: E402

PIN = {"version": "0.33.0", "requires": ["flashinfer-python==0.7.2.post1", "torch==2.14.0"]}
DOCTOR_CASES = {
    # rule id -> (runtime probe answer that trips it, one that passes), SM 12.0, vLLM 0.33.0
    "flashinfer-missing": ({"torch": TORCH_OK, "flashinfer": None}, {"torch": TORCH_OK, "flashinfer": FI_OK}),
    "flashinfer-sm120-api": ({"torch": TORCH_OK, "flashinfer": {"version": "0.5.0", "sm120_sparse_mla": False}},
                             {"torch": TORCH_OK, "flashinfer": FI_OK}),
    "flashinfer-sm120-shape": (
        {"torch": TORCH_OK, "flashinfer": {**FI_OK, "sm120_dsv4_decode": {"32,128": False}}},
        {"torch": TORCH_OK, "flashinfer": {**FI_OK, "sm120_dsv4_decode": {"32,128": True}}}),
    "flashinfer-pin": ({"torch": TORCH_OK, "flashinfer": {**FI_OK, "version": "0.7.4"}, "vllm": PIN},
                       {"torch": TORCH_OK, "flashinfer": {**FI_OK, "version": "0.7.2.post1"}, "vllm": PIN}),
}


def test_every_doctor_row_has_a_pair():
    assert set(DOCTOR_CASES) == {r.id for r in DOCTOR_RULES}


@pytest.mark.parametrize("rule", DOCTOR_RULES, ids=[r.id for r in DOCTOR_RULES])
def test_doctor_row_both_ways(rule):
    trips, passes = DOCTOR_CASES[rule.id]
    tokens = (M, "-tp", "2")  # 64 heads over 2: 32 per GPU, the (32, 128) shape
    d = make(runtime=trips, version="0.33.0", tokens=tokens)
    mine = [c for c in d.lines if rule.reference in c.detail]
    assert mine and mine[0].status == (FAIL if rule.level == "fail" else WARN), [c.detail for c in d.lines]
    d = make(runtime=passes, version="0.33.0", tokens=tokens)
    assert not [c for c in d.lines if rule.reference in c.detail and c.status != OK]


def test_sm120_shapes_asked_of_flashinfer():
    from dsv4_launch.core.rules.doctor_rows import sm120_decode_shapes
    from tests.planning import facts_for

    flash = {"architectures": ["DeepseekV4ForCausalLM"], "num_attention_heads": 64, "sliding_window": 128}
    assert sm120_decode_shapes(facts_for([M, "-tp", "2"], config=flash)) == [(32, 128)]
    dspark = facts_for([M, "--speculative-config", '{"method": "dspark", "num_speculative_tokens": 5}'], config=flash)
    assert sm120_decode_shapes(dspark) == [(64, 128), (64, 192)]  # the draft's non-causal width
    assert sm120_decode_shapes(facts_for([M], config={**flash, "sliding_window": 10**5000})) == []


def test_the_verdict_names_deepseek_v4_only_for_deepseek_v4():
    llama = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 8}
    d = make(gpus=(), error="NVML: NVIDIA driver not loaded", tokens=("meta-llama/Llama-3.1-8B",), config=llama)
    assert d.failed and d.verdict == "FAIL: vLLM would not start here"
    assert "DeepSeek-V4" not in " ".join(c.detail for c in d.lines if c.status != OK)
    assert "crash" not in details(make(tokens=("meta-llama/Llama-3.1-8B",), config=llama), "vllm")
    d = make(gpus=(), error="NVML: NVIDIA driver not loaded")
    assert d.verdict == "FAIL: DeepSeek-V4 would not start here"
    assert make(version="0.33.0").verdict == "OK: nothing known to fail"


@pytest.mark.parametrize("kwargs", [
    {},  # SM 12.0 on 0.24.0: "DeepGEMM's FP8 warm-up fails on SM 12.x" (issue 41's report)
    {"version": "0.26.0"},  # open reports of SM 12.x failures on that release
    {"version": "0.33.0", "tokens": (M, "--attention-backend", "FLASHMLA_SPARSE")},  # no FlashMLA kernels on SM 12.x
], ids=["deepgemm", "reports", "flashmla"])
def test_the_summary_never_says_nothing_known_fails_under_a_warning(kwargs):
    d = make(**kwargs)
    warned = [c.detail for c in d.lines if c.status == WARN]
    assert not d.failed and any("fail" in w or "crash" in w for w in warned), warned
    assert d.verdict == f"OK: nothing certain to fail; {len(warned)} warning{'s' * (len(warned) != 1)} above"
    (preflight,) = [c.detail for c in d.lines if c.section == "preflight" and c.status == OK]
    assert preflight.startswith("no certain start-up failure, ") and "known" not in preflight, preflight


@pytest.mark.parametrize("env", [{"DSV4_LAUNCH_GPU_CAPABILITY": "twelve"}, {"DSV4_LAUNCH_PREFLIGHT": "sometimes"}])
def test_doctor_and_plan_have_one_json_error_shape(env, tmp_path):
    # Bad input: both say the same one line in `error`, with the same exit status, and doctor's
    # plan is plan's own document.
    from dsv4_launch.commands.plan import run_plan

    fakes = {"read_gpus": lambda: GpuReport(gpus=(RTX,), source="nvml"),
             "vllm": VllmInstall(version="0.24.0", importable=True)}
    plan_out, doctor_out = io.StringIO(), io.StringIO()
    plan_status = run_plan([M], as_json=True, ctx=Context(**fakes, env=env, stdout=plan_out, stderr=io.StringIO()))
    doctor_status = run_doctor([M], as_json=True,
                               ctx=Context(**fakes, env=env, stdout=doctor_out, stderr=io.StringIO(),
                                           read_runtime=lambda python, shapes: (None, "not inspected")))
    plan, doctor = json.loads(plan_out.getvalue()), json.loads(doctor_out.getvalue())
    assert plan_status == doctor_status == plan["exit_status"] == doctor["exit_status"] == 2
    assert plan["error"] and doctor["error"] == plan["error"]
    top = {"schema_version", "not_utf8"}  # the document's own fields (output/documents.dump)
    assert doctor["ok"] is False and doctor["checks"] == []
    assert doctor["plan"] == {k: v for k, v in plan.items() if k not in top}


def test_doctor_json_says_its_exit_status_and_no_error_when_it_ran(tmp_path):
    fakes = {"read_gpus": lambda: GpuReport(gpus=(RTX,), source="nvml"),
             "vllm": VllmInstall(version="0.33.0", importable=True)}
    out = io.StringIO()
    status = run_doctor([M], as_json=True, ctx=Context(**fakes, env={}, stdout=out, stderr=io.StringIO(),
                                                       read_runtime=lambda python, shapes: (None, "not inspected")))
    data = json.loads(out.getvalue())
    assert data["exit_status"] == status and data["error"] is None and data["ok"] is (status == 0)


@pytest.mark.parametrize("allowed,loaded", [
    (None, True), ("dsv4_launch", True), ("other,dsv4_launch", True),
    ("", False),  # envs.py: "".split(",") == [""], an allow-list naming no plugin
    ("other, dsv4_launch", False), (" dsv4_launch", False),  # plugin.name in the list, blanks kept
    (",", False), ("DSV4_LAUNCH", False),
])
def test_vllm_plugins_is_read_as_vllm_splits_it(allowed, loaded):
    # vllm/plugins/__init__.py load_plugins_by_group: `plugin.name in envs.VLLM_PLUGINS` (0.24–0.33)
    from dsv4_launch.core.rules.doctor import plugin_line

    rt = VllmRuntime(python="3.11.7", vllm_version="0.33.0", vllm_where="here",
                     report={"plugins": [{"name": "dsv4_launch", "value": "dsv4_launch.plugin:register"}]})
    line = plugin_line(rt, {} if allowed is None else {"VLLM_PLUGINS": allowed}, "dsv4_launch")
    assert (line.status == OK) is loaded, line
    if allowed == "":
        assert line.detail.startswith("installed, but VLLM_PLUGINS='' does not list dsv4_launch")


@pytest.mark.parametrize("given, machine, expected", [
    (["--gpus", "8xH200"], None, (OK, "not checked: the GPUs are the ones --gpus names")),  # a preset: no GPU read
    (["--gpus", "GB10"], None, (OK, "not checked: the GPUs are the ones --gpus names")),
    # --gpus N of this machine's first GPU: its driver was read, and is said
    (["--gpus", "2"], GpuReport(gpus=(RTX,), source="nvml", driver_version="550.54.15"),
     (OK, "NVIDIA driver 550.54.15 (--gpus)")),
    ([], GpuReport(gpus=(RTX,), source="nvml"), (WARN, "driver version unknown (nvml)")),  # the machine's own gap
])
def test_a_driver_nobody_read_for_gpus_named_on_the_command_line_is_said_once_not_warned(given, machine, expected):
    """doctor --gpus 8xH200 planned for GPUs named on the command line printed "WARN driver version
    unknown (--gpus)": no driver was read, so nothing about this machine's is worth a warning.
    Faked: NVML (``machine``; a reader that fails the test where --gpus means no GPU is read),
    vLLM's lookup and its runtime report."""
    from dsv4_launch.commands.cli import run_command

    def unread():
        raise AssertionError("a preset's GPUs are not read from the machine")

    out = io.StringIO()
    ctx = Context(env={"HOME": "/nonexistent", "NO_COLOR": "1"}, stdout=out, stderr=io.StringIO(),
                  read_gpus=(lambda: machine) if machine else unread,
                  vllm=VllmInstall(version="0.33.0", importable=True),
                  read_runtime=lambda python, shapes: ({"torch": TORCH_OK, "flashinfer": FI_OK}, None))
    run_command("doctor", [*given, M], ctx)
    driver = [line for line in out.getvalue().splitlines() if line.split()[1:2] == ["driver"]]
    assert len(driver) == 1, out.getvalue()
    status, detail = expected
    assert driver[0].split()[0] == status and detail in driver[0]
    # GPUs named on the command line have no UUID or CUDA_VISIBLE_DEVICES to speak of
    gpu = [line for line in out.getvalue().splitlines() if line.split()[1:2] == ["gpu"]]
    assert gpu and all(line.endswith("as --gpus names it") is bool(given) for line in gpu), out.getvalue()
    assert all(("UUID" in line or "visible to CUDA" in line) is not bool(given) for line in gpu)


def test_doctor_reads_the_machine_through_the_pipeline_and_plan_does_not():
    """The pipeline gathers doctor's reading of the machine (Prepared.machine): the runtime reader
    the Context gives is the one asked, with the Python that runs vLLM; plan never asks it.
    Faked: NVML, vLLM's lookup, the runtime reader."""
    from dsv4_launch.commands.pipeline import DOCTOR, PLAN, prepare

    asked = []

    def runtime(python, shapes):
        asked.append(python)
        return {"torch": TORCH_OK, "flashinfer": FI_OK, "python": "3.11.9"}, None

    gpus = GpuReport(gpus=(RTX,), source="nvml", driver_version="550.54.15")
    fakes = dict(read_gpus=lambda: gpus, vllm=VllmInstall(version="0.33.0", importable=True), read_runtime=runtime)
    plan = prepare([M], {}, PLAN, **fakes)
    assert plan.machine is None and asked == []
    doctor = prepare([M], {}, DOCTOR, **fakes)
    assert asked == [sys.executable]  # vLLM importable here: this interpreter runs it
    assert doctor.machine.gpus == gpus and doctor.machine.runtime.report["torch"] == TORCH_OK
    assert doctor.machine.runtime.python == f"3.11.9 ({sys.executable})" and doctor.machine.failure is None


@pytest.mark.parametrize("where", ["runtime", "gpus"])
def test_a_failure_while_reading_the_machine_is_one_failed_line_not_a_traceback(where, monkeypatch):
    """A bug of ours in the machine's reading (the class: any reader that raises): doctor says it as
    one FAIL line, masked, and exits 1; DSV4_LAUNCH_DEBUG=1 raises it. Faked: the failing reader."""
    def broken(*_):
        raise RuntimeError("reader broke near sk-live-123456")

    fakes = dict(vllm=VllmInstall(version="0.33.0", importable=True),
                 read_runtime=broken if where == "runtime" else (lambda python, shapes: ({"torch": TORCH_OK}, None)),
                 read_gpus=broken if where == "gpus" else (lambda: GpuReport(gpus=(RTX,), source="nvml")))
    # GPUs read by the machine's reading itself: with arguments vLLM rejects, the facts have none
    argv = [M, "--api-key", "sk-live-123456"] + (["--no-such-option"] if where == "gpus" else [])
    out, err = io.StringIO(), io.StringIO()
    code = run_doctor(argv, as_json=False, ctx=Context(env={"NO_COLOR": "1"}, stdout=out, stderr=err, **fakes))
    lines = [line for line in out.getvalue().splitlines() if " doctor " in f" {line} "]
    assert code == 1 and len(lines) == 1 and "internal error: RuntimeError: reader broke" in lines[0], out.getvalue()
    assert "sk-live-123456" not in out.getvalue() + err.getvalue() and "Traceback" not in err.getvalue()
    with pytest.raises(RuntimeError):
        run_doctor(argv, as_json=False, ctx=Context(env={"DSV4_LAUNCH_DEBUG": "1"}, stdout=io.StringIO(),
                                                    stderr=io.StringIO(), **fakes))


@pytest.mark.parametrize("argv", [
    [M, "-tp", "2", "--api-key", "sk-abc12345"],  # a secret: masked the same in both
    [M, "--kv-cache-dtype", "bfloat16"],  # a refusal
    [M, "--no-such-option"],  # vLLM's own parser rejects it
    [M, "-tp", "3"],  # another refusal, of another topic
], ids=["secret", "refusal", "rejected", "tp"])
def test_doctors_plan_is_plans_document(argv):
    """doctor and plan prepare through the same pipeline and write the plan with the same
    output/documents.plan_document: doctor --json's "plan" is plan --json's document (less the
    envelope keys render adds at the top). Faked: NVML, vLLM's lookup, the runtime reader."""
    from tests.planning import make_context

    two = tuple(GpuInfo(i, "NVIDIA RTX PRO 6000", f"GPU-{i}", (12, 0), 96 * 2**30) for i in range(2))
    plan_ctx = make_context(gpus=two)
    doctor_ctx = make_context(gpus=two,
                              read_runtime=lambda python, shapes: ({"torch": TORCH_OK, "flashinfer": FI_OK}, None))
    from dsv4_launch.commands.plan import run_plan

    run_plan(argv, as_json=True, ctx=plan_ctx)
    run_doctor(argv, as_json=True, ctx=doctor_ctx)
    plan = json.loads(plan_ctx.stdout.getvalue())
    del plan["schema_version"], plan["not_utf8"]
    assert json.loads(doctor_ctx.stdout.getvalue())["plan"] == plan
    assert "sk-abc12345" not in plan_ctx.stdout.getvalue() + doctor_ctx.stdout.getvalue()


def test_doctor_without_arguments_judges_a_layout_of_the_visible_gpus_not_tp_1():
    """A healthy 2 × RTX PRO 6000 box: vLLM's default TP 1 cannot hold V4-Flash's weights on one
    GPU, so doctor judges the layout of both visible GPUs that plans best, and says which (issue 39).
    Given arguments are judged as given. Faked: NVML, vLLM's lookup, the runtime reader."""
    from tests.planning import make_context

    two = tuple(GpuInfo(i, "NVIDIA RTX PRO 6000 Blackwell Server Edition", f"GPU-{i}", (12, 0), 97_887 * 2**20)
                for i in range(2))

    def run(argv):
        ctx = make_context(gpus=two,
                           read_runtime=lambda python, shapes: ({"torch": TORCH_OK, "flashinfer": FI_OK}, None))
        run_doctor(argv, as_json=True, ctx=ctx)
        return json.loads(ctx.stdout.getvalue())

    data = run([])
    model = next(c for c in data["checks"] if c["section"] == "model")
    assert "checked for deepseek-ai/DeepSeek-V4-Flash at -tp 2 (every visible GPU" in model["detail"], model
    assert data["plan"]["memory"]["layout"] == "TP 2" and data["plan"]["memory"]["verdict"] != "does not fit"
    assert not any("weights-exceed-memory" in c["detail"] or "at the very least" in c["detail"] for c in data["checks"])
    data = run(["deepseek-ai/DeepSeek-V4-Flash"])  # a model given: vLLM's TP 1, judged as given
    assert data["plan"]["memory"]["layout"] == "TP 1" and data["plan"]["memory"]["verdict"] == "does not fit"
