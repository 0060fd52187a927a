"""Unknown memory is said, never assumed; and `fit` as a user would screenshot it (issue 29).

Faked: NVML (a GpuReport, or an error as on a Ray head or a laptop), the vLLM install (a
version, not imported) and vLLM's entry point for dsv4-serve (``hand_over``: records the argv,
starts nothing). The checkpoint is the known-checkpoint table's.
"""

from __future__ import annotations

import io
import json

import pytest

from dsv4_launch.adapters.nvml import GpuReport
from dsv4_launch.adapters.vllm_install import VllmInstall, assumed_vllm
from dsv4_launch.commands import serve as serve_command
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.fit import run_fit
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.core.gpus import GpuInfo
from dsv4_launch.core.memory.estimate import GiB
from dsv4_launch.core.memory.presets import parse_gpus

FLASH, PRO = "deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Pro"
NO_NVML = GpuReport(error="NVML: libnvidia-ml.so.1 not found")


def nvml(count=1, memory_gib=95.6):
    return GpuReport(gpus=tuple(GpuInfo(i, "NVIDIA RTX PRO 6000", f"GPU-{i}", (12, 0), int(memory_gib * GiB))
                                for i in range(count)), source="nvml")


def ctx(tmp_path, report, env=None, version="0.33.0", vllm=None):
    def read():
        if isinstance(report, Exception):
            raise report
        return report

    return Context(env={"HOME": str(tmp_path), **(env or {})}, stdout=io.StringIO(), stderr=io.StringIO(),
                   read_gpus=read, vllm=vllm or VllmInstall(version=version, importable=True))


def plan(tmp_path, args, report, env=None, as_json=True):
    c = ctx(tmp_path, report, env)
    code = run_plan(args, as_json=as_json, ctx=c)
    return code, (json.loads(c.stdout.getvalue()) if as_json else c.stdout.getvalue() + c.stderr.getvalue())


# --- DSV4_LAUNCH_GPU_CAPABILITY replaces the capability only -----------------------------------

def test_the_capability_override_keeps_nvmls_memory_and_the_certain_refusal(tmp_path):
    code, data = plan(tmp_path, [FLASH], nvml(1), {"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"})
    assert code == 2 and data["memory"]["verdict"] == "does not fit"
    assert any(f["rule"] == "weights-exceed-memory" and f["level"] == "refuse" for f in data["findings"])
    assert data["memory"]["gpu_memory_bytes"] == int(95.6 * GiB)


@pytest.mark.parametrize("args", [[FLASH], [FLASH, "-tp", "2"], [PRO, "-tp", "8"]])
@pytest.mark.parametrize("report", [NO_NVML, RuntimeError("broken libnvidia-ml")], ids=["no-nvml", "raises"])
def test_without_the_memory_every_output_says_memory_not_checked(tmp_path, args, report):
    env = {"DSV4_LAUNCH_GPU_CAPABILITY": "12.0"}
    code, data = plan(tmp_path, args, report, env)
    assert code == 0 and data["refusals"] == []  # nothing certain is known: nothing refused
    memory = data["memory"]
    assert memory["verdict"] == "memory not checked" and memory["fits"] is None
    assert "DSV4_LAUNCH_GPU_MEMORY" in memory["not_checked"] and "--gpu-memory" in memory["not_checked"]
    finding = next(f for f in data["findings"] if f["rule"] == "memory-not-checked")
    assert "memory not checked" in finding["text"] and "DSV4_LAUNCH_GPU_MEMORY" in finding["text"]
    code, text = plan(tmp_path, args, report, env, as_json=False)
    assert "memory not checked" in text and "DSV4_LAUNCH_GPU_MEMORY" in text


def test_dsv4_serve_says_memory_not_checked_and_starts(tmp_path, monkeypatch):
    handed = []
    monkeypatch.setattr(serve_command, "hand_over", lambda a, vllm, env: handed.append(list(a)) or 0)
    c = ctx(tmp_path, NO_NVML, {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0"})
    assert serve_command.run_serve([FLASH], c) == 0 and handed
    assert "memory not checked" in c.stderr.getvalue() and "DSV4_LAUNCH_GPU_MEMORY" in c.stderr.getvalue()


def test_the_memory_override_is_used_with_the_capability_and_nvml_is_not_asked(tmp_path):
    env = {"DSV4_LAUNCH_GPU_CAPABILITY": "9.0", "DSV4_LAUNCH_GPU_MEMORY": "141GiB"}
    code, data = plan(tmp_path, [FLASH, "-tp", "2"], AssertionError("NVML must not be read"), env)
    assert data["memory"]["gpu_memory_bytes"] == 141 * GiB and data["memory"]["not_checked"] is None
    assert not any(f["rule"] == "memory-not-checked" for f in data["findings"])


def test_with_gpus_read_nothing_is_said_about_unknown_memory(tmp_path):
    code, data = plan(tmp_path, [FLASH, "-tp", "2"], nvml(2))
    assert data["memory"]["not_checked"] is None
    assert not any(f["rule"] == "memory-not-checked" for f in data["findings"])


# --- fit --------------------------------------------------------------------------------------------

def fit(tmp_path, args, report=NO_NVML, as_json=False, env=None, vllm=None, **kw):
    c = ctx(tmp_path, report, env, vllm=vllm)
    code = run_fit(args, as_json=as_json, ctx=c, **kw)
    out = c.stdout.getvalue()
    return code, (json.loads(out) if as_json else out), c.stderr.getvalue()


def test_fit_gpus_without_a_memory_is_a_usage_error_naming_what_to_give(tmp_path):
    code, data, err = fit(tmp_path, [], as_json=True, gpus=8)
    assert code == 2 and data["rows"] == []
    assert "--gpu-memory" in err and "8xH200" in err and "RTXPRO6000" in err and "no layout" not in err


def test_fit_header_shows_the_memory_actually_used(tmp_path):
    count, preset = parse_gpus("8xH200")
    code, out, _ = fit(tmp_path, [], gpus=count, preset=preset, gpu_memory=100 * GiB)
    assert out.splitlines()[0].startswith(f"{FLASH} on 8 × H200 (100.0 GiB each)")
    code, out, _ = fit(tmp_path, [], gpus=count, preset=preset)
    assert out.splitlines()[0].startswith(f"{FLASH} on 8 × H200 (140.4 GiB each)")


@pytest.mark.parametrize("vllm,said", [
    (VllmInstall(version="0.28.0", importable=True), "vLLM 0.28.0 accounting (installed)"),
    (assumed_vllm("0.26.0"), "vLLM 0.26.0 accounting (--vllm-version)"),
    (VllmInstall(version=None, importable=False, note="not installed"), "accounting (no vLLM here: the newest"),
])
def test_fit_says_whose_accounting_it_assumed(tmp_path, vllm, said):
    code, out, err = fit(tmp_path, [], gpus=2, gpu_memory=96 * GiB, vllm=vllm)
    assert said in out.splitlines()[0], (out, err)


def test_fit_shows_the_band_and_names_vllms_maximum_concurrency(tmp_path):
    code, data, _ = fit(tmp_path, [PRO], as_json=True, gpus=8, gpu_memory=141 * GiB)
    rows = [r for r in data["rows"] if r["verdict"] != "does not fit"]
    assert rows and all(r["kv_available_bytes_low"] <= r["kv_available_bytes"] <= r["kv_available_bytes_high"]
                        for r in rows)
    assert any(r["kv_available_bytes_low"] < r["kv_available_bytes_high"] for r in rows)
    assert data["accounting_release"] == "0.33.0" and data["accounting_release_from"] == "installed"
    code, out, _ = fit(tmp_path, [PRO], gpus=8, gpu_memory=141 * GiB)
    assert "KV left" in out and "max conc" in out and 'vLLM\'s "Maximum concurrency"' in out
    table = out.split("\n---")[0]
    assert "–" in out.split("fewest")[0].split("\n", 3)[3]  # a band in the rows
    assert "more GPUs" not in out and table


@pytest.mark.parametrize("model,memory_gib,expected", [(PRO, 79.6, 16), (FLASH, 20, 16), (FLASH, 95.6, 4)])
def test_fewest_gpus_count_whole_nodes_above_8(tmp_path, model, memory_gib, expected):
    code, data, _ = fit(tmp_path, [model], as_json=True, gpus=8, gpu_memory=int(memory_gib * GiB))
    fewest = data["fewest_gpus"]
    assert fewest["gpus"] == expected and (fewest["gpus"] <= 8 or fewest["gpus"] % 8 == 0)
    assert fewest["verdict"] == "fits"


def test_fewest_gpus_prefers_the_most_headroom_among_those_that_fit(tmp_path):
    from dsv4_launch.core.memory.fit import fit_row, layouts

    code, data, _ = fit(tmp_path, [PRO], as_json=True, gpus=8, gpu_memory=141 * GiB)
    fewest = data["fewest_gpus"]
    fitting = [r for r in data["rows"] if r["verdict"] == "fits"]
    fitting = [r for r in fitting if r["pp"] == 1] or fitting  # PP only where nothing else fits
    assert fewest["kv_available_bytes_low"] == max(r["kv_available_bytes_low"] for r in fitting)
    assert layouts and fit_row  # the same functions fit's rows come from


def test_fit_exits_1_only_when_every_layout_certainly_does_not_fit(tmp_path):
    code, data, _ = fit(tmp_path, [FLASH], as_json=True, gpus=1, gpu_memory=96 * GiB)
    assert code == 1 and all(r["verdict"] == "does not fit" and r["why"] == "weights" for r in data["rows"])
    # the weights fit on 2 but one request at 16,384 batched tokens is only possible: vLLM decides, exit 0
    code, data, _ = fit(tmp_path, [FLASH, "--max-num-batched-tokens", "16384"], as_json=True, gpus=2,
                        gpu_memory=84 * GiB)
    assert code == 0 and data["fits"] is None


@pytest.mark.parametrize("args,said", [
    ([FLASH, "-tp", "2", "--max-model-len", "65536", "--max-num-batched-tokens", "2048"], "fits: TP 2"),
    ([FLASH, "-tp", "2"], "vLLM decides at start: TP 2"),
    ([FLASH], "does not fit: TP 1"),
])
def test_plans_memory_line_leads_with_the_verdict(tmp_path, args, said):
    code, text = plan(tmp_path, args, nvml(2), as_json=False)
    line = next(line for line in text.splitlines() if "weights" in line and "(estimate)" in line)
    assert said in line and "KV left" in line, line
    if "decides" in said:
        assert "–" in line.split("KV left")[1]  # the band, not one figure


def test_plan_gpus_n_without_a_memory_says_memory_not_checked_and_why(tmp_path):
    from dsv4_launch.commands.own_options import planning_context

    c = planning_context({"gpus": (8, None)}, ctx(tmp_path, NO_NVML))
    code = run_plan([PRO, "-tp", "8"], as_json=True, ctx=c)
    memory = json.loads(c.stdout.getvalue())["memory"]
    assert code == 0 and memory["verdict"] == "memory not checked"
    assert "--gpus gives how many GPUs, not their memory" in memory["not_checked"]


@pytest.mark.parametrize("version", ["0.24.0", "0.27.0", "0.28.0", "0.33.0", None])
def test_fit_says_max_conc_is_vllms_count_where_it_is(tmp_path, version):
    vllm = (VllmInstall(version=version, importable=True) if version
            else VllmInstall(version=None, importable=False, note="not installed"))
    code, data, _ = fit(tmp_path, [FLASH], as_json=True, gpus=4, gpu_memory=96 * GiB, vllm=vllm)
    assert data["concurrency_counted"] is True and data["concurrency_note"] is None
    code, out, _ = fit(tmp_path, [FLASH], gpus=4, gpu_memory=96 * GiB, vllm=vllm)
    assert 'max conc: vLLM\'s "Maximum concurrency" at 65,536 tokens' in out and "not verified" not in out


@pytest.mark.parametrize("version,counted,said", [
    # an installed release newer than every one read: 0.33's count, said to be unverified there
    ("0.35.0", True,
     'max conc is counted as vLLM 0.34.0 counts its "Maximum concurrency"; not verified for vLLM 0.35.0'),
    # before 0.24 no count was read: the KV left over one request's need, said as such
    ("0.23.0", False,
     'max conc is the KV left over what one request needs, not vLLM 0.23.0\'s own "Maximum concurrency"'),
])
def test_fit_says_where_max_conc_is_not_vllms_own_count(tmp_path, version, counted, said):
    vllm = VllmInstall(version=version, importable=True)
    code, data, err = fit(tmp_path, [FLASH], as_json=True, gpus=4, gpu_memory=96 * GiB, vllm=vllm)
    assert data["concurrency_counted"] is counted and data["concurrency_note"].startswith(said), (data, err)
    assert any(r["concurrency"] for r in data["rows"])
    code, out, _ = fit(tmp_path, [FLASH], gpus=4, gpu_memory=96 * GiB, vllm=vllm)
    assert said in out
    assert ('vLLM\'s "Maximum concurrency" at 65,536' in out) is counted


@pytest.mark.parametrize("model,why", [
    ("deepseek-ai/DeepSeek-V4.1-Flash", "this model's KV cache is not modelled"),  # its own caches
    ("nvidia/DeepSeek-V4.1-Flash-NVFP4", "the weights per GPU are unknown"),  # Engram tables' size not given
])
def test_fit_says_when_no_layout_can_be_judged_rather_than_that_none_fits(tmp_path, model, why):
    # "no layout of up to 64 of these GPUs fits" was printed where nothing could ever be judged to fit
    code, out, _ = fit(tmp_path, [model], gpus=4, gpu_memory=96 * GiB)
    assert f"no layout can be judged to fit 65,536 tokens: {why}" in out
    assert "no layout of up to" not in out and code == 0  # vLLM decides: not a "no"


# --- the fourth verdict: short at every end we estimate (issue 39) -------------------------------
SHORT_ARGS = [FLASH, "-tp", "2", "--max-num-batched-tokens", "16384"]  # 2 × 84 GiB: KV left 0.0 at both ends


def test_fit_calls_a_start_short_at_every_end_short_not_vllm_decides(tmp_path):
    code, data, _ = fit(tmp_path, SHORT_ARGS, as_json=True, gpus=2, gpu_memory=84 * GiB)
    mine = next(r for r in data["rows"] if r["yours"])
    assert mine["max_model_len_fits_high"] < 65_536 and mine["verdict"] == "short at every end we estimate"
    assert code == 0 and data["fits"] is None  # a warning, never the refusal's exit 1
    code, out, _ = fit(tmp_path, SHORT_ARGS, gpus=2, gpu_memory=84 * GiB)
    assert "short: short at every end we estimate" in out  # the legend names all four
    assert all(word in out for word in ("fits: even at", "vLLM decides at start", "does not fit: the weights"))


def test_plan_says_short_at_every_end_and_exits_0(tmp_path):
    code, data = plan(tmp_path, SHORT_ARGS, nvml(2, 84))
    memory = data["memory"]
    assert memory["max_model_len_fits_high"] < memory["max_model_len"]
    assert code == 0 and memory["verdict"] == "short at every end we estimate" and memory["fits"] is True
    row = next(f for f in data["findings"] if f["rule"] == "max-model-len-too-long")
    assert row["level"] == "warn" and "short at every end we estimate" in row["text"]
    assert "vLLM decides at start:" not in row["text"]
    code, text = plan(tmp_path, SHORT_ARGS, nvml(2, 84), as_json=False)
    assert "short at every end we estimate: TP 2" in text


def test_a_straddling_band_is_still_vllm_decides(tmp_path):
    code, data = plan(tmp_path, [FLASH, "-tp", "2"], nvml(2))
    memory = data["memory"]
    assert memory["max_model_len_fits_low"] < memory["max_model_len"] <= memory["max_model_len_fits_high"]
    assert memory["verdict"] == "vLLM decides at start"
    row = next(f for f in data["findings"] if f["rule"] == "max-model-len-too-long")
    assert "--max-model-len 1,048,576: vLLM decides at start:" in row["text"]


def test_dsv4_serve_warns_short_at_every_end_and_still_starts_vllm(tmp_path, monkeypatch):
    handed: list = []
    monkeypatch.setattr(serve_command, "hand_over", lambda a, vllm, env: handed.append(list(a)) or 0)
    c = ctx(tmp_path, nvml(2, 84))
    assert serve_command.run_serve(SHORT_ARGS, c) == 0 and handed
    assert "short at every end we estimate" in c.stderr.getvalue()


def test_doctor_says_short_at_every_end_as_a_warning(tmp_path):
    from dsv4_launch.commands.doctor import run_doctor

    c = ctx(tmp_path, nvml(2, 84))
    run_doctor(SHORT_ARGS, as_json=True, ctx=c)
    checks = json.loads(c.stdout.getvalue())["checks"]
    line = next(x for x in checks if "short at every end we estimate" in x["detail"])
    assert line["status"] == "WARN"


def test_fit_labels_carry_ep_and_never_repeat(tmp_path):
    code, data, _ = fit(tmp_path, [PRO, "-tp", "8", "--enable-expert-parallel"], as_json=True, gpus=8,
                        gpu_memory=int(140.4 * GiB))
    mine = next(r for r in data["rows"] if r["yours"])
    assert mine["layout"] == "TP 8 + EP" and mine["flags"] == "-tp 8 -ep"
    assert len({r["flags"] for r in data["rows"]}) == len(data["rows"])
    assert len({r["layout"] for r in data["rows"]}) == len(data["rows"])


def test_the_gb300_preset_is_nvmls_capture():
    # nvidia-smi memory.total on a DGX Station GB300 (presets.py cites it): 256,703 MiB, not the 288 GB data sheet
    count, preset = parse_gpus("4xGB300")
    assert (count, preset.name, preset.capability, preset.memory) == (4, "NVIDIA GB300", (10, 3), 256_703 * 2**20)


# --- "fewest GPUs": layouts people run, and the user's own count where a lever makes it fit ----------

def preset_fit(tmp_path, gpus, args=()):
    from dsv4_launch.core.memory.presets import parse_gpus as parse

    count, preset = parse(gpus)
    code, data, _ = fit(tmp_path, list(args), as_json=True, gpus=count, preset=preset)
    _, text, _ = fit(tmp_path, list(args), gpus=count, preset=preset)
    assert text.count("--max-num-batched-tokens 4096") <= 1  # a lever is said once
    return code, data, next(line for line in text.splitlines() if line.startswith(("fewest", "no layout")))


def test_fewest_on_two_rtx_pro_6000_is_yours_with_the_lever_not_three(tmp_path):
    # the two-GPU user was told "3 (-tp 1 -pp 3)"; -tp 2 with 4,096 batched tokens re-plans as fitting
    code, data, line = preset_fit(tmp_path, "2xRTXPRO6000")
    assert data["fix"] == {"flags": "-tp 2", "change": "--max-num-batched-tokens 4096", "end": "pessimistic"}
    assert line.endswith(": 2 (yours: -tp 2 with --max-num-batched-tokens 4096, re-planned)"), line
    assert data["fewest_gpus_with_change"] == {"gpus": 2, "flags": "-tp 2", "change": "--max-num-batched-tokens 4096"}
    # fewest_gpus keeps its meaning: the fewest on which a layout fits unchanged, a count people run
    assert data["fewest_gpus"]["gpus"] == 4 and data["fewest_gpus"]["verdict"] == "fits"
    assert data["fewest_gpus"]["pp"] == 1 and data["fewest_gpus"]["tp"] in (1, 2, 4)


def test_fewest_with_a_layout_that_fits_unchanged_names_no_change(tmp_path):
    code, data, line = preset_fit(tmp_path, "4xRTXPRO6000")  # was "3 (-tp 1 -pp 3)"
    fewest = data["fewest_gpus"]
    assert fewest["gpus"] == 4 and fewest["pp"] == 1 and data["fewest_gpus_with_change"] is None
    assert line.endswith(f": 4 ({fewest['flags']}, the most headroom)"), line


def test_fewest_on_8_h200_pro_prefers_a_layout_without_pp(tmp_path):
    code, data, line = preset_fit(tmp_path, "8xH200", [PRO])
    fewest = data["fewest_gpus"]
    assert fewest["gpus"] == 8 and fewest["pp"] == 1 and fewest["verdict"] == "fits"
    assert any(r["pp"] > 1 and r["verdict"] == "fits" for r in data["rows"])  # PP fits too, and is not named
    assert data["fewest_gpus_with_change"] is None and "-pp" not in line


@pytest.mark.parametrize("gpus", ["1xRTXPRO6000", "2xH100"])
def test_where_nothing_fits_here_fewest_is_a_count_people_run(tmp_path, gpus):
    code, data, line = preset_fit(tmp_path, gpus)
    assert not any(r["verdict"] == "fits" for r in data["rows"]) and data["fix"] is None
    fewest = data["fewest_gpus"]
    assert fewest["gpus"] in (2, 4, 8) and fewest["gpus"] > data["gpus"] and fewest["tp"] in (1, 2, 4, 8)
    assert data["fewest_gpus_with_change"] is None and "yours" not in line


def test_a_count_no_usual_layout_uses_is_tried_only_when_asked(tmp_path):
    from dsv4_launch.core.memory.fit import counts_to_try

    assert counts_to_try(64)[:5] == [1, 2, 4, 8, 16] and 3 not in counts_to_try(64) and 24 in counts_to_try(64)
    assert 6 in counts_to_try(64, asked=6) and 5 not in counts_to_try(64, asked=6)


def test_fewest_names_the_users_own_layout_where_it_fits_tp_8_with_ep_too(tmp_path):
    code, data, line = preset_fit(tmp_path, "8xH200", [PRO, "-tp", "8", "--enable-expert-parallel"])
    assert data["fewest_gpus"]["yours"] and data["fewest_gpus"]["layout"] == "TP 8 + EP", data["fewest_gpus"]
    assert line.endswith(": 8 (-tp 8 -ep, the most headroom)"), line


def test_where_no_count_fits_the_line_names_the_counts_tried(tmp_path):
    code, out, _ = fit(tmp_path, [PRO], gpus=8, gpu_memory=8 * GiB)
    assert ("no layout of up to 64 of these GPUs (1, 2, 4, 8, then whole nodes) fits 65,536 tokens at the "
            "pessimistic end") in out and code == 1
