#!/usr/bin/env python3
"""A fake ``vllm`` executable for the exec-fallback tests: records argv and PID, then exits.

Its exit status is FAKE_VLLM_EXIT (default 0); the record goes to FAKE_VLLM_RECORD.
"""
import json
import os
import sys

record = os.environ.get("FAKE_VLLM_RECORD")
if record:
    with open(record, "w") as handle:
        json.dump({"argv": sys.argv[1:], "argv0": sys.argv[0], "pid": os.getpid(),
                   "execed_mark": os.environ.get("DSV4_LAUNCH_EXECED")}, handle)
sys.exit(int(os.environ.get("FAKE_VLLM_EXIT", "0")))
