"""tools/new_release.py with stand-in releases: two vLLM source trees built from the facts' own
citations (no network, no vLLM) that differ in one cited file. The checklist, read from
core/vllm/facts.py, must list the open-ended facts whose cited lines changed (with their diff)
or whose anchor is gone, table-held facts included (the V2 runner's speculative methods, the
MegaMoE FlashInfer backends), and leave out the facts whose cited files are the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsv4_launch.core.vllm.facts import FACTS
from dsv4_launch.core.vllm.releases import NEWEST_VERIFIED

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "new_release.py"


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def stand_in(root: Path, edit=None) -> Path:
    """A vLLM tree holding every line the facts cite at the newest verified release at its line
    (filler elsewhere); ``edit(path, lines)`` changes a file's lines first."""
    cited: dict[str, dict[int, str]] = {}
    for f in FACTS:
        for c in f.cites:
            if c.release == NEWEST_VERIFIED:
                cited.setdefault(c.path, {})[c.line] = f"        {c.anchor}"
    for path, at in cited.items():
        lines = [at.get(n, f"pass  # {n}") for n in range(1, max(at) + 4)]
        if edit:
            edit(path, lines)
        tree(root, {path: "\n".join(lines) + "\n"})
    return root


@pytest.fixture
def releases(tmp_path):
    """Two stand-in trees of the newest verified release and of a next one, the same."""
    return stand_in(tmp_path / "old"), stand_in(tmp_path / "new")


def checklist(tmp_path, edit) -> dict:
    old, new = stand_in(tmp_path / "old"), stand_in(tmp_path / "new", edit)
    done = run("0.35.0", "--checklist-only", "--old-src", str(old), "--new-src", str(new), "--json")
    assert done.returncode == 0, done.stderr
    return {e["fact"]: e for e in json.loads(done.stdout)["facts"]}


def _change(path: str, line: int, text: str | None = None, insert: bool = False):
    def edit(at: str, lines: list[str]) -> None:
        if at == path:
            lines[line - 1: line - 1 if insert else line] = [text or "        something else"]
    return edit


def test_identical_releases_leave_nothing_to_review(tmp_path):
    assert checklist(tmp_path, None) == {}


def test_a_changed_table_line_is_seen_the_v2_runners_methods(tmp_path):
    # vllm/config/vllm.py differs in one line: the V2 runner's refused methods (a table fact)
    found = checklist(tmp_path, _change("vllm/config/vllm.py", 3123,
                                        '    def _get_gpu_model_runner_unsupported_features(self) -> list[str]:'))
    entry = found["v2-runner-spec-methods"]
    assert entry["review"] and [c["state"] for c in entry["cites"]] == ["anchor not found"]
    # the other facts citing that file: listed, not for review (their lines are the same)
    others = {k for k, e in found.items() if k != "v2-runner-spec-methods"}
    assert "in-flight-tokens" in others and not any(found[k]["review"] for k in others)
    assert {c["state"] for k in others for c in found[k]["cites"]} == {"file changed elsewhere"}
    assert "kv-dtype-by-pydantic" not in found  # cites vllm/config/cache.py: the same


def test_the_megamoe_flashinfer_table_is_seen(tmp_path):
    found = checklist(tmp_path, _change("vllm/config/kernel.py", 149, 'FLASHINFER_MOE_EP_CUTEDSL = "renamed"'))
    states = [c["state"] for c in found["flashinfer-mega-moe-backends"]["cites"]]
    assert found["flashinfer-mega-moe-backends"]["review"] and states == ["anchor not found", "file changed elsewhere"]


def test_changed_cited_lines_come_with_their_diff_and_moved_ones_with_their_citation(tmp_path):
    # a line inserted after DSpark's target-layer line: that statement changed, the next cite moved
    found = checklist(tmp_path, _change("vllm/models/deepseek_v4/nvidia/dspark.py", 101, "        added = 1",
                                        insert=True))
    cite = found["dspark-without-module"]["cites"][0]
    assert cite["state"] == "lines changed" and "+        added = 1" in cite["diff"]
    moved = found["dspark-topk-buffer"]["cites"][0]
    assert moved["state"] == "moved to line 126" and not found["dspark-topk-buffer"]["review"]
    assert (moved["suggest"]
            == "vllm/models/deepseek_v4/nvidia/dspark.py:126@0.35.0 self.topk_indices_buffer = torch.empty(")


def test_a_removed_file_and_a_fact_without_a_citation_are_for_review(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    import new_release

    from dsv4_launch.core.versions import VersionRange
    from dsv4_launch.core.vllm.facts import Cite, Fact

    old = stand_in(tmp_path / "old")
    new = stand_in(tmp_path / "new")
    (new / "vllm/v1/kv_offload/cpu/manager.py").unlink()
    uncited = Fact("uncited", ((VersionRange(since="0.30.0"), True),), (Cite("vllm/x.py", 1, "0.29.0", "x"),))
    monkeypatch.setattr(new_release, "FACTS", (*FACTS, uncited))
    found = {e["fact"]: e for e in new_release.checklist(old, new, "0.35.0")[0]}
    assert [c["state"] for c in found["dspark-kv-offload"]["cites"]] == ["file removed"]
    assert found["uncited"]["review"] and found["uncited"]["cites"][0]["state"] == f"no citation at {NEWEST_VERIFIED}"
    assert set(found) == {"dspark-kv-offload", "uncited"}


def test_the_text_checklist_and_what_comes_after(tmp_path):
    old = stand_in(tmp_path / "old")
    new = stand_in(tmp_path / "new", _change("vllm/config/vllm.py", 3123, "        gone"))
    done = run("0.35.0", "--checklist-only", "--old-src", str(old), "--new-src", str(new))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Checklist for vLLM 0.35.0 (against vLLM {NEWEST_VERIFIED}): 1 of ")
    assert ("- `v2-runner-spec-methods` (≥ 0.34.0)\n    vllm/config/vllm.py:3123@0.34.0 def "
            "_get_model_runner_unsupported_features(self) -> list[str]: — anchor not found") in done.stdout
    assert "Cited files changed elsewhere (the cited lines the same): " in done.stdout
    assert "add 0.35.0 to VERIFIED_RELEASES" in done.stdout


def test_the_citations_for_the_new_release(tmp_path):
    old, new = stand_in(tmp_path / "old"), stand_in(tmp_path / "new")
    done = run("0.35.0", "--checklist-only", "--old-src", str(old), "--new-src", str(new), "--citations")
    assert done.returncode == 0, done.stderr
    listed = {line.split(": ", 1)[0] for line in done.stdout.splitlines()}
    assert listed == {f.id for f in FACTS if f.open_ended}  # every open-ended fact, each at 0.35.0
    assert "v2-runner-spec-methods: 'vllm/config/vllm.py:3123@0.35.0 def _get_model_runner_unsupported_features" \
        in done.stdout


def test_the_steps_it_runs_for_an_installed_vllm(tmp_path):
    done = run("0.35.0", "--vllm-python", "/opt/vllm/bin/python", "--dry-run")
    assert done.returncode == 0, done.stderr
    steps = [x for x in done.stdout.splitlines() if x.startswith("new_release: ")]
    # step 3 runs this interpreter, however it was named (`../venv/bin/python`, a symlink): compared resolved
    interpreter = steps[2].removeprefix("new_release: 3. import set: ").split(" ")[0]
    assert os.path.realpath(interpreter) == os.path.realpath(sys.executable), (interpreter, sys.executable)
    steps[2] = steps[2].replace(interpreter, "PYTHON", 1)
    assert steps == [
        "new_release: 1. vLLM 0.35.0: /opt/vllm/bin/python, with this checkout installed in it",
        "new_release: 2. option table: /opt/vllm/bin/python tools/gen_vllm_options.py",
        "new_release: 3. import set: PYTHON tools/record_vllm_imports.py --python /opt/vllm/bin/python --write",
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
    monkeypatch.setattr(new_release, "step",
                        lambda title, *a, **k: 0 if title[0] in "23" else real_step(title, *a, **k))
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
