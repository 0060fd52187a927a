"""README.md is a front door that stays true: short, its examples the tools' real output, every
link landing on a file and heading that exist, the module map naming modules that exist.
Fakes: the stand-in NVML (tests/fakes/fake_nvml.c) and vLLM entry point, as in tests/conftest.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import RTX_PRO_6000

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]


def block_after(text: str, command: str) -> list[str]:
    """The indented lines printed under ``    $ command`` up to the next ``$`` line or blank line."""
    start = text.index(f"    $ {command}\n") + len(f"    $ {command}\n")
    lines = []
    for line in text[start:].splitlines():
        if not line.startswith("    ") or line.startswith("    $ "):
            break
        lines.append(line[4:])
    return lines


def test_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move reference text to docs/"
    # CI runs "README's test command"; the quick start installs no developer tools for a user
    text = README.read_text()
    assert "\n    python -m pytest\n" in text
    first = text.split("## A first command", 1)[1].split("\n## ", 1)[0]
    assert "[test]" not in first and ".ci/" not in first


def test_readme_first_command_is_the_real_output(run_cli):
    """No GPU (no NVML library, no nvidia-smi), no vLLM, nothing but dsv4-launch: exit 0 and the fix."""
    command = ("dsv4-launch plan deepseek-ai/DeepSeek-V4-Flash -tp 2 --max-model-len 65536 --gpus 2xRTXPRO6000 "
               "--vllm-version 0.24.0")
    shown = block_after(README.read_text(), command)
    done, _ = run_cli(*command.split(), gpus=None, vllm=None, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == shown, "README's first command is stale: paste the new output"
    assert any(line.startswith("changed: --kv-cache-dtype (not set) → fp8") for line in shown)


def test_readme_why_example_is_the_real_output(run_cli):
    """The seed's command on two RTX PRO 6000 (stand-in NVML) with a stand-in vLLM 0.24.0:
    dsv4-serve's own lines, then vLLM's output (the stand-in prints none)."""
    command = "dsv4-serve deepseek-ai/DeepSeek-V4-Flash -tp 2 --max-model-len 32768 --port 8000"
    shown = block_after(README.read_text(), command)
    assert shown[-1] == "... vLLM's own output from here on ..."
    done, record = run_cli(*command.split(), gpus=(RTX_PRO_6000,) * 2, vllm="0.24.0", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == shown[:-1], "README's Why example is stale: paste the new output"
    assert record["argv"][-2:] == ["--kv-cache-dtype", "fp8"]


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for a Markdown file's headings."""
    found = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_lands(path):
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists():
            broken.append(target)
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(target)
    assert broken == [], f"{path.name}: {broken}"


def test_the_link_check_finds_what_it_should(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("# A\n## Without changing your command: the vLLM plugin\n")
    assert "without-changing-your-command-the-vllm-plugin" in anchors(page)
    assert LINK.findall("see [x](docs/x.md#y) and [y](https://e.org)") == ["docs/x.md#y", "https://e.org"]


def test_the_module_map_names_modules_that_exist():
    """docs/development.md's "Where things live": every module it names is in the room it is
    named under, and every package of src/dsv4_launch is there."""
    text = (ROOT / "docs" / "development.md").read_text()
    block = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    src = ROOT / "src" / "dsv4_launch"
    room = None
    missing = []
    for line in block.splitlines():
        head = re.match(r"\s{6}(\w+)/\s", line) or re.match(r"\s{8}(\w+)/\s", line)
        if re.match(r"\s{6}\w+/\s", line):
            room = src / head.group(1)
        elif re.match(r"\s{8}\w+/\s", line):
            room = src / "core" / head.group(1)
        elif re.match(r"\s{8}\(flat\)", line):
            room = src / "core"
        elif re.match(r"\s{4}(tools|benchmarks)/", line):
            room = ROOT / line.split("/")[0].strip()
        if room is None:
            continue
        for name in re.findall(r"\b(\w+\.py)\b", line):
            if not (room / name).exists() and not (src / name).exists():
                missing.append(f"{room.relative_to(ROOT)}/{name}")
    assert missing == [], missing
    packages = {p.parent.relative_to(src).as_posix() for p in src.rglob("__init__.py")} - {"."}
    named = set(re.findall(r"\s(\w+)/\s", block))
    assert {p.split("/")[-1] for p in packages} <= named, sorted({p.split("/")[-1] for p in packages} - named)


def test_httpx_is_in_the_test_extras():
    """`check`'s client tests run with httpx in the default suite (tests/check/test_check.py)."""
    text = (ROOT / "pyproject.toml").read_text()
    extras = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    test = extras.split("test = [", 1)[1].split("\n]", 1)[0]
    assert re.search(r'^\s*"httpx>=[\d.]+",', test, re.M), test


REPO_PATH = re.compile(r"`((?:src|tests|tools|benchmarks|examples|docs|\.ci)/[\w./*-]*)`")
OURS = [README, *(ROOT / "docs" / n for n in ("commands.md", "deployment.md", "development.md", "output.md",
                                              "performance.md", "rules.md"))]


@pytest.mark.parametrize("path", OURS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_named_exists(path):
    """A file or folder of this repository named in backticks (`tests/adapters/test_process.py`,
    `src/dsv4_launch/data/serve-options-*.json`) is there: moved code leaves no stale pointer."""
    missing = [p for p in REPO_PATH.findall(path.read_text()) if not list(ROOT.glob(p.rstrip("/")))]
    assert missing == [], missing


INSTALL_LINE = re.compile(r"^\s*(?:pip|pipx|uv(?: tool| pip)?|python3? -m pip) (?:install|inject)\b")


def prose_install_lines(text: str) -> list[str]:
    """Install commands written as prose: outside a fenced block and not an indented code block
    (indented by four, after a blank line or another code line), where Markdown runs them into
    the paragraph around them."""
    found, fenced, code, previous = [], False, False, ""
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced, code = not fenced, False
        elif not fenced:
            code = line.startswith("    ") and (code or not previous.strip())
            if INSTALL_LINE.match(line) and not code:
                found.append(line.strip())
        previous = line
    return found


@pytest.mark.parametrize("path", OURS, ids=lambda p: str(p.relative_to(ROOT)))
def test_install_commands_are_code_blocks(path):
    assert prose_install_lines(path.read_text()) == []


def test_an_install_line_in_a_paragraph_is_found():
    assert prose_install_lines("Text\npip install .  # here\n    pip install '.[vllm]'\n") == [
        "pip install .  # here", "pip install '.[vllm]'"]
    assert prose_install_lines("Text\n\n    pip install .\n    uv tool install .\n\n```\npip install x\n```\n") == []
