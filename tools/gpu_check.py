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

Exit status: 0 when nothing disagrees (a SKIP is not a failure: no GPU, no nvidia-smi, no
torch), 1 when something does, 2 for bad arguments. Without a GPU it prints why every check
was skipped and exits 0, so a test can run it anywhere (tests/test_gpu_check.py runs it with
no NVML library and with the stand-in one).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

OK, MISMATCH, SKIP = "OK", "MISMATCH", "SKIP"
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
            label = f"CUDA_VISIBLE_DEVICES={'(unset)' if cvd is None else repr(cvd)} CUDA_DEVICE_ORDER={order or '(unset)'}"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the Python with torch (default: this one)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    args = parser.parse_args(argv)
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
               f"{[g.capability_str for g in (prepared.facts.gpus.gpus if prepared.facts and prepared.facts.gpus else ())]}")
    after = cuda_in_process()
    report.add(OK if not after else MISMATCH, "CUDA in the parent after the probe and the plan",
               ", ".join(after) or "not initialised")

    compare_torch(report, args.python, probe.gpus)
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
