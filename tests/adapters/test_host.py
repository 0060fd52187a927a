"""This host's memory and download space (issue 39 item 4): V4.1's Engram tables, kept in pinned
host memory, against MemAvailable; the shards vLLM will download against the free space of the
filesystem it downloads into. Warnings with the numbers, never a refusal; "not checked" where
they cannot be read. Faked: the host reader (``Context.read_host``, the boundary) and NVML;
the adapter itself is tested on files written here."""

from __future__ import annotations

import io
import json
import os

from dsv4_launch.adapters import host
from dsv4_launch.adapters.nvml import GpuReport
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands import serve as serve_command
from dsv4_launch.commands.context import Context
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.core.facts import HostFacts
from dsv4_launch.core.gpus import GpuInfo

GiB = 2**30
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
FLASH = "deepseek-ai/DeepSeek-V4-Flash"


def ctx(tmp_path, reader, env=None, gpus=8, memory_gib=79.6):
    report = GpuReport(gpus=tuple(GpuInfo(i, "NVIDIA H100 80GB HBM3", f"GPU-{i}", (9, 0), int(memory_gib * GiB))
                                  for i in range(gpus)), source="nvml")
    return Context(env={"HOME": str(tmp_path), **(env or {})}, stdout=io.StringIO(), stderr=io.StringIO(),
                   read_gpus=lambda: report, vllm=VllmInstall(version="0.33.0", importable=True), read_host=reader)


def plan(tmp_path, args, reader, env=None, as_json=True):
    c = ctx(tmp_path, reader, env)
    code = run_plan(args, as_json=as_json, ctx=c)
    return code, (json.loads(c.stdout.getvalue()) if as_json else c.stdout.getvalue())


# --- the adapter --------------------------------------------------------------------------------

def test_meminfo_is_read_in_kib(tmp_path):
    path = tmp_path / "meminfo"
    path.write_text("MemTotal:       24683784 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n")
    assert host.read_meminfo(str(path)) == (24683784 * 1024, 20000000 * 1024)
    path.write_text("MemTotal: lots\nMemAvailable: 12 MB\n")  # not what the kernel writes: unknown
    assert host.read_meminfo(str(path)) == (None, None)
    assert host.read_meminfo(str(tmp_path / "absent")) == (None, None)


def test_the_free_space_is_the_nearest_existing_directorys(tmp_path):
    where, free = host.free_space(str(tmp_path / "not" / "yet" / "hub"))
    st = os.statvfs(tmp_path)
    assert where == str(tmp_path) and abs(free - st.f_bavail * st.f_frsize) < 64 * 2**20


# --- V4.1's Engram tables against the host's memory ----------------------------------------------

def test_engram_tables_larger_than_the_available_memory_warn_with_the_numbers(tmp_path):
    small = lambda target: HostFacts(int(250 * GiB), int(120 * GiB), None, None)  # noqa: E731
    code, data = plan(tmp_path, [V41, "-tp", "8"], small)
    row = next(f for f in data["findings"] if f["rule"] == "host-memory-short")
    assert row["level"] == "warn" and code == 0 and not data["refusals"]
    assert "188.8 GiB of pinned host memory" in row["text"] and "120.0 GiB available (250.0 GiB in all)" in row["text"]
    assert data["memory"]["host_memory_available_bytes"] == int(120 * GiB)
    big = lambda target: HostFacts(int(500 * GiB), int(480 * GiB), None, None)  # noqa: E731
    code, data = plan(tmp_path, [V41, "-tp", "8"], big)
    assert not any(f["rule"] == "host-memory-short" for f in data["findings"])
    code, text = plan(tmp_path, [V41, "-tp", "8"], big, as_json=False)
    assert "Engram tables 188.8 GiB in host memory (480.0 GiB available here)" in text


def test_engram_tables_are_not_checked_where_the_memory_cannot_be_read(tmp_path):
    code, data = plan(tmp_path, [V41, "-tp", "8"], lambda target: HostFacts())
    assert data["memory"]["host_memory_available_bytes"] is None
    assert not any(f["rule"] == "host-memory-short" for f in data["findings"])
    code, text = plan(tmp_path, [V41, "-tp", "8"], lambda target: HostFacts(), as_json=False)
    assert "Engram tables 188.8 GiB in host memory (host memory not checked)" in text


def test_tables_on_the_gpus_are_not_compared_with_the_host(tmp_path):
    small = lambda target: HostFacts(int(16 * GiB), int(8 * GiB), None, None)  # noqa: E731
    code, data = plan(tmp_path, [V41, "-tp", "8", "--engram-config", '{"cpu_offload": false}'], small)
    assert data["memory"]["weights_host_bytes"] is None
    assert not any(f["rule"] == "host-memory-short" for f in data["findings"])


# --- the download against the cache's free space ------------------------------------------------

def hub_cache(tmp_path, total=160_000_000_000):
    """A Hugging Face cache holding V4-Flash's config and index, none of its shards."""
    from tests.conftest import V4_CONFIG

    cache = tmp_path / "hub"
    repo = cache / "models--deepseek-ai--DeepSeek-V4-Flash"
    snap = repo / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    (snap / "config.json").write_text(json.dumps(V4_CONFIG))
    names = [f"model-{i:05d}-of-00004.safetensors" for i in range(1, 5)]
    index = {"metadata": {"total_size": total}, "weight_map": {f"t{i}": n for i, n in enumerate(names)}}
    (snap / "model.safetensors.index.json").write_text(json.dumps(index))
    return cache


def test_a_download_larger_than_the_free_space_warns_with_both_numbers(tmp_path):
    cache = hub_cache(tmp_path)
    asked: list = []

    def reader(target):
        asked.append(target)
        return HostFacts(None, None, 47 * 10**9, target)

    code, data = plan(tmp_path, [FLASH, "-tp", "8"], reader, env={"HF_HUB_CACHE": str(cache)})
    assert asked == [str(cache)]  # the filesystem vLLM downloads into
    row = next(f for f in data["findings"] if f["rule"] == "download-space-short")
    assert row["level"] == "warn" and code == 0 and not data["refusals"]
    assert f"vLLM will download about 160 GB first, into {cache}, whose filesystem has 47 GB free" in row["text"]
    roomy = lambda target: HostFacts(None, None, 2 * 10**12, target)  # noqa: E731
    code, data = plan(tmp_path, [FLASH, "-tp", "8"], roomy, env={"HF_HUB_CACHE": str(cache)})
    assert not any(f["rule"] == "download-space-short" for f in data["findings"])


def test_the_download_dir_is_where_the_space_is_read_and_dsv4_serve_still_starts(tmp_path, monkeypatch):
    cache = hub_cache(tmp_path)
    asked: list = []

    def reader(target):
        asked.append(target)
        return HostFacts(None, None, 10**9, target)

    handed: list = []
    monkeypatch.setattr(serve_command, "hand_over", lambda a, vllm, env: handed.append(list(a)) or 0)
    c = ctx(tmp_path, reader, env={"HF_HUB_CACHE": str(cache)})
    assert serve_command.run_serve([FLASH, "-tp", "8", "--download-dir", str(tmp_path / "dl")], c) == 0 and handed
    assert asked == [str(tmp_path / "dl")]
