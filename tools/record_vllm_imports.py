#!/usr/bin/env python3
"""Record what ``import vllm.entrypoints.cli.main`` leaves in ``sys.modules``, per vLLM release.

    python tools/record_vllm_imports.py --python /path/to/venv-with-vllm/bin/python [--write]

dsv4-serve hands over to vLLM in the same process, so a module it imports costs a real start
nothing when vLLM's CLI imports it anyway. This records that set for one release (standard
library modules by full name, third-party packages by top-level name; vLLM's own modules
left out), run in a fresh interpreter of that vLLM's environment on the CPU platform
(``VLLM_TARGET_DEVICE=cpu``). ``--write`` stores it as benchmarks/vllm_imports/vllm-<version>.json:
benchmarks/bench.py's "vllm stub+" imports exactly that set for the release it measures, and
tests/project/test_imports.py allows on the hand-over path only what some recorded release imports.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "vllm_imports"

PROBE = r"""
import json, sys
before = set(sys.modules)
import vllm.entrypoints.cli.main
import importlib.metadata
after = set(sys.modules)
stdlib = set(sys.stdlib_module_names)
new = sorted(after - before)
print(json.dumps({
    "vllm_version": importlib.metadata.version("vllm"),
    "python": "%d.%d" % sys.version_info[:2],
    "stdlib": sorted(m for m in after if m.split(".")[0] in stdlib and m != "__main__"),
    "third_party": sorted({m.split(".")[0] for m in new if m.split(".")[0] not in stdlib
                           and m.split(".")[0] not in ("vllm", "dsv4_launch", "__main__")}),
}))
"""


def record(python: str) -> dict:
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "PYTHONNOUSERSITE": "1"}
    done = subprocess.run([python, "-I", "-c", PROBE], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"record_vllm_imports: {python} could not import vLLM's CLI:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="an interpreter whose environment has vLLM")
    parser.add_argument("--write", action="store_true", help="store it under benchmarks/vllm_imports/")
    opts = parser.parse_args()
    found = record(opts.python)
    text = json.dumps(found, indent=1, sort_keys=True) + "\n"
    if opts.write:
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / f"vllm-{found['vllm_version']}.json"
        path.write_text(text, encoding="utf-8")
        print(f"record_vllm_imports: {path} ({len(found['stdlib'])} stdlib modules, "
              f"{len(found['third_party'])} third-party packages)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
