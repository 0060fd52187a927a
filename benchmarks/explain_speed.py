"""How fast ``dsv4-launch explain`` reads a log: MB of log a second, in this process.

Logs of ~8 MB (``--mb``) are built in a temporary folder from this project's fixture logs, each
repeated (tests/fixtures/logs/*.log and, when present, the field corpus tests/fixtures/logs/field/*.log,
joined), and from the lines that were slow before (issue 30.5): vLLM's ``non-default args`` line,
repeated as a log of restarts prints it, and every one different (distinct values: nothing can
be remembered), and a log of 64 KiB lines (the reader's limit). Each is read ``--runs`` times
through the same code as the command (``commands/explain.scan_source`` and ``explain_data``);
the best run is reported, as MB per CPU second of this process (``time.process_time``: what
a shared, busy machine changes least) and MB per wall-clock second.
Run: ``python benchmarks/explain_speed.py [--mb 8] [--runs 3] [--json FILE]``.
Not a test: timings are never asserted in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

ARGS = ("(APIServer pid=1) INFO 12-01 08:00:00 [entrypoints/.../utils/api_utils.py:273] non-default args: "
        "{{'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'host': '0.0.0.0', 'port': {port}, 'api_key': ['sk-{i:08d}x', "
        "'sk-second-{i}'], 'model': 'deepseek-ai/DeepSeek-V4-Flash', 'served_model_name': ['deepseek-v4-flash'], "
        "'tensor_parallel_size': 4, 'enable_expert_parallel': True, 'max_model_len': {len}, 'kv_cache_dtype': 'fp8', "
        "'speculative_config': {{'method': 'mtp', 'num_speculative_tokens': 2}}, 'compilation_config': "
        "{{'cudagraph_mode': 'FULL_AND_PIECEWISE', 'pass_config': {{'fuse_norm_quant': True}}}}}}")


def _repeat(text: str, size: int) -> str:
    return text * max(1, size // max(len(text), 1) + 1)


def build(folder: Path, size: int) -> dict[str, Path]:
    logs = {}
    fixtures = sorted((ROOT / "tests" / "fixtures" / "logs").glob("*.log"))
    for path in fixtures:
        logs[f"fixture:{path.name}"] = path.read_text(encoding="utf-8", errors="replace")
    field = sorted((ROOT / "tests" / "fixtures" / "logs" / "field").glob("*.log"))
    if field:
        logs["field corpus (all, joined)"] = "".join(p.read_text(encoding="utf-8", errors="replace") + "\n"
                                                      for p in field)
    one = ARGS.format(port=8000, i=1, len=262144) + "\n"
    logs["args lines, the same one repeated"] = one
    distinct = "".join(ARGS.format(port=8000 + i % 1000, i=i, len=4096 + i) + "\n" for i in range(size // len(one) + 1))
    logs["args lines, every one different"] = distinct
    logs["64 KiB lines"] = (("x" * 65535 + "\n") * 4
                            + "AssertionError: DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got auto\n")
    paths = {}
    for i, (name, text) in enumerate(logs.items()):
        path = folder / f"log{i}.log"
        path.write_text(_repeat(text, size)[: max(size, len(text))], encoding="utf-8")
        paths[name] = path
    return paths


def measure(path: Path, runs: int) -> dict:
    from dsv4_launch.commands.explain import explain_data, scan_source

    best = cpu_best = float("inf")
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        scan = scan_source(str(path))
        explain_data(scan, str(path), {})
        best = min(best, time.perf_counter() - start)
        cpu_best = min(cpu_best, time.process_time() - cpu)
    size = path.stat().st_size
    return {"bytes": size, "lines": scan.lines, "seconds": round(best, 3), "cpu_seconds": round(cpu_best, 3),
            "mb_per_s": round(size / 1e6 / best, 1), "mb_per_cpu_s": round(size / 1e6 / cpu_best, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = build(Path(tmp), int(args.mb * 1e6))
        results = {name: measure(path, args.runs) for name, path in paths.items()}
    doc = {"what": "dsv4-launch explain, MB of log a second (best of runs, in-process)", "runs": args.runs,
           "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
           "load_average": os.getloadavg(), "results": results}
    width = max(map(len, results))
    for name, r in results.items():
        print(f"{name:<{width}}  {r['mb_per_cpu_s']:>6.1f} MB per CPU second, {r['mb_per_s']:>6.1f} MB/s wall  "
              f"({r['bytes'] / 1e6:.1f} MB, {r['lines']:,} lines)")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
