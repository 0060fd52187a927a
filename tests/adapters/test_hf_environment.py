"""The environment as huggingface_hub reads it (round three of "never worse than plain ``vllm
serve``", issue 20, class 6): offline mode, the hub cache's expansion, an unexpanded tilde.
Faked: the vLLM install (``VllmInstall`` in-process)."""

import json

import pytest

from dsv4_launch.adapters.vllm_install import VllmInstall
from tests.planning import plan_on_bytes

M = "deepseek-ai/DeepSeek-V4-Flash"
NEWER = VllmInstall("0.35.0", True)  # a release the option tables do not record


def _plan(argv, env=None, vllm=NEWER, as_json=False):
    return plan_on_bytes(argv, env, vllm, as_json)


# --- class 6: the environment as huggingface_hub reads it --------------------------------------

# huggingface_hub/constants.py (2.4.0): HF_HUB_OFFLINE = _is_true(HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE),
# _is_true(v) = v.upper() in {"1", "ON", "YES", "TRUE"}. tests/vllm_real/test_hf_env.py asks the real one.
OFFLINE_CASES = [
    ({"HF_HUB_OFFLINE": "1"}, True), ({"HF_HUB_OFFLINE": "true"}, True), ({"HF_HUB_OFFLINE": "On"}, True),
    ({"HF_HUB_OFFLINE": "YES"}, True), ({"HF_HUB_OFFLINE": " 1"}, False), ({"HF_HUB_OFFLINE": "y"}, False),
    ({"HF_HUB_OFFLINE": "0"}, False), ({"TRANSFORMERS_OFFLINE": "1"}, True), ({"TRANSFORMERS_OFFLINE": "yes"}, True),
    ({"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": "1"}, True),
    ({"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "1"}, False), ({}, False), ({"HF_HUB_OFFLINE": "2"}, False),
]


@pytest.mark.parametrize("env,expected", OFFLINE_CASES)
def test_offline_mode_as_huggingface_hub_reads_it(env, expected):
    from dsv4_launch.adapters.model_files import hf_offline

    assert hf_offline(env) is expected


def _cache_cases(tmp_path):
    home = str(tmp_path / "home")
    return [
        ({"HOME": home}, f"{home}/.cache/huggingface/hub"),
        ({"HOME": home, "HF_HOME": "~/hf"}, f"{home}/hf/hub"),
        ({"HOME": home, "HF_HOME": "$HOME/hf2"}, f"{home}/hf2/hub"),
        ({"HOME": home, "HF_HOME": "${BASE}/hf3", "BASE": "/srv"}, "/srv/hf3/hub"),
        ({"HOME": home, "HF_HOME": "$UNSET_VAR/x"}, "$UNSET_VAR/x/hub"),
        ({"HOME": home, "HF_HUB_CACHE": "~/c1", "HF_HOME": "/ignored"}, f"{home}/c1"),
        ({"HOME": home, "HUGGINGFACE_HUB_CACHE": "$HOME/c2", "HF_HOME": "/ignored"}, f"{home}/c2"),
        ({"HOME": home, "HF_HUB_CACHE": "/c3", "HUGGINGFACE_HUB_CACHE": "/c4"}, "/c3"),
        ({"HOME": home, "XDG_CACHE_HOME": "~/xdg"}, f"{home}/xdg/huggingface/hub"),
        ({"HOME": home, "XDG_CACHE_HOME": "$HOME/xdg2", "HF_HOME": "$HOME/hf4"}, f"{home}/hf4/hub"),
        ({"HOME": home, "HF_HOME": "$V", "V": "~/tilde-in-var"}, f"{home}/tilde-in-var/hub"),
    ]


def test_hub_cache_expands_as_huggingface_hub_does(tmp_path):
    from dsv4_launch.adapters.model_files import hub_cache

    for env, expected in _cache_cases(tmp_path):
        assert hub_cache(env) == expected, env


@pytest.mark.parametrize("var,value", [("HF_HOME", "~/hfhome"), ("HF_HOME", "$HOME/hfhome"),
                                       ("HF_HOME", "${HOME}/hfhome"), ("HF_HUB_CACHE", "~/hfhome/hub"),
                                       ("HUGGINGFACE_HUB_CACHE", "$HOME/hfhome/hub"),
                                       ("XDG_CACHE_HOME", "~/xdgc")])
def test_the_cached_model_is_found_through_an_expanded_variable(tmp_path, var, value):
    """A config.json in the cache a ``~``/``$HOME`` variable names is read (on main the model was
    taken from the known-checkpoint table instead, since the literal path does not exist)."""
    home = tmp_path / "home"
    base = home / ("xdgc/huggingface" if var == "XDG_CACHE_HOME" else "hfhome")
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = base / "hub" / "models--org--my-v4"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text(json.dumps(
        {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "num_attention_heads": 64}))
    rc, out, _ = _plan(["org/my-v4"], env={"HOME": str(home), var: value}, as_json=True,
                       vllm=VllmInstall("0.33.0", True))
    doc = json.loads(out)
    assert doc["model"]["architecture"] == "DeepseekV4ForCausalLM", doc["model"]
    assert "Hugging Face cache" in doc["model"]["source"], doc["model"]


@pytest.mark.parametrize("env", [{"TRANSFORMERS_OFFLINE": "1"}, {"HF_HUB_OFFLINE": "TRUE"}, {"HF_HUB_OFFLINE": "on"}])
def test_offline_weights_are_judged_with_every_spelling(env, monkeypatch):
    """gather reads offline mode through model_files.hf_offline: TRANSFORMERS_OFFLINE counts."""
    from dsv4_launch.adapters import gather

    seen = {}

    def fake_read_weights(directory, local, known):
        seen["local"] = local
        return None

    monkeypatch.setattr(gather, "read_weights", fake_read_weights)
    from types import SimpleNamespace

    gather._weights(SimpleNamespace(model="org/x"), SimpleNamespace(directory=None), env)
    assert seen["local"] is True
    gather._weights(SimpleNamespace(model="org/x"), SimpleNamespace(directory=None), {"HF_HUB_OFFLINE": " 1"})
    assert seen["local"] is False


@pytest.mark.parametrize("spelling", [["--model=~/v4"], ["~/v4"], ["--model", "~/v4"]])
def test_an_unexpanded_tilde_in_the_model_is_not_the_home_directory(tmp_path, spelling):
    """vLLM tests ``Path(model).exists()`` (repo_utils.file_or_path_exists): a literal ``~/v4`` is
    not $HOME/v4 for it, so its config.json is not read here either (main read it)."""
    home = tmp_path / "home"
    (home / "v4").mkdir(parents=True)
    (home / "v4" / "config.json").write_text(json.dumps(
        {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "num_attention_heads": 64}))
    rc, out, _ = _plan(spelling, env={"HOME": str(home)}, as_json=True, vllm=VllmInstall("0.33.0", True))
    doc = json.loads(out)
    assert doc["model"]["architecture"] is None, doc["model"]
