"""A ``--config`` YAML file as an attack on cost (round three of "never worse than plain ``vllm
serve``", issue 20, class 8): alias bombs and nesting past the C loader's limit are left to vLLM
quickly and in little memory; ordinary aliases are still read. Faked: the vLLM install
(``VllmInstall`` in-process, ``tests/fakes/vllm_pkg`` in subprocesses), NVML (the stand-in library)."""

import json
import subprocess

import pytest

from dsv4_launch.adapters.vllm_install import VllmInstall
from tests.conftest import BIN, clean_env
from tests.planning import plan_on_bytes
from tests.scaling import LineCounter

M = "deepseek-ai/DeepSeek-V4-Flash"
NEWER = VllmInstall("0.35.0", True)  # a release the option tables do not record


def _plan(argv, env=None, vllm=NEWER, as_json=False):
    return plan_on_bytes(argv, env, vllm, as_json)


# --- class 8: cost as an attack (YAML aliases) -------------------------------------------------


def _bomb(kind: str, width: int = 9, depth: int = 9) -> str:
    names = "abcdefghijklmnop"[:depth]
    if kind == "list":
        lines = ["a: &a [" + ",".join(["x"] * width) + "]"]
        lines += [f"{n}: &{n} [" + ",".join([f"*{p}"] * width) + "]" for p, n in zip(names, names[1:])]
    elif kind == "dict":
        lines = ["a: &a {" + ",".join(f"k{i}: x" for i in range(width)) + "}"]
        lines += [f"{n}: &{n} {{" + ",".join(f"k{i}: *{p}" for i in range(width)) + "}" for p,
                  n in zip(names, names[1:])]
    elif kind == "strings":  # few aliases of one long string
        lines = ["a: &a " + "y" * 100_000, "b: &b [" + ",".join(["*a"] * 200) + "]",
                 "c: [" + ",".join(["*b"] * 200) + "]"]
    else:  # block style, and the bomb under an option vLLM has
        lines = ["a: &a", *[f"  - x{i}" for i in range(width)]]
        lines += [f"{n}: &{n}\n" + "\n".join([f"  - *{p}"] * width) for p, n in zip(names, names[1:])]
        lines += [f"served-model-name: *{names[-1]}"]
    return "\n".join(lines) + "\n"


def yaml_work_bound(text: str) -> int:
    """The lines of adapters/config_file.py that reading ``text`` may run: linear in the file
    (a plain file of small entries runs ~4 a character), whatever its aliases expand to."""
    return 20 * len(text) + 2000


@pytest.mark.parametrize("kind", ["list", "dict", "strings", "block"])
def test_yaml_alias_bomb_is_left_to_vllm_quickly(tmp_path, kind, v4_dir):
    """Counted, not timed (tests/scaling.py): the bomb is read and measured in work linear in
    its ~300 bytes (an expansion would run ~10⁸ lines: stopped at the bound), then left to vLLM."""
    from dsv4_launch.adapters import config_file
    from dsv4_launch.vllm_cli.serve_args import ConfigNotRead

    path = tmp_path / "bomb.yaml"
    text = _bomb(kind)
    path.write_text(text)
    with LineCounter(config_file, limit=yaml_work_bound(text)):
        with pytest.raises(ConfigNotRead, match="aliases expand"):
            config_file.load_config_file(str(path))
    with LineCounter(config_file, limit=yaml_work_bound(text)):
        rc, out, err = _plan([v4_dir, "--config", str(path)], as_json=True, vllm=VllmInstall("0.33.0", True))
    assert rc == 0, (out, err)  # never a refusal: vLLM reads the file itself
    doc = json.loads(out)
    assert any("aliases expand" in w for w in doc["warnings"]), doc["warnings"]
    assert doc["argv"][-2:] == ["--config", str(path)]


def test_yaml_alias_bomb_small_memory(tmp_path, fake_vllm_path, v4_dir):
    """The 307-byte bomb under a 600 MiB address-space limit (main peaked at gigabytes)."""
    import resource

    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb("list"))
    assert len(path.read_bytes()) < 320

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (600 * 2**20, 600 * 2**20))

    done = subprocess.run([str(BIN / "dsv4-launch"), "plan", "--json", v4_dir, "--config", str(path)],
                          env=clean_env(tmp_path, DSV4_LAUNCH_GPU_CAPABILITY="12.0",
                                        PYTHONPATH=str(fake_vllm_path("0.33.0"))), capture_output=True,
                          timeout=30, preexec_fn=limit)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "aliases expand" in json.loads(done.stdout)["warnings"][-1] or any(
        "aliases expand" in w for w in json.loads(done.stdout)["warnings"])


@pytest.mark.parametrize("text", ["a: &a [x, y]\nb: [*a, *a, *a]\n", "port: 8000\nx: &x {a: 1}\ny: *x\n",
                                  "served-model-name: [" + ",".join(f"n{i}" for i in range(5000)) + "]\n"])
def test_ordinary_aliases_and_long_lists_are_still_read(tmp_path, text):
    from dsv4_launch.adapters.config_file import load_config_file

    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert isinstance(load_config_file(str(path)), dict)


@pytest.mark.parametrize("text", ["{" * 5000, "[" * 5000, "a: " + "[" * 3000 + "\n", "- " * 2000 + "x\n"])
def test_yaml_nested_past_the_c_loaders_limit_costs_nothing(tmp_path, text, monkeypatch):
    """vLLM's pure-Python reader dies on these (RecursionError); asking it costs ~2 s a time, so
    it is never asked (counted: no call), and the C loader's answer decides."""
    import yaml

    from dsv4_launch.adapters.config_file import load_config_file
    from dsv4_launch.vllm_cli.serve_args import ConfigFileError

    asked = []
    monkeypatch.setattr(yaml, "safe_load", lambda *a, **k: asked.append(a) or pytest.fail("the pure-Python loader"))
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    with pytest.raises(ConfigFileError, match="nested too deeply|not valid YAML"):
        load_config_file(str(path))
    assert asked == []
