"""The planning path stays light: no torch or vllm before the hand-over, rich and PyYAML only
when used, no click on the dsv4-serve path, and no import-time side effects.

Faked: vLLM's entry point (it records sys.modules at the moment of the hand-over).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import RTX_PRO_6000, clean_env

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "vllm_imports"  # tools/record_vllm_imports.py


def imported_by_every_recorded_vllm() -> set[str]:
    """What `import vllm.entrypoints.cli.main` leaves in sys.modules in every recorded release."""
    sets = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(RECORDED.glob("vllm-*.json"))]
    assert len(sets) >= 3, "the pinned releases' import sets are recorded"
    return set.intersection(*({*r["stdlib"], *r["third_party"]} for r in sets))

TWO = (RTX_PRO_6000, RTX_PRO_6000)  # DeepSeek-V4-Flash's weights need two 96 GB GPUs


def modules_at_handover(run_cli, *args, **kw):
    done, record = run_cli("dsv4-serve", *args, **kw)
    assert done.returncode == 0, done.stderr
    return set(record["modules"])


def test_nothing_heavy_before_handover(run_cli):
    mods = modules_at_handover(run_cli, "deepseek-ai/DeepSeek-V4-Flash", "-tp", "2", gpus=TWO)
    assert "torch" not in mods
    assert {m for m in mods if m.startswith("vllm")} <= {
        "vllm", "vllm.entrypoints", "vllm.entrypoints.cli", "vllm.entrypoints.cli.main"}
    assert "rich" not in mods  # output is not a terminal
    assert "yaml" not in mods  # no --config
    assert "click" not in mods  # dsv4-serve parses nothing of its own
    assert "pynvml" in mods  # the GPUs were read
    # pynvml imports ctypes.util (and with it subprocess, shutil, tempfile): vLLM's CLI imports
    # each of them itself in every recorded release, so a start pays nothing for them.
    moved = {"ctypes.util", "subprocess", "shutil", "tempfile"}
    assert moved <= mods and moved <= imported_by_every_recorded_vllm()
    # the rest of the start-up budget (benchmarks/bench.py): avoided; each costs plan milliseconds
    for heavy in ("typing", "dataclasses", "inspect", "pathlib", "importlib.metadata", "packaging", "glob",
                  "importlib.util"):
        assert heavy not in mods, f"{heavy} is imported before the hand-over"


def test_yaml_only_with_a_config_file(run_cli, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: deepseek-ai/DeepSeek-V4-Flash\ntensor_parallel_size: 2\n")
    assert "yaml" in modules_at_handover(run_cli, "--config", str(path), gpus=TWO)


def test_importing_every_module_has_no_side_effects(tmp_path):
    code = (
        "import io, sys, os, signal, pkgutil, importlib, dsv4_launch\n"
        "before = (list(sys.argv), dict(os.environ), signal.getsignal(signal.SIGINT), "
        "signal.getsignal(signal.SIGTERM))\nout, err = sys.stdout, sys.stderr\n"
        "sys.stdout, sys.stderr = io.StringIO(), io.StringIO()\n"
        "names = [m.name for m in pkgutil.walk_packages(dsv4_launch.__path__, 'dsv4_launch.')]\n"
        "for n in names: importlib.import_module(n)\n"
        "printed = sys.stdout.getvalue() + sys.stderr.getvalue()\n"
        "sys.stdout, sys.stderr = out, err\n"
        "after = (list(sys.argv), dict(os.environ), signal.getsignal(signal.SIGINT), "
        "signal.getsignal(signal.SIGTERM))\nimport json; print(json.dumps({'same': before == after, 'printed': "
        "printed, 'n': len(names), 'heavy': sorted(m for m in ('torch', 'vllm', 'pynvml') if m in sys.modules)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=clean_env(tmp_path), capture_output=True, text=True)
    result = json.loads(done.stdout)
    assert result == {"same": True, "printed": "", "n": result["n"], "heavy": []}
    assert result["n"] >= 30


def test_signal_handlers_are_left_to_vllm(run_cli, tmp_path):
    # What a fresh interpreter has in this same environment (SIGINT may be ignored when the
    # test run itself is in the background): dsv4-serve must hand vLLM exactly that.
    probe = "import signal; print(signal.getsignal(signal.SIGTERM)); print(signal.getsignal(signal.SIGINT))"
    fresh = subprocess.run([sys.executable, "-c", probe], env=clean_env(tmp_path), capture_output=True, text=True)
    sigterm, sigint = fresh.stdout.splitlines()
    _, record = run_cli("dsv4-serve", "deepseek-ai/DeepSeek-V4-Flash", "-tp", "2", gpus=TWO)
    assert record["sigterm_handler"] == sigterm
    assert record["sigint_handler"] == sigint


def test_no_regex_is_compiled_when_the_hand_over_path_is_imported(tmp_path):
    """Patterns compile at first use (README "What it took"): importing dsv4-serve's modules
    compiles none of ours — a pattern at module level costs every start ~50–100 µs."""
    code = (
        "import re, sys\n"
        "seen = []\n"
        "real = re._compile\n"
        "def spy(pattern, flags):\n"
        "    caller = sys._getframe(2).f_code.co_filename\n"
        "    if 'dsv4_launch' in caller: seen.append((caller.rsplit('/', 1)[-1], str(pattern)[:40]))\n"
        "    return real(pattern, flags)\n"
        "re._compile = spy\n"
        "import dsv4_launch.commands.serve\n"
        "print(seen)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=clean_env(tmp_path), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_the_start_imports_no_standard_module_a_recorded_vllm_does_not(run_cli):
    """What dsv4-serve imports that vLLM's CLI imports anyway costs a start nothing (it hands over in
    the same process); anything else is paid on every start of some release (shlex: 0.34's CLI
    does not import it). Our own modules: the door's declarations are not on this path."""
    mods = modules_at_handover(run_cli, "deepseek-ai/DeepSeek-V4-Flash", "-tp", "2", gpus=TWO)
    shared = imported_by_every_recorded_vllm()
    ours = {m for m in mods if m.split(".")[0] in ("dsv4_launch", "pynvml", "tests", "vllm")}
    assert not mods - shared - ours
    assert "dsv4_launch.commands.own_options" not in mods
