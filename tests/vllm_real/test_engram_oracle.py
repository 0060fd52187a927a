"""Where DeepSeek-V4.1's Engram tables live, against the installed vLLM's own config code, on the CPU.

core/memory/estimate.py ``engram_tables_off_the_gpu`` takes the tables to be in pinned host memory
unless ``--engram-config`` sets ``"cpu_offload": false`` (and then gives no weights bound, so
``weights-exceed-memory`` refuses nothing for V4.1). Here vLLM's own parser reads each spelling and
vLLM's own ``EngineArgs`` settles ``engram_config`` (``EngramConfig(**dict)`` in ``__post_init__``,
engine/arg_utils.py:803@0.30.0): the tables are on the GPUs exactly where its ``cpu_offload`` is
False. Releases without ``vllm.config.engram`` (before 0.30) do not serve V4.1: skipped.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.facts import Facts
from dsv4_launch.core.memory.estimate import engram_tables_off_the_gpu
from dsv4_launch.core.model import classify
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args
from tests.vllm_real.conftest import parse_fresh

pytestmark = pytest.mark.rule("weights-exceed-memory")
V41 = known_checkpoint("deepseek-ai/DeepSeek-V4.1-Flash")

SPELLINGS = [
    [],
    ["--engram-config", '{"cpu_offload": true}'],
    ["--engram-config", '{"cpu_offload": false}'],
    ["--engram-config", '{"embedding_across_dp": false}'],
    ["--engram-config.cpu_offload=false"],
    ["--engram-config.cpu_offload", "true"],
]


@pytest.mark.parametrize("tokens", SPELLINGS, ids=lambda t: " ".join(t) or "(not set)")
def test_the_tables_are_on_the_gpus_exactly_where_vllm_settles_cpu_offload_false(real_vllm, tokens, monkeypatch):
    top, _, version = real_vllm
    if importlib.util.find_spec("vllm.config.engram") is None:
        pytest.skip(f"vLLM {version} has no EngramConfig: it does not serve DeepSeek-V4.1 (config/engram.py from 0.30)")
    monkeypatch.delenv("VLLM_PLE_CPU_OFFLOAD", raising=False)  # 0.30 reads its default from it (default 1)
    from vllm.engine.arg_utils import EngineArgs

    namespace = parse_fresh(top, [V41["id"], *tokens])
    settled = EngineArgs.from_cli_args(namespace).engram_config
    if settled is None or isinstance(settled, dict):  # not settled at construction: as __post_init__ would
        settled = importlib.import_module("vllm.config.engram").EngramConfig(**(settled or {}))
    args = read_serve_args([V41["id"], *tokens], load_table(version), lambda p: {})
    facts = Facts(args=args, model=classify(V41["id"], V41["config"], "test"), vllm_version=version)
    assert engram_tables_off_the_gpu(facts) is bool(settled.cpu_offload), (tokens, settled)
    assert os.environ.get("VLLM_PLE_CPU_OFFLOAD") is None
