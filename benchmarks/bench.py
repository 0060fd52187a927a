#!/usr/bin/env python3
"""What dsv4-launch costs at start-up, side by side with what it sits in front of.

    .venv/bin/python benchmarks/bench.py [--runs 21] [--release 0.24.0 …] [--clock wall|cpu] [--note TEXT]
                                         [--vllm-python PATH] [--json FILE] [--write-readme]

Run it with the Python that has dsv4-launch installed (it runs that environment's
`dsv4-serve` and `dsv4-launch`). Stdlib only. Every case is a fresh process; wall time is
measured around it, and peak memory (max RSS) and CPU time (user + system) come from the
kernel's accounting of that process (os.wait4). The time budgets judge wall time; on a shared
machine, where wall time measures the other work too, --clock cpu judges them on CPU time. The
cases are run in turns (A B C A B C …, after warm-up rounds) so that drift hits all alike — the
light ones in one group, the stand-ins for vLLM's CLI in another (each budget compares cases of
one group) — and the table shows medians; "machine noise" (the floor's median over its min) says
how quiet the machine was. Nothing is written unless asked: --json FILE, or
--write-readme: the run into benchmarks/results/latest.json (the committed run) and its tables
into docs/performance.md's bench block (tests/project/test_readme_bench.py keeps the two the same).

Cases:
  floor        python -c pass (the interpreter itself)
  click        python -c "import click" (the memory baseline of any click CLI)
  plan         dsv4-launch plan --json deepseek-ai/DeepSeek-V4-Flash -tp 2, two fake SM 12.0 GPUs
  plan (downloaded)
               the same with the checkpoint downloaded: a Hugging Face cache (HF_HOME) holding
               config.json, a real-size model.safetensors.index.json (Flash's ~69k tensor names
               in 46 shards, ~5 MB, written as Hugging Face writes it) and 46 sparse shards with
               real safetensors headers; its ratio to `plan` is a budget
  vllm stub    a `vllm` console script whose vllm.entrypoints.cli.main returns at once
  vllm stub+ X the same stub, as vLLM release X, importing exactly what
               `import vllm.entrypoints.cli.main` leaves in sys.modules in X (--release, default
               every release with a recorded set: the ones CI pins; recorded
               per release by tools/record_vllm_imports.py in benchmarks/vllm_imports/: the
               standard library by module, third-party packages by name — those not installed
               here, torch say, are skipped and said: dsv4-serve does not import them either)
  dsv4-serve   dsv4-serve deepseek-ai/DeepSeek-V4-Flash -tp 2 up to the hand-over to the stub
  launch serve dsv4-launch serve …, the same
  dsv4-serve → stub+ X
               dsv4-serve handing over to vllm stub+ X (it plans for release X: its table and
               rows). It hands over in the same process, so what both import is imported once:
               (dsv4-serve → stub+ X) − (vllm stub+ X) is what a real start of X waits longer (a
               budget per release, BUDGET_REAL_START_MS; the median of the round-by-round
               differences, the two taken back to back: paired_difference). dsv4-serve collects the
               young generations and freezes the heap before it imports vLLM (adapters/handover.py,
               as vLLM's freeze_gc_heap does once the server is up), which also spares vLLM's own
               start-up collections the interpreter's objects:
  vllm stub+ X, heap frozen
               vllm stub+ X collecting and freezing the heap the same way before its imports:
               (dsv4-serve → stub+ X) − this is dsv4-serve's own cost with that gain taken out
               (reported)
  secrets ×N   dsv4-serve with N --api-key values (our cost must grow linearly; argparse's own
               is quadratic before Python 3.13 — vLLM's parser pays that too)
  with --vllm-python (an interpreter with a real vLLM and dsv4-launch installed):
  vllm --help        vllm serve --help        (VLLM_TARGET_DEVICE=cpu)
  dsv4-serve --help  dsv4-serve --help
  plugin load        the vLLM plugin's register(), timed inside a process with vLLM imported

The fake GPU is the test suite's stand-in libnvidia-ml.so.1 (tests/fakes/fake_nvml.c, built
with cc), so NVML's own start-up cost is part of the measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = "deepseek-ai/DeepSeek-V4-Flash"
FAKE_GPUS = ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition|GPU-0|12.0|97887;"
             "NVIDIA RTX PRO 6000 Blackwell Workstation Edition|GPU-1|12.0|97887")
ARGS = [MODEL, "-tp", "2"]  # Flash's weights need two 96 GB GPUs

BUDGET_PLAN_MS = 60.0
BUDGET_PLAN_MEMORY_MB = 15.0
BUDGET_REAL_RATIO = 1.03
BUDGET_DOWNLOADED_RATIO = 1.25  # plan with a downloaded checkpoint / plan from the table
FLASH_PAYLOAD = 159_609_485_896  # V4-Flash's tensor bytes (data/checkpoints/)
QUIET_LOAD = 1.5  # the 1-minute load average at a run's start and end below this: a quiet machine
QUIET_FLOOR_RATIO = 1.08  # floor median / min above this: a busy machine (said, and in the document)
BUDGET_REAL_START_MS = 15.0  # what a real start waits longer: (dsv4-serve → stub+) − vllm stub+
RELEASE = "0.24.0"  # build_fakes' default release (tests); a run measures every recorded one (--release)
VLLM_IMPORTS = "BENCH_STUB_IMPORTS_SHARED"  # set: the stub's main module imports them, as vLLM's does
# set: the stub collects the young generations and freezes the heap first, as dsv4-serve does
STUB_FREEZE = "BENCH_STUB_FREEZE"
README_BEGIN, README_END = "<!-- bench:begin -->", "<!-- bench:end -->"
COMMITTED_RUN = "benchmarks/results/latest.json"  # the run docs/performance.md shows

# A tiny C runner: the peak RSS the kernel reports for a child includes the memory of whatever
# forked it (Linux carries the old address space's high-water mark across exec), so a Python
# parent would put its own ~14 MiB under every case. This runner is small, forks, execs the
# command, and prints the child's wall time and max RSS.
RUNNER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct timespec a, b; struct rusage ru; int status;
    if (argc < 2) return 2;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1); dup2(null, 2);
        execvp(argv[1], argv + 1); _exit(127);
    }
    wait4(pid, &status, 0, &ru);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.6f %ld %d %.6f\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6,
           ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
           (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
    return 0;
}
"""

# What pip writes for vLLM's `vllm = vllm.entrypoints.cli.main:main` (and for dsv4-serve).
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from vllm.entrypoints.cli.main import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


RUNNER: list[str] = []  # the compiled runner, when there is a C compiler


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, float]:
    """(wall milliseconds, peak RSS in MiB, exit status, CPU milliseconds: user + system) of one
    fresh process. CPU time barely moves when other work shares the machine; wall time does."""
    if RUNNER:
        out = subprocess.run(RUNNER + cmd, env=env, capture_output=True, text=True, check=True).stdout
        ms, kib, status, cpu = out.split()
        return float(ms), int(kib) / 1024.0, int(status), float(cpu)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)  # peak RSS here includes this parent's
    return ((time.perf_counter() - start) * 1000, usage.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status),
            (usage.ru_utime + usage.ru_stime) * 1000)


Case = "list[str] | tuple[list[str], dict[str, str]]"  # a command, or a command and env additions


def measure(cases: dict[str, Case], env: dict[str, str], runs: int, warmup: int) -> dict[str, dict]:
    """Each case ``runs`` times, taken in turns (A B C A B C …) after ``warmup`` rounds, so that
    the machine's drift during the run hits every case alike: differences between cases are
    what the budgets are about."""
    plain = {name: case if isinstance(case, tuple) else (case, {}) for name, case in cases.items()}
    envs = {name: {**env, **extra} for name, (_, extra) in plain.items()}
    for _ in range(warmup):
        for name, (cmd, _) in plain.items():
            run_once(cmd, envs[name])
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (cmd, _) in plain.items():
            ms, peak, status, cpu = run_once(cmd, envs[name])
            if status != 0:
                done = subprocess.run(cmd, env=envs[name], capture_output=True, text=True)
                said = (done.stderr.strip().splitlines() or [""])[-1]
                raise SystemExit(f"bench: {name}: {' '.join(cmd)} exited {status}: {said}")
            samples[name].append((ms, peak, cpu))
    out = {}
    for name, (cmd, extra) in plain.items():
        times = [ms for ms, _, _ in samples[name]]
        out[name] = {"name": name, "command": [*(f"{k}={v}" for k, v in extra.items()), *cmd], "runs": runs,
                     "median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
                     "median_cpu_ms": statistics.median(c for _, _, c in samples[name]),
                     "peak_mib": statistics.median(p for _, p, _ in samples[name]),
                     # each run, in the order taken (round i of every case ran back to back): paired_difference
                     "times_ms": [round(ms, 3) for ms in times],
                     "cpu_times_ms": [round(c, 3) for _, _, c in samples[name]]}
        print(f"  {name:<18} {out[name]['median_ms']:8.1f} ms  {out[name]['peak_mib']:6.1f} MiB", file=sys.stderr)
    return out


def paired_difference(a: dict, b: dict, clock: str) -> float:
    """How much longer case ``a`` takes than case ``b``: the median of their differences round by
    round. ``measure`` takes the cases in turns, so round i of ``a`` and round i of ``b`` ran back
    to back: a burst of other work on the machine lands on both of a pair, and the median of the
    pairs' differences leaves it out, where the difference of two medians of ~170 ms cases moved
    by ±10 ms between runs on a shared machine."""
    key = "times_ms" if clock == "median_ms" else "cpu_times_ms"
    if key not in a or key not in b:  # a run recorded before the runs were kept
        return a[clock] - b[clock]
    return statistics.median(x - y for x, y in zip(a[key], b[key], strict=True))


def recorded_releases() -> list[str]:
    """The releases with a recorded import set (benchmarks/vllm_imports/), oldest first."""
    names = (p.stem[len("vllm-"):] for p in (ROOT / "benchmarks" / "vllm_imports").glob("vllm-*.json"))
    return sorted(names, key=lambda v: tuple(int(x) for x in v.split(".")))


def real_start_budget(release: str) -> str:
    """The budget's name in a run's document (and README)."""
    return f"what a real vLLM {release} start waits longer ((dsv4-serve → stub+ {release}) − vllm stub+ {release})"


def vllm_imports(release: str) -> list[str]:
    """What `import vllm.entrypoints.cli.main` leaves in sys.modules in ``release`` (recorded)."""
    path = ROOT / "benchmarks" / "vllm_imports" / f"vllm-{release}.json"
    if not path.exists():
        known = sorted(p.stem[5:] for p in path.parent.glob("vllm-*.json"))
        raise SystemExit(f"bench: no recorded import set for vLLM {release} (known: {', '.join(known)}); "
                         "record it with tools/record_vllm_imports.py --python PY --write")
    recorded = json.loads(path.read_text(encoding="utf-8"))
    return [*recorded["stdlib"], *recorded["third_party"]]


def importable(names: list[str]) -> list[str]:
    """Those of ``names`` this interpreter can import (the rest said once)."""
    import importlib.util

    found, skipped = [], []
    for name in names:
        try:
            ok = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            ok = False
        (found if ok else skipped).append(name)
    if skipped:
        print(f"bench: stub+ skips {len(skipped)} of vLLM's modules not installed here: {', '.join(skipped)}",
              file=sys.stderr)
    return found


def build_fakes(work: Path, releases: tuple[str, ...] = (RELEASE,)) -> tuple[dict[str, str], Path, dict[str, str]]:
    """Fake NVML library, a `vllm` console script and a stub vLLM package per release; returns
    (env, bin dir, each release's PYTHONPATH). The env's PYTHONPATH is the first release's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSV4_LAUNCH_", "CUDA_", "HF_"))}
    # As installed by pip: bytecode compiled and cached (an editable checkout may have none).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    import dsv4_launch

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(dsv4_launch.__file__).parent)], check=True)
    env["HOME"] = str(work / "home")  # an empty Hugging Face cache: the name fallback is used
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        (work / "runner.c").write_text(RUNNER_C)
        subprocess.run([cc, "-O2", "-o", str(work / "runner"), str(work / "runner.c")], check=True)
        RUNNER.append(str(work / "runner"))
        subprocess.run(
            [cc, "-shared", "-fPIC", "-O2", "-Wl,-soname,libnvidia-ml.so.1", "-o",
             str(work / "libnvidia-ml.so.1"), str(ROOT / "tests/fakes/fake_nvml.c")],
            check=True,
        )
        env["LD_LIBRARY_PATH"] = str(work)
        env["FAKE_NVML_GPUS"] = FAKE_GPUS
    else:
        print("bench: no C compiler; DSV4_LAUNCH_GPU_CAPABILITY=12.0 replaces the NVML probe and "
              "peak memory includes this script's own", file=sys.stderr)
        env["DSV4_LAUNCH_GPU_CAPABILITY"] = "12.0"
    paths = {}
    for release in releases:
        stub = work / f"stub-{release}"
        cli = stub / "vllm" / "entrypoints" / "cli"
        cli.mkdir(parents=True)
        for folder in (stub / "vllm", stub / "vllm" / "entrypoints", cli):
            (folder / "__init__.py").write_text("")
        names = importable(vllm_imports(release))
        (cli / "main.py").write_text(
            f"import os\nif os.environ.get({STUB_FREEZE!r}):\n    import gc\n    gc.collect(1)\n    gc.freeze()\n"
            f"if os.environ.get({VLLM_IMPORTS!r}):\n"
            f"    for name in {names!r}:\n        __import__(name)\n"
            + "def main():\n    return None\n"
        )
        info = stub / f"vllm-{release}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {release}\n")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(stub)], check=True)
        paths[release] = str(stub)
    for release in releases:  # the stub first; what the caller put on the path (a checkout's src/) after it
        paths[release] = os.pathsep.join(filter(None, (paths[release], os.environ.get("PYTHONPATH"))))
    env["PYTHONPATH"] = paths[releases[0]]
    same_code(env)
    bindir = work / "bin"
    bindir.mkdir()
    script = bindir / "vllm"
    script.write_text(CONSOLE_SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    return env, bindir, paths


def same_code(env: dict[str, str]) -> None:
    """The cases must run the dsv4-launch this script imported (an editable install of another
    checkout, or a PYTHONPATH the stub's path replaced, would measure other code)."""
    import dsv4_launch

    code = "import dsv4_launch; print(dsv4_launch.__file__)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    theirs = done.stdout.strip()
    if done.returncode != 0 or Path(theirs).resolve() != Path(dsv4_launch.__file__).resolve():
        raise SystemExit(f"bench: the cases would import dsv4-launch from {theirs or 'nowhere'}, this script from "
                         f"{dsv4_launch.__file__}; run it with the Python (and PYTHONPATH) of the checkout to measure")


def build_downloaded_checkpoint(work: Path) -> dict[str, str]:
    """A downloaded V4-Flash in a Hugging Face cache under ``work``; returns the env additions."""
    from dsv4_launch.adapters.checkpoints import known_checkpoint

    repo = work / "hf" / "hub" / ("models--" + MODEL.replace("/", "--"))
    commit = "0" * 40
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (snap / "config.json").write_text(json.dumps(known_checkpoint(MODEL)["config"], indent=2))
    shards = 46
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    tensors = ["embed.weight", "head.weight", "norm.weight", "hc_head_fn", "hc_head_base", "hc_head_scale"]
    for layer in range(44):
        prefix = f"layers.{layer}" if layer < 43 else "mtp.0"
        for part in ("attn.wq_a", "attn.wq_b", "attn.wkv", "attn.wo_a", "attn.wo_b", "ffn.shared_experts.w1",
                     "ffn.shared_experts.w2", "ffn.shared_experts.w3", "attn.compressor.wkv", "attn.compressor.wgate"):
            tensors += [f"{prefix}.{part}.weight", f"{prefix}.{part}.scale"]
        tensors += [f"{prefix}.{t}" for t in ("attn.attn_sink", "attn.kv_norm.weight", "attn.q_norm.weight",
                                               "attn_norm.weight", "ffn_norm.weight", "ffn.gate.weight",
                                               "ffn.gate.bias", "hc_attn_fn", "hc_ffn_fn", "hc_attn_base")]
        tensors += [f"{prefix}.ffn.experts.{e}.w{w}.{k}" for e in range(256) for w in (1, 2, 3)
                    for k in ("weight", "scale")]
    weight_map = {t: names[min(i * shards // len(tensors), shards - 1)] for i, t in enumerate(tensors)}
    index = {"metadata": {"total_size": FLASH_PAYLOAD}, "weight_map": weight_map}
    (snap / "model.safetensors.index.json").write_text(json.dumps(index, indent=2, sort_keys=True))
    header = json.dumps({"__metadata__": {"format": "pt"}}).encode()
    for i, name in enumerate(names):
        payload = FLASH_PAYLOAD // shards + (FLASH_PAYLOAD % shards if i == 0 else 0)
        with open(snap / name, "wb") as handle:  # sparse: the size is real, the disk use is not
            handle.write(len(header).to_bytes(8, "little") + header)
            handle.truncate(8 + len(header) + payload)
    return {"HF_HOME": str(work / "hf")}


def check_shared_with_vllm(python: str, env: dict[str, str]) -> list[str]:
    """The recorded modules the real vLLM at ``python`` does not import (should be none)."""
    code = ("import sys, importlib.metadata, vllm.entrypoints.cli.main, json; "
            "print(json.dumps([importlib.metadata.version('vllm'), sorted(sys.modules)]))")
    done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"bench: {python} cannot import vllm.entrypoints.cli.main")
    version, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    tops = {m.split(".")[0] for m in loaded}
    return [m for m in vllm_imports(version.split("+")[0]) if m not in loaded and m not in tops]


PLUGIN_LOAD = """
import time, importlib
import vllm.engine.arg_utils
t = time.perf_counter()
importlib.import_module("dsv4_launch.plugin").register()
print((time.perf_counter() - t) * 1000)
"""


def plugin_load(python: str, env: dict[str, str], runs: int) -> dict:
    """What loading the vLLM plugin costs each vLLM process: register(), timed inside a process
    that has imported vLLM's engine arguments (vLLM has, before it loads plugins)."""
    times = []
    for _ in range(runs):
        done = subprocess.run([python, "-c", PLUGIN_LOAD], env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"bench: plugin load failed: {done.stderr.strip().splitlines()[-1:]}")
        times.append(float(done.stdout.split()[-1]))
    result = {"name": "plugin load", "command": [python, "-c", "register()"], "runs": runs,
              "median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "peak_mib": 0.0}
    print(f"  {'plugin load':<18} {result['median_ms']:8.1f} ms  (in-process, register() only)", file=sys.stderr)
    return result


def tool(name: str, python: str) -> str:
    path = Path(python).parent / name
    if not path.exists():
        raise SystemExit(f"bench: {path} not found: install dsv4-launch next to {python}")
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--vllm-python", help="an interpreter with a real vLLM and dsv4-launch")
    parser.add_argument("--release", nargs="+", default=None,
                        help="the vLLM releases stub+ stands for (their recorded imports; default: every recorded one)")
    parser.add_argument("--vllm-runs", type=int, default=5)
    parser.add_argument("--json", help="also write the results here (e.g. benchmarks/results/latest.json)")
    parser.add_argument("--write-readme", action="store_true",
                        help="put the tables into docs/performance.md's bench block and the run into " + COMMITTED_RUN)
    parser.add_argument("--secrets", type=int, default=5000, help="--api-key values in the linearity cases")
    parser.add_argument("--note", default="", help="said under the tables (e.g. 'a shared, busy machine')")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="what the time budgets judge: wall time, or CPU time (user + system) when the "
                             "machine is shared and wall time measures the other work")
    opts = parser.parse_args()
    if opts.write_readme:  # docs/performance.md shows the committed run: both are written, or neither
        if opts.json and Path(opts.json).resolve() != ROOT / COMMITTED_RUN:
            parser.error(f"--write-readme writes {COMMITTED_RUN}; leave --json out or give that path")
        opts.json = str(ROOT / COMMITTED_RUN)
    try:
        import dsv4_launch  # noqa: F401
    except ImportError:
        raise SystemExit(f"bench: dsv4-launch is not installed for {sys.executable}; run this script with the "
                         "Python of the environment that has it (e.g. .venv/bin/python benchmarks/bench.py)")

    py = sys.executable
    releases = tuple(opts.release or recorded_releases())
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        env, bindir, stubs = build_fakes(Path(tmp), releases)
        downloaded = build_downloaded_checkpoint(Path(tmp))
        print(f"bench: {opts.runs} runs after {opts.warmup} warm-up runs, medians", file=sys.stderr)
        stub = [str(bindir / "vllm"), "serve", *ARGS]
        plus = {VLLM_IMPORTS: "1"}
        r = measure({
            "floor": [py, "-c", "pass"],
            "click": [py, "-c", "import click"],
            "plan": [tool("dsv4-launch", py), "plan", "--json", *ARGS],
            "plan (downloaded)": ([tool("dsv4-launch", py), "plan", "--json", *ARGS], downloaded),
            "vllm stub": stub,
            "dsv4-serve": [tool("dsv4-serve", py), *ARGS],
            "launch serve": [tool("dsv4-launch", py), "serve", *ARGS],
        }, env, opts.runs, opts.warmup)
        # The stand-ins for vLLM's CLI import ~300 modules each (~140 ms, 33 MiB): taken in turns
        # with the light cases they inflated those (the floor's median went × 1.11–1.15 over its
        # min), so they are a group of their own; each budget compares cases of one group.
        # A release's three cases back to back in each round: the budgets pair them (paired_difference).
        r.update(measure({
            case: (command, {**plus, **extra, "PYTHONPATH": stubs[release]}) for release in releases
            for case, command, extra in ((f"vllm stub+ {release}", stub, {}),
                                         (f"dsv4-serve → stub+ {release}", [tool("dsv4-serve", py), *ARGS], {}),
                                         (f"vllm stub+ {release}, heap frozen", stub, {STUB_FREEZE: "1"}))
        }, env, opts.runs, opts.warmup))
        n = opts.secrets
        keys = {k: [f"sk-{i:08d}" for i in range(k)] for k in (n, 2 * n)}
        r.update(measure({f"secrets ×{k}": [tool("dsv4-serve", py), *ARGS, "--api-key", *keys[k]] for k in keys},
                         env, max(3, opts.runs // 4), 1))
        if opts.vllm_python:
            real = {k: v for k, v in env.items() if k not in ("PYTHONPATH",)}
            real["VLLM_TARGET_DEVICE"] = "cpu"
            vp = opts.vllm_python
            missing = check_shared_with_vllm(vp, real)
            if missing:
                print(f"bench: the real vLLM does not import {', '.join(missing)}: its recorded import set "
                      "is stale (tools/record_vllm_imports.py)", file=sys.stderr)
            r.update(measure({"vllm --help": [tool("vllm", vp), "serve", "--help"],
                              "dsv4-serve --help": [tool("dsv4-serve", vp), "--help"]}, real, opts.vllm_runs, 1))
            r["plugin load"] = plugin_load(vp, real, opts.vllm_runs)

    # The 1-minute load average at the start and the end (other processes wanting a CPU): a run
    # on a machine that was not quiet (above QUIET_LOAD) is said, and is no run to commit.
    load = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    if max(load) >= QUIET_LOAD:
        print(f"bench: load average {load[0]} at the start, {load[1]} at the end ({os.cpu_count()} CPUs): other work "
              f"shared the machine; a run to commit wants it under {QUIET_LOAD}", file=sys.stderr)
    clock = "median_ms" if opts.clock == "wall" else "median_cpu_ms"
    overhead = r["dsv4-serve"][clock] - r["vllm stub"][clock]
    launch_overhead = r["launch serve"][clock] - r["vllm stub"][clock]
    net = {release: paired_difference(r[f"dsv4-serve → stub+ {release}"], r[f"vllm stub+ {release}"], clock)
           for release in releases}
    plan_memory = r["plan"]["peak_mib"] - r["click"]["peak_mib"]
    small, large = (r[f"secrets ×{k}"]["median_ms"] - r["dsv4-serve"]["median_ms"]
                    for k in (opts.secrets, 2 * opts.secrets))
    # Reported, not budgets: against the plain stub, modules vLLM imports itself count as ours.
    # How busy the machine was: the interpreter alone, median over min. A quiet machine gives ~1.03;
    # other work on it inflates every case alike, so a run well above that measures the machine.
    noise = r["floor"]["median_ms"] / r["floor"]["min_ms"]
    if noise > QUIET_FLOOR_RATIO:
        print(f"bench: the machine was busy (python -c pass: median {r['floor']['median_ms']:.1f} ms, min "
              f"{r['floor']['min_ms']:.1f} ms, × {noise:.2f}): every number is inflated; rerun when it is quiet",
              file=sys.stderr)
    reported = [
        ("machine noise (floor median / floor min)", noise, "×"),
        ("hand-over overhead (dsv4-serve − vllm stub)", overhead, "ms"),
        ("hand-over overhead (dsv4-launch serve − vllm stub)", launch_overhead, "ms"),
        *((f"dsv4-serve's own cost on vLLM {release}, the heap frozen alike ((dsv4-serve → stub+ {release}) − "
           f"vllm stub+ {release}, heap frozen)",
           paired_difference(r[f"dsv4-serve → stub+ {release}"], r[f"vllm stub+ {release}, heap frozen"], clock), "ms")
          for release in releases),
    ]
    budgets = [
        ("plan --json", r["plan"][clock], "ms", BUDGET_PLAN_MS),
        ("plan peak memory − click's", plan_memory, "MiB", BUDGET_PLAN_MEMORY_MB),
        *((real_start_budget(release), net[release], "ms", BUDGET_REAL_START_MS) for release in releases),
        ("plan --json, checkpoint downloaded / not", r["plan (downloaded)"][clock] / r["plan"][clock],
         "×", BUDGET_DOWNLOADED_RATIO),
    ]
    for release in releases:
        print(f"bench: (dsv4-serve → stub+ {release}) − (vllm stub+ {release}) = {net[release]:.1f} ms: what a real "
              f"vLLM {release} start waits longer (what both import is imported once either way)", file=sys.stderr)
    print(f"bench: {opts.secrets} → {2 * opts.secrets} --api-key values cost {small:.0f} → {large:.0f} ms more than "
          f"none (× {large / max(small, 1e-9):.2f}; linear is × 2, argparse's own share is quadratic before "
          "Python 3.13)", file=sys.stderr)
    if "vllm --help" in r:
        ratio = r["dsv4-serve --help"]["median_ms"] / r["vllm --help"]["median_ms"]
        budgets.append(("dsv4-serve --help / vllm serve --help", ratio, "×", BUDGET_REAL_RATIO))

    machine = (f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
               f"{platform.machine()}")
    document = {
        "machine": machine,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "results": r,
        "net_handover_ms": net,
        "releases": list(releases),
        "clock": opts.clock,
        "note": opts.note,
        "load_average": load,
        "budgets": [
            {"name": label, "value": value, "unit": unit, "limit": limit, "ok": value <= limit}
            for label, value, unit, limit in budgets
        ],
        "reported": [{"name": label, "value": value, "unit": unit} for label, value, unit in reported],
    }
    print(render(document), end="")
    if opts.json:
        out = Path(opts.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(document, indent=2) + "\n")
        print(f"bench: results written to {out}", file=sys.stderr)
    if opts.write_readme:
        readme = ROOT / "docs" / "performance.md"
        text = readme.read_text(encoding="utf-8")
        head, rest = text.split(README_BEGIN, 1)
        _, tail = rest.split(README_END, 1)
        readme.write_text(f"{head}{README_BEGIN}\n{render(document)}{README_END}{tail}", encoding="utf-8")
        print(f"bench: {readme} updated", file=sys.stderr)


def render(document: dict) -> str:
    """The Markdown tables of one run (README's block between the bench markers is this, for
    benchmarks/results/latest.json; tests/project/test_readme_bench.py keeps the two the same). Runs
    recorded before the stand-in imported vLLM's recorded set (no ``release``) render as they
    were written; a run of one release (``release``) as it was written."""
    r = document["results"]
    floor = r["floor"]["median_ms"]
    current = "release" in document or "releases" in document
    if current:
        lines = ["| case | median | min | CPU (median) | peak RSS | × floor |", "|---|---:|---:|---:|---:|---:|"]
    else:
        lines = ["| case | median | min | peak RSS | × floor |", "|---|---:|---:|---:|---:|"]
    for name, res in r.items():
        if name == "plugin load":  # timed inside a process: no process of its own
            dashes = "— | — | —" if current else "— | —"
            lines.append(f"| {name} (in a vLLM process) | {res['median_ms']:.1f} ms | {res['min_ms']:.1f} ms "
                         f"| {dashes} |")
            continue
        cpu = f"{res.get('median_cpu_ms', 0.0):.1f} ms | " if current else ""
        lines.append(
            f"| {name} | {res['median_ms']:.1f} ms | {res['min_ms']:.1f} ms | {cpu}"
            f"{res['peak_mib']:.1f} MiB | {res['median_ms'] / floor:.2f} |"
        )
    lines += ["", "| budget | measured | limit | |", "|---|---:|---:|---|"]
    for budget in document["budgets"]:
        unit, value = budget["unit"], budget["value"]
        fmt = f"{value:.3f}" if unit == "×" else f"{value:.1f}"
        lines.append(f"| {budget['name']} | {fmt} {unit} | {budget['limit']} {unit} | "
                     f"{'ok' if budget['ok'] else 'OVER'} |")
    if current:
        for item in document.get("reported", ()):
            value = f"{item['value']:.2f}" if item["unit"] == "×" else f"{item['value']:.1f}"
            lines.append(f"| {item['name']} | {value} {item['unit']} | — | reported |")
        clock = "CPU time (user + system)" if document.get("clock") == "cpu" else "wall time"
        note = f"; {document['note']}" if document.get("note") else ""
        releases = document.get("releases") or [document["release"]]
        which = (f"vLLM {releases[0]}'s CLI imports" if len(releases) == 1 else
                 f"each vLLM release's CLI imports ({', '.join(releases)})")
        footer = (f"{document['machine']}; {document['date'][:10]}; {r['floor']['runs']} runs per case; stub+ imports "
                  f"what {which}; time budgets judged on {clock}{note}")
    else:
        lines.append("| what a real vLLM start waits longer ((dsv4-serve → stub+) − vllm stub+) | "
                     f"{document['net_handover_ms']:.1f} ms | — | reported |")
        footer = f"{document['machine']}; {document['date'][:10]}; {r['floor']['runs']} runs per case"
    lines += ["", footer]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
