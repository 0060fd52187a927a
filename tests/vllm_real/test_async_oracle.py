"""core/memory/estimate.py's in-flight tokens against the installed vLLM's own code, on the CPU.

What vLLM runs, unchanged: the async-scheduling resolution of ``VllmConfig.__post_init__`` (its
source, from ``executor_backend = …`` up to the NCCL-for-DP step, executed with vLLM's module
globals), ``VllmConfig.max_concurrent_batches`` and ``Executor.get_class`` /
``supports_async_scheduling``, and ``VllmConfig._get_v2_model_runner_unsupported_features``.
What is a stand-in: the config objects they read (plain namespaces holding the speculative
method as ``SpeculativeConfig`` resolved it, the PP size, the executor backend, the runner
type, the flag, and which model runner is in use). Ours is ``in_flight_tokens`` on the same
settings given as ``vllm serve`` arguments (the runner forced with VLLM_USE_V2_MODEL_RUNNER).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import itertools
import json
import textwrap
import typing
from types import SimpleNamespace as NS

import pytest

from dsv4_launch.adapters.checkpoints import known_checkpoint
from dsv4_launch.core.facts import Facts
from dsv4_launch.core.memory.vllm_config import IN_FLIGHT_TOKENS, in_flight_tokens, v2_runner
from dsv4_launch.core.model import classify
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args
from tests.vllm_real.conftest import require_vllm

pytestmark = pytest.mark.rule("max-model-len-too-long")

FLASH = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
MNBT = 1000
METHODS = [None, "mtp", "eagle", "eagle3", "dflash", "dspark", "ngram", "ngram_gpu", "draft_model", "suffix",
           "medusa", "mlp_speculator", "custom_class", "extract_hidden_states"]
START = "executor_backend = self.parallel_config.distributed_executor_backend"
END = "if self.parallel_config.disable_nccl_for_dp_synchronization is None:"


class Blank:
    """An attribute the code reads that these cases leave at its default: falsy, equal to nothing."""

    def __getattr__(self, name):
        return Blank()

    def __bool__(self):
        return False

    def __eq__(self, other):
        return False

    def __gt__(self, other):
        return False

    __lt__ = __ge__ = __le__ = __gt__
    __hash__ = object.__hash__

    def __iter__(self):
        return iter(())


@pytest.fixture(scope="module")
def vllm_config():
    require_vllm()
    version = importlib.metadata.version("vllm").split("+")[0]
    if IN_FLIGHT_TOKENS.contains(version) is False:
        pytest.skip(f"vLLM {version} has no max_in_flight_tokens (0.26+)")
    module = importlib.import_module("vllm.config.vllm")
    source = textwrap.dedent(inspect.getsource(module.VllmConfig.__post_init__))
    if START not in source or END not in source:
        pytest.fail("VllmConfig.__post_init__ no longer resolves async scheduling between "
                    f"{START!r} and {END!r}; update this oracle")
    first = source.rfind("\n", 0, source.index(START)) + 1  # the whole line, with its indentation
    block = textwrap.dedent(source[first:source.rfind("\n", 0, source.index(END)) + 1])
    from vllm.platforms import current_platform
    from vllm.v1.executor.abstract import Executor

    return NS(module=module, version=version, code=compile(block, "config/vllm.py (async block)", "exec"),
              platform=current_platform, executor=Executor,
              methods=set(_literal_strings(importlib.import_module("vllm.config.speculative").SpeculativeMethod)))


def _literal_strings(tp) -> list[str]:
    out = []
    for arg in typing.get_args(tp):
        out += [arg] if isinstance(arg, str) else _literal_strings(arg)
    return out


def _theirs(vc, method, padded, pp, backend, runner, given, v2) -> int | None:
    """max_concurrent_batches as vLLM's code makes it; None where vLLM refuses the settings."""
    executor_class = vc.executor.get_class(NS(parallel_config=NS(distributed_executor_backend=backend)))
    spec = None if method is None else NS(method=method, disable_padded_drafter_batch=padded)
    config = NS(
        scheduler_config=NS(async_scheduling=given, max_num_batched_tokens=MNBT),
        speculative_config=spec,
        parallel_config=NS(distributed_executor_backend=backend, pipeline_parallel_size=pp, enable_dbo=False,
                           all2all_backend="allgather_reducescatter", data_parallel_size=1),
        model_config=NS(runner_type=runner),
        use_v2_model_runner=v2,
    )
    scope = dict(vars(vc.module), current_platform=vc.platform,
                 Executor=NS(get_class=lambda _config: executor_class))
    try:
        exec(vc.code, scope, {"self": config})
    except ValueError:
        return None
    return vc.module.VllmConfig.max_concurrent_batches.fget(config)


def _facts(version, tokens, env) -> Facts:
    args = read_serve_args([FLASH["id"], *tokens], load_table(version), lambda p: {})
    assert args.rejection is None, (tokens, args.rejection)
    return Facts(args=args, model=classify(FLASH["id"], FLASH["config"], "test"), vllm_version=version,
                 rule_env=env)


def _tokens(method, padded, pp, backend, runner, given):
    tokens = ["-pp", str(pp), "--distributed-executor-backend", backend, "--runner", runner]
    if method is not None:
        spec = {"method": method, "num_speculative_tokens": 1}
        if padded:
            spec["disable_padded_drafter_batch"] = True
        tokens += ["--speculative-config", json.dumps(spec)]
    if given is not None:
        tokens.append("--async-scheduling" if given else "--no-async-scheduling")
    return tokens


def test_in_flight_tokens_follow_vllms_async_scheduling(vllm_config):
    vc = vllm_config
    backends = ["mp", "uni", "external_launcher", "ray"]
    try:
        vc.executor.get_class(NS(parallel_config=NS(distributed_executor_backend="ray")))
    except Exception:  # noqa: BLE001 - Ray is not installed in this venv: its executor cannot load
        backends.remove("ray")
    methods = [m for m in METHODS if m is None or m in vc.methods]
    compared, wrong = 0, []
    # 0.34 removed Model Runner V1 (no VllmConfig.use_v2_model_runner; VLLM_USE_V2_MODEL_RUNNER=0 is refused)
    runners = (True, False) if hasattr(vc.module.VllmConfig, "use_v2_model_runner") else (True,)
    for method, padded, pp, backend, runner, given, v2 in itertools.product(
            methods, (False, True), (1, 2), backends, ("generate", "pooling"), (None, False, True), runners):
        if method is None and padded:
            continue
        theirs = _theirs(vc, method, padded, pp, backend, runner, given, v2)
        if theirs is None:
            continue  # vLLM refuses these settings (--async-scheduling with an incompatible one)
        f = _facts(vc.version, _tokens(method, padded, pp, backend, runner, given),
                   {"VLLM_USE_V2_MODEL_RUNNER": "1" if v2 else "0"})
        ours = in_flight_tokens(f, MNBT, pp, pp)
        compared += 1
        if ours != theirs * MNBT:
            wrong.append((method, padded, pp, backend, runner, given, v2, ours // MNBT, theirs))
    assert compared > 500, compared
    assert not wrong, f"{len(wrong)} of {compared} differ (method, padded, pp, backend, runner, flag, v2, ours, " \
                      f"vLLM's): {wrong[:12]}"


@pytest.mark.parametrize("pp", [1, 2])
def test_the_v2_runner_takes_the_speculative_methods_vllm_takes(vllm_config, pp):
    """With nothing else the V2 runner lacks, does it run this speculative method? (0.28+: the
    V2 runner is DeepSeek-V4's default)."""
    vc = vllm_config
    unsupported = getattr(vc.module.VllmConfig, "_get_v2_model_runner_unsupported_features", None)
    if unsupported is None:
        pytest.skip(f"vLLM {vc.version} has no _get_v2_model_runner_unsupported_features")
    wrong = []
    for method in [m for m in METHODS if m is not None and m in vc.methods]:
        config = Blank()
        config.__dict__.update(
            speculative_config=NS(method=method, parallel_drafting=False, use_heterogeneous_vocab=False,
                                  enable_adaptive_verification=False),
            parallel_config=NS(distributed_executor_backend="mp", pipeline_parallel_size=pp, enable_dbo=False,
                               enable_elastic_ep=False, use_ubatching=False, tensor_parallel_size=1,
                               prefill_context_parallel_size=1),
            model_config=None, lora_config=None)
        theirs = not unsupported(config)
        f = _facts(vc.version, ["-pp", str(pp), "--speculative-config",
                                json.dumps({"method": method, "num_speculative_tokens": 1})], {})
        ours = v2_runner(f, method, pp)
        if method == "dspark":
            theirs = True  # 0.26-0.28 ask for V2 before this list; 0.29+ list it as supported
        if ours != theirs:
            wrong.append((method, ours, theirs))
    assert not wrong, wrong
