"""`plan` is a gate (issue 28 item 3): what vLLM certainly fails on before it reads any setting.

* Arguments the installed release's own option parser rejects (an unknown option, an invalid
  choice, a missing value): `plan` exits 2 and `doctor` fails, with the parser's message;
  `dsv4-serve` hands them to vLLM unchanged (vLLM prints its own error). With another
  release's table (a newer vLLM, an unknown version) it is a warning, as before.
* `serve` (or `vllm serve`) as the first word(s) of `dsv4-serve`: refused in one line.
* A local model path that does not exist (nothing else supplying the config): refused.

Faked: the GPU reader, the vLLM lookup (a VllmInstall of a given version) and the hand-over
(a function recording the argv it was given) — nothing else. What vLLM's own code does with
the same inputs is checked in tests/vllm_real/test_gate_oracle.py.
"""

from __future__ import annotations

import json
import os

import pytest

from dsv4_launch.adapters.model_files import looks_like_path
from dsv4_launch.adapters.vllm_install import VllmInstall, assumed_vllm
from dsv4_launch.commands.doctor import run_doctor
from dsv4_launch.commands.plan import run_plan
from dsv4_launch.commands.serve import run_serve
from dsv4_launch.core.gpus import GpuInfo
from tests.conftest import V4_CONFIG
from tests.planning import make_context

M = "deepseek-ai/DeepSeek-V4-Flash"
H200S = tuple(GpuInfo(i, "NVIDIA H200", f"GPU-{i}", (9, 0), 141 * 2**30) for i in range(8))
NO_RUNTIME = lambda python, shapes: (None, "not probed in this test")  # noqa: E731


class Handed:
    def __init__(self):
        self.argv = None

    def __call__(self, argv, vllm, env):
        self.argv = list(argv)
        return 0


def ctx_for(version="0.33.0", env=None, vllm=None, **kw):
    handed = Handed()
    vllm = vllm or VllmInstall(version=version, importable=True)
    return make_context(env=env or {}, gpus=H200S, vllm=vllm, hand_over=handed, read_runtime=NO_RUNTIME, **kw), handed


def serve(argv, **kw):
    ctx, handed = ctx_for(**kw)
    rc = run_serve(argv, ctx)
    return rc, ctx.stderr.getvalue(), handed.argv


def plan(argv, as_json=False, **kw):
    ctx, _ = ctx_for(**kw)
    rc = run_plan(list(argv), as_json=as_json, ctx=ctx)
    out = ctx.stdout.getvalue()
    return rc, (json.loads(out) if as_json else out), ctx.stderr.getvalue()


def doctor(argv, **kw):
    ctx, _ = ctx_for(**kw)
    rc = run_doctor(list(argv), as_json=True, ctx=ctx)
    return rc, json.loads(ctx.stdout.getvalue())


@pytest.fixture
def v4(tmp_path):
    folder = tmp_path / "v4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(V4_CONFIG))
    return str(folder)


# --- arguments vLLM's own parser rejects ------------------------------------------------------

REJECTED = [
    (["--max-model-lenn", "4096"], "unrecognized arguments: --max-model-lenn"),  # a typo of an option
    (["--tensor-parallel-size"], "expected one argument"),  # a missing value
    (["--dtype", "fp9"], "invalid choice: 'fp9'"),  # an invalid choice
    (["--enable-prefix-caching=yes"], "ignored explicit argument"),  # a flag given a value
    (["extra-word"], "unrecognized arguments: 1 other word"),  # a second positional
    (["--max-model"], "expected one argument"),  # an abbreviation argparse completes, without its value
]


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
@pytest.mark.parametrize("extra,message", REJECTED)
def test_plan_exits_2_on_what_vllms_parser_rejects(v4, version, extra, message):
    rc, out, err = plan([v4, *extra], version=version)
    assert rc == 2, out
    error = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(error) == 1 and f"vLLM {version} rejects these arguments" in error[0] and message in error[0], out
    assert "handing them over unchanged" not in out  # no warning saying the opposite of the error
    rc, data, _ = plan([v4, *extra], as_json=True, version=version)
    assert rc == 2 and data["exit_status"] == 2 and message in data["rejected_by_vllm"]
    assert data["refusals"] == [] and data["error"] is None  # dsv4-serve refuses nothing: it hands them over


def test_plan_help_names_the_exit_2_for_what_vllms_parser_rejects(capsys):
    """The case above, in `plan --help`'s exit status (issue 41: the help named only refusals)."""
    from dsv4_launch.commands.cli import main

    assert main(["plan", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "or 2 when the installed vLLM's own option parser rejects the arguments" in help_text, help_text


@pytest.mark.parametrize("extra,message", REJECTED)
def test_doctor_fails_on_them_and_dsv4_serve_hands_them_over_unchanged(v4, extra, message):
    rc, data = doctor([v4, *extra])
    (line,) = [c for c in data["checks"] if c["section"] == "arguments"]
    assert rc == 1 and not data["ok"] and line["status"] == "FAIL" and message in line["detail"]
    assert [c["status"] for c in data["checks"] if c["section"] == "model"] == ["WARN"]  # not "OK: not DeepSeek-V4"
    rc, err, handed = serve([v4, *extra])
    assert rc == 0 and handed == [v4, *extra]  # vLLM prints its own error, as plain `vllm serve` would
    assert "error" not in err


@pytest.mark.parametrize("vllm", [VllmInstall(version="0.35.0", importable=True),
                                  VllmInstall(version=None, importable=True)], ids=["newer", "unknown"])
def test_another_releases_table_only_warns(v4, vllm):
    """A newer vLLM (0.35.0 stand-in) or an unknown version: the table is not that release's own,
    so an option it lacks may be new — never a refusal."""
    rc, out, _ = plan([v4, "--max-model-lenn", "4096"], vllm=vllm)
    assert rc == 0 and "error:" not in out
    rc, data, _ = plan([v4, "--dtype", "fp9"], as_json=True, vllm=vllm)
    assert rc == 0 and data["rejected_by_vllm"] is None and not data["refusals"]
    assert any("will likely reject" in w for w in data["warnings"])


def test_plan_accepts_what_the_parser_accepts(v4):
    rc, data, _ = plan([v4, "--max-model-len", "4096", "-tp", "8"], as_json=True)
    assert rc == 0 and data["rejected_by_vllm"] is None and data["refusals"] == []


def test_the_rejection_masks_a_secret_like_everything_else(v4):
    rc, out, _ = plan([v4, "--api-key", "sk-live-1234567890", "--bogus-option"])
    assert rc == 2 and "sk-live-1234567890" not in out and "--bogus-option" in out


# --- `serve` as the first word --------------------------------------------------------------


@pytest.mark.parametrize("argv,first", [
    (["serve", M], "serve"),
    (["serve", M, "-tp", "8"], "serve"),
    (["serve", "--model", M], "serve"),  # vLLM moves the model in front: 'serve' is then the extra word
    (["vllm", "serve", M], "vllm serve"),
])
@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_the_command_repeated_as_the_first_word_is_refused(argv, first, version):
    rc, err, handed = serve(argv, version=version)
    assert rc == 2 and handed is None, err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert f"`{first}` as the first word" in errors[0] and "already means `vllm serve`" in errors[0]
    rc, out, _ = plan(argv, version=version)
    assert rc == 2 and "already means `vllm serve`" in out


def test_serve_alone_is_a_warning_and_a_newer_vllm_only_warns():
    rc, err, handed = serve(["serve"])  # vLLM would look for a model named 'serve': not certain to fail
    assert rc == 0 and handed == ["serve"] and "already means `vllm serve`" in err
    rc, err, handed = serve(["serve", M], vllm=VllmInstall(version="0.35.0", importable=True))
    assert rc == 0 and handed == ["serve", M] and "not verified for vLLM 0.35.0" in err


def test_a_folder_named_serve_is_a_model(tmp_path, monkeypatch):
    (tmp_path / "serve").mkdir()
    monkeypatch.chdir(tmp_path)
    rc, err, handed = serve(["serve"])
    assert rc == 0 and handed == ["serve"] and "already means" not in err


# --- a local model path that does not exist -------------------------------------------------

MISSING = ["/models/DeepSeek-V4-Flash", "/nope", "./nope", "../nope/model", "~/models/DeepSeek-V4-Flash", "~",
           "models/deepseek/v4"]


@pytest.mark.parametrize("model", MISSING)
def test_a_missing_local_path_is_refused(tmp_path, monkeypatch, model):
    monkeypatch.chdir(tmp_path)  # relative paths: resolved where vLLM would run
    rc, err, handed = serve([model, "-tp", "8"])
    assert rc == 2 and handed is None, err
    (line,) = [line for line in err.splitlines() if "pre-flight:" in line]
    assert f"model {model}: no such file or directory" in line and "config.py:923@0.33.0" in line
    assert "from the name" not in err  # the refusal says all there is to say about the model
    rc, data, _ = plan([model], as_json=True)
    assert rc == 2 and any("no such file or directory" in r for r in data["refusals"])
    rc, data = doctor([model])
    assert rc == 1 and any(c["status"] == "FAIL" and "no such file" in c["detail"] for c in data["checks"])


def test_the_tilde_hint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, err, _ = serve(["--model=~/x"])
    assert rc == 2 and "vLLM does not expand '~'" in err


@pytest.mark.parametrize("model", [M, "someone/not-downloaded-yet", "gpt2", "s3://bucket/models/v4", "serve-it"])
def test_what_may_still_load_is_handed_over(tmp_path, monkeypatch, model):
    """A repository id (downloaded at start, or not yet), an object-store URI: vLLM may load them."""
    monkeypatch.chdir(tmp_path)
    rc, err, handed = serve([model, "-tp", "8"])
    assert "no such file or directory" not in err and (rc, handed) == (0, [model, "-tp", "8"])


@pytest.mark.parametrize("extra,env", [
    (["--hf-config-path", M], {}),  # the config comes from elsewhere
    (["--config-format", "mistral"], {}),  # another config parser
    ([], {"VLLM_MODEL_REDIRECT_PATH": "/etc/redirects.json"}),  # vLLM may redirect the name
    ([], {"VLLM_USE_MODELSCOPE": "true"}),
    ([], {"DSV4_LAUNCH_PREFLIGHT": "warn"}),  # the user's own choice: warned, started
])
def test_a_missing_path_is_not_refused_where_vllm_might_find_a_config(tmp_path, monkeypatch, extra, env):
    monkeypatch.chdir(tmp_path)
    rc, err, handed = serve(["/models/nope", *extra], env=env)
    assert rc == 0 and handed == ["/models/nope", *extra], err


def test_existing_paths_and_dangling_links_are_not_refused(tmp_path, monkeypatch, v4):
    monkeypatch.chdir(tmp_path)
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    for model in (v4, "./v4", str(tmp_path / "dangling")):  # a dangling link: left to vLLM
        rc, err, handed = serve([model])
        assert rc == 0 and handed == [model] and "no such file or directory" not in err, (model, err)


def test_a_missing_path_under_an_assumed_release_only_warns(tmp_path, monkeypatch):
    """--vllm-version plans for another machine: the path may exist there."""
    ctx, _ = ctx_for(vllm=assumed_vllm("0.33.0"))
    rc = run_plan(["/models/nope"], as_json=True, ctx=ctx)
    data = json.loads(ctx.stdout.getvalue())
    assert rc == 0 and any("no such file or directory" in w and "[on this machine]" in w for w in data["warnings"])


def test_a_newer_release_only_warns_on_a_missing_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, err, handed = serve(["./nope"], vllm=VllmInstall(version="0.35.0", importable=True))
    assert rc == 0 and handed == ["./nope"] and "not verified for vLLM 0.35.0" in err


@pytest.mark.parametrize("model,path", [
    ("/a", True), ("./a", True), ("../a", True), ("~", True), ("~x/y", True), (".", True), ("a/b/c", True),
    ("a/b", False), ("gpt2", False), ("s3://b/a/c", False), (".hidden", False), ("org/.name", False),
])
def test_what_looks_like_a_path(model, path):
    assert looks_like_path(model) is path


# --- small truths (issue 31 item 4) ------------------------------------------------------------


@pytest.mark.parametrize("typed,meant", [
    ("deepseek-ai/DeepSeek-V4-Flsh", "deepseek-ai/DeepSeek-V4-Flash"),
    ("DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Flash"),  # the organisation left out
    ("deepseek/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Flash"),  # the organisation mistyped
    ("deepseek-ai/DeepSeek-V4-Pro-Dspak", "deepseek-ai/DeepSeek-V4-Pro-DSpark"),
    ("nvidia/DeepSeek-V4-Flash-NVFP", "nvidia/DeepSeek-V4-Flash-NVFP4"),
    ("deepseek-ai/DeepSeek-V4.1-Flsh", "deepseek-ai/DeepSeek-V4.1-Flash"),
])
def test_a_near_miss_of_a_known_checkpoint_says_did_you_mean(tmp_path, typed, meant):
    env = {"HF_HUB_CACHE": str(tmp_path / "empty-cache")}  # not downloaded: the name is all there is
    rc, data, _ = plan([typed, "-tp", "8"], as_json=True, env=env)
    said = [line for line in (*data["warnings"], *data["notes"]) if f"model {typed}:" in line]
    assert len(said) == 1 and said[0].endswith(f"not a known checkpoint: did you mean {meant}?"), said


@pytest.mark.parametrize("name", ["deepseek-ai/DeepSeek-V3", "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B",
                                  M, "deepseek-ai/deepseek-v4-flash"])
def test_no_did_you_mean_for_other_models_or_a_known_one(tmp_path, name):
    env = {"HF_HUB_CACHE": str(tmp_path / "empty-cache")}
    rc, data, _ = plan([name, "-tp", "8"], as_json=True, env=env)
    assert not any("did you mean" in line for line in (*data["warnings"], *data["notes"])), data["warnings"]


def test_a_bare_name_is_looked_up_in_the_cache_as_the_hub_does(tmp_path):
    """``gpt2``-style ids (no organisation) are hub ids too: cached as models--NAME."""
    snap = tmp_path / "hub" / "models--DeepSeek-V4-Flash" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(V4_CONFIG))
    (tmp_path / "hub" / "models--DeepSeek-V4-Flash" / "refs").mkdir()
    (tmp_path / "hub" / "models--DeepSeek-V4-Flash" / "refs" / "main").write_text("a" * 40)
    rc, data, _ = plan(["DeepSeek-V4-Flash", "-tp", "8"], as_json=True, env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert data["model"]["source"].startswith("Hugging Face cache"), data["model"]


@pytest.mark.parametrize("mode,status", [("refuse", 2), ("warn", 0), ("off", 0)])
def test_plan_json_names_the_mode_apart_from_the_outcome(v4, mode, status):
    rc, data, _ = plan([v4, "--block-size", "64"], as_json=True, env={"DSV4_LAUNCH_PREFLIGHT": mode})
    assert data["preflight_mode"] == data["preflight"] == mode  # the old key kept: schema 1 readers
    assert rc == data["exit_status"] == status


def test_doctor_says_the_model_once_and_skipped_checks_are_no_ok(monkeypatch):
    rc, data = doctor([], vllm=VllmInstall(version=None, importable=True))
    models = [c for c in data["checks"] if c["section"] == "model"]
    assert len(models) == 1 and "no model given: checked for deepseek-ai/DeepSeek-V4-Flash" in models[0]["detail"]
    skipped = [c for c in data["checks"] if "were skipped" in c["detail"]]
    assert skipped and all(c["status"] == "WARN" for c in skipped), skipped
    assert not any(c["status"] == "OK" and "skipped" in c["detail"] for c in data["checks"])
