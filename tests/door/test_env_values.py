"""Environment values as their readers read them: set-but-empty ones are kept (vLLM sees "" and
``int("")`` raises), and every rule reading ``Facts.rule_env`` judges a value the way vLLM's envs.py,
CPython or torch does.

Pure where possible (facts by hand, tests/planning.py); the gathering through ``plan`` itself
(faked: NVML, absent, and the vLLM lookup); PYTHONOPTIMIZE against a real interpreter's
``sys.flags.optimize`` (a subprocess of this Python: the boundary is CPython's own reading).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.commands.plan import run_plan
from tests.planning import SM90, SM120, M, gpus, make_context, planned

FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")["config"]
PRO = known_checkpoint("deepseek-ai/DeepSeek-V4-Pro")["config"]
PP = "pp-layer-partition-invalid"


def plan_json(tmp_path, tokens, env):
    ctx = make_context(env={"HOME": str(tmp_path), **env})
    status = run_plan([M, *tokens], as_json=True, ctx=ctx)
    return status, json.loads(ctx.stdout.getvalue())


def rules(tokens, **kw):
    plan = planned([M, *tokens], **kw).plan
    return {f.rule: f for f in plan.findings}, plan


# --- the gathering keeps "" ------------------------------------------------------------------


def test_an_empty_partition_variable_is_seen_and_refused_as_vllm_fails(tmp_path):
    # get_pp_indices: "".split(",") == [""], int("") raises "Invalid partition string: "
    status, doc = plan_json(tmp_path, [], {"VLLM_PP_LAYER_PARTITION": ""})
    assert status == 2 and doc["exit_status"] == 2
    (refusal,) = [r for r in doc["refusals"] if r.startswith("VLLM_PP_LAYER_PARTITION=")]
    assert refusal.startswith("VLLM_PP_LAYER_PARTITION='' with --pipeline-parallel-size 1 (the default):")
    assert "('Invalid partition string: ')" in refusal


def test_an_unset_partition_variable_is_not_judged(tmp_path):
    status, doc = plan_json(tmp_path, ["-pp", "2"], {})
    assert not [f for f in doc["findings"] if f["rule"] == PP]


def test_an_empty_v2_runner_variable_shows_readably(tmp_path):
    status, doc = plan_json(tmp_path, [], {"VLLM_USE_V2_MODEL_RUNNER": ""})
    (line,) = [w for w in doc["warnings"] if "VLLM_USE_V2_MODEL_RUNNER" in w]
    assert line.startswith("VLLM_USE_V2_MODEL_RUNNER='': vLLM reads this variable as bool(int(value))")
    status, doc = plan_json(tmp_path, [], {"VLLM_USE_V2_MODEL_RUNNER": "false"})
    (line,) = [w for w in doc["warnings"] if "VLLM_USE_V2_MODEL_RUNNER" in w]
    assert line.startswith("VLLM_USE_V2_MODEL_RUNNER=false: ")  # other values as they are


def test_outside_text_in_the_partition_is_escaped_in_the_text_output(tmp_path):
    ctx = make_context(env={"HOME": str(tmp_path), "VLLM_PP_LAYER_PARTITION": "\x1b[31m2,2"})
    assert run_plan([M, "-pp", "2"], as_json=False, ctx=ctx) == 2
    out = ctx.stdout.getvalue() + ctx.stderr.getvalue()
    assert "\x1b" not in out and "\\x1b[31m2,2" in out


# --- VLLM_PP_LAYER_PARTITION, as get_pp_indices reads it (tests/vllm_real: the function itself) ----


@pytest.mark.parametrize("value,pp,config,error", [
    ("", 1, FLASH, "Invalid partition string: "),
    ("22;21", 2, FLASH, "Invalid partition string: 22;21"),
    ("22,21,", 2, FLASH, "Invalid partition string: 22,21,"),
    ("43", 2, FLASH, "len(partitions)=1 does not match pp_size=2."),
    ("22,21", 1, FLASH, "len(partitions)=2 does not match pp_size=1."),
    ("22,22", 2, FLASH, "sum(partitions)=44 does not match num_hidden_layers=43."),
    ("22,21", 2, PRO, "sum(partitions)=43 does not match num_hidden_layers=61."),
    ("22,21", 3, None, "len(partitions)=2 does not match pp_size=3."),  # no config.json: the count still decides
])
def test_a_partition_vllm_raises_on_is_refused_with_its_text(value, pp, config, error):
    kw = {"config": config} if config is not None else {}
    found, plan = rules(["-pp", str(pp)], env={"VLLM_PP_LAYER_PARTITION": value}, **kw)
    assert found[PP].text in plan.refusals and f"('{error}')" in found[PP].text


@pytest.mark.parametrize("value,pp,config", [
    ("43", 1, FLASH), (" 43 ", 1, FLASH), ("+43", 1, FLASH), ("4_3", 1, FLASH), ("22, 21", 2, FLASH),
    ("31,30", 2, PRO), ("44,-1", 2, FLASH),  # negative parts: get_pp_indices does not check them
    ("22,22", 2, None),  # the layer count unknown: the sum is not judged
])
def test_a_partition_vllm_takes_is_not_refused(value, pp, config):
    kw = {"config": config} if config is not None else {}
    found, _ = rules(["-pp", str(pp)], env={"VLLM_PP_LAYER_PARTITION": value}, **kw)
    assert PP not in found


def test_hf_overrides_leave_the_sum_unjudged_but_not_the_parse():
    env = {"VLLM_PP_LAYER_PARTITION": "22,22"}
    overrides = ["--hf-overrides", '{"num_hidden_layers": 44}']
    assert PP not in rules(["-pp", "2", *overrides], env=env, config=FLASH)[0]
    found, plan = rules(["-pp", "2", *overrides], env={"VLLM_PP_LAYER_PARTITION": "x"}, config=FLASH)
    assert found[PP].text in plan.refusals


def test_the_fix_names_vllms_own_even_split():
    found, _ = rules(["-pp", "4"], env={"VLLM_PP_LAYER_PARTITION": "15,15,15,15"}, config=PRO)
    # get_pp_indices' own split: the remainder to the middle stages (tests/vllm_real: vLLM takes it)
    assert "e.g. VLLM_PP_LAYER_PARTITION=15,15,16,15" in found[PP].text
    found, _ = rules([], env={"VLLM_PP_LAYER_PARTITION": "22,21"}, config=FLASH)
    assert "Fix: unset VLLM_PP_LAYER_PARTITION (with one pipeline stage it can only be the layer count, 43)" \
        in found[PP].text


def test_deepseek_v41_is_judged_only_where_vllm_has_its_model():
    v41 = {"architectures": ["DeepseekV41ForCausalLM"], "model_type": "deepseek_v41", "num_attention_heads": 64,
           "num_hidden_layers": 43}
    env = {"VLLM_PP_LAYER_PARTITION": "22,22"}
    assert PP in rules(["-pp", "2"], env=env, config=v41, version="0.30.0")[0]
    assert PP not in rules(["-pp", "2"], env=env, config=v41, version="0.29.0")[0]


def test_an_unknown_version_still_refuses_as_every_release_raises():
    found, plan = rules(["-pp", "2"], env={"VLLM_PP_LAYER_PARTITION": "1,2,3"}, config=FLASH, version=None)
    assert found[PP].text in plan.refusals and "len(partitions)=3 does not match pp_size=2." in found[PP].text


# --- the readers of "" and other texts ------------------------------------------------------


def _int_fails(value: str) -> bool:
    try:
        int(value)  # envs.py maybe_convert_bool / bool(int(os.getenv(...)))
    except ValueError:
        return True
    return False


@pytest.mark.parametrize("value", ["", " ", "0", " 0 ", "00", "0_0", "1_0", "+1", "-0", "1.0", "\u0660", "٣", "yes"])
def test_the_v2_runner_variable_is_int_as_python_reads_it(value):
    found, _ = rules([], env={"VLLM_USE_V2_MODEL_RUNNER": value})
    assert ("v2-runner-env-not-int" in found) is _int_fails(value)


@pytest.mark.parametrize("value,reported", [(None, True), ("1", True), (" 1", True), ("0", False), ("00", False),
                                            ("0_0", False), ("", False), ("false", False)])
def test_deepgemm_on_sm12_follows_vllms_reading(value, reported):
    # envs.py: bool(int(os.getenv("VLLM_USE_DEEP_GEMM", "1"))): "" and words raise rather than run DeepGEMM
    env = {} if value is None else {"VLLM_USE_DEEP_GEMM": value}
    found, _ = rules([], env=env, version="0.24.0", gpu=gpus(SM120))
    assert ("sm12-0.24-deepgemm" in found) is reported


@pytest.mark.parametrize("value,reported", [(None, True), ("", True), (" 1", True), ("true", True), ("1", False)])
def test_symmetric_memory_multicast_is_off_only_for_exactly_1(value, reported):
    # c10/util/env.h check_env: "1" true, "0" false, anything else (the empty text too) ignored
    from dsv4_launch.core.gpus import GpuInfo, GpuSelection

    h20 = GpuSelection((GpuInfo(0, "NVIDIA H20", "GPU-0", SM90, 96 * 2**30),))
    env = {} if value is None else {"TORCH_SYMM_MEM_DISABLE_MULTICAST": value}
    found, _ = rules([], env=env, version="0.27.1", gpu=h20)
    assert ("h20-0.27.1" in found) is reported


@pytest.mark.parametrize("value", ["", " ", "0", " 0", "0 ", "00", "+0", "-0", "1", "2", "-1", "yes", "0x1", "1_0",
                                   "\t0\n"])
def test_pythonoptimize_is_read_as_cpython_reads_it(value):
    # the assert-softening follows sys.flags.optimize of a Python started with this very value
    optimize = subprocess.run([sys.executable, "-c", "import sys; print(sys.flags.optimize)"],
                              env={"PYTHONOPTIMIZE": value}, capture_output=True, text=True, check=True).stdout
    found, _ = rules(["--kv-cache-dtype", "bfloat16"], env={"PYTHONOPTIMIZE": value}, version="0.29.0")
    softened = "PYTHONOPTIMIZE is set" in found["kv-not-fp8"].text
    assert softened is (int(optimize) > 0), optimize


@pytest.mark.parametrize("value", ["", " ", "0", "00", "0_0", "1", " 1 ", "true", "off", "1.0"])
@pytest.mark.parametrize("version,where", [("0.24.0", "the kernel warm-up reads it on every start"),
                                           ("0.28.0", "the kernel warm-up reads it on every start"),
                                           ("0.29.0", "DeepGEMM's support check"),
                                           ("0.33.0", "DeepGEMM's support check")])
def test_a_deepgemm_value_int_fails_on_is_a_warning_saying_where(value, version, where):
    # envs.py: bool(int(os.getenv("VLLM_USE_DEEP_GEMM", "1"))); kernel_warmup.py reads it first
    # in do_deep_gemm_warmup (:60@0.24 … :152@0.28), later only is_deep_gemm_supported does
    found, plan = rules([], env={"VLLM_USE_DEEP_GEMM": value}, version=version)
    assert ("deep-gemm-env-not-int" in found) is _int_fails(value)
    if _int_fails(value):
        finding = found["deep-gemm-env-not-int"]
        assert finding.level == "warn" and finding.text not in plan.refusals and where in finding.text
        assert finding.text.startswith(f"VLLM_USE_DEEP_GEMM={value if value.strip() else repr(value)}: ")


@pytest.mark.parametrize("value, off", [(None, False), ("0", False), ("false", False), ("1", True), ("true", True),
                                        ("maybe", True)])  # any value not clearly off turns it off
def test_is_disabled_is_the_switch_without_its_warning(value, off):
    from dsv4_launch.core.settings import disable_switch, is_disabled

    env = {} if value is None else {"DSV4_LAUNCH_DISABLE": value}
    assert is_disabled(env) is off and disable_switch(env)[0] is off
