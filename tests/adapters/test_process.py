"""dsv4-serve behaves like `vllm serve` to its supervisor: one process (vLLM's), vLLM's own
signal handling and exit status, vLLM's stdout/stderr untouched, nothing left running.

The real console script runs as a subprocess; vLLM is the fake entry point in "serve" mode
(a long-running server with its own SIGTERM/SIGINT handlers), in-process or, for the exec
fallback, as the `vllm` executable on PATH.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BIN, RTX_PRO_6000, clean_env, install_fake_vllm_executable

M = "deepseek-ai/DeepSeek-V4-Flash"


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(t) for t in text]
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


@pytest.fixture
def start(tmp_path, fake_nvml_dir, fake_vllm_path):
    procs = []

    def run(exec_fallback: bool = False):
        record = tmp_path / "record.json"
        env = clean_env(tmp_path, FAKE_VLLM_RECORD=str(record), FAKE_VLLM_BEHAVIOUR="serve",
                        LD_LIBRARY_PATH=str(fake_nvml_dir), FAKE_NVML_GPUS=f"{RTX_PRO_6000};{RTX_PRO_6000}")
        if exec_fallback:
            bindir = install_fake_vllm_executable(tmp_path / "vllm-env" / "bin")
            env["PATH"] = f"{BIN}{os.pathsep}{bindir}{os.pathsep}/usr/bin:/bin"
        else:
            env["PYTHONPATH"] = str(fake_vllm_path("0.24.0"))
        proc = subprocess.Popen([str(BIN / "dsv4-serve"), M, "-tp", "2", "--port", "8000"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        first = proc.stdout.readline()  # the server's own first line: it is up
        assert first == "fake vllm: server up\n", first + proc.stderr.read()
        deadline = time.monotonic() + 10
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return proc, json.loads(record.read_text())

    yield run
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("exec_fallback", [False, True], ids=["in-process", "exec-fallback"])
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_signals_reach_the_server_and_its_status_comes_back(start, exec_fallback, sig, code):
    proc, record = start(exec_fallback)
    assert record["pid"] == proc.pid  # no process of ours in between
    assert record["argv"][-2:] == ["--kv-cache-dtype", "fp8"]
    assert children(proc.pid) == []  # and none beside it
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code
    # the server's own output, untouched and in order
    assert out == f"fake vllm: stopping on signal {int(sig)}\n"
    assert "fake vllm: log line on stderr\n" in err
    assert err.index("dsv4-serve: command:") < err.index("fake vllm: log line on stderr")
    assert not alive(record["pid"])
