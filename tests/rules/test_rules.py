"""Every rule row, both ways: one case that trips it and one that passes, plus the table's own
invariants (evidence behind every refusal, templates that fill, README generated from the rows).

Pure: facts built by hand (tests/planning.py); no NVML, no files, no vLLM. Adding a row without
its pair here fails `test_every_row_has_a_trips_and_a_passes_case`.
"""

from __future__ import annotations

import ast
import json
import os
import re
import string
from pathlib import Path

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.facts import HostFacts
from dsv4_launch.core.gpus import GpuInfo, GpuSelection
from dsv4_launch.core.memory.estimate import GiB, WeightFacts
from dsv4_launch.core.rules.engine import EVIDENCE, FAIL, REFUSAL_EVIDENCE, REFUSE, WARN, Release, version_words, words
from dsv4_launch.core.rules.plan import RULES
from dsv4_launch.core.rules.registry import DOCTOR_RULES
from dsv4_launch.core.versions import VersionRange
from tests.planning import LLAMA, SM80, SM90, SM100, SM120, SM121, V4, V41, M, facts_for, gpus, planned

FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
F0731 = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash-0731")
VISION = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash-Vision-Exp")
BASE = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash-Base")
NVFP4 = known_checkpoint("nvidia/DeepSeek-V4-Flash-NVFP4")
SM110 = (11, 0)
V4_FULL = FLASH["config"]
FI = ["--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"]
MEGA = ["--moe-backend", "deep_gemm_mega_moe"]
EP = ["--enable-expert-parallel"]
DSPARK = ["--speculative-config", '{"method": "dspark", "num_speculative_tokens": 5}']
LMCACHE = ["--kv-transfer-config", '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}']
NIXL = ["--kv-transfer-config", '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}']
FI41 = ["--attention-backend", "FLASHINFER_MLA_SPARSE_DSV41"]


def dspark_with(**extra):
    import json

    return ["--speculative-config", json.dumps({"method": "dspark", "num_speculative_tokens": 5, **extra})]


def big(*ccs):
    """GPUs with plenty of memory, so that no memory row interferes."""
    return gpus(*ccs, memory=400 * GiB)


def weights(total_gib, exact=True):
    return WeightFacts(total_bytes=int(total_gib * GiB), source="test", exact=exact, replicated_bytes=GiB)


# DeepSeek-V4.1's Engram tables as its config.json gives them (188.8 GiB: 2 × 384M rows × 264 B)
V41_ENGRAM = {**V41, "engram_layer_ids": [1, 14], "engram_num_embeddings": [384_000_000] * 2, "engram_head_dim": 256}
DOWNLOAD = WeightFacts(total_bytes=160 * 10**9, source="test", exact=True, shards_total=4, shards_missing=4,
                       missing_bytes=160 * 10**9)

# rule id -> (trips, passes); each case: (tokens after the model, keyword arguments for facts_for)
CASES = {
    "kv-invalid": (([M, "--kv-cache-dtype", "fp9"], {}), ([M, "--kv-cache-dtype", "fp8"], {})),
    "kv-not-fp8": (([M, "--kv-cache-dtype", "bfloat16"], {}), ([M, "--kv-cache-dtype", "fp8_e4m3"], {})),
    "nvfp4-on-mla": (([M, "--kv-cache-dtype", "nvfp4"], {}), ([M, "--kv-cache-dtype", "nvfp4_ds_mla"], {})),
    "v41-kv": (([M, "--kv-cache-dtype", "fp8_e4m3"], {"config": V41}),
               ([M, "--kv-cache-dtype", "fp8"], {"config": V41})),
    "v41-ds-mla-on-plain-rows": (([M, *FI41, "--kv-cache-dtype", "fp8_ds_mla"], {"config": V41, "gpu": big(SM100)}),
                                 ([M, *FI41, "--kv-cache-dtype", "fp8_ds_mla"], {"config": V41})),
    "backend-not-dsv4": (([M, "--attention-backend", "FLASHINFER_MLA_SPARSE"], {}), ([M, *FI], {})),
    "compressed-tensors-scale-names": (([M], {"config": {**V4,
                                                         "quantization_config": {"quant_method": "compressed-tensors"}},
                                              "version": "0.26.0"}),
                                       ([M], {"config": {**V4, "quantization_config": {"quant_method": "fp8"}},
                                              "version": "0.26.0"})),
    "dspark-kv-offload": (([M, *DSPARK, "--kv-offloading-size", "64"], {"config": F0731["config"]}),
                          ([M, *DSPARK, "--kv-offloading-backend", "native"], {"config": F0731["config"]})),
    "v41-pcp-not-flashmla": (([M, "-pcp", "2", "--attention-backend", "FLASHINFER_MLA_SPARSE_DSV41"], {"config": V41}),
                             ([M, "-pcp", "2", "--attention-backend", "FLASHMLA_SPARSE_DSV41"], {"config": V41})),
    "backend-ignored": (([M, "--attention-backend", "TRITON_MLA"], {}), ([M, "--attention-backend", "auto"], {})),
    "flashmla-on-sm12": (([M, "--attention-backend", "FLASHMLA_SPARSE_DSV4"], {}),
                         ([M, "--attention-backend", "FLASHMLA_SPARSE_DSV4"], {"gpu": big(SM90)})),
    "flashinfer-dsv4-on-sm9": (([M, *FI], {"gpu": big(SM90)}), ([M, *FI], {"gpu": big(SM100)})),
    "fp8-ds-mla-on-plain-rows": (([M, *FI, "--kv-cache-dtype", "fp8_ds_mla"], {"gpu": big(SM100)}),
                                 ([M, *FI, "--kv-cache-dtype", "fp8"], {"gpu": big(SM100)})),
    "attention-env-ignored": (([M], {"env": {"VLLM_ATTENTION_BACKEND": "FLASHMLA"}}), ([M], {})),
    "gpu-too-old": (([M], {"gpu": big(SM80)}), ([M], {"gpu": big(SM90)})),
    "sm11-thor": (([M], {"gpu": big(SM110)}), ([M], {"gpu": big(SM90)})),
    "sm12-0.26-garbage": (([M], {"version": "0.26.0"}), ([M], {"version": "0.28.0"})),
    "v2-runner-env-not-int": (([M], {"env": {"VLLM_USE_V2_MODEL_RUNNER": "false"}}),
                              ([M], {"env": {"VLLM_USE_V2_MODEL_RUNNER": "0"}})),
    "v1-runner-removed": (([M], {"version": "0.34.0", "env": {"VLLM_USE_V2_MODEL_RUNNER": "0"}}),
                          ([M], {"version": "0.34.0", "env": {"VLLM_USE_V2_MODEL_RUNNER": "1"}})),
    "deep-gemm-env-not-int": (([M], {"env": {"VLLM_USE_DEEP_GEMM": ""}}), ([M], {"env": {"VLLM_USE_DEEP_GEMM": "0"}})),
    "mega-moe-nvfp4": (([M, *MEGA, *EP], {"gpu": big(SM100), "config": NVFP4["config"]}),
                       ([M, *MEGA, *EP], {"gpu": big(SM100), "config": V4_FULL})),
    "indexer-dtype-unsupported": (([M, "--attention-config.indexer_kv_dtype", "bf16"], {}),
                                  ([M, "--attention-config.indexer_kv_dtype", "fp8"], {})),
    "dspark-v2-unsupported": (([M, *DSPARK, "--enable-dbo"], {"config": F0731["config"]}),
                              ([M, *DSPARK, "--enable-elastic-ep"], {"config": F0731["config"]})),
    "draft-kv-not-fp8": (([M, *dspark_with(kv_cache_dtype="bfloat16")], {"config": F0731["config"]}),
                         ([M, *dspark_with(kv_cache_dtype="fp8")], {"config": F0731["config"]})),
    "hma-off-full-attention": (([M, "--disable-hybrid-kv-cache-manager"], {"version": "0.30.0"}),
                               ([M, "--disable-hybrid-kv-cache-manager"], {"version": "0.31.0"})),
    "v4-wrong-parsers": (([M, "--tool-call-parser", "hermes"], {}),
                         ([M, "--tool-call-parser", "deepseek_v4", "--reasoning-parser", "deepseek_v4"], {})),
    "vision-no-compress-ratios": (([M], {"config": VISION["config"]}),
                                  ([M],
                                   {"config": {**VISION["config"], "compress_ratios": V4_FULL["compress_ratios"]}})),
    "sm12-before-0.24": (([M], {"version": "0.23.1"}), ([M], {"version": "0.24.0"})),
    "sm12-0.27": (([M], {"version": "0.27.1"}), ([M], {"version": "0.26.0"})),
    "sm12-0.24-deepgemm": (([M], {"version": "0.24.0"}),
                           ([M], {"version": "0.24.0", "env": {"VLLM_USE_DEEP_GEMM": "0"}})),
    "sm10-0.28-v2-runner": (([M], {"version": "0.28.0", "gpu": big(SM100)}),
                            ([M], {"version": "0.28.0", "gpu": big(SM100), "env": {"VLLM_USE_V2_MODEL_RUNNER": "0"}})),
    "h20-0.27.1": (([M],
                    {"version": "0.27.1", "gpu": GpuSelection((GpuInfo(0, "NVIDIA H20", "GPU-0", SM90, 96 * GiB),))}),
                   ([M], {"version": "0.27.1", "gpu": big(SM90)})),
    "gb10-stock": (([M], {"gpu": big(SM121)}), ([M], {"gpu": big(SM120)})),
    "mixed-gpus": (([M], {"gpu": big(SM90, SM120)}), ([M], {"gpu": big(SM120, SM120)})),
    "mega-moe-needs-ep": (([M, *MEGA], {"gpu": big(SM100)}), ([M, *MEGA, *EP], {"gpu": big(SM100)})),
    "mega-moe-fp4": (([M, *MEGA, *EP], {"gpu": big(SM100), "config": BASE["config"]}),
                     ([M, *MEGA, *EP], {"gpu": big(SM100), "config": V4_FULL})),
    "mega-moe-not-sm100": (([M, *MEGA, *EP], {}), ([M, *MEGA, *EP], {"gpu": big(SM100)})),
    "fp4-indexer-off-sm10": (([M, "--attention_config.use_fp4_indexer_cache=True"], {"version": "0.29.0"}),
                             ([M, "--attention_config.use_fp4_indexer_cache=True"], {"version": "0.29.0",
                                                                                    "gpu": big(SM100)})),
    "fp4-indexer-removed": (([M, "--attention-config", '{"use_fp4_indexer_cache": true}'], {"gpu": big(SM100)}),
                            ([M, "--attention-config.indexer_kv_dtype", "mxfp4"], {"gpu": big(SM100)})),
    "mxfp4-indexer-off-sm10": (([M, "--attention-config.indexer_kv_dtype", "mxfp4"], {}),
                               ([M, "--attention-config.indexer_kv_dtype", "mxfp4"], {"gpu": big(SM100)})),
    "indexer-dtype-ignored": (([M, "--attention-config.indexer_kv_dtype", "mxfp4"],
                               {"version": "0.26.0", "gpu": big(SM100)}),
                              ([M, "--attention_config.use_fp4_indexer_cache=True"],
                               {"version": "0.26.0", "gpu": big(SM100)})),
    "tp-heads": (([M, "-tp", "3"], {"gpu": big(SM120, SM120, SM120)}), ([M, "-tp", "4"], {"gpu": big(*[SM120] * 4)})),
    "tp-o-groups": (([M, "-tp", "16"], {"gpu": big(*[SM120] * 16), "config": V4_FULL}),
                    ([M, "-tp", "8", "-dp", "2"], {"gpu": big(*[SM120] * 16), "config": V4_FULL})),
    "tp-pp-gpus": (([M, "-tp", "4", "-pp", "2"], {"gpu": big(*[SM120] * 4)}),
                   ([M, "-tp", "4", "-pp", "2"], {"gpu": big(*[SM120] * 8)})),
    "pp-layer-partition-invalid": (([M, "-pp", "2"], {"config": V4_FULL, "env": {"VLLM_PP_LAYER_PARTITION": "22,22"}}),
                                   ([M, "-pp", "2"], {"config": V4_FULL, "env": {"VLLM_PP_LAYER_PARTITION": "22,21"}})),
    "block-size": (([M, "--block-size", "128"], {}), ([M, "--block-size", "512"], {})),
    "block-size-v41": (([M, "--block-size", "64"], {"config": V41}), ([M, "--block-size", "64"], {"config": V41,
                                                                                                 "gpu": big(SM90)})),
    "dspark-before-0.25": (([M, *DSPARK], {"version": "0.24.0", "config": F0731["config"]}),
                           ([M, *DSPARK], {"version": "0.25.0", "config": F0731["config"]})),
    "dspark-without-module": (([M, *DSPARK], {"config": V4_FULL}), ([M, *DSPARK], {"config": F0731["config"]})),
    "dspark-pp": (([M, *DSPARK, "-pp", "2"],
                   {"version": "0.29.0", "config": F0731["config"], "gpu": big(SM120, SM120)}),
                  ([M, *DSPARK, "-pp", "2"],
                   {"version": "0.30.0", "config": F0731["config"], "gpu": big(SM120, SM120)})),
    "dspark-k-below-block": (([M, "--speculative-config", '{"method": "dspark", "num_speculative_tokens": 2}'],
                              {"version": "0.26.0", "config": F0731["config"]}),
                             ([M, *DSPARK], {"version": "0.26.0", "config": F0731["config"]})),
    "dspark-v1-runner": (([M, *DSPARK], {"config": F0731["config"], "env": {"VLLM_USE_V2_MODEL_RUNNER": "0"}}),
                         ([M, *DSPARK], {"config": F0731["config"]})),
    "mtp-on-dspark-checkpoint": (([M, "--speculative-config.method", "mtp"], {"config": F0731["config"]}),
                                 ([M, "--speculative-config.method", "mtp"], {"config": V4_FULL})),
    "vision-before-0.30": (([M], {"version": "0.29.0", "config": VISION["config"]}),
                           ([M], {"version": "0.30.0", "config": VISION["config"]})),
    "hma-disabled": (([M, "--disable-hybrid-kv-cache-manager"], {}), ([M, "--no-disable-hybrid-kv-cache-manager"], {})),
    "connector-turns-hma-off": (([M, *LMCACHE], {}), ([M, *NIXL], {})),
    "connector-hma-forced": (([M, *LMCACHE, "--no-disable-hybrid-kv-cache-manager"], {}),
                             ([M, *NIXL, "--no-disable-hybrid-kv-cache-manager"], {})),
    "tokenizer-without-template": (([M, "--tokenizer-mode", "hf"], {}), ([M, "--tokenizer-mode", "auto"], {})),
    "v4-parsers-on-v41": (([M, "--tool-call-parser", "deepseek_v4"], {"config": V41}),
                          ([M, "--tool-call-parser", "deepseek_v41"], {"config": V41})),
    "think-max-short": (([M, "--default-chat-template-kwargs", '{"reasoning_effort": "max"}', "--max-model-len",
                          "131072"], {}),
                        ([M, "--default-chat-template-kwargs", '{"reasoning_effort": "max"}', "--max-model-len",
                          "393216"], {})),
    # the GPUs' memory unknown (gpus() without a memory): said, never assumed
    "memory-not-checked": (([M], {"gpu": gpus(SM120), "weights_facts": weights(148)}),
                           ([M], {"gpu": gpus(SM120, memory=96 * GiB), "weights_facts": weights(148)})),
    "weights-exceed-memory": (([M], {"gpu": gpus(SM120, memory=96 * GiB), "weights_facts": weights(148)}),
                              ([M, "-tp", "2"],
                               {"gpu": gpus(SM120, SM120, memory=96 * GiB), "weights_facts": weights(148)})),
    "weights-tight": (([M], {"gpu": gpus(SM120, memory=96 * GiB), "weights_facts": weights(148, exact=False)}),
                      ([M, "-tp", "2"],
                       {"gpu": gpus(SM120, SM120, memory=96 * GiB), "weights_facts": weights(148, exact=False)})),
    "max-model-len-too-long": (([M, "-tp", "2"], {"gpu": gpus(SM120, SM120, memory=96 * GiB), "config": V4_FULL,
                                                  "weights_facts": weights(148)}),
                               ([M, "-tp", "2", "--max-model-len", "auto"], {"gpu": gpus(SM120, SM120, memory=96 * GiB),
                                                                             "config": V4_FULL,
                                                                             "weights_facts": weights(148)})),
    # rows of core/rules/memory.py added by the memory work (their pairs kept here, where every row's pair is)
    "gpu-memory-utilization-invalid": (([M, "--gpu-memory-utilization", "1.5"], {"gpu": big(SM120)}),
                                       ([M, "--gpu-memory-utilization", "0.9"], {"gpu": big(SM120)})),
    "max-model-len-invalid": (([M, "--max-model-len", "-5"], {"gpu": big(SM120)}),
                              ([M, "--max-model-len", "65536"], {"gpu": big(SM120)})),
    "shards-missing": (([M], {"gpu": big(SM120),
                              "weights_facts": WeightFacts(shards_total=3, shards_missing=1, local=True)}),
                       ([M], {"gpu": big(SM120),
                              "weights_facts": WeightFacts(shards_total=3, shards_missing=1, local=False)})),
    # this host's memory and download space (adapters/host.py), faked as gathered facts
    "host-memory-short": (([M], {"config": V41_ENGRAM, "host": HostFacts(250 * GiB, 120 * GiB)}),
                          ([M], {"config": V41_ENGRAM, "host": HostFacts(500 * GiB, 480 * GiB)})),
    "download-space-short": (([M], {"weights_facts": DOWNLOAD, "host": HostFacts(download_free_bytes=47 * 10**9,
                                                                                 download_dir="/hub")}),
                             ([M], {"weights_facts": DOWNLOAD, "host": HostFacts(download_free_bytes=2 * 10**12,
                                                                                 download_dir="/hub")})),
    # before 0.26 vLLM loads what is there (no FileNotFoundError): a warning, not a refusal
    "shards-missing-silent": (([M], {"gpu": big(SM120), "version": "0.25.1",
                                     "weights_facts": WeightFacts(shards_total=3, shards_missing=1, local=True)}),
                              ([M], {"gpu": big(SM120), "version": "0.26.0",
                                     "weights_facts": WeightFacts(shards_total=3, shards_missing=1, local=True)})),
}


def judge(case):
    tokens, kw = case
    kw = dict(kw)
    memory = kw.pop("weights_facts", None)
    host = kw.pop("host", HostFacts())
    kw.setdefault("gpu", big(SM120))
    kw.setdefault("config", V4)
    f = facts_for(tokens, **kw)._replace(weights=memory, host=host)
    from dsv4_launch.core.rules.plan import make_plan

    return make_plan(f), f


def test_every_row_has_a_trips_and_a_passes_case():
    ids = {r.id for r in RULES}
    assert not ids - set(CASES), f"rows without a (trips, passes) pair in CASES: {sorted(ids - set(CASES))}"
    assert not set(CASES) - ids, f"CASES for no row: {sorted(set(CASES) - ids)}"


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_both_ways(rule):
    trips, passes = CASES[rule.id]
    plan, _ = judge(trips)
    found = {f.rule: f for f in plan.findings}
    assert rule.id in found, (rule.id, [f.text for f in plan.findings])
    finding = found[rule.id]
    from dsv4_launch.core.vllm.releases import NEWEST_VERIFIED

    if rule.level == REFUSE and rule.vllm.before is None and rule.vllm.contains(NEWEST_VERIFIED) is False:
        # a row read in the code of a release newer than every verified one: a warning there until it is verified
        assert finding.level == WARN and "may differ]" in finding.text, finding
        return
    assert finding.certain and finding.level == rule.level, finding
    if rule.level == REFUSE:
        assert finding.text in plan.refusals
    else:
        assert finding.text in plan.warnings
    assert "{" not in finding.text and "Fix: " in finding.text and rule.reference in finding.text
    plan, _ = judge(passes)
    assert rule.id not in {f.rule for f in plan.findings}, [f.text for f in plan.findings if f.rule == rule.id]


@pytest.mark.parametrize("rule", [*RULES, *DOCTOR_RULES], ids=[r.id for r in (*RULES, *DOCTOR_RULES)])
def test_the_table_itself(rule):
    assert rule.evidence in EVIDENCE
    if rule.level in (REFUSE, FAIL):
        assert rule.evidence in REFUSAL_EVIDENCE, f"{rule.id}: refusing needs vLLM's code as evidence"
    else:
        assert rule.level == WARN
    assert rule.reference and rule.title and rule.effect
    for template in (rule.message, rule.fix):
        for _, field, _, _ in string.Formatter().parse(template):
            assert field is None or field.isidentifier()


def test_every_plan_row_is_shown_once_under_one_topic_and_doctor_rows_under_none():
    from dsv4_launch.core.rules.engine import TOPICS

    assert len({r.id for r in RULES}) == len(RULES)
    assert all(r.topic in TOPICS for r in RULES), [r.id for r in RULES if r.topic not in TOPICS]
    assert [TOPICS.index(r.topic) for r in RULES] == sorted(TOPICS.index(r.topic) for r in RULES)
    assert not [r.id for r in DOCTOR_RULES if r.topic]


RULES_DIR = Path(__file__).resolve().parents[2] / "src" / "dsv4_launch" / "core" / "rules"


def decorated_ids(source: str) -> list[str]:
    """The ids of the rows a module's source declares with ``@row(…, id=…)``, top to bottom."""
    calls = [d for node in ast.walk(ast.parse(source)) for d in getattr(node, "decorator_list", ())
             if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "row"]
    return [next(k.value.value for k in d.keywords if k.arg == "id")  # type: ignore[attr-defined]
            for d in sorted(calls, key=lambda d: d.lineno)]


def registry_gaps(rules_dir: Path, registered: dict[str, list[str]]) -> dict[str, list[str]]:
    """Per module under ``rules_dir``: the ``@row`` ids the registry does not hold, in that module's
    order (``registered``: module name -> the ids the registry holds for it, in its order)."""
    gaps = {}
    for path in sorted(rules_dir.glob("*.py")):
        declared = decorated_ids(path.read_text())
        held = registered.get(f"dsv4_launch.core.rules.{path.stem}", [])
        if declared != held:
            gaps[path.name] = [i for i in declared if i not in held] or [f"held in another order: {held}"]
    return gaps


def registered_ids(rules) -> dict[str, list[str]]:
    by_module: dict[str, list[str]] = {}
    for rule in rules:
        by_module.setdefault(rule.check.__module__, []).append(rule.id)
    return by_module


def test_every_decorated_row_of_every_module_is_in_the_registry_in_its_modules_order():
    from dsv4_launch.core.rules.registry import DOCTOR_MODULES, PLAN_MODULES, collect

    collected = collect((*PLAN_MODULES, *DOCTOR_MODULES))  # module by module, each top to bottom
    assert sorted(r.id for r in collected) == sorted(r.id for r in (*RULES, *DOCTOR_RULES))
    gaps = registry_gaps(RULES_DIR, registered_ids(collected))
    assert gaps == {}, f"rows no registry holds (core/rules/registry.py's PLAN_MODULES): {gaps}"
    assert sum(len(decorated_ids(p.read_text())) for p in RULES_DIR.glob("*.py")) == len(RULES) + len(DOCTOR_RULES)


APPENDED = """

@row(ROWS, id="appended-row", topic="parallel", level="warn", evidence="derived", title="t", effect="e",
     message="m", fix="f", reference="r")
def appended_row(facts, gpu):
    return None
"""


def test_a_row_after_a_modules_last_line_is_live_and_a_module_the_registry_misses_fails(tmp_path):
    """In a copy of the package: a row appended after parallel.py's last line is registered (shown
    last of parallel.py's rows), and a new topic module the registry does not name is found by the check above."""
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "dsv4_launch"
    shutil.copytree(RULES_DIR.parents[1], copy, ignore=shutil.ignore_patterns("__pycache__"))
    rules = copy / "core" / "rules"
    (rules / "parallel.py").write_text((rules / "parallel.py").read_text() + APPENDED)
    (rules / "extra.py").write_text("from .engine import Rule, row\n\nROWS: list[Rule] = []\n"
                                    + APPENDED.replace("appended", "forgotten"))
    script = ("import json, dsv4_launch.core.rules.registry as r; assert r.__file__.startswith(%r); "
              "assert [x.id for x in r.RULES if x.check.__module__.endswith('.parallel')][-1] == 'appended-row'; "
              "print(json.dumps([(x.check.__module__, x.id) "
              "for x in r.collect((*r.PLAN_MODULES, *r.DOCTOR_MODULES))]))" % str(copy))
    out = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(tmp_path)},
                         capture_output=True, text=True, check=True).stdout
    registered: dict[str, list[str]] = {}
    for module, rule_id in json.loads(out):
        registered.setdefault(module, []).append(rule_id)
    assert registered["dsv4_launch.core.rules.parallel"][-1] == "appended-row"
    assert [i for _, i in json.loads(out) if i in ("appended-row", "forgotten-row")] == ["appended-row"]
    assert registry_gaps(rules, registered) == {"extra.py": ["forgotten-row"]}  # parallel.py: none


# Findings of six topics at once (the KV cache, a GPU family, parallel sizes, the block size, the
# hybrid KV-cache manager, memory): shown topic by topic, in plan --json and in plan's text.
ACROSS_TOPICS = [M, "--kv-cache-dtype", "bfloat16", "-tp", "3", "--block-size", "128",
                 "--disable-hybrid-kv-cache-manager", "--max-model-len", "-5"]
ACROSS_ORDER = ["kv-not-fp8", "gb10-stock", "tp-heads", "block-size", "hma-disabled", "max-model-len-invalid"]


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_findings_of_several_topics_are_shown_in_topic_order(as_json):
    import json

    from dsv4_launch.commands.plan import run_plan
    from tests.planning import make_context

    three = tuple(GpuInfo(i, "NVIDIA GB10", f"GPU-{i}", SM121, 128 * 2**30) for i in range(3))
    ctx = make_context(gpus=three)  # faked: NVML (three GB10s) and the vLLM lookup (0.33.0)
    assert run_plan(ACROSS_TOPICS, as_json=as_json, ctx=ctx) == 2
    if as_json:
        assert [f["rule"] for f in json.loads(ctx.stdout.getvalue())["findings"]] == ACROSS_ORDER
        return
    by_id = {r.id: r for r in RULES}
    text = ctx.stdout.getvalue() + ctx.stderr.getvalue()
    # Each finding's line, found by its row's reference; warnings come before refusals in text.
    at = {rule: text.index(f"({by_id[rule].reference})") for rule in ACROSS_ORDER}
    warned = [r for r in ACROSS_ORDER if by_id[r].level == WARN]
    refused = [r for r in ACROSS_ORDER if by_id[r].level == REFUSE]
    assert sorted(warned, key=at.__getitem__) == warned and sorted(refused, key=at.__getitem__) == refused
    assert len(warned) >= 2 and len(refused) >= 3


def test_ids_are_unique():
    ids = [r.id for r in (*RULES, *DOCTOR_RULES)]
    assert len(ids) == len(set(ids))


def test_other_models_are_never_judged():
    for rule in RULES:
        plan, _ = judge((CASES[rule.id][0][0], {**CASES[rule.id][0][1], "config": LLAMA}))
        assert plan.findings == (), rule.id


def test_a_refusal_with_an_unknown_gpu_type_is_a_qualified_warning():
    # mega-moe-not-sm100 on a GPU of unknown type: it fails on SM 9.x and 12.x, not on 10.x
    plan, _ = judge(([M, *MEGA, *EP], {"gpu": GpuSelection((GpuInfo(0),)), "source": None}))
    (finding,) = [f for f in plan.findings if f.rule == "mega-moe-not-sm100"]
    assert finding.level == WARN and not finding.certain and "if the GPUs are SM 9.x, SM 12.x" in finding.text


def test_the_indexer_flag_fix_names_the_replacement_for_this_gpu_and_release():
    plan, _ = judge(([M, "--attention_config.use_fp4_indexer_cache=True"], {"gpu": big(SM100)}))
    (line,) = plan.refusals
    assert "Fix: --attention-config.indexer_kv_dtype mxfp4" in line
    plan, _ = judge(([M, "--attention_config.use_fp4_indexer_cache=True"], {}))
    assert any("Fix: drop --attention_config.use_fp4_indexer_cache" in r for r in plan.refusals)
    plan, _ = judge(([M, "--attention_config.use_fp4_indexer_cache=True"], {"version": "0.26.0", "gpu": big(SM100)}))
    assert plan.refusals == ()  # a real option on SM 10.x before 0.30


@pytest.mark.parametrize("newer", ["0.35.0", "0.34.1", "0.35.0rc1", "0.34.0.post1", "1.0.0"])
def test_no_row_refuses_on_a_release_newer_than_every_verified_one(newer):
    """Each refusing row's trips case, on the newest verified release and on a newer one: the
    refusal that rests on release code becomes a warning naming both releases; a fact that holds
    whatever vLLM's code is (release_code=False) still refuses."""
    from dsv4_launch.core.vllm.releases import NEWEST_VERIFIED

    judged = 0
    for rule in RULES:
        if rule.level != REFUSE:
            continue
        tokens, kw = CASES[rule.id][0]
        if rule.vllm.contains(NEWEST_VERIFIED) is not True:
            if rule.vllm.before is None and rule.vllm.contains(newer):  # starts after the newest verified
                found = {f.rule: f for f in judge((tokens, {**kw, "version": newer}))[0].findings}[rule.id]
                assert found.level == WARN and f"vLLM {newer} may differ]" in found.text, found.text
                judged += 1
                continue
            assert rule.vllm.contains(newer) is False, rule.id  # no row reaches past the verified releases closed
            continue
        at_newest = {f.rule: f for f in judge((tokens, {**kw, "version": NEWEST_VERIFIED}))[0].findings}
        assert at_newest[rule.id].level == REFUSE, rule.id
        at_newer = {f.rule: f for f in judge((tokens, {**kw, "version": newer}))[0].findings}
        if rule.vllm.contains(newer) is False:  # closed by a bound read in that release's own code (an audit)
            assert rule.id not in at_newer and rule.vllm.before is not None, rule.id
            judged += 1
            continue
        found = at_newer[rule.id]
        if rule.release_code:
            assert found.level == WARN and not found.certain, rule.id
            assert f"[verified up to vLLM {NEWEST_VERIFIED}; vLLM {newer} may differ]" in found.text, found.text
        else:
            assert found.level == REFUSE and "may differ" not in found.text, rule.id
        judged += 1
    assert judged > 20


@pytest.mark.parametrize("same", ["0.34.0", "0.34.0+cu130", "0.34"])
def test_the_newest_verified_release_and_its_builds_still_refuse(same):
    plan, _ = judge(([M, "--block-size", "64"], {"version": same}))
    assert any("--block-size 64" in r for r in plan.refusals) and "may differ" not in " ".join(plan.warnings)


def test_only_the_weights_row_holds_whatever_the_release_code_is():
    # and the two that compare bytes with this host's memory and disk
    assert {r.id for r in RULES if not r.release_code} == {"weights-exceed-memory", "host-memory-short",
                                                            "download-space-short"}


def test_tp_16_on_flash_says_how_to_use_16_gpus():
    plan, _ = judge(CASES["tp-o-groups"][0])
    (line,) = [r for r in plan.refusals if "o_groups" in r]
    assert "--tensor-parallel-size 8 --data-parallel-size 2" in line and "1, 2, 4, 8" in line


def test_ignored_backends_keep_the_kv_fix():
    # TRITON_MLA is ignored by DeepSeek-V4: the default fp8_ds_mla path, so auto is still rewritten
    p = planned([M, "--attention-backend", "TRITON_MLA"], version="0.24.0", config=V4, gpu=big(SM90))
    assert p.argv[-2:] == ("--kv-cache-dtype", "fp8")


def test_readme_tables_are_generated_from_the_rows():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "tools"))
    import readme_tables

    held = []
    for path in readme_tables.FILES:  # README.md and docs/: each table where its markers are
        text = path.read_text()
        assert readme_tables.render(text) == text, f"{path.name}: tables stale: python tools/readme_tables.py --write"
        held += readme_tables.tables_in(text)
    assert sorted(held) == sorted(readme_tables.TABLES), held  # every table shown, once
    rules = (root / "docs" / "rules.md").read_text()
    for rule in (*RULES, *DOCTOR_RULES):
        assert f"`{rule.id}`" in rules
    del subprocess


def test_release_matrix_is_rendered_from_the_rows_and_the_recorded_outcomes():
    """docs/release-matrix.md is tools/oracle_sweep.py's rendering of docs/release-matrix.json
    with today's rows (only the "rows as of commit" line may differ): a row added, removed or
    re-ranged without `python3 tools/oracle_sweep.py --render` fails here."""
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "tools"))
    import oracle_sweep

    def without_commit_line(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("Oracle suite run from commit")]

    results = json.loads((root / "docs/release-matrix.json").read_text())
    committed = (root / "docs/release-matrix.md").read_text()
    assert without_commit_line(oracle_sweep.matrix(results)) == without_commit_line(committed), (
        "docs/release-matrix.md is stale: python3 tools/oracle_sweep.py --render")
    for rule in (*RULES, *DOCTOR_RULES):
        assert f"| `{rule.id}` |" in committed
    assert all(r["installed"] and r.get("returncode") == 0 for r in results), "a release failed its oracle suite"


# --- third edition (issue 19): behaviour per release, per backend, per environment -------------

def findings(tokens, **kw):
    plan, _ = judge((tokens, kw))
    return {f.rule: f for f in plan.findings}, plan


@pytest.mark.parametrize("version,dtype,refused", [
    ("0.30.0", "fp8_e4m3", False), ("0.30.0", "bfloat16", True), ("0.30.0", "nvfp4_ds_mla", True),
    ("0.31.0", "fp8_e4m3", True), ("0.33.0", "fp8_e5m2", True), ("0.33.0", "fp8_inc", True),
    ("0.33.0", "fp8_per_token_head", True), ("0.33.0", "float16", True), ("0.33.0", "nvfp4_ds_mla", False),
    ("0.33.0", "fp8_ds_mla", False), ("0.33.0", "fp8", False), ("0.33.0", "auto", False),
])
def test_v41_packed_path_per_release(version, dtype, refused):
    # models/deepseek_v41/attention.py _resolve_dsv4_kv_cache_dtype: 0.30.0 = V4's ("fp8*"), 0.31+ stricter
    found, _ = findings([M, "--kv-cache-dtype", dtype], config=V41, version=version)
    assert ("v41-kv" in found) is refused, found.get("v41-kv")


@pytest.mark.parametrize("version,dtype,rule", [
    ("0.33.0", "bfloat16", None), ("0.33.0", "fp8_e4m3", None), ("0.33.0", "fp8_ds_mla", "v41-ds-mla-on-plain-rows"),
    ("0.31.0", "nvfp4_ds_mla", "v41-ds-mla-on-plain-rows"), ("0.30.0", "fp8_ds_mla", "fp8-ds-mla-on-plain-rows"),
    ("0.30.0", "bfloat16", None),
])
def test_v41_plain_rows_take_bf16_and_fp8_and_reject_packed_records(version, dtype, rule):
    for backend in ("FLASHINFER_MLA_SPARSE_DSV4", "FLASHINFER_MLA_SPARSE_DSV41"):
        found, plan = findings([M, "--attention-backend", backend, "--kv-cache-dtype", dtype], config=V41,
                               version=version, gpu=big(SM100))
        assert "v41-kv" not in found
        kv_rows = {r for r in found if "ds-mla" in r}
        assert kv_rows == ({rule} if rule else set()), (backend, dtype, kv_rows)


@pytest.mark.parametrize("tokens,version,config,refused", [
    (["-pcp", "2", *FI41], "0.33.0", V41, True),
    (["--prefill-context-parallel-size", "4", "--attention-backend", "FLASHMLA_MEGA_ATTN_DSV41"], "0.33.0", V41, True),
    (["-pcp", "2", "--attention-config", '{"backend": "FLASHINFER_MLA_SPARSE_DSV4"}'], "0.33.0", V41, True),
    (["-pcp", "2", "--attention-backend", "flashmla_sparse"], "0.33.0", V41, False),
    (["-pcp", "2"], "0.33.0", V41, False),  # vLLM picks FlashMLA itself
    (["-pcp", "1", *FI41], "0.33.0", V41, False),
    (["-pcp", "2", *FI41], "0.32.0", V41, False),  # no such branch before 0.33
    (["-pcp", "2", *FI], "0.33.0", V4, False),  # DeepSeek-V4's selector has none
])
def test_v41_prefill_context_parallel_needs_flashmla(tokens, version, config, refused):
    found, _ = findings([M, *tokens], version=version, config=config)
    assert ("v41-pcp-not-flashmla" in found) is refused, found.get("v41-pcp-not-flashmla")
    if refused:
        assert found["v41-pcp-not-flashmla"].level == REFUSE


@pytest.mark.parametrize("version,method,warned", [
    ("0.24.0", "compressed-tensors", True), ("0.26.0", "COMPRESSED_TENSORS", True),
    ("0.27.0", "compressed-tensors", False),
    ("0.33.0", "compressed-tensors", False), ("0.24.0", "modelopt", False),
])
def test_compressed_tensors_scale_names_before_the_fallback(version, method, warned):
    config = {**V4, "quantization_config": {"quant_method": method}}
    found, plan = findings([M], version=version, config=config)
    assert ("compressed-tensors-scale-names" in found) is warned and plan.refusals == ()


@pytest.mark.parametrize("tokens,warned", [
    (["--kv-transfer-config", '{"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}'], True),
    (["--kv-offloading-size", "8"], True),  # native by default
    (["--kv-offloading-size", "8", "--kv-offloading-backend", "lmcache"], False),
    (["--kv-offloading-backend", "native"], False),  # no size: no connector
    (["--kv-transfer-config", '{"kv_connector": "MultiConnector", "kv_role": "kv_both", "kv_connector_extra_config": '
                              '{"connectors": [{"kv_connector": "NixlConnector"}, {"kv_connector": '
                              '"SimpleCPUOffloadConnector"}]}}'], True),
])
def test_dspark_with_kv_offloading_is_warned_about(tokens, warned):
    found, plan = findings([M, *DSPARK, *tokens], config=F0731["config"], version="0.33.0")
    assert ("dspark-kv-offload" in found) is warned and "dspark-kv-offload" not in " ".join(plan.refusals)
    found, _ = findings([M, *tokens], config=F0731["config"], version="0.33.0")  # without DSpark: nothing
    assert "dspark-kv-offload" not in found


def test_v41_backend_and_block_size_parity():
    found, _ = findings([M, "--attention-backend", "FLASHINFER_MLA_SPARSE"], config=V41)
    assert found["backend-not-dsv4"].level == REFUSE and "DeepSeek V4.1" in found["backend-not-dsv4"].text
    assert "Fix: --attention-backend FLASHINFER_MLA_SPARSE_DSV41" in found["backend-not-dsv4"].text
    # SM 9.x: FlashMLA takes 64, the FlashInfer plain-row backend only 128
    assert "block-size-v41" not in findings([M, "--block-size", "64"], config=V41, gpu=big(SM90))[0]
    found, _ = findings([M, "--block-size", "64", *FI41], config=V41, gpu=big(SM90))
    assert "multiple of 128" in found["block-size-v41"].text


def test_hma_off_refuses_from_the_promotion_typeerror_release_and_warns_before():
    for tokens in ([M, "--disable-hybrid-kv-cache-manager"], [M, *LMCACHE], [M, *MULTI_LMCACHE],
                   [M, "--kv-transfer-config", '{"kv_connector": "FlexKVConnectorV1", "kv_role": "kv_both"}']):
        found, _ = findings(tokens, version="0.31.0")
        (row,) = {"hma-disabled", "connector-turns-hma-off"} & set(found)
        assert found[row].level == REFUSE and "bounded_replay" in found[row].text, tokens
        assert "hma-off-full-attention" not in found
        found, plan = findings(tokens, version="0.30.0")
        assert found["hma-off-full-attention"].level == WARN and plan.refusals == (), tokens
        # 0.34 drops bounded_replay when it promotes (kv_cache_planning.py:845@0.34.0): it starts, promoted
        found, plan = findings(tokens, version="0.33.0")
        assert {"hma-disabled", "connector-turns-hma-off"} & set(found) and plan.refusals, tokens
        found, plan = findings(tokens, version="0.34.0")
        assert not {"hma-disabled", "connector-turns-hma-off"} & set(found), tokens
        assert found["hma-off-full-attention"].level == WARN and plan.refusals == (), tokens
    assert "hma-off-full-attention" not in findings([M, "--disable-hybrid-kv-cache-manager"], version=None)[0]
    found, _ = findings([M, "--disable-hybrid-kv-cache-manager", "-dcp", "2"], gpu=big(SM120, SM120))
    assert found["hma-disabled"].level == WARN and "decode-context-parallel" in found["hma-disabled"].text


LMCACHE_MP = ["--kv-transfer-config", '{"kv_connector": "LMCacheMPConnector", "kv_role": "kv_both"}']
MULTI_LMCACHE = ["--kv-transfer-config", '{"kv_connector": "MultiConnector", "kv_role": "kv_both", '
                 '"kv_connector_extra_config": {"connectors": [{"kv_connector": "NixlConnector", "kv_role": '
                 '"kv_both"}, {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}]}}']
MULTI_HMA = ["--kv-transfer-config", '{"kv_connector": "MultiConnector", "kv_role": "kv_both", '
             '"kv_connector_extra_config": {"connectors": [{"kv_connector": "NixlConnector", "kv_role": "kv_both"}, '
             '{"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}]}}']
MULTI_EMPTY = ["--kv-transfer-config", '{"kv_connector": "MultiConnector", "kv_role": "kv_both"}']
SIZE = ["--kv-offloading-size", "8"]


# (tokens, version) -> what vLLM's _post_init_kv_transfer_config and supports_hma_config make of
# them: None: no connector (HMA on); "hma": a connector with hybrid support; "no": without (vLLM
# turns HMA off); "doubt": LMCacheMPConnector, whose support is the lmcache package's.
CONNECTOR_CASES = [
    ([M, "--kv-offloading-backend", "lmcache"], None),  # no size: no connector at all
    ([M, "--kv-offloading-backend", "native"], None),
    ([M, *SIZE], "hma"),  # native by default: OffloadingConnector
    ([M, *SIZE, "--kv-offloading-backend", "native", *LMCACHE], "hma"),  # replaces LMCacheConnectorV1
    ([M, *LMCACHE, *SIZE], "hma"),
    ([M, *MULTI_LMCACHE, *SIZE], "hma"),  # replaced, children and all
    ([M, *NIXL, *SIZE, "--kv-offloading-backend", "lmcache"], "doubt"),  # Nixl replaced by LMCacheMP
    ([M, *SIZE, "--kv-offloading-backend", "lmcache"], "doubt"),
    ([M, *LMCACHE_MP], "doubt"),
    ([M, *LMCACHE, "--kv-offloading-backend", "lmcache"], "no"),  # no size: LMCacheConnectorV1 stays
    ([M, *MULTI_LMCACHE], "no"),
    ([M, *MULTI_EMPTY], "no"),  # no children: all_children_support_hma is False
    ([M, *MULTI_HMA], "hma"),
    ([M, *NIXL], "hma"),
]


@pytest.mark.parametrize("tokens,effect", CONNECTOR_CASES)
@pytest.mark.parametrize("version", ["0.29.0", "0.31.0", "0.33.0", "0.34.0"])
def test_connectors_are_judged_as_vllm_builds_them(tokens, effect, version):
    found, plan = findings(tokens, version=version)
    rows = {"connector-turns-hma-off", "hma-off-full-attention"} & set(found)
    if effect in (None, "hma"):
        assert not rows and plan.refusals == (), (tokens, found)
    elif "0.31.0" <= version < "0.34.0":
        (finding,) = [found[r] for r in rows]
        assert finding.rule == "connector-turns-hma-off"
        assert finding.level == (REFUSE if effect == "no" else WARN), finding.text
        if effect == "doubt":
            assert "lmcache package" in finding.text and plan.refusals == ()
    else:
        assert rows == {"hma-off-full-attention"} and plan.refusals == ()


def test_the_connector_message_names_what_made_it():
    found, _ = findings([M, *NIXL, *SIZE, "--kv-offloading-backend", "lmcache"], version="0.33.0")
    text = found["connector-turns-hma-off"].text
    assert "--kv-offloading-backend lmcache, which replaces --kv-transfer-config's NixlConnector" in text
    found, _ = findings([M, *MULTI_LMCACHE], version="0.33.0")
    assert "MultiConnector (its child LMCacheConnectorV1)" in found["connector-turns-hma-off"].text


def _users(name: str, module: str = "my_org.kv") -> list[str]:
    return ["--kv-transfer-config", json.dumps({"kv_connector": name, "kv_role": "kv_both",
                                                "kv_connector_module_path": module})]


# kv_connector_module_path: vLLM loads the class from the user's module first (factory.py
# get_connector_class), and that class decides its hybrid support: never certain here.
USERS_CONNECTORS = [
    _users("LMCacheConnectorV1"), _users("FlexKVConnectorV1", "flexkv_fork.connector"), _users("ExampleConnector"),
    _users("MyConnector"), _users("LMCacheMPConnector", "lmcache_fork"),
    ["--kv-transfer-config", json.dumps({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                                         "kv_connector_extra_config": {"connectors": [
                                             {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                                             {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both",
                                              "kv_connector_module_path": "my_org.kv"}]}})],
]


@pytest.mark.parametrize("tokens", USERS_CONNECTORS)
@pytest.mark.parametrize("version", ["0.29.0", "0.31.0", "0.33.0"])
def test_a_connector_from_the_users_module_is_a_warning_never_a_refusal(tokens, version):
    for forced in ([], ["--no-disable-hybrid-kv-cache-manager"]):
        found, plan = findings([M, *tokens, *forced], version=version)
        assert plan.refusals == (), (tokens, forced, plan.refusals)
        rows = {"connector-turns-hma-off", "hma-off-full-attention", "connector-hma-forced"} & set(found)
        assert len(rows) == 1, (tokens, forced, rows)
        (finding,) = [found[r] for r in rows]
        assert finding.level == WARN and not finding.certain
        assert "the class is the user's, and whether it supports the hybrid KV-cache manager (SupportsHMA) is " \
               "unknown here" in finding.text
        assert (" from my_org.kv" in finding.text or " from flexkv_fork" in finding.text
                or "lmcache_fork" in finding.text)


def test_a_module_path_beside_an_uncertain_connector_keeps_the_certain_refusal():
    # a MultiConnector child that certainly lacks support decides, whatever another child's class is
    tokens = ["--kv-transfer-config", json.dumps({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                                                  "kv_connector_extra_config": {"connectors": [
                                                      {"kv_connector": "X", "kv_connector_module_path": "m"},
                                                      {"kv_connector": "LMCacheConnectorV1"}]}})]
    found, plan = findings([M, *tokens], version="0.33.0")
    assert found["connector-turns-hma-off"].level == REFUSE and plan.refusals


def test_moriio_gained_hybrid_support_in_0_30():
    moriio = [M, "--kv-transfer-config", '{"kv_connector": "MoRIIOConnector", "kv_role": "kv_both"}']
    assert "hma-off-full-attention" in findings(moriio, version="0.29.0")[0]
    assert "hma-off-full-attention" not in findings(moriio, version="0.30.0")[0]


def test_hma_forced_on_follows_the_built_connector():
    on = ["--no-disable-hybrid-kv-cache-manager"]
    assert findings([M, *LMCACHE, *on])[0]["connector-hma-forced"].level == REFUSE
    assert "connector-hma-forced" not in findings([M, *LMCACHE, *SIZE, *on])[0]  # replaced by OffloadingConnector
    assert "connector-hma-forced" not in findings([M, "--kv-offloading-backend", "lmcache", *on])[0]
    assert findings([M, *MULTI_LMCACHE, *on])[0]["connector-hma-forced"].level == REFUSE
    assert findings([M, *LMCACHE_MP, *on])[0]["connector-hma-forced"].level == WARN


def test_the_fp4_indexer_opt_out_is_dropped_not_turned_into_an_opt_in():
    plan, _ = judge(([M, "--attention_config.use_fp4_indexer_cache=False"], {"gpu": big(SM100)}))
    (line,) = plan.refusals
    assert "Fix: drop --attention_config.use_fp4_indexer_cache" in line and "mxfp4" not in line.split("Fix:")[1]


@pytest.mark.parametrize("rule,tokens,kw", [
    ("kv-not-fp8", [M, "--kv-cache-dtype", "bfloat16"], {"version": "0.29.0"}),
    ("fp4-indexer-off-sm10", [M, "--attention_config.use_fp4_indexer_cache=True"], {"version": "0.27.1"}),
])
# CPython's reading (get_env_flag): "" is unset; text strtol does not read whole, or a negative number,
# is level 1 (tests/door/test_env_values.py checks each against a real interpreter's sys.flags.optimize)
@pytest.mark.parametrize("value,optimized", [("1", True), ("2", True), ("yes", True), ("0", False), ("-1", True),
                                             ("", False), (" ", True), ("0 ", True), (" 0", False), ("-0", False)])
def test_a_refusal_resting_on_a_bare_assert_is_a_warning_under_pythonoptimize(rule, tokens, kw, value, optimized):
    found, plan = findings(tokens, env={"PYTHONOPTIMIZE": value}, **kw)
    finding = found[rule]
    assert (finding.level == WARN and not finding.certain) is optimized, finding
    assert ("PYTHONOPTIMIZE is set" in finding.text) is optimized
    assert (finding.text in plan.refusals) is not optimized


def test_pythonoptimize_does_not_soften_value_errors():
    # from 0.30 (KV) and 0.28 (indexer) the checks raise ValueError, which -O does not skip
    found, _ = findings([M, "--kv-cache-dtype", "bfloat16"], version="0.30.0", env={"PYTHONOPTIMIZE": "1"})
    assert found["kv-not-fp8"].level == REFUSE and found["kv-not-fp8"].certain
    found, _ = findings([M, "--attention_config.use_fp4_indexer_cache=True"], version="0.28.0",
                        env={"PYTHONOPTIMIZE": "1"})
    assert found["fp4-indexer-off-sm10"].level == REFUSE


@pytest.mark.parametrize("value,runner", [("0", "v1"), (" 0 ", "v1"), ("00", "v1"), ("1", "v2"), ("false", "bad"),
                                          ("true", "bad"), ("no", "bad")])
def test_the_v2_runner_variable_is_read_as_vllm_reads_it(value, runner):
    # envs.py maybe_convert_bool: bool(int(value)); int() takes surrounding spaces, not words
    env = {"VLLM_USE_V2_MODEL_RUNNER": value}
    found, _ = findings([M, *DSPARK], config=F0731["config"], env=env)
    assert ("dspark-v1-runner" in found) is (runner == "v1")
    assert ("v2-runner-env-not-int" in found) is (runner == "bad")
    found, _ = findings([M], version="0.28.0", gpu=big(SM100), env=env)
    assert ("sm10-0.28-v2-runner" in found) is (runner == "v2")
    if "sm10-0.28-v2-runner" in found:
        assert "Fix: VLLM_USE_V2_MODEL_RUNNER=0 " in found["sm10-0.28-v2-runner"].text


@pytest.mark.parametrize("value", ["0", "false", "", " 1", "1"])
def test_the_v1_runner_is_gone_in_0_34(value):
    """platforms/interface.py:1481-1486@0.34.0: any VLLM_USE_V2_MODEL_RUNNER but "1" raises; the V1
    fallbacks DSpark's rows rest on (config/vllm.py:3329,3336@0.33.0) are gone."""
    env = {"VLLM_USE_V2_MODEL_RUNNER": value}
    old = {"dspark-v1-runner", "dspark-v2-unsupported", "v2-runner-env-not-int"}
    found, _ = findings([M, *DSPARK, "--enable-dbo"], config=F0731["config"], version="0.34.0", env=env)
    assert not old & set(found), found
    assert ("v1-runner-removed" in found) is (value != "1")
    found, _ = findings([M, *DSPARK, "--enable-dbo"], config=F0731["config"], version="0.33.0", env=env)
    assert "v1-runner-removed" not in found and old & set(found) == (
        {"dspark-v2-unsupported"} if value.strip() == "1" else {"dspark-v1-runner"} if value.strip() == "0"
        else {"v2-runner-env-not-int"})
    assert "dspark-v2-unsupported" not in findings([M, *DSPARK, "--enable-dbo"], config=F0731["config"],
                                                   version="0.34.0")[0]


@pytest.mark.parametrize("flag,version,refused", [
    ("--enable-dbo", "0.29.0", True), ("--enable-dbo", "0.33.0", True), ("--enable-elastic-ep", "0.31.0", True),
    ("--enable-elastic-ep", "0.32.0", False), ("--logits-processors=my.mod:Proc", "0.30.0", True),
    ("--logits-processors=my.mod:Proc", "0.31.0", False), ("--enable-dbo", "0.28.0", False),
    ("--kv-sharing-fast-prefill", "0.29.0", True), ("--kv-sharing-fast-prefill", "0.30.0", False),
    ("--no-kv-sharing-fast-prefill", "0.29.0", False),
])
def test_dspark_with_a_v2_unsupported_feature(flag, version, refused):
    found, _ = findings([M, *DSPARK, flag], config=F0731["config"], version=version)
    assert ("dspark-v2-unsupported" in found) is refused, version
    forced, _ = findings([M, *DSPARK, flag], config=F0731["config"], version=version,
                         env={"VLLM_USE_V2_MODEL_RUNNER": "1"})
    if refused:
        assert "Model Runner V2 does not yet support" in forced["dspark-v2-unsupported"].text


def test_the_draft_kv_dtype_per_release():
    auto = dspark_with(kv_cache_dtype="auto")
    assert "draft-kv-not-fp8" in findings([M, *auto], config=F0731["config"], version="0.29.0")[0]
    assert "draft-kv-not-fp8" not in findings([M, *auto], config=F0731["config"], version="0.30.0")[0]
    bf16 = dspark_with(kv_cache_dtype="bfloat16")
    assert "draft-kv-not-fp8" not in findings([M, *bf16, *FI], config=F0731["config"], gpu=big(SM100))[0]


@pytest.mark.parametrize("tokens,version,warned", [
    (["--tool-call-parser", "deepseek_v3"], "0.33.0", True), (["--tool-call-parser", "deepseek_v41"], "0.33.0", True),
    (["--reasoning-parser", "deepseek_r1"], "0.33.0", True), (["--reasoning-parser", "deepseek_v3"], "0.25.0", True),
    # 0.24.0 registers deepseek_v4's reasoning parser as the same DeepSeekV3ReasoningParser
    (["--reasoning-parser", "deepseek_v3"], "0.24.0", False),
    (["--tool-call-parser", "my_parser", "--tool-parser-plugin", "/p.py"], "0.33.0", False),
])
def test_wrong_parsers_for_v4(tokens, version, warned):
    found, _ = findings([M, *tokens], version=version)
    assert ("v4-wrong-parsers" in found) is warned


def test_dspark_block_size_alone_is_not_a_dspark_module():
    found, _ = findings([M, *DSPARK], config=VISION["config"])
    assert found["dspark-without-module"].level == REFUSE
    assert "mtp-on-dspark-checkpoint" not in findings([M, "--speculative-config.method", "mtp"],
                                                      config=VISION["config"])[0]


def test_sm12_027_recommends_028_first():
    found, _ = findings([M], version="0.27.0")
    assert "Fix: vLLM 0.28.0 or later" in found["sm12-0.27"].text


def test_nvfp4_ds_mla_on_plain_rows_is_the_silent_mismatch_where_it_exists():
    found, plan = findings([M, *FI, "--kv-cache-dtype", "nvfp4_ds_mla"], gpu=big(SM100))
    assert found["fp8-ds-mla-on-plain-rows"].level == WARN and plan.refusals == ()
    found, plan = findings([M, *FI, "--kv-cache-dtype", "nvfp4_ds_mla"], gpu=big(SM100), version="0.29.0")
    assert "fp8-ds-mla-on-plain-rows" not in found  # not a value before 0.30: vLLM's parser says so
    assert any("invalid choice: 'nvfp4_ds_mla'" in w for w in plan.warnings)


# --- version facts only in the rows' fields (issue 18 item 6) ---------------------------------

RELEASE_LITERAL = re.compile(r"(?<![\d.])0\.[1-4]\d(?:\.\d+)*(?![\d])")  # 0.24, 0.30.0 (not 0.92, 0.5)


def _bound_forms(rule) -> set[str]:
    """Every way a row's text may show one of its own version bounds: 0.30.0, 0.30, 0.29."""
    forms = set()
    for name, value in version_words(rule).items():
        if isinstance(value, Release):
            forms |= {format(value), format(value, "minor")}
            try:
                forms.add(format(value, "last"))
            except ValueError:
                pass
        elif name in rule.releases or name == "":
            forms.add(value)
    return forms


@pytest.mark.parametrize("rule", [*RULES, *DOCTOR_RULES], ids=[r.id for r in (*RULES, *DOCTOR_RULES)])
def test_no_release_number_is_written_into_a_rows_text(rule):
    """A release in a title, effect, message or fix is a version fact outside the row's fields:
    it must be ``{since}``/``{before}`` or a named bound of ``releases`` (``{asserts_before:minor}``)."""
    words_of = version_words(rule)
    for field in ("title", "effect", "message", "fix"):
        template = getattr(rule, field)
        assert not RELEASE_LITERAL.search(template), f"{rule.id}.{field}: {template!r}"
        for _, name, _, _ in string.Formatter().parse(template):
            if name is None:
                continue
            if field in ("title", "effect"):  # README and explain fill only the version words
                assert name in words_of, f"{rule.id}.{field}: {{{name}}} is not one of its version fields"
            elif name in ("since", "before") or name.endswith(("_since", "_before")) or name in rule.releases:
                assert name in words_of, f"{rule.id}.{field}: {{{name}}} names a bound the row does not have"
    assert "{" not in words(rule, "title") + words(rule, "effect")


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_a_findings_release_numbers_come_from_its_rows_fields(rule):
    """What the check returns goes into the message too: a release it names (outside the
    reference, which is evidence, and the installed version) is one of the row's bounds — also
    in the qualifiers (PYTHONOPTIMIZE's bare asserts, an unknown version)."""
    tokens, kw = CASES[rule.id][0]
    tried = 0
    for extra in ({}, {"env": {**kw.get("env", {}), "PYTHONOPTIMIZE": "1"}}, {"version": None}):
        plan, f = judge((tokens, {**kw, **extra}))
        hits = [x for x in plan.findings if x.rule == rule.id]
        if not hits:
            continue  # e.g. a row of old releases only, with the version unknown
        tried += 1
        text = re.sub(r"\[verified up to vLLM [^\]]*\]", "", hits[0].text.replace(f"({rule.reference})", ""))
        if f.vllm_version:
            text = text.replace(f.vllm_version, "")
        for found in RELEASE_LITERAL.findall(text):
            assert found in _bound_forms(rule), f"{rule.id}: {found} in {hits[0].text!r}"
    assert tried


def test_release_words_render_as_the_tables_wrote_them():
    assert f"{Release('0.30.0'):minor}" == "0.30" and f"{Release('0.30.0'):last}" == "0.29"
    assert f"{Release('0.27.1')}" == "0.27.1" and f"{Release('0.27.1'):minor}" == "0.27"
    with pytest.raises(ValueError):
        format(Release("0.24.1"), "last")  # 0.24.0 is before it, but not a whole release line
    by_id = {r.id: r for r in RULES}
    assert words(by_id["fp4-indexer-off-sm10"], "title").endswith("off SM 10.x, vLLM 0.24–0.29")
    assert "(0.24–0.27; a bare assert" in words(by_id["fp4-indexer-off-sm10"], "effect")
    assert ("(--enable-dbo ≥ 0.29.0, < 0.34.0; --enable-elastic-ep ≥ 0.29.0, < 0.32.0;"
            in words(by_id["dspark-v2-unsupported"], "title"))
    # a row re-ranged moves its words with it
    moved = by_id["dspark-pp"]._replace(vllm=VersionRange(since="0.26.0", before="0.31.0"))
    assert words(moved, "title").endswith("vLLM 0.26–0.30")


@pytest.mark.parametrize("value", ["yes", "", "true"])
def test_deep_gemm_not_int_on_sm12_0_24_suggests_only_what_works_there(value):
    """VLLM_USE_DEEP_GEMM that int() fails on: on SM 12.x with 0.24.0, 1 or unset would fail the
    FP8 warm-up (sm12-0.24-deepgemm), so the fix says 0 only; elsewhere 0, 1 or unset all work."""
    from tests.planning import SM90, gpus, planned

    def fix(found):
        (text,) = [f.text for f in found.plan.findings if f.rule == "deep-gemm-env-not-int"]
        return text.split(". Fix: ", 1)[1]

    sm12 = fix(planned([M, "-tp", "2"], version="0.24.0", gpu=gpus((12, 0), (12, 0)),
                       env={"VLLM_USE_DEEP_GEMM": value}))
    assert sm12.startswith("VLLM_USE_DEEP_GEMM=0 (") and " or 1 " not in sm12 and "unset" not in sm12
    for version, gpu in (("0.24.0", gpus(SM90)), ("0.28.0", gpus((12, 0), (12, 0)))):
        other = fix(planned([M, "-tp", "2"], version=version, gpu=gpu, env={"VLLM_USE_DEEP_GEMM": value}))
        assert other.startswith("VLLM_USE_DEEP_GEMM=0 (DeepGEMM off) or 1 (on, the default), or unset it"), other


@pytest.mark.parametrize("rule,tokens,version", [
    ("kv-not-fp8", [M, "--kv-cache-dtype", "bfloat16"], "0.29.0"),
    ("kv-not-fp8", [M, "--kv-cache-dtype", "float16"], "0.24.0"),
    ("fp4-indexer-off-sm10", [M, "--attention_config.use_fp4_indexer_cache=True"], "0.27.1"),
])
def test_a_bare_assert_is_a_warning_when_this_python_runs_with_O(rule, tokens, version):
    # `python -O -m dsv4_launch serve` runs vLLM in this process: its asserts are skipped with no
    # PYTHONOPTIMIZE in the environment (Facts.interpreter_optimized, gathered from sys.flags.optimize)
    plain = facts_for(tokens, version=version, config=V4, gpu=big(SM120))
    from dsv4_launch.core.rules.plan import make_plan

    for optimized in (False, True):
        plan = make_plan(plain._replace(interpreter_optimized=optimized))
        finding = {f.rule: f for f in plan.findings}[rule]
        assert (finding.level == WARN and not finding.certain) is optimized, finding
        assert ("Python runs with -O" in finding.text) is optimized
        assert (finding.text in plan.refusals) is not optimized


def test_tp_past_o_groups_names_the_0_34_assertion():
    """0.34.0's DeepseekV4GroupedWoA divides o_groups by TP when the model is built
    (models/deepseek_v4/common/grouped_wo_a.py:26@0.34.0): the row still refuses, and says how."""
    tokens, kw = CASES["tp-o-groups"][0]
    found = {f.rule: f for f in judge((tokens, {**kw, "version": "0.33.0"}))[0].findings}["tp-o-groups"]
    assert found.level == REFUSE and "ZeroDivisionError after loading the weights" in found.text
    assert "(from 0.34: AssertionError '8 is not divisible by 16' when it builds the model)" in found.text
    found = {f.rule: f for f in judge((tokens, {**kw, "version": "0.34.0"}))[0].findings}["tp-o-groups"]
    assert "is not divisible by 16" in found.text  # a warning there until 0.34.0 is verified


def test_a_negative_pp_layer_count_is_refused_from_0_34():
    """get_pp_indices raises for a negative count from 0.34.0 (vllm/distributed/utils.py:237-238@0.34.0);
    before, '44,-1' (sum 43 = DeepSeek-V4-Flash's layers) passes its three checks."""
    tokens = [M, "-pp", "2"]
    env = {"VLLM_PP_LAYER_PARTITION": "44,-1"}
    assert "pp-layer-partition-invalid" not in findings(tokens, env=env, version="0.33.0")[0]
    found = findings(tokens, env=env, version="0.34.0")[0]["pp-layer-partition-invalid"]
    assert "Negative layer count in partition_list_str='44,-1'." in found.text


def test_an_unknown_option_before_the_model_is_said_and_refuses_nothing():
    # 0.32.1 has no recorded table (0.32.0's is used, not exact) and is within the verified releases:
    # --block-size 64 on SM 12.x refuses there, with the model read for sure.
    plan, _ = judge(([M, "--block-size", "64"], {"version": "0.32.1"}))
    assert any("--block-size 64" in r for r in plan.refusals)
    plan, _ = judge((["--from-the-future", M, "--block-size", "64"], {"version": "0.32.1"}))
    assert plan.refusals == ()
    (said,) = [w for w in plan.warnings if w.startswith("model not read for sure")]
    assert "--from-the-future, unknown to that table, comes right before the word read as the model" in said
    assert "put the model first, or write --from-the-future=VALUE" in said
    assert any("--block-size 64" in w and "if --from-the-future takes no value" in w for w in plan.warnings)
    # the word read as the model is the option's value when it takes one: not silent either
    plan, _ = judge((["--from-the-future", "4", M], {"version": "0.32.1"}))
    assert plan.refusals == () and any(w.startswith("model not read for sure") for w in plan.warnings)
