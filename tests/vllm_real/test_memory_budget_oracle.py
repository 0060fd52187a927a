"""core/memory/budget.py's CUDA-graph term against the installed vLLM's own code, on the CPU.

What vLLM runs, unchanged: the V2 model runner's ``profile_cudagraph_memory`` (called on a bare
object: before 0.29 it returns 0 without reading anything; from 0.29 it profiles, so on a bare
object it fails), ``envs.VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``'s reader on each raw value,
and the ``-O`` levels' default ``cudagraph_mode`` (``OPTIMIZATION_LEVEL_00`` …). What is read
as text: ``Worker.determine_available_memory``, which needs a GPU to run — its source must still
guard the graph profile with ``cudagraph_mode != CUDAGraphMode.NONE``, gate it on the env
variable and subtract it from the requested memory, as the cited lines say. The release is
``vllm.version``'s, so a release's own sources laid over another's venv (PYTHONPATH) are judged
as that release.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.facts import Facts
from dsv4_launch.core.memory.budget import V2_PROFILES_GRAPHS, graph_env_off, graph_term
from dsv4_launch.core.model import classify
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args
from tests.vllm_real.conftest import require_vllm

pytestmark = pytest.mark.rule("max-model-len-too-long")
FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")


@pytest.fixture(scope="module")
def real_vllm():
    """(None, None, the release): vLLM's own ``vllm.version`` — the release whose Python sources are
    imported, also where a release's sources are laid over another release's venv."""
    require_vllm()
    return None, None, importlib.import_module("vllm.version").__version__


def _facts(version, tokens=(), env=None):
    args = read_serve_args([FLASH["id"], *tokens], load_table(version), lambda p: {})
    return Facts(args=args, model=classify(FLASH["id"], FLASH["config"], "test"), vllm_version=version,
                 rule_env=dict(env or {}))


def test_the_v2_runners_graph_profile_is_zero_exactly_where_ours_is(real_vllm):
    version = real_vllm[2]
    runner = importlib.import_module("vllm.v1.worker.gpu.model_runner").GPUModelRunner
    try:
        theirs = runner.profile_cudagraph_memory(object())
    except Exception:  # it profiles: it reads the runner's state, which a bare object does not have
        theirs = None
    ours = graph_term(_facts(version), v2=True)
    assert (theirs == 0) == (ours.high == 0), (version, theirs, ours)
    assert (ours.high == 0) == (V2_PROFILES_GRAPHS.contains(version) is False)


@pytest.mark.parametrize("raw", ["0", "1", " 0 ", "-1", "7", "", "no", "0x0", "00"])
def test_the_graph_env_is_read_as_vllms_reader_reads_it(real_vllm, raw, monkeypatch):
    envs = importlib.import_module("vllm.envs")
    monkeypatch.setenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", raw)
    try:
        applied = envs.environment_variables["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"]()
    except ValueError:
        applied = None
    ours = graph_env_off(_facts(real_vllm[2], env={"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": raw}))
    assert ours is (None if applied is None else not applied), (raw, applied, ours)


def test_unset_the_graph_estimate_is_subtracted(real_vllm, monkeypatch):
    envs = importlib.import_module("vllm.envs")
    monkeypatch.delenv("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", raising=False)
    assert envs.environment_variables["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"]() is True
    assert graph_env_off(_facts(real_vllm[2])) is False


@pytest.mark.parametrize("level", ["0", "1", "2", "3"])
def test_the_optimization_levels_default_cudagraph_mode(real_vllm, level):
    config = importlib.import_module("vllm.config.vllm")
    none = importlib.import_module("vllm.config.compilation").CUDAGraphMode.NONE
    defaults = getattr(config, f"OPTIMIZATION_LEVEL_0{level}")
    theirs_none = defaults["compilation_config"]["cudagraph_mode"] == none
    ours = graph_term(_facts(real_vllm[2], ["-O" + level]), v2=False)
    assert theirs_none == (ours.high == 0), (level, ours)


def test_the_worker_subtracts_the_graph_estimate_only_when_graphs_are_captured_and_the_env_allows(real_vllm):
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    worker = importlib.import_module("vllm.v1.worker.gpu_worker").Worker
    source = inspect.getsource(worker.determine_available_memory)
    flat = " ".join(source.split())
    assert "profile_cudagraph_memory()" in source
    assert "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS" in source
    assert "kv_cache_memory_bytes" in source  # --kv-cache-memory-bytes replaces the whole computation
    if "cudagraph_memory_estimate_applied" in flat:  # up to 0.33: the guard is the worker's
        assert "cudagraph_mode != CUDAGraphMode.NONE" in source.replace("\n", " ").replace("  ", " ") or \
            "cudagraph_mode\n" in source, "the graph profile's guard moved: re-read gpu_worker.py"
        assert "self.requested_memory - profile_result.non_kv_cache_memory - cudagraph_memory_estimate_applied" in flat
        return
    # 0.34: the env guard stays in the worker (gpu_worker.py:746@0.34.0); the NONE guard moved into the
    # runner's profile (v1/worker/gpu/cudagraph_utils.py:1006-1009@0.34.0), which also returns 0 with the
    # extensible KV cache, whose graphs are measured after warm-up (v1/worker/gpu/model_runner.py:1123)
    assert "if may_capture_graphs and envs.VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS:" in flat
    assert "self.requested_memory - profile_result.non_kv_cache_memory - cudagraph_memory_estimate )" in flat
    utils = " ".join(inspect.getsource(importlib.import_module("vllm.v1.worker.gpu.cudagraph_utils")
                                       .profile_cudagraph_memory).split())
    assert ("cudagraph_mode == CUDAGraphMode.NONE"
            in utils), "the graph profile's guard moved: re-read cudagraph_utils.py"
    runner = " ".join(inspect.getsource(importlib.import_module("vllm.v1.worker.gpu.model_runner")
                                        .GPUModelRunner.profile_cudagraph_memory).split())
    assert "if self.cache_config.enable_extensible_kv_cache: # The extensible KV cache measures" in runner


def test_enforce_eager_turns_graphs_off_in_the_config(real_vllm):
    source = inspect.getsource(importlib.import_module("vllm.config.vllm").VllmConfig.__post_init__)
    flat = " ".join(source.split())
    assert "enforce_eager" in flat and "cudagraph_mode = CUDAGraphMode.NONE" in flat
    assert graph_term(_facts(real_vllm[2], ["--enforce-eager"]), v2=False).high == 0
