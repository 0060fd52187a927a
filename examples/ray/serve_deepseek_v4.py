"""DeepSeek-V4-Flash on Ray Serve LLM, with the dsv4-launch vLLM plugin on every node.

Ray Serve LLM builds vLLM engines inside Ray workers, so no `vllm serve` command exists to
change. The runtime environment installs dsv4-launch into each replica's Python; vLLM then
loads its plugin there (the `vllm.general_plugins` entry point) and fixes the KV-cache dtype
where the engine resolves it, logging `dsv4-launch: changed: --kv-cache-dtype auto → fp8: …`.

    pip wheel --no-deps -w /shared/wheels /path/to/dsv4-launch      # once, where every node can read it
    DSV4_LAUNCH_WHEEL=/shared/wheels/dsv4_launch-0.1.0-py3-none-any.whl serve run serve_deepseek_v4:app

(Any pip requirement works in its place: a wheel on an HTTP server, your own package index.)
Set DSV4_LAUNCH_GPU_CAPABILITY in env_vars only if the workers cannot read their GPUs through
NVML; the plugin probes them itself where the engine runs.

Ray's pip runtime environment needs `virtualenv` on every node (part of `ray[default]`) and
makes one virtualenv per node from the Python Ray runs in: a system or conda Python gets a
`--system-site-packages` virtualenv, but a Python that is itself a virtualenv is copied whole
(ray/_private/runtime_env/virtualenv_utils.py) — for vLLM's environment several GB per node,
once per runtime env. tests/vllm_real/test_ray_example.py runs this runtime env on a local Ray
cluster with the real vLLM (CI: Ray 2.60.0 next to vLLM 0.33.0).
"""

from __future__ import annotations

import os

from ray.serve.llm import LLMConfig, build_openai_app

WHEEL = os.environ.get("DSV4_LAUNCH_WHEEL", "/shared/wheels/dsv4_launch-0.1.0-py3-none-any.whl")

llm_config = LLMConfig(
    model_loading_config={
        "model_id": "deepseek-v4-flash",
        "model_source": "deepseek-ai/DeepSeek-V4-Flash",
    },
    deployment_config={"autoscaling_config": {"min_replicas": 1, "max_replicas": 1}},
    # The same arguments `vllm serve` takes, as engine keyword arguments. Two 96 GB GPUs (RTX PRO
    # 6000) hold Flash's weights at TP 2 with a few GiB per GPU left for the KV cache, of which
    # vLLM 0.33 holds ~6.2 GiB for one request's in-flight tokens at the default
    # max_num_batched_tokens 8192 (the default 1M context does not fit) and ~1.6 GiB at 2048:
    # 65,536 tokens fit with a wide margin (`dsv4-launch fit --gpus 2` shows the margins).
    engine_kwargs={"tensor_parallel_size": 2, "max_model_len": 65536, "max_num_batched_tokens": 2048},
    # Installed into every replica (and the engine's workers) before vLLM starts there.
    runtime_env={"pip": [WHEEL]},
)

app = build_openai_app({"llm_configs": [llm_config]})
