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


def importable_vllm(site, version="0.30.0", extra_dist_infos=()):
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    for name in (f"vllm-{version}.dist-info", *extra_dist_infos):
        (site / name).mkdir()
        (site / name / "METADATA").write_text(f"Name: vllm\nVersion: {name[5:-10]}\n\n")


def test_an_importable_vllm_is_found_as_importlib_finds_it(tmp_path, monkeypatch):
    import importlib.util

    importable_vllm(tmp_path / "site", extra_dist_infos=("vllm_flash_attn-2.0.dist-info",))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    found = find_vllm({"PATH": ""})
    assert (found.version, found.importable) == ("0.30.0", True)
    # the finder we ask is the one importlib asks
    from dsv4_launch.adapters.vllm_install import _find_spec

    for name in ("vllm", "json", "no_such_module_here"):
        ours, theirs = _find_spec(name), importlib.util.find_spec(name)
        assert (ours is None) == (theirs is None) and (ours is None or ours.origin == theirs.origin)


def test_two_dist_infos_beside_the_package_are_not_guessed_between(tmp_path, monkeypatch):
    importable_vllm(tmp_path / "site", extra_dist_infos=("vllm-0.29.0.dist-info",))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    import dsv4_launch.adapters.vllm_install as vi

    monkeypatch.setattr(vi, "_version_from_metadata", lambda: None)  # the slow fallback, off
    assert find_vllm({"PATH": ""}).version is None  # two candidates: not read beside the package


class BrokenFinder:
    def __init__(self, exc):
        self.exc = exc

    def find_spec(self, name, path, target=None):
        if name == "vllm":
            raise self.exc
        return None


def test_a_broken_import_hook_is_said_not_raised(tmp_path, monkeypatch):
    # An editable install's finder that raises (any exception) must not stop dsv4-serve: the
    # `vllm` on PATH is used, as plain `vllm serve` would be.
    script = fake_env(tmp_path / "venv", f"#!{tmp_path}/venv/bin/python3.11")
    for exc in (ImportError("x"), TypeError("y"), AttributeError("z")):
        monkeypatch.setattr(sys, "meta_path", [BrokenFinder(exc), *sys.meta_path])
        monkeypatch.delitem(sys.modules, "vllm", raising=False)
        found = find_vllm({"PATH": str(script.parent)})
        assert (found.importable, found.executable, found.version) == (False, str(script), "0.33.0")
        found = find_vllm({"PATH": ""})
        assert found.executable is None and type(exc).__name__ in found.note
        monkeypatch.undo()
