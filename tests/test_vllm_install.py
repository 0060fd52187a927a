"""Finding vLLM's version without importing it: the exec-fallback case (vLLM in another venv)."""

from __future__ import annotations

from dsv4_launch.vllm_install import VllmInstall, find_vllm, interpreter_of


def fake_env(root, shebang: str, version: str = "0.33.0"):
    (root / "bin").mkdir(parents=True)
    script = root / "bin" / "vllm"
    script.write_text(f"{shebang}\nimport sys\n")
    script.chmod(0o755)
    info = root / "lib" / "python3.11" / "site-packages" / f"vllm-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n\nbody\n")
    return script


def test_version_and_interpreter_from_the_scripts_shebang(tmp_path):
    script = fake_env(tmp_path / "venv", f"#!{tmp_path}/venv/bin/python3.11")
    found = find_vllm({"PATH": str(script.parent)})
    assert (found.version, found.importable, found.executable) == ("0.33.0", False, str(script))
    assert interpreter_of(found) == f"{tmp_path}/venv/bin/python3.11"


def test_env_shebang_uses_the_scripts_own_environment(tmp_path):
    script = fake_env(tmp_path / "venv", "#!/usr/bin/env python3", version="0.24.0")
    found = find_vllm({"PATH": str(script.parent)})
    assert found.version == "0.24.0"
    assert interpreter_of(found) is not None and interpreter_of(found).endswith("python3")


def test_no_shebang_means_version_unknown(tmp_path):
    script = fake_env(tmp_path / "venv", "echo not a python script")
    found = find_vllm({"PATH": str(script.parent)})
    assert found.version is None and "could not be read" in found.note
    assert interpreter_of(found) is None
    assert interpreter_of(VllmInstall(version=None, importable=False)) is None
