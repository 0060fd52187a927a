"""Shared test fixtures. What is faked, and where:

* NVML: ``tests/fakes/fake_nvml.c`` is compiled into a stand-in ``libnvidia-ml.so.1``; the real
  nvidia-ml-py bindings load it (in-process: preloaded by soname; subprocesses: through
  ``LD_LIBRARY_PATH``), so only the driver's answers are made up.
* vLLM: ``tests/fakes/vllm_pkg`` is a package with only ``vllm.entrypoints.cli.main.main``,
  put first on ``PYTHONPATH``; it records ``sys.argv`` and returns, exits or serves as told.
* The ``vllm`` executable on PATH (exec fallback): ``tests/fakes/vllm_on_path.py``.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

FAKES = Path(__file__).resolve().parent / "fakes"
BIN = Path(sys.executable).parent

# The smallest config.json that vLLM and dsv4-launch both read as DeepSeek-V4.
V4_CONFIG = {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "num_attention_heads": 64}

# Variables of ours, CUDA's and Hugging Face's that must not leak in from the developer's shell.
_SCRUB = ("DSV4_LAUNCH_", "CUDA_", "HF_", "HUGGING", "FAKE_", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "VLLM_")


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "home" / ".cache"),
        PATH=f"{BIN}{os.pathsep}/usr/bin:/bin",
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("LD_LIBRARY_PATH", None)
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


def gpu_spec(
    name: str = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    uuid: str = "GPU-12000000-0000-0000-0000-000000000000",
    cc: str = "12.0",
    mem_mib: int = 97887,
    handle_err: int = 0,
    cc_err: int = 0,
    migs: tuple[str, ...] = (),
) -> str:
    """One GPU in the fake NVML's FAKE_NVML_GPUS format."""
    return "|".join(
        [name, uuid, cc, str(mem_mib), str(handle_err or ""), str(cc_err or ""), "+".join(migs)]
    )


RTX_PRO_6000 = gpu_spec()
H200 = gpu_spec("NVIDIA H200", "GPU-90000000-0000-0000-0000-000000000000", "9.0", 143771)
B200 = gpu_spec("NVIDIA B200", "GPU-10000000-0000-0000-0000-000000000000", "10.0", 183359)
A100 = gpu_spec("NVIDIA A100-SXM4-80GB", "GPU-80000000-0000-0000-0000-000000000000", "8.0", 81920)


def install_fake_vllm_executable(bindir: Path) -> Path:
    """Put the fake `vllm` executable (fakes/vllm_on_path.py) into ``bindir``."""
    bindir.mkdir(parents=True, exist_ok=True)
    shutil.copy(FAKES / "vllm_on_path.py", bindir / "vllm")
    (bindir / "vllm_pkg").symlink_to(FAKES / "vllm_pkg")
    return bindir


@pytest.fixture(autouse=True)
def host_not_read(monkeypatch):
    """This host's RAM and disk (adapters/host.py) are a boundary like NVML: in-process tests see
    them "not read" unless a test gives its own reader (``Context.read_host``)."""
    from dsv4_launch.adapters import host
    from dsv4_launch.core.facts import HostFacts

    monkeypatch.setattr(host, "read_host", lambda target: HostFacts())


@pytest.fixture(scope="session")
def fake_nvml_dir(tmp_path_factory) -> Path:
    """A directory holding the compiled stand-in libnvidia-ml.so.1."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler (cc/gcc) is needed to build the fake NVML library")
    out = tmp_path_factory.mktemp("fake-nvml")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-Wl,-soname,libnvidia-ml.so.1", "-o",
         str(out / "libnvidia-ml.so.1"), str(FAKES / "fake_nvml.c")],
        check=True,
    )
    return out


@pytest.fixture
def fake_nvml(fake_nvml_dir, monkeypatch):
    """In-process fake NVML: returns a function that sets the GPUs (and init error code)."""
    # Load it under its soname before pynvml does: pynvml's CDLL("libnvidia-ml.so.1") then
    # resolves to this library, whatever else is installed on the machine.
    ctypes.CDLL(str(fake_nvml_dir / "libnvidia-ml.so.1"), mode=ctypes.RTLD_GLOBAL)

    def configure(*gpus: str, init_error: int = 0, log: Optional[Path] = None) -> None:
        monkeypatch.setenv("FAKE_NVML_GPUS", ";".join(gpus))
        monkeypatch.setenv("FAKE_NVML_INIT", str(init_error))
        if log is not None:
            monkeypatch.setenv("FAKE_NVML_LOG", str(log))

    return configure


@pytest.fixture
def fake_vllm_path(tmp_path) -> callable:
    """Returns make(version) → a directory to put first on PYTHONPATH holding the fake vLLM."""

    def make(version: Optional[str] = "0.24.0") -> Path:
        root = tmp_path / f"fake-vllm-{version}"
        if not root.exists():
            shutil.copytree(FAKES / "vllm_pkg", root)
            if version is not None:
                info = root / f"vllm-{version}.dist-info"
                info.mkdir()
                (info / "METADATA").write_text(
                    f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
                )
        return root

    return make


@pytest.fixture
def run_cli(tmp_path, fake_nvml_dir, fake_vllm_path):
    """Run a console script of this environment as a subprocess with fake NVML and vLLM.

    ``gpus``: fake NVML GPUs (None: no NVML library at all); ``vllm``: fake vLLM version to
    install on PYTHONPATH (None: vLLM not importable). Returns (CompletedProcess, record).
    """

    def run(
        script: str,
        *args: str,
        gpus: Optional[tuple[str, ...]] = (RTX_PRO_6000,),
        vllm: Optional[str] = "0.24.0",
        behaviour: str = "return",
        env: Optional[dict[str, str]] = None,
        timeout: float = 60,
    ):
        record = tmp_path / "vllm-record.json"
        if record.exists():
            record.unlink()
        e = clean_env(tmp_path, FAKE_VLLM_RECORD=str(record), FAKE_VLLM_BEHAVIOUR=behaviour)
        e["FAKE_NVML_LOG"] = str(tmp_path / "nvml.log")
        if gpus is not None:
            e["LD_LIBRARY_PATH"] = str(fake_nvml_dir)
            e["FAKE_NVML_GPUS"] = ";".join(gpus)
        if vllm is not None:
            e["PYTHONPATH"] = str(fake_vllm_path(vllm))
        e.update(env or {})
        done = subprocess.run(
            [str(BIN / script), *args],
            env=e,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=tmp_path,
        )
        data = json.loads(record.read_text()) if record.exists() else None
        return done, data

    return run


@pytest.fixture
def v4_dir(tmp_path) -> str:
    """A local model directory holding only a DeepSeek-V4 config.json (no weights)."""
    folder = tmp_path / "v4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(V4_CONFIG))
    return str(folder)
