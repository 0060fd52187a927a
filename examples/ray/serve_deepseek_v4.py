"""DeepSeek-V4-Flash on Ray Serve LLM, with the dsv4-launch vLLM plugin on every node.

Ray Serve LLM builds vLLM engines inside Ray workers, so no `vllm serve` command exists to
change. The runtime environment installs dsv4-launch into each replica's Python; vLLM then
loads its plugin there (the `vllm.general_plugins` entry point) and fixes the KV-cache dtype
where the engine resolves it, logging `dsv4-launch: changed: --kv-cache-dtype auto → fp8: …`.

    pip wheel --no-deps -w /shared/wheels /path/to/dsv4-launch      # once, where every node can read it
    serve run serve_deepseek_v4:app

The wheel: DSV4_LAUNCH_WHEEL names it (a path, or any pip requirement: a wheel on an HTTP
server, `dsv4-launch==X` from your own package index); without it, the one
dsv4_launch-*.whl in DSV4_LAUNCH_WHEEL_DIR (default /shared/wheels) is used, whatever its
version — none there, or several, stops `serve run` with one line saying which.
Set DSV4_LAUNCH_GPU_CAPABILITY in env_vars only if the workers cannot read their GPUs through
NVML; the plugin probes them itself where the engine runs.

Ray's pip runtime environment needs `virtualenv` on every node (part of `ray[default]`) and
makes one virtualenv per node from the Python Ray runs in: a system or conda Python gets a
`--system-site-packages` virtualenv, but a Python that is itself a virtualenv is copied whole
(ray/_private/runtime_env/virtualenv_utils.py) — for vLLM's environment several GB per node,
once per runtime env. tests/vllm_real/test_ray_example.py runs this runtime env on a local Ray
cluster with the real vLLM (CI: Ray 2.60.0 next to vLLM 0.34.0).
"""

from __future__ import annotations

import glob
import os

from ray.serve.llm import LLMConfig, build_openai_app


def find_wheel(environ=os.environ) -> str:
    """DSV4_LAUNCH_WHEEL, else the one dsv4_launch-*.whl in DSV4_LAUNCH_WHEEL_DIR (/shared/wheels)."""
    given = environ.get("DSV4_LAUNCH_WHEEL", "").strip()
    if given:
        return given
    folder = environ.get("DSV4_LAUNCH_WHEEL_DIR", "").strip() or "/shared/wheels"
    found = sorted(glob.glob(os.path.join(glob.escape(folder), "dsv4_launch-*.whl")))
    if len(found) != 1:
        names = ", ".join(map(os.path.basename, found))
        what = f"{len(found)} wheels ({names})" if found else "no dsv4_launch-*.whl"
        raise SystemExit(f"serve_deepseek_v4: {what} in {folder}: build one there with "
                         f"`pip wheel --no-deps -w {folder} /path/to/dsv4-launch`, or set DSV4_LAUNCH_WHEEL")
    return found[0]


WHEEL = find_wheel()

llm_config = LLMConfig(
    model_loading_config={
        "model_id": "deepseek-v4-flash",
        "model_source": "deepseek-ai/DeepSeek-V4-Flash",
    },
    deployment_config={"autoscaling_config": {"min_replicas": 1, "max_replicas": 1}},
    # The same arguments `vllm serve` takes, as engine keyword arguments. Two 96 GB GPUs (RTX PRO
    # 6000) at TP 2; why 65,536 tokens of context with max_num_batched_tokens 2048 there:
    # docs/deployment.md ("Memory"). The tokenizer mode and the tool-call and reasoning parsers
    # are the vLLM recipes' for DeepSeek-V4.
    engine_kwargs={
        "tensor_parallel_size": 2,
        "max_model_len": 65536,
        "max_num_batched_tokens": 2048,
        "tokenizer_mode": "deepseek_v4",
        "enable_auto_tool_choice": True,
        "tool_call_parser": "deepseek_v4",
        "reasoning_parser": "deepseek_v4",
    },
    # Installed into every replica (and the engine's workers) before vLLM starts there.
    runtime_env={"pip": [WHEEL]},
)

app = build_openai_app({"llm_configs": [llm_config]})
