#!/usr/bin/env python3
"""A fake ``vllm`` executable on PATH (the exec-fallback tests and the shell snippet tests).

It behaves exactly like the fake in-process entry point (fakes/vllm_pkg/vllm/entrypoints/cli/
main.py: FAKE_VLLM_RECORD, FAKE_VLLM_BEHAVIOUR), with ``sys.argv`` as `vllm` sees it, and
also honours FAKE_VLLM_EXIT (exit status for the default "return" behaviour).
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(os.path.realpath(__file__)).parent / "vllm_pkg"))
from vllm.entrypoints.cli.main import main  # noqa: E402  (the fake, not a real vLLM)

sys.argv = ["vllm", *sys.argv[1:]]
result = main()
sys.exit(int(os.environ.get("FAKE_VLLM_EXIT", "0")) if result is None else result)
