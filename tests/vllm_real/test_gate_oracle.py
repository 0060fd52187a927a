"""What dsv4-serve refuses before vLLM reads any setting (tests/rules/test_gate.py), against vLLM's own
code on each CI release:

* `serve` / `vllm serve` as the first word(s) after `dsv4-serve`: vLLM's real parser rejects
  `vllm serve serve MODEL` (the model then is 'serve', MODEL an extra positional), and so does
  the replica; `vllm serve serve` alone parses (vLLM then looks for a model named 'serve').
* a local model path that does not exist: vLLM's ``get_config`` — the first thing ModelConfig
  does with the model (``get_config(self.hf_config_path or self.model, …)``) — raises
  "Invalid repository ID or local directory specified" for every path dsv4-launch refuses.
"""

from __future__ import annotations

import pytest

from dsv4_launch.adapters.model_files import missing_local_model
from dsv4_launch.vllm_cli.option_table import load_table
from dsv4_launch.vllm_cli.serve_args import read_serve_args

from .conftest import real_parse, vllm_symbol

M = "deepseek-ai/DeepSeek-V4-Flash"

REPEATED = [["serve", M], ["serve", M, "-tp", "8"], ["serve", "--model", M], ["vllm", "serve", M],
            ["serve", f"--model={M}", "--max-model-len", "4096"]]


@pytest.mark.parametrize("tokens", REPEATED, ids=lambda t: " ".join(t))
def test_vllm_rejects_the_command_repeated_as_the_first_word(real_vllm, tokens):
    top, _, version = real_vllm
    status, _ = real_parse(top, tokens)
    assert status == "reject", f"vLLM {version} accepts `vllm serve {' '.join(tokens)}`: dsv4-serve must not refuse it"
    assert read_serve_args(tokens, load_table(version)).rejection  # the replica agrees: refused, not guessed


def test_serve_alone_is_a_model_name_to_vllm(real_vllm):
    top, _, version = real_vllm
    status, namespace = real_parse(top, ["serve"])
    assert status == "ok" and namespace.model_tag == "serve"  # not certain to fail: dsv4-serve only warns


MISSING = ["/models/DeepSeek-V4-Flash", "/nope", "./nope", "../nope/model", "~/models/x", "~", "models/deepseek/v4"]


@pytest.mark.parametrize("model", MISSING)
def test_vllm_fails_on_every_missing_path_dsv4_serve_refuses(real_vllm, tmp_path, monkeypatch, model):
    _, _, version = real_vllm
    monkeypatch.chdir(tmp_path)
    args = read_serve_args([model], load_table(version))
    assert missing_local_model(args, {}) is not None  # dsv4-serve refuses it…
    get_config = vllm_symbol("vllm.transformers_utils.config", "get_config")
    with pytest.raises(ValueError, match="Invalid repository ID or local directory specified"):
        get_config(model, False)  # …and vLLM's own first reading of the model fails on it


def test_model_config_reads_the_config_from_the_model_unless_hf_config_path(real_vllm):
    """The refusal rests on ModelConfig handing ``hf_config_path or model`` to get_config: read
    the release's own source for it (a release that reads the model elsewhere first breaks this)."""
    import inspect

    model_config = vllm_symbol("vllm.config.model", "ModelConfig")
    source = inspect.getsource(model_config)
    assert "get_config(\n            self.hf_config_path or self.model," in source


@pytest.mark.parametrize("kind", ["fifo", "dir", "dev-null"])
def test_vllm_loads_every_shard_past_a_special_index_as_dsv4_launch_reads_it(real_vllm, tmp_path, kind):
    """vLLM's loader skips an index that is not a regular file (``os.path.isfile``) and loads every
    ``*.safetensors`` file — never opening the FIFO; read_checkpoint_files judges the same files."""
    import os
    import threading

    from dsv4_launch.adapters.model_weights import INDEX, read_checkpoint_files
    from tests.adapters.test_model_weights import shard

    names = [str(tmp_path / f"model-0000{i}-of-00002.safetensors") for i in (1, 2)]
    for name in names:
        shard(name, 100)
    index = tmp_path / INDEX
    {"fifo": lambda: os.mkfifo(index), "dir": index.mkdir, "dev-null": lambda: os.symlink("/dev/null", index)}[kind]()
    keep = vllm_symbol("vllm.model_executor.model_loader.weight_utils", "filter_duplicate_safetensors_files")
    box = {}
    thread = threading.Thread(target=lambda: box.update(kept=keep(names, str(tmp_path), INDEX)), daemon=True)
    thread.start()
    thread.join(20)
    try:
        assert not thread.is_alive() and sorted(box["kept"]) == sorted(names)
        files = read_checkpoint_files(str(tmp_path))
        assert (files.shards_named, files.files) == (0, len(names))  # no index: every shard, as vLLM
    finally:
        if kind == "fifo":
            try:
                os.close(os.open(index, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
