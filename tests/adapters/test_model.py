"""Recognising the model offline: config.json from each place vLLM would read it, or the name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsv4_launch.adapters.model_files import model_facts
from dsv4_launch.core.model import V4, V41, classify, family_from_name
from tests.conftest import V4_CONFIG

V41_CONFIG = {"architectures": ["DeepseekV41ForCausalLM"], "model_type": "deepseek_v41"}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def write_config(folder: Path, config) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config) if not isinstance(config, str) else config)
    return folder


def cache_snapshot(cache: Path, repo: str, config, revision="main", commit=COMMIT) -> None:
    base = cache / ("models--" + repo.replace("/", "--"))
    write_config(base / "snapshots" / commit, config)
    (base / "refs").mkdir(parents=True, exist_ok=True)
    (base / "refs" / revision).write_text(commit)


def test_local_directory(tmp_path):
    folder = write_config(tmp_path / "my-finetune", V4_CONFIG)
    facts = model_facts(str(folder), {})
    assert facts.family == V4 and facts.architecture == "DeepseekV4ForCausalLM"
    assert "config.json in" in facts.source


def test_renamed_local_copy_is_keyed_on_config_not_name(tmp_path):
    folder = write_config(tmp_path / "DeepSeek-V4-Flash", LLAMA)
    facts = model_facts(str(folder), {})
    assert facts.family is None and facts.architecture == "LlamaForCausalLM"


@pytest.mark.parametrize("var", ["HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"])
def test_hf_hub_cache(tmp_path, var):
    cache_snapshot(tmp_path / "hub", "org/renamed-v4", V4_CONFIG)
    facts = model_facts("org/renamed-v4", {var: str(tmp_path / "hub")})
    assert facts.family == V4 and "Hugging Face cache" in facts.source


def test_hf_home(tmp_path):
    cache_snapshot(tmp_path / "hfhome" / "hub", "org/m", V41_CONFIG)
    facts = model_facts("org/m", {"HF_HOME": str(tmp_path / "hfhome")})
    assert facts.family == V41


def test_default_cache_under_home(tmp_path):
    cache_snapshot(tmp_path / ".cache" / "huggingface" / "hub", "org/m", V4_CONFIG)
    assert model_facts("org/m", {"HOME": str(tmp_path)}).family == V4


def test_download_dir(tmp_path):
    cache_snapshot(tmp_path / "dl", "org/m", V4_CONFIG)
    facts = model_facts("org/m", {"HOME": str(tmp_path / "nowhere")}, download_dir=str(tmp_path / "dl"))
    assert facts.family == V4


def test_revision_by_branch_and_by_commit(tmp_path):
    hub = tmp_path / "hub"
    cache_snapshot(hub, "org/m", LLAMA, revision="main", commit="a" * 40)
    cache_snapshot(hub, "org/m", V4_CONFIG, revision="v4-branch", commit="b" * 40)
    env = {"HF_HUB_CACHE": str(hub)}
    assert model_facts("org/m", env).family is None
    assert model_facts("org/m", env, revision="v4-branch").family == V4
    assert model_facts("org/m", env, revision="b" * 40).family == V4


def test_hf_config_path(tmp_path):
    folder = write_config(tmp_path / "cfg", V4_CONFIG)
    facts = model_facts("org/weights-only", {"HOME": str(tmp_path)}, hf_config_path=str(folder))
    assert facts.family == V4 and facts.source.startswith("--hf-config-path")


def test_hf_overrides_change_the_architecture(tmp_path):
    folder = write_config(tmp_path / "m", LLAMA)
    overrides = json.dumps({"architectures": ["DeepseekV4ForCausalLM"]})
    facts = model_facts(str(folder), {}, hf_overrides=overrides)
    assert facts.family == V4 and "--hf-overrides" in facts.source


def test_unreadable_hf_overrides_are_said(tmp_path):
    folder = write_config(tmp_path / "m", V4_CONFIG)
    facts = model_facts(str(folder), {}, hf_overrides="{not json")
    assert facts.family == V4 and "not readable JSON" in facts.note


def test_name_fallback_says_so(tmp_path):
    facts = model_facts("deepseek-ai/DeepSeek-V4-Flash", {"HOME": str(tmp_path)})
    assert facts.family == V4 and facts.source == "the name"
    assert "no config.json readable" in facts.note and "assumed" in facts.note


def test_malformed_config_falls_back_to_name_and_says_why(tmp_path):
    folder = write_config(tmp_path / "DeepSeek-V4-Pro", "{broken")
    facts = model_facts(str(folder), {})
    assert facts.family == V4 and facts.source == "the name"
    assert "not valid JSON" in facts.note


def test_directory_without_config(tmp_path):
    (tmp_path / "empty").mkdir()
    facts = model_facts(str(tmp_path / "empty"), {})
    assert facts.family is None and "has no config.json" in facts.note


def test_no_model():
    facts = model_facts(None, {})
    assert facts.family is None and "default model" in facts.note


@pytest.mark.parametrize(
    "name,family",
    [
        ("deepseek-ai/DeepSeek-V4-Flash", V4),
        ("deepseek-ai/DeepSeek-V4-Pro", V4),
        ("deepseek-ai/DeepSeek-V4-Flash-0731", V4),
        ("deepseek-ai/DeepSeek-V4.1-Flash", V41),
        ("/models/deepseek_v4_flash/", V4),
        ("deepseek-ai/DeepSeek-V3.2", None),
        ("Qwen/Qwen3-0.6B", None),
        (None, None),
    ],
)
def test_family_from_name(name, family):
    assert family_from_name(name) == family


@pytest.mark.parametrize(
    "config,family",
    [
        ({"architectures": ["DeepseekV4ForConditionalGeneration"]}, V4),
        ({"model_type": "deepseek_v4"}, V4),
        ({"architectures": ["DeepseekV41ForCausalLM"]}, V41),
        ({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"}, None),
        ({}, None),
    ],
)
def test_classify_keys_on_config(config, family):
    assert classify("x/DeepSeek-V4-Flash", config, "test").family == family


def test_known_checkpoints_give_facts_for_names_not_downloaded_yet():
    from dsv4_launch.adapters.checkpoints import known_checkpoint, load_checkpoints

    flash = known_checkpoint("deepseek-ai/DeepSeek-V4-Flash")
    facts = classify("deepseek-ai/DeepSeek-V4-Flash", None, None, missing_reason="not downloaded", known=flash)
    assert facts.family == V4 and facts.architecture == "DeepseekV4ForCausalLM"
    assert facts.source == "the known-checkpoint table (deepseek-ai/DeepSeek-V4-Flash)"
    assert facts.number("num_attention_heads") == 64 and facts.number("o_groups") == 8
    assert known_checkpoint("DEEPSEEK-AI/deepseek-v4-flash/") is flash  # letter case, trailing slash
    # every entry is a DeepSeek-V4 family checkpoint with an architecture and its sources
    for entry in load_checkpoints().values():
        known = classify(entry["id"], None, None, known=entry)
        assert known.is_dsv4_family, entry["id"]
        assert entry["sources"], entry["id"]
    v41 = classify("deepseek-ai/DeepSeek-V4.1-Flash", None, None,
                   known=known_checkpoint("deepseek-ai/DeepSeek-V4.1-Flash"))
    assert v41.family == V41 and v41.number("num_attention_heads")  # read from text_config


def test_a_local_config_always_wins_over_the_table(tmp_path):
    from dsv4_launch.adapters.checkpoints import known_checkpoint

    facts = classify("deepseek-ai/DeepSeek-V4-Flash", {"architectures": ["LlamaForCausalLM"]}, "config.json",
                     known=known_checkpoint("deepseek-ai/DeepSeek-V4-Flash"))
    assert facts.family is None and facts.source == "config.json"


def test_each_known_checkpoint_file_is_named_for_its_id():
    """data/checkpoints/<id in lower case, "/" as "--">.json: the name a start opens directly."""
    import os

    from dsv4_launch.adapters.checkpoints import DATA, known_checkpoint, load_checkpoints

    files = sorted(n for n in os.listdir(DATA) if n.endswith(".json"))
    entries = load_checkpoints()
    assert len(entries) == len(files) >= 17
    for key, entry in entries.items():
        assert key.replace("/", "--") + ".json" in files and entry["id"].lower() == key
        assert known_checkpoint(entry["id"].upper() + "/") is entry


@pytest.mark.parametrize("name", ["", "/", "deepseek-ai/DeepSeek-V4-Flashh", "deepseek-ai--deepseek-v4-flash",
                                  "deepseek-ai/../deepseek-ai/DeepSeek-V4-Flash", "../../etc/passwd",
                                  "deepseek-ai/DeepSeek-V4-Flash\x00", "x" * 5000, "meta-llama/Llama-3-8B"])
def test_names_outside_the_table_are_not_known(name):
    from dsv4_launch.adapters.checkpoints import known_checkpoint

    assert known_checkpoint(name) is None
