"""The garbage collector while plan, doctor and fit run (commands/collector.py): off for the run;
in the console script the heap frozen for the exit; for an in-process caller back as it was.

Faked: the NVIDIA driver library (the stand-in libnvidia-ml.so.1 under the real nvidia-ml-py) in
the subprocess cases; in process, the GPU capability through DSV4_LAUNCH_GPU_CAPABILITY and the
output stream (a recorder of what the collector was doing at each write).
"""

from __future__ import annotations

import gc
import io
import json
import subprocess
import sys

import pytest

from tests.conftest import RTX_PRO_6000, clean_env

M = "deepseek-ai/DeepSeek-V4-Flash"

# The console script's path (main() reads sys.argv), with a count of the collections that ran.
CONSOLE = r"""
import gc, io, json, sys
from dsv4_launch.commands.cli import main
sys.argv = ["dsv4-launch", *json.loads(sys.argv[1])]
out, sys.stdout = sys.stdout, io.StringIO()
runs = []
gc.collect()  # the young generation's count at zero: its first 700 allocations (main() up to the pause) collect nothing
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start" else None)
status = main() if sys.argv[1:2] != ["--in-process"] else main(sys.argv[2:])
document, sys.stdout = sys.stdout.getvalue(), out
print(json.dumps({"status": status, "collections": len(runs), "frozen": gc.get_freeze_count(),
                  "enabled": gc.isenabled(), "document": json.loads(document)}))
"""

COMMANDS = [
    ["plan", "--json", M, "-tp", "2"],
    ["doctor", "--json", M, "-tp", "2"],
    ["fit", "--json", M],
    ["plan", "--json", "--vllm-version", "0.33.0", M, "-tp", "2", "--kv-cache-dtype", "auto"],
]


def _console(tmp_path, fake_nvml_dir, args):
    env = clean_env(tmp_path, LD_LIBRARY_PATH=str(fake_nvml_dir), FAKE_NVML_GPUS=";".join((RTX_PRO_6000,) * 2))
    done = subprocess.run([sys.executable, "-c", CONSOLE, json.dumps(args)], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_the_console_script_runs_without_a_collection_and_leaves_the_heap_frozen(args, tmp_path, fake_nvml_dir):
    """No collection during the whole command (they were ~35 in a plan: imports and work), and
    everything frozen at its end, so the interpreter's last collection does not walk it; the
    document is the one an in-process run prints (the collector changes nothing it says)."""
    ending = _console(tmp_path, fake_nvml_dir, args)
    in_process = _console(tmp_path, fake_nvml_dir, ["--in-process", *args])
    assert ending["collections"] == 0
    assert ending["frozen"] > 1000 and ending["enabled"]
    assert in_process["frozen"] == 0 and in_process["enabled"]
    assert ending["status"] == in_process["status"] == ending["document"]["exit_status"]
    assert _steady(ending["document"]) == _steady(in_process["document"])
    text = json.dumps(ending["document"])  # the GPUs were read (NVML) inside the pause: their name or size
    assert "RTX PRO 6000" in text or str(97887 * 2**20) in text


def _steady(document: dict) -> dict:
    """The document less this host's live readings (free memory and disk move between two runs)."""
    for memory in (document.get("memory"), (document.get("plan") or {}).get("memory")):
        for key in ("host_memory_available_bytes", "download_free_bytes"):
            if isinstance(memory, dict) and key in memory:
                memory[key] = "live"
    return document


class _Recorder(io.StringIO):
    """stdout that notes, at each write, whether the collector was on."""

    def __init__(self) -> None:
        super().__init__()
        self.collector_on: list[bool] = []

    def write(self, text: str) -> int:
        self.collector_on.append(gc.isenabled())
        return super().write(text)


@pytest.mark.parametrize("was_enabled", [True, False])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_an_in_process_caller_gets_its_collector_back_as_it_was(args, was_enabled, monkeypatch):
    from dsv4_launch.commands.cli import main

    monkeypatch.setenv("DSV4_LAUNCH_GPU_CAPABILITY", "12.0")
    out = _Recorder()
    monkeypatch.setattr(sys, "stdout", out)
    frozen = gc.get_freeze_count()
    (gc.enable if was_enabled else gc.disable)()
    try:
        status = main(args)
        after = gc.isenabled()
    finally:
        gc.enable()
    assert out.collector_on and not any(out.collector_on)  # the output was written inside the pause
    assert after is was_enabled
    assert gc.get_freeze_count() == frozen  # nothing of the caller's frozen
    assert json.loads(out.getvalue())["exit_status"] == status


class _Interrupting(io.StringIO):
    def write(self, text: str) -> int:
        raise KeyboardInterrupt


def test_the_collector_is_back_when_the_run_is_interrupted(monkeypatch):
    from dsv4_launch.commands.cli import main

    monkeypatch.setenv("DSV4_LAUNCH_GPU_CAPABILITY", "12.0")
    monkeypatch.setattr(sys, "stdout", _Interrupting())
    assert gc.isenabled()
    with pytest.raises(KeyboardInterrupt):
        main(["plan", "--json", M])
    assert gc.isenabled()


def test_serve_and_the_other_commands_do_not_pause(tmp_path, fake_nvml_dir):
    """Only plan, doctor and fit: dsv4-serve hands over to vLLM in this process (which must run
    with its collector on; adapters/handover.py collects and freezes once), and check/explain
    read servers and logs of any length."""
    env = clean_env(tmp_path)
    script = ("import gc, sys\nfrom dsv4_launch.commands.cli import main\nsys.argv = ['dsv4-launch', 'explain', "
              "'--json', sys.argv[1]]\nmain()\nprint(gc.isenabled(), gc.get_freeze_count())")
    log = tmp_path / "vllm.log"
    log.write_text("INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.33.0\n")
    done = subprocess.run([sys.executable, "-c", script, str(log)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["True", "0"]
