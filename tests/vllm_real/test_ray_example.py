"""The Ray Serve example's way of shipping dsv4-launch, run for real on a local Ray cluster.

examples/ray/serve_deepseek_v4.py installs dsv4-launch into every replica through Ray's
runtime environment (``runtime_env={"pip": [WHEEL]}``); vLLM then loads the plugin inside the
Ray worker where the engine is built. Here a one-CPU Ray cluster is started on this machine, the
example's runtime_env (read from the file) is given a wheel built from this checkout, and a Ray
task builds vLLM's engine config — ``EngineArgs(...).create_engine_config()``, what Ray Serve
LLM's engine does — for a small DeepSeek-V4 config.json and for a Llama one.

Real: Ray (cluster, runtime-env agent, its pip plugin: the virtualenv it clones, the pip
install), vLLM on the CPU, the plugin's discovery by vLLM's ``load_general_plugins()``. Faked:
only the GPU type, DSV4_LAUNCH_GPU_CAPABILITY=12.0 in the runtime env's env_vars (what the
example's docstring says to set where workers cannot read their GPUs).

The driver runs in a small virtual environment that sees vLLM's site-packages through a path
file (like ``--system-site-packages``): Ray's pip plugin clones the driver's virtualenv for the
runtime env, and a clone of vLLM's own (~9 GB) would dominate the run. The path file processes
no ``.pth`` files of vLLM's environment, so dsv4-launch (installed there editable) is not
importable from it: the worker can only have it from the runtime env. The wheel carries a local
version label (``+shipped``) so pip cannot take the editable install's metadata for it.

Needs ``ray`` importable next to vLLM: .ci/run installs it into the vLLM 0.34.0 environment and
sets DSV4_REQUIRE_RAY=1 there, which turns the skip into a failure.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import venv
from pathlib import Path

import pytest

from tests.vllm_real.conftest import SITE
from tests.vllm_real.test_plugin import LLAMA_CONFIG, V4_CONFIG

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ray" / "serve_deepseek_v4.py"
LABEL = "+shipped"
TIMEOUT = 480  # s: Ray start-up ~10-40 s on 2 cores, the runtime env (clone, pip) ~30 s, vLLM import ~20 s

DRIVER = r"""
import importlib.util, json, sys
import ray

args = json.loads(sys.argv[1])
assert importlib.util.find_spec("dsv4_launch") is None, "the driver's Python already has dsv4_launch"
ray.init(num_cpus=1, include_dashboard=False, _temp_dir=args["temp"], log_to_driver=False)


@ray.remote
def engine_dtypes(models):
    import os

    import vllm.engine.arg_utils as arg_utils
    from vllm.engine.arg_utils import EngineArgs

    import dsv4_launch

    dtypes = {name: EngineArgs(model=path, skip_tokenizer_init=True).create_engine_config().cache_config.cache_dtype
              for name, path in models.items()}
    return {"file": dsv4_launch.__file__, "version": dsv4_launch.__version__, "dtypes": dtypes,
            "patched": getattr(arg_utils.resolve_kv_cache_dtype_string, "_dsv4_launch_patched", False),
            "capability": os.environ.get("DSV4_LAUNCH_GPU_CAPABILITY")}


ref = engine_dtypes.options(runtime_env=args["runtime_env"]).remote(args["models"])
print("RESULT " + json.dumps(ray.get(ref, timeout=args["timeout"])), flush=True)
ray.shutdown()
"""


def require(module: str, flag: str, why: str) -> None:
    if importlib.util.find_spec(module) is None:
        if os.environ.get(flag) == "1":
            pytest.fail(f"{flag}=1 but {module} is not importable here: {why}")
        pytest.skip(f"{module} not installed: {why}")


def example_runtime_env(wheel: str) -> dict:
    """The runtime_env= the example gives LLMConfig, with its WHEEL variable set to ``wheel``."""
    tree = ast.parse(EXAMPLE.read_text())
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "LLMConfig"]
    (node,) = [k.value for k in call.keywords if k.arg == "runtime_env"]

    class SetWheel(ast.NodeTransformer):
        def visit_Name(self, name):
            return ast.copy_location(ast.Constant(wheel), name) if name.id == "WHEEL" else name

    return ast.literal_eval(ast.fix_missing_locations(SetWheel().visit(node)))


def has_build_requirement() -> bool:
    """setuptools >= 77 (pyproject's build requirement) importable here."""
    import importlib.metadata

    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return major >= 77


def build_wheel(out: Path) -> Path:
    """A wheel of this checkout (the example's `pip wheel --no-deps`), version labelled +shipped."""
    src = out / "src-copy"
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in"):  # what a wheel build reads
        if (REPO / name).exists():
            shutil.copy2(REPO / name, src / name)
    init = src / "src" / "dsv4_launch" / "__init__.py"
    text, n = re.subn(r'(__version__ = "[^"+]+)"', rf'\1{LABEL}"', init.read_text())
    assert n == 1, "no __version__ line in dsv4_launch/__init__.py"
    init.write_text(text)
    # Without build isolation where this environment has the build requirement (no download).
    isolation = ["--no-build-isolation"] if has_build_requirement() else []
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
                           "-w", str(out / "wheels"), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (out / "wheels").glob("dsv4_launch-*.whl")
    return wheel


def thin_python(root: Path) -> Path:
    """A virtual environment whose only extra path entries are vLLM's site-packages and Ray's."""
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    import ray

    # (and the site-packages a .pth layers under this environment, e.g. a light venv over a shared vLLM one)
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                           str(Path(ray.__file__).resolve().parents[1]),
                           *(p for p in sys.path if p.endswith("site-packages"))])
    Path(site, "vllm-env.pth").write_text("".join(f"{p}\n" for p in paths))
    return python


def test_the_ray_example_ships_dsv4_launch_and_the_engine_gets_fp8(tmp_path):
    require("vllm", "DSV4_REQUIRE_VLLM", "run this under a real vLLM (see tests/vllm_real/conftest.py)")
    require("ray", "DSV4_REQUIRE_RAY", "pip install ray next to vLLM (.ci/run does it for vLLM 0.34.0)")
    models = {}
    for name, config in (("v4", V4_CONFIG), ("llama", LLAMA_CONFIG)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
        models[name] = str(tmp_path / name)
    wheel = build_wheel(tmp_path)
    runtime_env = example_runtime_env(str(wheel))
    assert runtime_env == {"pip": [str(wheel)]}, runtime_env
    runtime_env["env_vars"] = {"DSV4_LAUNCH_GPU_CAPABILITY": "12.0", "VLLM_TARGET_DEVICE": "cpu",
                               # the oracle harness in the engine's process too (conftest.SITE)
                               "PYTHONPATH": SITE,
                               **{k: v for k, v in os.environ.items() if k == "DSV4_ORACLE_AS_VERIFIED"}}
    python = thin_python(tmp_path / "driver-venv")
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths live under it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSV4_LAUNCH_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(HOME=str(tmp_path / "home"), VLLM_TARGET_DEVICE="cpu", RAY_USAGE_STATS_ENABLED="0")
    args = {"runtime_env": runtime_env, "models": models, "temp": temp, "timeout": TIMEOUT - 60}
    try:
        done = subprocess.run([str(python), "-c", DRIVER, json.dumps(args)], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=TIMEOUT - 30)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"rc {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    # dsv4-launch in the worker is the shipped wheel, installed by Ray's pip plugin into the
    # runtime env's virtualenv (under the cluster's temp dir), not the driver's.
    assert result["version"].endswith(LABEL), result
    assert result["file"].startswith(os.path.realpath(temp)) or result["file"].startswith(temp), result
    assert "runtime_resources" in result["file"], result
    assert result["capability"] == "12.0" and result["patched"] is True, result
    assert result["dtypes"] == {"v4": "fp8", "llama": "auto"}, result
