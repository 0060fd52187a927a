"""The fix that fits (issue 39 item 2): where one request of --max-model-len is not certain to
fit, the warning names the smallest change of the levers people use — --max-num-batched-tokens,
--max-num-seqs, the layout on the same GPUs, --gpu-memory-utilization (up to 0.95), then
--max-model-len — that re-plans, by the same model, as fitting at the pessimistic end; where
none does, one that fits at the optimistic end. A value the user set is never suggested over.
Every suggestion here is planned again with its flags added and must say what it promised."""

from __future__ import annotations

import re

from tests.memory.test_memory import facts, findings  # Flash from the known table, GPUs by hand

FIX = re.compile(r"Fix: (.+?) \(fits at the (pessimistic end|optimistic end only)\), or --max-model-len auto")


def fix_of(tokens, memory_gib=95.6, gpus=2):
    plan, found = findings(facts(tokens, gpus=gpus, memory_gib=memory_gib))
    line = found["max-model-len-too-long"].text
    m = FIX.search(line)
    assert m, line
    return m.group(1), m.group(2), line


def replanned(tokens, fix, memory_gib=95.6, gpus=2):
    plan, found = findings(facts([*tokens, *fix.split()], gpus=gpus, memory_gib=memory_gib))
    return plan.memory, found


def test_two_rtx_pro_6000_at_65536_tokens_are_told_4096_batched_tokens_not_a_shorter_length():
    tokens = ["-tp", "2", "--max-model-len", "65536"]
    fix, end, line = fix_of(tokens)
    assert (fix, end) == ("--max-num-batched-tokens 4096", "pessimistic end"), line
    assert "13824" not in line and "--max-model-len 1" not in line  # the old fix cut the length instead
    memory, found = replanned(tokens, fix)
    assert "max-model-len-too-long" not in found and memory.max_model_len_fits_low >= 65536
    too_far, _ = replanned(tokens, "--max-num-batched-tokens 8192")  # the default did not fit: the search is real
    assert too_far.max_model_len_fits_low < 65536


def test_a_value_the_user_set_is_never_suggested_over():
    tokens = ["-tp", "2", "--max-model-len", "65536", "--max-num-batched-tokens", "8192"]
    fix, end, line = fix_of(tokens)
    assert "--max-num-batched-tokens" not in fix, line
    memory, found = replanned(tokens, fix)
    assert end == "pessimistic end" and "max-model-len-too-long" not in found


def test_where_no_lever_fits_at_the_pessimistic_end_the_optimistic_one_is_said_as_such():
    tokens = ["-tp", "2", "--max-model-len", "65536", "--gpu-memory-utilization", "0.92"]
    fix, end, line = fix_of(tokens, memory_gib=84)
    assert end == "optimistic end only" and fix.startswith("--max-num-batched-tokens"), line
    memory, _ = replanned(tokens, fix, memory_gib=84)
    assert memory.max_model_len_fits_low < 65536 <= memory.max_model_len_fits_high  # vLLM decides: as said


def test_the_layout_people_run_is_suggested_when_the_settings_are_the_users(tmp_path):
    # the official Pro-0813 DP 8 + EP H200 command with its batch size set: short, and TP 8 + EP (the
    # recipe's default layout) fits on the same GPUs
    from tests.rules.test_recipes import BASE, EP_GRAPHS, HOPPER_PRO, PRO_0813, plan

    tokens = [*BASE, "--data-parallel-size", "8", "--enable-expert-parallel", *EP_GRAPHS, *HOPPER_PRO,
              "--max-num-batched-tokens", "8192"]
    code, data, _ = plan(tmp_path, PRO_0813, "8xH200", tokens)
    line = next(f["text"] for f in data["findings"] if f["rule"] == "max-model-len-too-long")
    fix = FIX.search(line)
    assert fix and fix.group(1) == "--tensor-parallel-size 8 --data-parallel-size 1 --enable-expert-parallel", line
    code, data, _ = plan(tmp_path, PRO_0813, "8xH200", [*tokens, *fix.group(1).split()])
    assert data["memory"]["layout"] == "TP 8 + EP" and data["memory"]["verdict"] == "fits"


def test_fit_on_two_gpus_names_the_change_that_fits_them_not_more_gpus(tmp_path):
    from tests.memory.test_fit_memory import FLASH, fit, nvml

    args = [FLASH, "-tp", "2", "--max-model-len", "65536"]
    code, data, _ = fit(tmp_path, args, nvml(2), as_json=True, gpus=2)
    assert not any(r["verdict"] == "fits" for r in data["rows"]) and data["fewest_gpus"]["gpus"] == 4  # never 3
    assert data["fix"] == {"flags": "-tp 2", "change": "--max-num-batched-tokens 4096", "end": "pessimistic"}
    code, out, _ = fit(tmp_path, args, nvml(2), gpus=2)
    assert ("fewest of these GPUs that fit 65,536 tokens even at the pessimistic end: 2 (yours: -tp 2 with "
            "--max-num-batched-tokens 4096, re-planned)") in out and "on these 2 GPUs" not in out
    code, data, _ = fit(tmp_path, [*args, "--max-num-batched-tokens", "4096"], nvml(2), as_json=True, gpus=2)
    assert next(r for r in data["rows"] if r["yours"])["verdict"] == "fits" and data["fix"] is None  # as promised
