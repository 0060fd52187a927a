#!/usr/bin/env python3
"""Check dsv4-launch's GPU reading on a machine with a real NVIDIA driver (a few minutes at most).

Everything else in the test suite reads NVML through the stand-in library
(tests/fakes/fake_nvml.c). Run this wherever a real GPU is available, with the Python that has
dsv4-launch (and, for the torch comparison, ``--python`` naming the Python that has torch —
the vLLM environment):

    python tools/gpu_check.py [--python /path/to/vllm-venv/bin/python] [--json]

It checks, and prints one line per check (OK / MISMATCH / SKIP) to stdout:

1. the NVML adapter (``adapters/nvml.read_gpus``) on the real driver against
   ``nvidia-smi --query-gpu=index,uuid,name,compute_cap,memory.total --format=csv,noheader``
   (index, UUID, name, compute capability, memory to the MiB);
2. NVML is shut down when the probe returns, and after the whole ``dsv4-serve`` preparation
   (``pipeline.prepare``), i.e. before the hand-over: NVML answers "Uninitialized";
3. CUDA is not initialised in this (the parent) process: no ``libcuda`` mapped, no torch
   imported — checked before the child processes below start;
4. ``torch.cuda.get_device_capability()`` and the device list, asked in a child process after
   the probe, for each ``CUDA_VISIBLE_DEVICES`` form — unset, ``""``, ``"0"``, the first GPU's
   UUID prefix (``GPU-xxxxxxxx``), ``"0,-1,1"`` (CUDA stops at the invalid entry) — against
   ``core/gpus.select_visible`` (with ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, where the order is
   exact; and unset, where it is exact only for identical GPUs).

With ``--profile`` (and ``--python`` naming the Python that has vLLM), it also records vLLM's
own memory profile for a small DeepSeek-V4-shaped model — V4-Flash's config.json with
``--profile-layers`` decoder layers (default 4), dummy weights, no tokenizer, one GPU — at each
``--profile-batched-tokens`` (default 8192 and 2048): what vLLM logs as the weights ("Model
loading took"), the profile run's peak activation, non-torch memory, the CUDA-graph estimate and
the graphs actually captured, and the available KV cache memory. Each is set beside
dsv4-launch's band for the same settings (core/memory/budget.py): OK inside it, OUTSIDE (a
mismatch: the band must move) outside it. ``--profile-out FILE`` keeps the records as JSON
(docs/memory.md says which band each one narrows). About 3–5 minutes a run on one H200.

Exit status: 0 when nothing disagrees (a SKIP is not a failure: no GPU, no nvidia-smi, no
torch), 1 when something does, 2 for bad arguments. Without a GPU it prints why every check
was skipped and exits 0, so a test can run it anywhere (tests/project/test_gpu_check.py runs it with
no NVML library and with the stand-in one).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

OK, MISMATCH, SKIP = "OK", "MISMATCH", "SKIP"
OUTSIDE = MISMATCH  # a measurement outside dsv4-launch's band: the band is wrong
SMI_QUERY = "index,uuid,name,compute_cap,memory.total"
CHILD_TIMEOUT = 120

TORCH_CHILD = r"""
import json, torch
out = {"count": torch.cuda.device_count(), "devices": [], "cuda": torch.version.cuda}
for i in range(out["count"]):
    p = torch.cuda.get_device_properties(i)
    out["devices"].append({"name": p.name, "cc": list(torch.cuda.get_device_capability(i)),
                           "uuid": str(getattr(p, "uuid", "") or ""), "memory": int(p.total_memory)})
print(json.dumps(out))
"""


class Report:
    def __init__(self, as_json: bool):
        self.as_json, self.rows = as_json, []

    def add(self, status: str, check: str, detail: str) -> None:
        self.rows.append({"status": status, "check": check, "detail": detail})
        if not self.as_json:
            print(f"{status:<8} {check}: {detail}", flush=True)

    @property
    def failed(self) -> bool:
        return any(r["status"] == MISMATCH for r in self.rows)


def cuda_in_process() -> list[str]:
    """CUDA libraries mapped into this process (libcuda, libcudart), and torch if imported."""
    found = ["torch imported"] if "torch" in sys.modules else []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                name = line.rsplit("/", 1)[-1].strip()
                if name.startswith(("libcuda.so", "libcudart.so")) and name not in found:
                    found.append(name)
    except OSError:
        pass
    return found


def nvml_initialised() -> bool | None:
    """Whether NVML is initialised in this process (None: pynvml cannot be imported)."""
    try:
        import pynvml
    except Exception:
        return None
    try:
        pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError:
        return False  # NVML_ERROR_UNINITIALIZED (or the library is gone): not initialised
    except Exception:
        return False
    return True


def smi_rows() -> tuple[list[dict] | None, str | None]:
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={SMI_QUERY}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return None, "nvidia-smi not found on PATH"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"nvidia-smi failed: {exc}"
    if done.returncode != 0:
        return None, f"nvidia-smi exited {done.returncode}: {(done.stderr or done.stdout).strip()[:200]}"
    rows = []
    for line in done.stdout.strip().splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 5:
            return None, f"unexpected nvidia-smi line: {line[:200]!r}"
        index, uuid, name, cc, memory = fields
        mib = memory.split()[0] if memory.split() else ""
        rows.append({"index": int(index) if index.isdigit() else index, "uuid": uuid, "name": name, "cc": cc,
                     "memory_mib": int(mib) if mib.isdigit() else None})
    return rows, None


def compare_smi(report: Report, gpus) -> None:
    rows, why = smi_rows()
    if rows is None:
        report.add(SKIP, "NVML vs nvidia-smi", why)
        return
    if len(rows) != len(gpus):
        report.add(MISMATCH, "NVML vs nvidia-smi", f"{len(gpus)} GPUs from NVML, {len(rows)} from nvidia-smi")
        return
    for gpu, row in zip(gpus, rows):
        ours = {"index": gpu.index, "uuid": gpu.uuid, "name": gpu.name, "cc": gpu.capability_str,
                "memory_mib": None if gpu.memory_total_bytes is None else gpu.memory_total_bytes // 2**20}
        differ = [k for k in ours if ours[k] != row[k]]
        status = MISMATCH if differ else OK
        report.add(status, f"GPU {gpu.index} NVML vs nvidia-smi",
                   f"{ours}" + (f" != {row} ({', '.join(differ)})" if differ else ""))


def torch_devices(python: str, cvd: str | None, order: str | None) -> tuple[dict | None, str | None]:
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}
    if cvd is not None:
        env["CUDA_VISIBLE_DEVICES"] = cvd
    if order is not None:
        env["CUDA_DEVICE_ORDER"] = order
    try:
        done = subprocess.run([python, "-c", TORCH_CHILD], capture_output=True, text=True, env=env,
                              timeout=CHILD_TIMEOUT, cwd="/")
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot run {python}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{python}: {last[:200]}"
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return None, f"{python} printed no result"


def _uuid(text: str | None) -> str:
    return (text or "").removeprefix("GPU-").lower()


def compare_torch(report: Report, python: str, gpus) -> None:
    from dsv4_launch.core.gpus import select_visible

    first = gpus[0].uuid or ""
    forms = [None, "", "0", *([first[:12]] if first.startswith("GPU-") else []), "0,-1,1"]
    have_torch = True
    for order in ("PCI_BUS_ID", None):
        for cvd in forms:
            label = (f"CUDA_VISIBLE_DEVICES={'(unset)' if cvd is None else repr(cvd)} "
                     f"CUDA_DEVICE_ORDER={order or '(unset)'}")
            if not have_torch:
                report.add(SKIP, label, "torch cannot be compared (above)")
                continue
            answer, why = torch_devices(python, cvd, order)
            if answer is None:
                # no torch, or torch cannot reach the driver at all: nothing to compare with
                have_torch = cvd is not None and "No module named 'torch'" not in (why or "")
                report.add(SKIP, label, why)
                continue
            if not answer.get("cuda") or (cvd is None and answer["count"] == 0):
                have_torch = False  # nothing to compare with: say why, once
                report.add(SKIP, label, f"torch in {python} " + ("is not a CUDA build" if not answer.get("cuda")
                                                                 else "sees no CUDA device at all (its driver?)"))
                continue
            selection = select_visible(gpus, cvd, order)
            ours = [(g.capability_str, g.name, _uuid(g.uuid)) for g in selection.gpus]
            theirs = [(f"{d['cc'][0]}.{d['cc'][1]}", d["name"], _uuid(d["uuid"])) for d in answer["devices"]]
            if not all(t[2] for t in theirs):  # this torch has no device UUIDs: compare the rest
                ours, theirs = [o[:2] for o in ours], [t[:2] for t in theirs]
            exact = (order == "PCI_BUS_ID" or selection.order_known) and not selection.ambiguous
            if ours == theirs:
                report.add(OK, label, f"{len(ours)} device(s): {ours}")
            elif not exact and sorted(ours) == sorted(theirs):
                report.add(OK, label, f"same devices, CUDA's FASTEST_FIRST order: {theirs} (ours said ambiguous)")
            else:
                report.add(MISMATCH, label, f"dsv4-launch {ours} != torch {theirs}")


# --- --profile: vLLM's own memory profile for a small DeepSeek-V4-shaped model -------------------

PROFILE_CHILD = r"""
import json, sys
from vllm import LLM
settings = json.loads(sys.argv[1])
LLM(**settings)
print("DSV4_PROFILE_DONE", flush=True)
"""
PROFILE_TIMEOUT = 420  # one run, model build to the KV cache and the graphs
GIB = 2**30

# vLLM's own log lines, 0.24–0.33 (v1/worker/gpu_model_runner.py, gpu_worker.py, utils/mem_utils.py);
# the figures are GiB. The MemoryProfilingResult line is logged at DEBUG (VLLM_LOGGING_LEVEL=DEBUG).
PROFILE_PATTERNS = {
    "weights": r"Model loading took ([0-9.]+) GiB",
    "available_kv": r"Available KV cache memory: ([0-9.]+) GiB",
    "graph_estimate": r"Estimated CUDA graph memory: ([0-9.]+) GiB total",
    "graph_captured": r"Graph capturing finished in [0-9.]+ secs, took ([0-9.]+) GiB",
    "non_kv": r"Total non KV cache memory: ([0-9.]+) ?GiB",
    "torch_peak_increase": r"torch peak memory increase: ([0-9.]+) ?GiB",
    "non_torch_increase": r"non-torch forward increase memory: ([0-9.]+) ?GiB",
    "total_consumed": r"total consumed \(from mem_get_info\): ([0-9.]+) ?GiB",
    "peak_activation": r"([0-9.]+) GiB for peak activation",
}


def parse_profile_log(text: str) -> dict[str, float]:
    """vLLM's profile figures (GiB) from its log: the last of each line that is there (a DP or
    TP rank logs its own; one GPU here)."""
    found: dict[str, float] = {}
    for key, pattern in PROFILE_PATTERNS.items():
        values = re.findall(pattern, text)
        if values:
            found[key] = float(values[-1])
    if "peak_activation" not in found and "torch_peak_increase" in found:
        found["peak_activation"] = found["torch_peak_increase"]  # 0.24–0.26 name it so
    return found


def profile_model_dir(folder: str, layers: int) -> str:
    """V4-Flash's config.json cut to ``layers`` decoder layers (their compress ratios kept, no MTP
    layer), in ``folder``: vLLM builds it with dummy weights."""
    from dsv4_launch.adapters.checkpoints import known_checkpoint

    config = dict(known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")["config"])
    ratios = config.get("compress_ratios") or []
    config["num_hidden_layers"] = layers
    config["compress_ratios"] = ratios[:layers] if len(ratios) >= layers else ratios
    config["num_nextn_predict_layers"] = 0
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    return folder


def profile_settings(model: str, mnbt: int, max_num_seqs: int) -> dict:
    return {"model": model, "load_format": "dummy", "skip_tokenizer_init": True, "trust_remote_code": True,
            "kv_cache_dtype": "fp8", "block_size": 256, "max_model_len": 65536, "max_num_batched_tokens": mnbt,
            "max_num_seqs": max_num_seqs, "gpu_memory_utilization": 0.9, "tensor_parallel_size": 1}


def expected_bands(mnbt: int, max_num_seqs: int, gpu_memory: int, vllm_version: str | None, layers: int) -> dict:
    """dsv4-launch's bands (GiB) for the same settings on one such GPU."""
    from dsv4_launch.adapters.checkpoints import known_checkpoint
    from dsv4_launch.core.facts import Facts, GpuFacts
    from dsv4_launch.core.gpus import GpuInfo, GpuSelection
    from dsv4_launch.core.memory.activation import activation_term
    from dsv4_launch.core.memory.budget import graph_term, non_torch_term
    from dsv4_launch.core.model import classify
    from dsv4_launch.vllm_cli.option_table import load_table
    from dsv4_launch.vllm_cli.serve_args import read_serve_args

    entry = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
    config = {**entry["config"], "num_hidden_layers": layers}
    args = read_serve_args([entry["id"], "--max-num-batched-tokens", str(mnbt), "--max-num-seqs", str(max_num_seqs)],
                           load_table(vllm_version), lambda p: {})
    facts = Facts(args=args, model=classify(entry["id"], config, "gpu_check"),
                  gpus=GpuFacts(GpuSelection((GpuInfo(0, "GPU", None, (9, 0), gpu_memory),)), read=True),
                  vllm_version=vllm_version)
    from dsv4_launch.core.memory.vllm_config import speculative_method, v2_runner

    v2 = v2_runner(facts, speculative_method(facts), 1)
    bands = {"peak_activation": activation_term(facts, 1, mnbt, max_num_seqs, max_model_len=65536),
             "graph_estimate": graph_term(facts, v2),
             "non_torch_increase": non_torch_term(1, 1)}
    return {k: (t.low / GIB, t.high / GIB) for k, t in bands.items()}


def vllm_version_of(python: str) -> str | None:
    try:
        done = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('vllm'))"],
                              capture_output=True, text=True, timeout=60, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def judge_profile(report: Report, label: str, measured: dict[str, float], bands: dict) -> None:
    for key, (low, high) in bands.items():
        if key not in measured:
            report.add(SKIP, f"{label} {key}", "not in vLLM's log (this release does not log it)")
            continue
        value = measured[key]
        inside = low - 0.05 <= value <= high + 0.05  # vLLM prints two decimals
        report.add(OK if inside else OUTSIDE, f"{label} {key}",
                   f"vLLM {value:.2f} GiB; dsv4-launch's band {low:.2f}–{high:.2f} GiB")


def run_profile(report: Report, python: str, gpu_memory: int, batched: list[int], layers: int,
                out_path: str | None) -> list[dict]:
    version = vllm_version_of(python)
    if version is None:
        report.add(SKIP, "vLLM profile", f"vLLM is not importable by {python} (give --python)")
        return []
    records = []
    with tempfile.TemporaryDirectory(prefix="dsv4-profile-") as folder:
        model = profile_model_dir(folder, layers)
        for mnbt in batched:
            seqs = 256
            label = f"vLLM {version} profile at {mnbt} batched tokens"
            env = {**os.environ, "VLLM_LOGGING_LEVEL": "DEBUG", "CUDA_VISIBLE_DEVICES": os.environ.get(
                "CUDA_VISIBLE_DEVICES", "0")}
            try:
                done = subprocess.run([python, "-c", PROFILE_CHILD, json.dumps(profile_settings(model, mnbt, seqs))],
                                      capture_output=True, text=True, timeout=PROFILE_TIMEOUT, env=env, cwd=folder)
                text, status = done.stdout + done.stderr, done.returncode
            except subprocess.TimeoutExpired as exc:
                text, status = _text(exc.stdout) + _text(exc.stderr), "timeout"
            measured = parse_profile_log(text)
            record = {"vllm": version, "layers": layers, "max_num_batched_tokens": mnbt, "max_num_seqs": seqs,
                      "status": status, "measured_gib": measured, "log_tail": text[-4000:]}
            records.append(record)
            if status != 0 and not measured:
                report.add(SKIP, label, f"vLLM did not start ({status}): {text.strip().splitlines()[-1:]}")
                continue
            bands = expected_bands(mnbt, seqs, gpu_memory, version, layers)
            record["bands_gib"] = bands
            judge_profile(report, label, measured, bands)
    if out_path:
        with open(out_path, "w", encoding="utf-8") as handle:
            json.dump(records, handle, indent=1)
    return records


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else str(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the Python with torch (default: this one)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    parser.add_argument("--profile", action="store_true",
                        help="also record vLLM's memory profile of a small DeepSeek-V4-shaped model (needs a GPU)")
    parser.add_argument("--profile-layers", type=int, default=4, help="decoder layers of the profiled model")
    parser.add_argument("--profile-batched-tokens", default="8192,2048",
                        help="comma-separated --max-num-batched-tokens values, one run each")
    parser.add_argument("--profile-out", help="write the profile records (JSON) here")
    args = parser.parse_args(argv)
    try:
        batched = [int(n) for n in args.profile_batched_tokens.split(",") if n.strip()]
    except ValueError:
        parser.error("--profile-batched-tokens: comma-separated integers")
    if args.profile_layers < 1 or not batched or min(batched) < 1:
        parser.error("--profile-layers and --profile-batched-tokens must be positive")
    report = Report(args.json)

    before = cuda_in_process()
    report.add(OK if not before else MISMATCH, "CUDA before the probe", ", ".join(before) or "not initialised")

    from dsv4_launch.adapters.nvml import read_gpus

    probe = read_gpus()
    state = nvml_initialised()
    if state is None:
        report.add(SKIP, "NVML shut down after the probe", "nvidia-ml-py (pynvml) not importable")
    else:
        report.add(MISMATCH if state else OK, "NVML shut down after the probe",
                   "still initialised" if state else "uninitialised")
    if not probe.gpus or probe.source != "nvml":
        report.add(SKIP, "NVML adapter", f"no NVIDIA GPU through NVML: {probe.error or probe.source or 'none'}")
        if args.profile:
            report.add(SKIP, "vLLM profile", "no GPU")
        return _finish(report, probe)
    report.add(OK, "NVML adapter", f"{len(probe.gpus)} GPU(s), driver {probe.driver_version}, "
               f"CUDA {probe.cuda_driver_version}: " + "; ".join(
                   f"{g.index}: {g.name} SM {g.capability_str} {g.uuid} {g.memory_total_bytes} B" for g in probe.gpus))
    compare_smi(report, probe.gpus)

    from dsv4_launch.commands.pipeline import SERVE, prepare

    prepared = prepare(["deepseek-ai/DeepSeek-V4-Flash"], {k: v for k, v in os.environ.items()
                                                           if not k.startswith("DSV4_LAUNCH_")}, SERVE)
    state = nvml_initialised()
    report.add(MISMATCH if state else OK, "NVML shut down before the hand-over (pipeline.prepare)",
               f"{'still initialised' if state else 'uninitialised'}; GPUs planned for: "
               f"{[g.capability_str for g in (prepared.facts.all_gpus if prepared.facts else ())]}")
    after = cuda_in_process()
    report.add(OK if not after else MISMATCH, "CUDA in the parent after the probe and the plan",
               ", ".join(after) or "not initialised")

    compare_torch(report, args.python, probe.gpus)
    if args.profile:
        run_profile(report, args.python, probe.gpus[0].memory_total_bytes or 0, batched, args.profile_layers,
                    args.profile_out)
    return _finish(report, probe)


def _finish(report: Report, probe) -> int:
    if report.as_json:
        print(json.dumps({"ok": not report.failed, "checks": report.rows, "driver": probe.driver_version,
                          "gpus": len(probe.gpus)}, indent=2))
    else:
        print("result: " + ("MISMATCH found" if report.failed else "nothing disagrees"), flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
