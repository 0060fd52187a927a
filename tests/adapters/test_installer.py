"""Install hints that fit the installer (adapters/installer.py): for "no vLLM" and for putting the
plugin into vLLM's environment.

Faked: the environment layouts, in tmp dirs, as each installer leaves them (checked against
pipx 1.18 and uv 0.13 installs of this checkout: pipx writes ``pipx_metadata.json`` into
``$PIPX_HOME/venvs/NAME`` and, running over uv, ``INSTALLER`` = ``uv``; ``uv tool`` writes
``uv-receipt.toml`` with ``{ name = "dsv4-launch", directory = "/src" }`` into
``$UV_TOOL_DIR/NAME``; conda prefixes have ``conda-meta/``). The doctor test fakes the runtime
probe (the boundary to vLLM's interpreter).
"""

from __future__ import annotations

import io
import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from dsv4_launch.adapters import installer
from dsv4_launch.adapters.handover import NoVllm, hand_over, install_hint
from dsv4_launch.adapters.installer import CONDA, PIP, PIPX, UV, UV_TOOL, add_command, detect, plugin_command
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.context import Context

ROOT = Path(__file__).resolve().parents[2]


def _venv(prefix: Path, project: str = "dsv4_launch", installer_name: str | None = "pip") -> Path:
    site = prefix / "lib" / "python3.11" / "site-packages"
    info = site / f"{project}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project}\nVersion: 1.0\n")
    if installer_name is not None:
        (info / "INSTALLER").write_text(installer_name + "\n")
    (prefix / "bin").mkdir(exist_ok=True)
    return prefix


def _pipx(tmp_path: Path, name: str = "dsv4-launch") -> Path:
    prefix = _venv(tmp_path / "pipx" / "venvs" / name, installer_name="uv")  # pipx 1.18 over uv
    (prefix / "pipx_metadata.json").write_text(json.dumps(
        {"main_package": {"package": name, "package_or_url": "/src/dsv4-launch"}, "pipx_metadata_version": "0.12"}))
    return prefix


def _uv_tool(tmp_path: Path, directory: str | None) -> Path:
    prefix = _venv(tmp_path / "uv" / "tools" / "dsv4-launch", installer_name="uv")
    source = f', directory = "{directory}"' if directory else ""
    (prefix / "uv-receipt.toml").write_text(
        f'[tool]\nrequirements = [{{ name = "dsv4-launch"{source} }}]\nentrypoints = [\n'
        '    { name = "dsv4-serve", install-path = "/home/u/.local/bin/dsv4-serve", from = "dsv4-launch" },\n]\n')
    return prefix


def _detect(prefix: Path, project: str = "dsv4_launch"):
    return detect(str(prefix), str(prefix / "bin" / "python"), project=project)


def test_pip_venv(tmp_path):
    env = _detect(_venv(tmp_path / "venv"))
    assert env.kind == PIP
    assert add_command(env, "vllm") == f"{tmp_path}/venv/bin/python -m pip install vllm"
    assert install_hint(env).startswith(f"install it into this environment ({tmp_path}/venv/bin/python -m pip install "
                                        "vllm; it brings its own torch/CUDA build) or put the bin/ folder")


def test_uv_venv_has_no_pip_so_uv_pip(tmp_path):
    env = _detect(_venv(tmp_path / "venv", installer_name="uv"))
    assert env.kind == UV
    assert add_command(env, "vllm") == f"uv pip install --python {tmp_path}/venv/bin/python vllm"


def test_pipx_is_told_by_its_metadata_even_over_uv(tmp_path):
    env = _detect(_pipx(tmp_path))
    assert env.kind == PIPX and env.name == "dsv4-launch"
    assert add_command(env, "vllm") == "pipx inject dsv4-launch vllm"
    assert "pipx inject dsv4-launch vllm" in install_hint(env) and "pip install" not in install_hint(env)


@pytest.mark.parametrize("directory, command", [
    (None, "uv tool install dsv4-launch --with vllm"),
    ("/src/dsv4 launch", "uv tool install '/src/dsv4 launch' --with vllm"),  # keeps the local source
])
def test_uv_tool_is_told_by_its_receipt(tmp_path, directory, command):
    env = _detect(_uv_tool(tmp_path, directory))
    assert env.kind == UV_TOOL and env.name == "dsv4-launch"
    assert add_command(env, "vllm") == command
    assert command in install_hint(env) and "-m pip" not in install_hint(env)


def test_conda_prefix(tmp_path):
    prefix = _venv(tmp_path / "miniforge3" / "envs" / "serve", installer_name="conda")
    (prefix / "conda-meta").mkdir()
    env = _detect(prefix)
    assert env.kind == CONDA
    assert add_command(env, "vllm") == f"{prefix}/bin/python -m pip install vllm"
    assert f"this conda environment at {prefix}" in install_hint(env)


def test_no_dist_info_or_unknown_installer_is_pip(tmp_path):
    assert _detect(tmp_path / "nothing").kind == PIP
    assert _detect(_venv(tmp_path / "poetry", installer_name="poetry")).kind == PIP
    assert _detect(_venv(tmp_path / "bare", installer_name=None)).kind == PIP


def test_commands_are_quoted_for_the_shell(tmp_path):
    env = _detect(_venv(tmp_path / "my venv; rm -rf x"))
    words = shlex.split(add_command(env, "vllm"))
    assert words == [f"{tmp_path}/my venv; rm -rf x/bin/python", "-m", "pip", "install", "vllm"]


def test_this_environment_is_the_running_one():
    env = installer.this_environment()
    assert env.prefix == os.path.normpath(sys.prefix) and env.python == sys.executable


@pytest.mark.parametrize("kind", ["pip", "uv", "pipx"])
def test_plugin_goes_in_with_vllm_environment_installer(tmp_path, kind):
    if kind == "pipx":
        prefix = _venv(tmp_path / "pipx" / "venvs" / "vllm", project="vllm", installer_name="pip")
        (prefix / "pipx_metadata.json").write_text(json.dumps({"main_package": {"package": "vllm"}}))
        expected = "pipx inject vllm /src/dsv4-launch"
    else:
        prefix = _venv(tmp_path / "vllm-env", project="vllm", installer_name=kind)
        python = prefix / "bin" / "python"
        expected = (f"uv pip install --python {python} /src/dsv4-launch" if kind == "uv"
                    else f"{python} -m pip install /src/dsv4-launch")
    assert plugin_command(str(prefix / "bin" / "python"), "/src/dsv4-launch") == expected


def test_our_source_is_the_local_folder_we_came_from_or_the_name(tmp_path, monkeypatch):
    site = tmp_path / "site"
    info = site / "dsv4_launch-0.1.0.dist-info"
    info.mkdir(parents=True)
    src = tmp_path / "checkout"
    src.mkdir()
    (info / "direct_url.json").write_text(json.dumps({"url": src.as_uri(), "dir_info": {"editable": True}}))
    monkeypatch.setattr(sys, "path", [str(site)])
    assert installer.our_source() == str(src)
    (info / "direct_url.json").write_text(json.dumps({"url": "https://example.org/dsv4_launch-0.1.0.tar.gz"}))
    assert installer.our_source() == "dsv4-launch"
    (info / "direct_url.json").unlink()
    assert installer.our_source() == "dsv4-launch"


def test_no_vllm_message_names_the_installers_command(tmp_path, monkeypatch):
    prefix = _pipx(tmp_path)
    monkeypatch.setattr(installer, "this_environment", lambda: _detect(prefix))
    with pytest.raises(NoVllm) as caught:
        hand_over(["org/model"], VllmInstall(None, False, note="vLLM is not installed here"), {"PATH": "/nonexistent"})
    assert "pipx inject dsv4-launch vllm" in str(caught.value)
    assert str(caught.value).count("\n") == 0


def test_doctor_says_how_to_put_the_plugin_into_vllms_uv_environment(tmp_path):
    from dsv4_launch.adapters.nvml import GpuReport
    from dsv4_launch.commands.doctor import run_doctor

    prefix = _venv(tmp_path / "vllm-env", project="vllm", installer_name="uv")
    (prefix / "bin" / "python").symlink_to(sys.executable)
    script = prefix / "bin" / "vllm"
    script.write_text(f"#!{prefix}/bin/python\nimport sys\n")
    script.chmod(0o755)
    out = io.StringIO()
    run_doctor(["deepseek-ai/DeepSeek-V4-Flash"], as_json=True,
               ctx=Context(env={"HOME": str(tmp_path), "PATH": "/usr/bin"}, stdout=out, stderr=io.StringIO(),
                           read_gpus=lambda: GpuReport(error="NVML: faked away"),
                           vllm=VllmInstall("0.33.0", False, str(script)),
                           read_runtime=lambda python, shapes: ({"torch": None, "flashinfer": None, "plugins": []},
                                                                None)))
    plugin = [c["detail"] for c in json.loads(out.getvalue())["checks"] if c["section"] == "plugin"]
    assert plugin and plugin[0].endswith(f"to install it there: uv pip install --python {prefix}/bin/python "
                                         f"{installer.our_source()}")
