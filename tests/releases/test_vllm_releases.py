"""The one release table (core/vllm/releases.py) against what depends on it: the recorded option
tables, CI's pins as .ci/run reads them, the plugin, and the order of the releases."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dsv4_launch.core.versions import parse_version
from dsv4_launch.core.vllm import releases as vllm_releases
from dsv4_launch.vllm_cli.option_table import available_versions

ROOT = Path(__file__).resolve().parents[2]


def test_the_verified_releases_are_the_recorded_option_tables_in_order():
    assert list(vllm_releases.VERIFIED_RELEASES) == available_versions()
    assert sorted(vllm_releases.VERIFIED_RELEASES, key=parse_version) == list(vllm_releases.VERIFIED_RELEASES)
    assert vllm_releases.NEWEST_VERIFIED == vllm_releases.VERIFIED_RELEASES[-1]


def test_ci_pins_verified_releases_and_the_newest():
    assert set(vllm_releases.CI_RELEASES) <= set(vllm_releases.VERIFIED_RELEASES)
    assert vllm_releases.CI_RELEASES[-1] == vllm_releases.NEWEST_VERIFIED


def test_ci_reads_its_pins_from_the_table():
    # the very line .ci/run runs (bash), so that the pins cannot drift from the table
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (line,) = [x for x in run.splitlines() if x.startswith("read -r -a VLLM_VERSIONS")]
    assert "VLLM_VERSIONS=(" not in run
    done = subprocess.run(["bash", "-c", f'py=python3; {line}; echo "${{VLLM_VERSIONS[@]}}"'], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.split() == list(vllm_releases.CI_RELEASES), done.stderr


def test_the_plugin_verifies_exactly_the_table():
    from dsv4_launch import plugin

    assert plugin.VERIFIED_RELEASES is vllm_releases.VERIFIED_RELEASES


def test_the_table_imports_nothing():
    # .ci/run reads it with runpy before any environment exists
    text = (ROOT / "src/dsv4_launch/core/vllm/releases.py").read_text(encoding="utf-8")
    assert not [x for x in text.splitlines() if x.startswith(("import ", "from "))]
