"""docs/commands.md's `dsv4-launch fit --gpus 4` example is what the tool prints today (stand-in
NVML with four RTX PRO 6000, as the text says; stand-in vLLM 0.24.0 installed)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RTX_PRO_6000

README = Path(__file__).resolve().parents[2] / "docs" / "commands.md"
COMMAND = "    $ dsv4-launch fit --gpus 4\n"


def readme_block() -> list[str]:
    text = README.read_text()
    start = text.index(COMMAND) + len(COMMAND)
    block = text[start:text.index("\n\n", start)]
    return [line[4:] for line in block.splitlines()]


def test_readme_fit_example_is_the_real_output(run_cli):
    done, _ = run_cli("dsv4-launch", "fit", "--gpus", "4", gpus=(RTX_PRO_6000,) * 4, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == readme_block(), "docs/commands.md's fit example is stale: paste the new output"
