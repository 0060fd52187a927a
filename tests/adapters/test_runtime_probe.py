"""The runtime probe and code from the environment (round three of "never worse than plain ``vllm
serve``", issue 20, class 3): it imports nothing planted in the working directory and keeps
PYTHONPATH."""

import os
import sys

import pytest

# --- class 3: code from the environment -----------------------------------------------------

PLANTED = ["json.py", "torch.py", "importlib.py", "flashinfer.py", "sitecustomize.py", "usercustomize.py"]


@pytest.mark.parametrize("pythonpath", [None, ".", "", ":", "./"])
def test_runtime_probe_imports_nothing_from_the_working_directory(tmp_path, monkeypatch, pythonpath):
    """A model repository (the working directory) holding modules named like the ones the probe
    imports: none of them runs (each would write a marker file)."""
    from dsv4_launch.adapters.runtime_probe import read_runtime

    planted = tmp_path / "model-repo"
    planted.mkdir()
    marker = tmp_path / "executed"
    for name in PLANTED:
        (planted / name).write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
    monkeypatch.chdir(planted)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    env["PYTHONSTARTUP"] = str(planted / "json.py")
    result, error = read_runtime(sys.executable, env=env, timeout=60)
    assert error is None and result["python"], error
    assert not marker.exists(), marker.read_text()


def test_runtime_probe_keeps_pythonpath(tmp_path):
    """PYTHONPATH still counts (vLLM will see it): a package found only through it is seen."""
    from dsv4_launch.adapters.runtime_probe import read_runtime

    site = tmp_path / "site"
    (site / "vllm-9.9.9.dist-info").mkdir(parents=True)
    (site / "vllm-9.9.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 9.9.9\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, "PYTHONPATH": str(site)}
    result, error = read_runtime(sys.executable, env=env, timeout=60)
    assert error is None and result["vllm"]["version"] == "9.9.9", (result, error)
