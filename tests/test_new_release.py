"""tools/new_release.py with stand-in releases: two tiny vLLM source trees (no network, no vLLM)
where one cited file differs. The checklist must list exactly the open-ended rows, signatures
and memory terms citing that file, and leave out what cites only unchanged files and what is
closed before the newest verified release."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "new_release.py"


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.fixture
def releases(tmp_path):
    same = "def _resolve_dsv4_kv_cache_dtype(): ...\n"
    old = tree(tmp_path / "old", {"vllm/config/vllm.py": "x = 1\n", "vllm/models/deepseek_v4/attention.py": same})
    new = tree(tmp_path / "new", {"vllm/config/vllm.py": "x = 2\ny = 3\n", "vllm/models/deepseek_v4/attention.py": same})
    return old, new


def checklist(releases) -> dict:
    old, new = releases
    done = run("0.35.0", "--checklist-only", "--old-src", str(old), "--new-src", str(new), "--json")
    assert done.returncode == 0, done.stderr
    return {(e["kind"], e["name"]): e for e in json.loads(done.stdout)["review"]}


def test_the_checklist_names_what_cites_the_changed_file(releases):
    found = checklist(releases)
    # open-ended rows citing vllm/config/vllm.py: the changed file, with its diff size
    for row in ("nvfp4-on-mla", "connector-turns-hma-off"):
        files = {f["file"]: f for f in found[("row", row)]["files"]}
        assert files["vllm/config/vllm.py"]["state"] == "changed"
        assert files["vllm/config/vllm.py"]["delta"] == "+2 -1 lines"
    # a memory term citing it in its comment (config/vllm.py:525@0.26, relative to the package)
    assert found[("memory term", "IN_FLIGHT_TOKENS")]["files"][0]["file"] == "vllm/config/vllm.py"


def test_the_checklist_leaves_out_unchanged_files_and_closed_bounds(releases):
    found = checklist(releases)
    assert ("row", "kv-not-fp8") not in found  # cites only deepseek_v4/attention.py: the same in both
    assert ("row", "dspark-pp") not in found  # closed: < 0.30.0
    assert ("row", "sm12-0.27") not in found
    assert not [k for k in found if k[0] == "memory term" and k[1] == "RAY_V1_EXECUTOR"]  # before 0.33.0


def test_a_cited_file_neither_release_has_is_said(releases):
    found = checklist(releases)
    states = {f["state"] for e in found.values() for f in e["files"]}
    assert "not found in either release" in states  # the stand-ins hold two files only
    assert found[("row", "gb10-stock")]["cites_nothing"] is True


def test_the_text_checklist_and_what_comes_after(releases):
    old, new = releases
    done = run("0.35.0", "--checklist-only", "--old-src", str(old), "--new-src", str(new))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Checklist for vLLM 0.35.0 (against vLLM 0.34.0): ")
    assert "- row `nvfp4-on-mla` (all; core/rules (kv.py))\n    vllm/config/vllm.py: changed (+2 -1 lines)" in done.stdout
    assert "add 0.35.0 to VERIFIED_RELEASES" in done.stdout


def test_the_steps_it_runs_for_an_installed_vllm(tmp_path):
    done = run("0.35.0", "--vllm-python", "/opt/vllm/bin/python", "--dry-run")
    assert done.returncode == 0, done.stderr
    steps = [x for x in done.stdout.splitlines() if x.startswith("new_release: ")]
    assert steps == [
        "new_release: 1. vLLM 0.35.0: /opt/vllm/bin/python, with this checkout installed in it",
        "new_release: 2. option table: /opt/vllm/bin/python tools/gen_vllm_options.py",
        f"new_release: 3. import set: {sys.executable} tools/record_vllm_imports.py --python /opt/vllm/bin/python --write",
        "new_release: 4. with DSV4_ORACLE_AS_VERIFIED=0.35.0",
        "new_release: 4. oracle suite: /opt/vllm/bin/python -m pytest -q -p no:cacheprovider -m vllm_real "
        "tests/vllm_real -W ignore::DeprecationWarning -rfE",
    ]
    done = run("0.35.0", "--dry-run")
    assert "new_release: 1. vLLM 0.35.0 in a cached venv: .ci/vllm-venv.sh 0.35.0" in done.stdout
    venv = "$(.ci/vllm-venv.sh 0.35.0)/bin/python"
    assert f"new_release: 1. this checkout into that venv (the plugin oracles load it as vLLM does): {venv} -m pip " \
        "install -q -e ." in done.stdout


# A stand-in for vLLM X's interpreter: this checkout "installed" (the entry-point probe), and a
# pytest that fails one test and errors in another, saying which release it was told to judge.
STUB = """#!/bin/sh
case "$*" in
  *"-m pytest"*) echo "AS_VERIFIED=$DSV4_ORACLE_AS_VERIFIED"
                 echo "FAILED tests/vllm_real/test_a.py::test_one[x] - AssertionError: no"
                 echo "ERROR tests/vllm_real/test_b.py::test_two - RuntimeError: boom"; exit 1;;
  *) echo "%s";;
esac
"""


def _main_with_stub(tmp_path, monkeypatch, capsys, releases, installed):
    sys.path.insert(0, str(ROOT / "tools"))
    import new_release

    stub = tmp_path / "python"
    stub.write_text(STUB % (ROOT / "src" / "dsv4_launch" if installed else ""))
    stub.chmod(0o755)
    real_step = new_release.step
    # steps 2 and 3 write into the checkout (the option table, the import set): not run here
    monkeypatch.setattr(new_release, "step", lambda title, *a, **k: 0 if title[0] in "23" else real_step(title, *a, **k))
    old, new = releases
    status = new_release.main(["0.35.0", "--vllm-python", str(stub), "--old-src", str(old), "--new-src", str(new)])
    return status, capsys.readouterr()


def test_a_failing_oracle_suite_still_gives_the_checklist_and_names_the_tests(tmp_path, monkeypatch, capsys, releases):
    status, out = _main_with_stub(tmp_path, monkeypatch, capsys, releases, installed=True)
    assert status == 1
    assert "AS_VERIFIED=0.35.0" in out.out  # the release judged as verified, for the oracle run only
    assert "new_release: 4. took " in out.out and "(exit 1)" in out.out
    assert "Checklist for vLLM 0.35.0 (against vLLM 0.34.0)" in out.out  # not stopped half-way
    assert ("the oracle suite failed on vLLM 0.35.0 (exit 1), 2 test(s):\n  FAILED tests/vllm_real/test_a.py::"
            "test_one[x]\n  ERROR tests/vllm_real/test_b.py::test_two") in out.err


def test_an_installed_vllm_without_this_checkout_is_told_what_to_install(tmp_path, monkeypatch, capsys, releases):
    status, out = _main_with_stub(tmp_path, monkeypatch, capsys, releases, installed=False)
    assert status == 1 and "Checklist" not in out.out
    assert f"-m pip install -e {ROOT}, or --skip-oracles" in out.err


@pytest.mark.parametrize("args", [["not-a-version"], ["0.35.0", "--checklist-only"],
                                  ["0.35.0", "--checklist-only", "--old-src", "/nonexistent", "--new-src", "/"]])
def test_usage_errors_are_one_line_and_exit_2(args):
    done = run(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.strip()
