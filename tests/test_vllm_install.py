"""Finding vLLM and its Python without importing it: the exec-fallback case (vLLM in another
venv), shell wrappers, pip's long-path trampoline, broken installs. Files only, no vLLM."""

from __future__ import annotations

import sys

from dsv4_launch.adapters.vllm_install import VllmInstall, find_vllm, interpreter_of


def fake_env(root, first_lines: str, version: str = "0.33.0", python: bool = True):
    (root / "bin").mkdir(parents=True)
    script = root / "bin" / "vllm"
    script.write_text(f"{first_lines}\nimport sys\n")
    script.chmod(0o755)
    if python:
        interp = root / "bin" / "python3.11"
        interp.symlink_to(sys.executable)
    info = root / "lib" / "python3.11" / "site-packages" / f"vllm-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n\nbody\n")
    return script


def test_version_and_interpreter_from_the_scripts_shebang(tmp_path):
    script = fake_env(tmp_path / "venv", f"#!{tmp_path}/venv/bin/python3.11")
    found = find_vllm({"PATH": str(script.parent)})
    assert (found.version, found.importable, found.executable) == ("0.33.0", False, str(script))
    assert interpreter_of(found) == (f"{tmp_path}/venv/bin/python3.11", None)


def test_env_shebang_uses_the_scripts_own_environment(tmp_path):
    script = fake_env(tmp_path / "venv", "#!/usr/bin/env python3", version="0.24.0")
    found = find_vllm({"PATH": str(script.parent)})
    assert found.version == "0.24.0"
    python, why = interpreter_of(found, f"{script.parent}:/usr/bin:/bin")
    assert why is None and python.endswith("python3")


def test_pips_sh_trampoline_for_long_paths_is_followed(tmp_path):
    # pip writes this when the interpreter's path is too long for a #! line.
    venv = tmp_path / "venv"
    script = fake_env(venv, f"#!/bin/sh\n'''exec' \"{venv}/bin/python3.11\" \"$0\" \"$@\"\n' '''", version="0.29.0")
    found = find_vllm({"PATH": str(script.parent)})
    assert found.version == "0.29.0"
    assert interpreter_of(found) == (f"{venv}/bin/python3.11", None)


def test_a_shell_wrapper_is_never_taken_for_python(tmp_path):
    script = fake_env(tmp_path / "venv", "#!/bin/sh\nexec /opt/real/vllm \"$@\"")
    found = find_vllm({"PATH": str(script.parent)})
    python, why = interpreter_of(found)
    assert python is None and "/bin/sh" in why and "not by a Python interpreter" in why


def test_a_missing_interpreter_is_said(tmp_path):
    script = fake_env(tmp_path / "venv", "#!/gone/venv/bin/python3", python=False)
    python, why = interpreter_of(find_vllm({"PATH": str(script.parent)}))
    assert python is None and "/gone/venv/bin/python3, which does not exist" in why


def test_no_shebang_means_version_unknown(tmp_path):
    script = fake_env(tmp_path / "venv", "echo not a python script")
    found = find_vllm({"PATH": str(script.parent)})
    assert found.version is None and "could not be read" in found.note
    assert interpreter_of(found)[0] is None
    assert interpreter_of(VllmInstall(version=None, importable=False)) == (None, "no vLLM installed")


def test_a_non_executable_vllm_is_named(tmp_path):
    script = fake_env(tmp_path / "venv", "#!/usr/bin/env python3")
    script.chmod(0o644)
    found = find_vllm({"PATH": str(script.parent)})
    assert found.executable is None
    assert f"{script} is not executable" in found.note
