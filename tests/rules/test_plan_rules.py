"""The KV-cache rule (vLLM #47174): GPU × model × value × vLLM version × backend → exact argv.

Pure: facts are built by hand, no NVML, no files, no vLLM.
"""

from __future__ import annotations

from typing import Optional

import pytest

from dsv4_launch.core.facts import Facts, GpuFacts
from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from dsv4_launch.core.model import classify
from dsv4_launch.core.rules.plan import make_plan
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import apply_changes, read_serve_args
from tests.planning import gpus, planned

M = "deepseek-ai/DeepSeek-V4-Flash"
V4 = {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4"}
V4_VL = {"architectures": ["DeepseekV4ForConditionalGeneration"]}
V41 = {"architectures": ["DeepseekV41ForCausalLM"], "model_type": "deepseek_v41"}
LLAMA = {"architectures": ["LlamaForCausalLM"]}


def plan_for(tokens, *, gpu: Optional[GpuSelection], version: Optional[str] = "0.24.0", config=V4):
    return planned(tokens, gpu=gpu, version=version, config=config, source=None)


SM120, SM121, SM100, SM103, SM90, SM80 = (12, 0), (12, 1), (10, 0), (10, 3), (9, 0), (8, 0)
FI = ["--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"]
FIX = ["--kv-cache-dtype", "fp8"]


@pytest.mark.parametrize(
    "tokens,gpu,version,config,argv_out",
    [
        # SM 12.x: always rewritten, in every version (the layout has only fp8)
        ([M], gpus(SM120), "0.24.0", V4, [M, *FIX]),
        ([M], gpus(SM121), "0.29.1", V4, [M, *FIX]),
        ([M], gpus(SM120), "0.33.0", V4, [M, *FIX]),
        ([M], gpus(SM120), None, V4, [M, *FIX]),
        ([M, *FI], gpus(SM120), "0.24.0", V4, [M, *FI, *FIX]),
        ([M], gpus(SM120), "0.24.0", V4_VL, [M, *FIX]),
        # SM 9.x / 10.x default FlashMLA path: only before 0.30 (or version unknown)
        ([M], gpus(SM90), "0.24.0", V4, [M, *FIX]),
        ([M], gpus(SM100), "0.29.1", V4, [M, *FIX]),
        ([M], gpus(SM90), "0.30.0rc1", V4, [M, *FIX]),  # a pre-release of the fix is not the fix
        ([M], gpus(SM90), None, V4, [M, *FIX]),
        ([M], gpus(SM90), "0.30.0", V4, [M]),
        ([M], gpus(SM103), "0.33.0", V4, [M]),
        ([M, "--attention-backend", "FLASHMLA_SPARSE_DSV4"], gpus(SM100), "0.24.0", V4,
         [M, "--attention-backend", "FLASHMLA_SPARSE_DSV4", *FIX]),
        # SM 10.x with the FlashInfer plain-row backend: never (fp8 would change the format)
        ([M, *FI], gpus(SM100), "0.24.0", V4, [M, *FI]),
        ([M, "--attention_backend=flashinfer_mla_sparse_dsv4"], gpus(SM100), "0.24.0", V4,
         [M, "--attention_backend=flashinfer_mla_sparse_dsv4"]),
        ([M, "--attention-config.backend", "FLASHINFER_MLA_SPARSE_DSV4"], gpus(SM100), "0.24.0", V4,
         [M, "--attention-config.backend", "FLASHINFER_MLA_SPARSE_DSV4"]),
        # GPUs DeepSeek-V4 does not run on, other models, DeepSeek-V4.1: unchanged
        ([M], gpus(SM80), "0.24.0", V4, [M]),
        ([M], gpus(SM120), "0.24.0", LLAMA, [M]),
        ([M], gpus(SM120), "0.33.0", V41, [M]),
        # explicit values are never changed
        ([M, "--kv-cache-dtype", "fp8_e4m3"], gpus(SM120), "0.24.0", V4, [M, "--kv-cache-dtype", "fp8_e4m3"]),
        ([M, "--kv-cache-dtype", "bfloat16"], gpus(SM120), "0.24.0", V4, [M, "--kv-cache-dtype", "bfloat16"]),
        ([M, "--kv-cache-dtype", "Auto"], gpus(SM120), "0.33.0", V4, [M, "--kv-cache-dtype", "Auto"]),
        # placement: the last auto is replaced in place, in the user's spelling
        ([M, "--kv-cache-dtype", "auto", "--port", "8000"], gpus(SM120), "0.24.0", V4,
         [M, "--kv-cache-dtype", "fp8", "--port", "8000"]),
        ([M, "--kv_cache_dtype=auto", "-tp", "2"], gpus(SM120), "0.24.0", V4, [M, "--kv_cache_dtype=fp8", "-tp", "2"]),
        ([M, "--kv-cache-dtype", "fp8", "--kv-cache-dtype", "auto"], gpus(SM120), "0.24.0", V4,
         [M, "--kv-cache-dtype", "fp8", "--kv-cache-dtype", "fp8"]),
        # otherwise appended at the end — never right after `serve`
        (["-tp", "2", "--model", M], gpus(SM120), "0.24.0", V4, ["-tp", "2", "--model", M, *FIX]),
        (["--served-model-name", "x", "--model", M], gpus(SM120), "0.24.0", V4,
         ["--served-model-name", "x", "--model", M, *FIX]),
        # look-alikes are other options and stay as they are
        ([M, "--kv-cache-dtype-skip-layers", "auto"], gpus(SM120), "0.24.0", V4,
         [M, "--kv-cache-dtype-skip-layers", "auto", *FIX]),
        ([M, "--speculative-config.kv_cache_dtype", "auto"], gpus(SM120), "0.33.0", V4,
         [M, "--speculative-config.kv_cache_dtype", "auto", *FIX]),
        # mixed GPUs: any one on fp8_ds_mla needs it
        ([M], gpus(SM90, SM120), "0.33.0", V4, [M, *FIX]),
        ([M], gpus(SM80, SM120), "0.24.0", V4, [M, *FIX]),
    ],
)
def test_rule_matrix(tokens, gpu, version, config, argv_out):
    plan = plan_for(tokens, gpu=gpu, version=version, config=config)
    assert list(plan.argv) == argv_out
    assert bool(plan.changes) == (argv_out != tokens)


def test_every_other_token_is_byte_identical_and_in_order():
    tokens = [M, "--port=8000", "--served-model-name", "ds v4 ✓", "--api-key", "k1", "k2", "-O3"]
    plan = plan_for(tokens, gpu=gpus(SM120))
    assert list(plan.argv) == tokens + FIX


def test_config_file_value_is_overridden_on_the_command_line(tmp_path):
    table = load_table("0.24.0")
    args = read_serve_args([M, "--config", "c.yaml"], table, lambda p: {"kv_cache_dtype": "auto"})
    facts = Facts(args=args, model=classify(M, V4, "test"), gpus=GpuFacts(gpus(SM120)), vllm_version="0.24.0")
    plan = make_plan(facts)
    assert list(apply_changes(args.tokens, plan.changes)) == [M, "--config", "c.yaml", *FIX]


def test_config_file_explicit_value_is_kept():
    table = load_table("0.24.0")
    args = read_serve_args([M, "--config", "c.yaml"], table, lambda p: {"kv_cache_dtype": "fp8_e4m3"})
    facts = Facts(args=args, model=classify(M, V4, "test"), gpus=GpuFacts(gpus(SM120)), vllm_version="0.24.0")
    plan = make_plan(facts)
    assert list(apply_changes(args.tokens, plan.changes)) == [M, "--config", "c.yaml"]
    assert any("fp8_e4m3 (config file) kept" in n for n in plan.notes)


def test_bare_double_dash_is_rejected_by_vllm_so_nothing_is_added():
    # vLLM's top-level parser refuses a bare "--" (checked against 0.24 and 0.33).
    plan = plan_for([M, "--port", "8000", "--"], gpu=gpus(SM120))
    assert list(plan.argv) == [M, "--port", "8000", "--"]
    assert plan.changes == ()


def test_change_explains_itself_from_the_facts():
    plan = plan_for([M], gpu=gpus(SM120), version="0.24.0")
    (change,) = plan.changes
    assert (change.option, change.before, change.after) == ("--kv-cache-dtype", None, "fp8")
    assert "NVIDIA RTX PRO 6000 (SM 12.0)" in change.reason
    assert "DeepseekV4ForCausalLM" in change.reason
    assert "vLLM 0.24.0" in change.reason
    assert change.reference == "vLLM #47174"


def test_left_alone_is_said():
    plan = plan_for([M], gpu=gpus(SM90), version="0.33.0")
    assert any("left not set" in n and "resolves auto" in n for n in plan.notes)
    plan = plan_for([M, *FI], gpu=gpus(SM100), version="0.24.0")
    assert any("plain KV rows" in n for n in plan.notes)


# --- unknown GPUs: never treated as "not Blackwell" ---------------------------------------


@pytest.mark.parametrize("gpu", [None, GpuSelection(()), GpuSelection((GpuInfo(0),))])
def test_unknown_gpu_default_backend_is_rewritten_and_said(gpu):
    plan = plan_for([M], gpu=gpu, version="0.24.0")
    assert list(plan.argv) == [M, *FIX]
    assert "GPU type unknown" in plan.changes[0].reason


def test_unknown_gpu_with_flashinfer_backend_is_left_with_a_warning():
    # SM 10.x stores plain rows there (auto is right), SM 12.x needs fp8: cannot tell which.
    plan = plan_for([M, *FI], gpu=None, version="0.24.0")
    assert list(plan.argv) == [M, *FI]
    assert any("DSV4_LAUNCH_GPU_CAPABILITY" in w for w in plan.warnings)


def test_rejected_arguments_go_over_unchanged_with_a_warning():
    plan = plan_for([M, "--kv-cache-dt", "auto"], gpu=gpus(SM120))
    assert list(plan.argv) == [M, "--kv-cache-dt", "auto"]
    assert any("ambiguous" in w for w in plan.warnings)


# --- the memory picture: once per plan, on the plan (issue 18 item 6) --------------------------

def test_the_memory_picture_is_computed_once_per_plan_and_kept_on_it(monkeypatch):
    """The plan's own layout is estimated once, before the rows; the memory rows (which also try
    other settings for their fix: those are other facts) read that same picture. Spied, not faked:
    the real estimate runs."""
    from dsv4_launch.core.memory import estimate as memory
    from tests.rules.test_rules import CASES, judge

    calls = []
    real = memory._estimate

    def counted(facts, weights, layout, gpu_memory):
        calls.append(facts)
        return real(facts, weights, layout, gpu_memory)

    monkeypatch.setattr(memory, "_estimate", counted)
    for rule in ("max-model-len-too-long", "weights-tight", "weights-exceed-memory"):
        calls.clear()
        plan, facts = judge(CASES[rule][0])
        assert rule in {f.rule for f in plan.findings}
        assert sum(f is facts for f in calls) == 1, rule
        assert plan.memory == real(facts, facts.weights, None, None)
        text = next(f.text for f in plan.findings if f.rule == rule)
        said = (f"--max-model-len {plan.memory.max_model_len:,}"
                if rule == "max-model-len-too-long" else plan.memory.layout.words())
        assert said in text, (said, text)


def test_other_models_have_no_memory_picture():
    from tests.rules.test_rules import judge

    plan, _ = judge(([M], {"config": LLAMA}))
    assert plan.memory is None and plan.findings == ()
