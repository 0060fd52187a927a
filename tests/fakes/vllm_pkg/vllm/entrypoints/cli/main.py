"""Fake ``vllm.entrypoints.cli.main``: the boundary dsv4-serve hands over to, and nothing more.

It records what it was given and then behaves as the test asks, through environment variables:

  FAKE_VLLM_RECORD     JSON file written with {"argv", "pid", "nvml_open", "torch_loaded",
                       "gc_frozen" (objects in the frozen generation when vLLM starts),
                       "gc_enabled" (the collector on when vLLM starts), ...}
  FAKE_VLLM_BEHAVIOUR  "return" (main() returns None), "exit:N" (raises SystemExit(N)),
                       "raise" (raises RuntimeError), "oserror:N" (raises OSError with errno N,
                       as vLLM's own socket bind does on a port in use), "serve" (a long-running server: installs
                       its own SIGTERM/SIGINT handlers, prints to stdout and stderr, and exits
                       with 0 on SIGTERM and 130 on SIGINT, like a server shutting down)
"""

import gc
import json
import os
import signal
import sys
import time


def _nvml_open() -> int:
    """How many nvmlInit calls the fake NVML saw without a matching nvmlShutdown."""
    path = os.environ.get("FAKE_NVML_LOG")
    if not path or not os.path.exists(path):
        return 0
    with open(path) as handle:
        lines = handle.read().split()
    return lines.count("init") - lines.count("shutdown")


def main():
    record = os.environ.get("FAKE_VLLM_RECORD")
    if record:
        with open(record, "w") as handle:
            json.dump(
                {
                    "argv": sys.argv,
                    "pid": os.getpid(),
                    "nvml_open": _nvml_open(),
                    "torch_loaded": "torch" in sys.modules,
                    "gc_frozen": gc.get_freeze_count(),
                    "gc_enabled": gc.isenabled(),
                    "modules": sorted(m for m in sys.modules if not m.startswith("_")),
                    "sigterm_handler": str(signal.getsignal(signal.SIGTERM)),
                    "sigint_handler": str(signal.getsignal(signal.SIGINT)),
                },
                handle,
            )
    behaviour = os.environ.get("FAKE_VLLM_BEHAVIOUR", "return")
    if behaviour == "return":
        return None
    if behaviour.startswith("exit:"):
        raise SystemExit(int(behaviour.split(":", 1)[1]))
    if behaviour == "raise":
        raise RuntimeError("fake vLLM failed during start-up")
    if behaviour.startswith("oserror:"):
        number = int(behaviour.split(":", 1)[1])
        raise OSError(number, os.strerror(number))
    if behaviour == "serve":
        stopping = {}

        def stop(signum, _frame):
            stopping["signal"] = signum

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        print("fake vllm: server up", flush=True)
        print("fake vllm: log line on stderr", file=sys.stderr, flush=True)
        deadline = time.monotonic() + 60
        while "signal" not in stopping and time.monotonic() < deadline:
            time.sleep(0.02)
        print(f"fake vllm: stopping on signal {stopping.get('signal')}", flush=True)
        sys.exit(130 if stopping.get("signal") == signal.SIGINT else 0)
    raise AssertionError(f"unknown FAKE_VLLM_BEHAVIOUR {behaviour!r}")
