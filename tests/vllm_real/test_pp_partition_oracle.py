"""``VLLM_PP_LAYER_PARTITION`` judged by the installed vLLM's own ``get_pp_indices``
(vllm/distributed/utils.py), the function every DeepSeek-V4 build calls through ``make_layers``
(vllm/model_executor/models/utils.py) on every pipeline stage, PP 1 included.

The variable is set in this process's environment and ``vllm.envs`` made to read it afresh (its
``functools.cache`` switched off where a release has it on: ``enable_envs_cache``); then each
stage's ``get_pp_indices(num_hidden_layers, rank, pp_size)`` is called, for a grid of partition
strings × PP sizes × the layer counts of DeepSeek-V4-Flash (43) and -Pro (61). dsv4-launch's
check must raise vLLM's very text exactly where vLLM raises, and its plan refuse exactly there.
Faked: nothing (no GPU is needed: the function only reads the variable).
"""

from __future__ import annotations

import re

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.rules.recipe import pp_partition_error
from tests.planning import planned

M = "deepseek-ai/DeepSeek-V4-Flash"
CONFIGS = {43: known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")["config"],
           61: known_checkpoint("deepseek-ai/DeepSeek-V4-Pro")["config"]}
VAR = "VLLM_PP_LAYER_PARTITION"

PARTITIONS = [
    None, "", " ", ",", ",,", "43", "61", " 43 ", "+43", "4_3", "43,", ",43", "43.0", "0x2b", "forty-three",
    "22,21", "21,22", "22, 21", " 22 , 21 ", "22,\t21", "2_2,21", "22;21", "22 21", "22,21,", "22,,21",
    "31,30", "30,31", "44,-1", "-1,44", "0,43", "43,0", "0,61", "61,0", "62,-1",
    "15,14,14", "14,15,14", "21,20,20", "20,20,21", "11,11,11,10", "16,15,15,15", "15,15,15,16", "16,16,16,13",
    "\u0662\u0662,\u0662\u0661", "\u0663\u0661,\u0663\u0660", "a,b", "1e1,33", "١١", "22\n,21",
]
PP_SIZES = [1, 2, 3, 4]


@pytest.fixture()
def vllm_get_pp_indices(monkeypatch):
    import vllm.envs as envs
    from vllm.distributed.utils import get_pp_indices

    def judge(text: str | None, layers: int, pp: int) -> str | None:
        if text is None:
            monkeypatch.delenv(VAR, raising=False)
        else:
            monkeypatch.setenv(VAR, text)
        if getattr(envs, "_is_envs_cache_enabled", lambda: False)():
            envs.disable_envs_cache()
        assert envs.VLLM_PP_LAYER_PARTITION == text  # read afresh, as the build reads it
        try:
            for rank in range(pp):
                get_pp_indices(layers, rank, pp)
        except ValueError as exc:
            return str(exc)
        return None

    return judge


@pytest.mark.rule("pp-layer-partition-invalid")
@pytest.mark.parametrize("layers", sorted(CONFIGS))
def test_the_check_raises_what_get_pp_indices_raises(real_vllm, vllm_get_pp_indices, layers):
    version = real_vllm[2]
    mismatches, raised = [], 0
    for text in PARTITIONS:
        for pp in PP_SIZES:
            vllm_error = vllm_get_pp_indices(text, layers, pp)
            raised += vllm_error is not None
            ours = pp_partition_error(text, layers, pp, version)
            if ours != vllm_error:
                mismatches.append(f"{text!r} pp={pp}: vLLM {vllm_error!r}, dsv4-launch {ours!r}")
    assert not mismatches, "\n".join(mismatches)
    assert 0 < raised < len(PARTITIONS) * len(PP_SIZES)  # the grid has both outcomes


@pytest.mark.rule("pp-layer-partition-invalid")
@pytest.mark.parametrize("layers", sorted(CONFIGS))
def test_the_plan_refuses_exactly_where_vllm_raises(real_vllm, vllm_get_pp_indices, layers):
    _, _, version = real_vllm
    wrong = []
    for text in PARTITIONS:
        for pp in PP_SIZES:
            vllm_error = vllm_get_pp_indices(text, layers, pp)
            env = {} if text is None else {VAR: text}
            plan = planned([M, "-pp", str(pp)], config=CONFIGS[layers], env=env, version=version).plan
            finding = next((f for f in plan.findings if f.rule == "pp-layer-partition-invalid"), None)
            refused = finding is not None and finding.text in plan.refusals
            if refused is not (vllm_error is not None) or (refused and f"('{vllm_error}')" not in finding.text):
                wrong.append(f"{text!r} pp={pp}: vLLM {vllm_error!r}, plan {finding.text if finding else None!r}")
            suggested = re.search(r"e\.g\. VLLM_PP_LAYER_PARTITION=([\d,]+)", finding.text) if finding else None
            if suggested and vllm_get_pp_indices(suggested.group(1), layers, pp) is not None:
                wrong.append(f"{text!r} pp={pp}: the fix's {suggested.group(1)} is refused by vLLM too")
    assert not wrong, "\n".join(wrong)


@pytest.mark.rule("pp-layer-partition-invalid")
@pytest.mark.parametrize("text,pp", [("", 1), ("22,21", 1), ("22,22", 2)])
def test_explain_reads_vllms_own_traceback(tmp_path, real_vllm, monkeypatch, text, pp):
    # the real ValueError of get_pp_indices, formatted by traceback, logged the way vLLM's logger does
    import io
    import json
    import traceback

    import vllm.envs as envs
    from vllm.distributed.utils import get_pp_indices

    from dsv4_launch.commands.context import Context
    from dsv4_launch.commands.explain import run_explain

    monkeypatch.setenv(VAR, text)
    if getattr(envs, "_is_envs_cache_enabled", lambda: False)():
        envs.disable_envs_cache()
    try:
        get_pp_indices(43, 0, pp)
    except ValueError:
        formatted = traceback.format_exc()
    else:
        pytest.fail(f"get_pp_indices took {text!r} with pp={pp}")
    _, _, version = real_vllm
    lines = [f"(APIServer pid=1) INFO 12-01 08:00:00 [entrypoints/.../utils/api_utils.py:339] vLLM server version "
             f"{version}, serving model {M}"]
    lines += [f"(EngineCore_DP0 pid=77) ERROR 12-01 08:00:01 [v1/engine/core.py:1231] {line}"
              for line in ["EngineCore failed to start.", *formatted.rstrip("\n").split("\n")]]
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = io.StringIO()
    assert run_explain([str(path)], as_json=True, ctx=Context(env={}, stdout=out, stderr=io.StringIO())) == 0
    assert "pp-layer-partition-invalid" in [item["rule"] for item in json.loads(out.getvalue())["explained"]]
