"""Checkpoint and config files that are not regular files are never opened for reading, so they
never block (issue 28's attack: a FIFO named model.safetensors.index.json, also reached through
a Hugging Face cache blob link, hung serve, plan, doctor and fit before any output).

vLLM reads the index only when ``os.path.isfile`` holds (links followed), and otherwise loads
every ``*.safetensors`` file (``weight_utils.py`` filter_duplicate_safetensors_files,
``:596@0.33.0``): a FIFO, a device or a folder of that name is no index here either.

Real files, FIFOs, devices and sockets in a temporary directory; every command runs in this
process in a daemon thread that must end within its budget (faked: the GPU reader, the vLLM
lookup, the hand-over and doctor's runtime probe — boundaries, not the file reading).
"""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest

from dsv4_launch.adapters.model_files import NotRegular, open_regular, read_json_file
from dsv4_launch.adapters.model_weights import INDEX, read_checkpoint_files, read_weights
from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.doctor import run_doctor
from dsv4_launch.commands.fit import run_fit
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.commands.serve import run_serve
from dsv4_launch.core.gpus import GpuInfo
from tests.adapters.test_model_weights import shard
from tests.conftest import V4_CONFIG
from tests.planning import make_context

H200S = tuple(GpuInfo(i, "NVIDIA H200", f"GPU-{i}", (9, 0), 141 * 2**30) for i in range(8))
BUDGET = 20.0  # seconds; each command takes well under one


def special(path, kind):
    """Make ``path`` a FIFO, a device link, a directory, a socket or a dangling link."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", path)  # endless bytes: read whole, it never ends
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        return sock
    return None


KINDS = ["fifo", "dev-zero", "dir", "socket"]


def release(path):
    """Unblock a reader a test failure might have left on a FIFO (a writer that opens and closes)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def finishes(fn, *args, **kw):
    """``fn(*args, **kw)``'s result, run in a daemon thread that must end within BUDGET."""
    box = {}

    def target():
        try:
            box["result"] = fn(*args, **kw)
        except BaseException as exc:  # noqa: BLE001 - re-raised below in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BUDGET)
    assert not thread.is_alive(), f"{fn.__name__} still running after {BUDGET} s (blocked on a special file?)"
    if "error" in box:
        raise box["error"]
    return box["result"]


def every_command(model: str) -> dict[str, int]:
    """Exit status of serve, plan, plan --json, doctor --json and fit --json on ``model``."""
    handed: list = []
    statuses = {}

    def ctx():
        return make_context(gpus=H200S, vllm=VllmInstall(version="0.33.0", importable=True),
                            hand_over=lambda argv, vllm, env: handed.append(argv) or 0,
                            read_runtime=lambda python, shapes: (None, "not probed in this test"))

    statuses["serve"] = finishes(run_serve, [model, "-tp", "8"], ctx())
    statuses["plan"] = finishes(run_plan, [model, "-tp", "8"], as_json=False, ctx=ctx())
    c = ctx()
    statuses["plan --json"] = finishes(run_plan, [model, "-tp", "8"], as_json=True, ctx=c)
    json.loads(c.stdout.getvalue())
    c = ctx()
    statuses["doctor"] = finishes(run_doctor, [model, "-tp", "8"], as_json=True, ctx=c)
    json.loads(c.stdout.getvalue())
    c = ctx()
    statuses["fit"] = finishes(run_fit, [model], as_json=True, ctx=c)
    json.loads(c.stdout.getvalue())
    return statuses


def local_model(folder, *, shards=2):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(V4_CONFIG))
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    for name in names:
        shard(folder / name, 1000)
    return folder, names


@pytest.mark.parametrize("kind", KINDS)
def test_a_special_index_in_a_local_model_blocks_nothing(tmp_path, kind):
    folder, names = local_model(tmp_path / "m")
    keep = special(folder / INDEX, kind)
    try:
        statuses = every_command(str(folder))
        assert statuses["serve"] == statuses["plan"] == statuses["plan --json"] == 0, statuses
        # judged as vLLM judges it: no index, so every *.safetensors file is loaded
        files = finishes(read_checkpoint_files, str(folder))
        assert files.weight_format == "safetensors" and files.shards_named == 0 and files.files == len(names)
    finally:
        release(folder / INDEX)
        if keep:
            keep.close()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_index_blob_in_the_hugging_face_cache_blocks_nothing(tmp_path, kind):
    """The cache's snapshot links the index to a blob; the blob is the FIFO (or a device)."""
    hub = tmp_path / "hub"
    repo = hub / "models--deepseek-ai--DeepSeek-V4-Flash"
    commit = "0123456789abcdef0123456789abcdef01234567"
    blobs, snap = repo / "blobs", repo / "snapshots" / commit
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (blobs / "cfg").write_text(json.dumps(V4_CONFIG))
    os.symlink("../../blobs/cfg", snap / "config.json")
    special(blobs / "idx", kind)
    os.symlink("../../blobs/idx", snap / INDEX)
    for i in (1, 2):
        shard(blobs / f"b{i}", 1000)
        os.symlink(f"../../blobs/b{i}", snap / f"model-0000{i}-of-00002.safetensors")
    handed: list = []
    ctx = make_context(env={"HF_HUB_CACHE": str(hub)}, gpus=H200S,
                       hand_over=lambda a, v, e: handed.append(list(a)) or 0)
    try:
        assert finishes(run_serve, ["deepseek-ai/DeepSeek-V4-Flash", "-tp", "8"], ctx) == 0
        assert handed == [["deepseek-ai/DeepSeek-V4-Flash", "-tp", "8"]]
        w = finishes(read_weights, str(snap), True, None)
        assert (w.shards_total, w.total_bytes, w.exact) == (0, 2000, True)  # both shards' tensors: no index
    finally:
        release(blobs / "idx")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "socket"])
def test_a_special_shard_without_an_index_blocks_nothing(tmp_path, kind):
    folder, _ = local_model(tmp_path / "m", shards=1)
    keep = special(folder / "extra.safetensors", kind)
    try:
        statuses = every_command(str(folder))
        assert statuses["plan"] == 0, statuses
        files = finishes(read_checkpoint_files, str(folder))
        assert files.payload_bytes is None  # one file's header could not be read: the total is not certain
    finally:
        release(folder / "extra.safetensors")
        if keep:
            keep.close()


@pytest.mark.parametrize("kind", KINDS)
def test_open_regular_refuses_without_blocking(tmp_path, kind):
    path = tmp_path / "x"
    keep = special(path, kind)
    try:
        with pytest.raises(OSError) as raised:  # NotRegular, or the OS's own refusal (a socket: ENXIO)
            finishes(open_regular, str(path))
        assert isinstance(raised.value, NotRegular) or kind == "socket"
        data, why = finishes(read_json_file, str(path))
        assert data is None and why
    finally:
        release(path)
        if keep:
            keep.close()


def test_open_regular_reads_a_regular_file_through_a_link(tmp_path):
    (tmp_path / "f").write_bytes(b'{"a": 1}')
    os.symlink(tmp_path / "f", tmp_path / "link")
    with open_regular(str(tmp_path / "link")) as handle:
        assert handle.read() == b'{"a": 1}'
    assert read_json_file(str(tmp_path / "link")) == ({"a": 1}, None)
