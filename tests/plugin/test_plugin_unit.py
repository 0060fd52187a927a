"""The vLLM plugin's own logic, without vLLM: a stand-in `vllm` package at the boundary (its
version, `vllm.logger.init_logger`, and `vllm.engine.arg_utils` with the two names the plugin
wraps, `resolve_kv_cache_dtype_string` and `EngineArgs.create_engine_config`). The real vLLM
judges the same plugin in tests/vllm_real/test_plugin.py. Each case runs in a fresh interpreter:
the patch is process-wide, as in vLLM's own processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import clean_env

FAKE = {
    "vllm/__init__.py": "__version__ = {version!r}\n",
    # As vLLM's logging config does (vllm/logger.py DEFAULT_LOGGING_CONFIG): one handler, on
    # the "vllm" logger only, level INFO, not propagated; init_logger only fetches a logger.
    "vllm/logger.py": textwrap.dedent("""
        import logging, sys
        _vllm = logging.getLogger("vllm")
        _handler = logging.StreamHandler(sys.stdout)
        _handler.setFormatter(logging.Formatter("%(levelname)s [%(name)s] %(message)s"))
        _vllm.addHandler(_handler)
        _vllm.setLevel(logging.INFO)
        _vllm.propagate = False
        def init_logger(name):
            return logging.getLogger(name)
    """),
    "vllm/engine/__init__.py": "",
    "vllm/engine/arg_utils.py": textwrap.dedent("""
        def resolve_kv_cache_dtype_string(kv_cache_dtype, model_config):
            return kv_cache_dtype

        class EngineArgs:
            def __init__(self, model, kv_cache_dtype="auto", attention_backend=None, block_size=None):
                self.model, self.kv_cache_dtype, self.attention_backend = model, kv_cache_dtype, attention_backend
                self.block_size = block_size

            def create_engine_config(self):
                class HfConfig:
                    def to_dict(inner):
                        return {"architectures": [self.model], "model_type": "x", "num_attention_heads": 64}
                class ModelConfig:
                    model = self.model
                    hf_config = HfConfig()
                return resolve_kv_cache_dtype_string(self.kv_cache_dtype, ModelConfig())
    """),
}

SCRIPT = textwrap.dedent("""
    import json, sys
    import vllm.engine.arg_utils as a
    from dsv4_launch.plugin import register
    register(); register()   # vLLM may load plugins more than once: harmless
    cases = json.loads(sys.argv[1])
    out = [a.EngineArgs(**c).create_engine_config() for c in cases]
    print("RESULT " + json.dumps({"patched": getattr(a.resolve_kv_cache_dtype_string, "_dsv4_launch_patched", False),
                                   "dtypes": out}))
""")

V4, LLAMA = "DeepseekV4ForCausalLM", "LlamaForCausalLM"


def run(tmp_path, version, cases, **env):
    root = tmp_path / f"fake-vllm-{version}"
    for name, text in FAKE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(version=version) if name == "vllm/__init__.py" else text)
    e = clean_env(tmp_path, PYTHONPATH=str(root), **env)
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(cases)], env=e, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    return result, done.stdout


@pytest.mark.parametrize("version,capability,expected", [
    ("0.24.0", "12.0", "fp8"), ("0.29.0", "9.0", "fp8"), ("0.33.0", "12.0", "fp8"), ("0.33.0", "9.0", "auto"),
    ("0.24.0+cu130", "10.0", "fp8"),
])
def test_auto_becomes_fp8_where_dsv4_serve_would_write_it(tmp_path, version, capability, expected):
    result, log = run(tmp_path, version, [{"model": V4}], DSV4_LAUNCH_GPU_CAPABILITY=capability)
    assert result == {"patched": True, "dtypes": [expected]}
    if expected == "fp8":  # one line, dsv4-serve's reason, at INFO through vLLM's handler
        assert log.count("INFO [vllm.dsv4_launch] dsv4-launch: changed: --kv-cache-dtype auto → fp8: "
                         "DeepseekV4ForCausalLM on") == 1


def test_what_dsv4_serve_would_refuse_is_a_warning_naming_that(tmp_path):
    # --block-size 64 on SM 12.x: dsv4-serve exits 2 (block-size row); a plugin cannot stop
    # vLLM, so it says so at WARNING, and the KV change still comes at INFO.
    result, log = run(tmp_path, "0.24.0", [{"model": V4, "block_size": 64}], DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    assert result["dtypes"] == ["fp8"]
    (line,) = [x for x in log.splitlines() if "would refuse" in x]
    assert line.startswith("WARNING [vllm.dsv4_launch] dsv4-launch: dsv4-serve would refuse to start this")
    assert "pre-flight: --block-size 64" in line
    assert "INFO [vllm.dsv4_launch] dsv4-launch: changed: --kv-cache-dtype" in log


def test_an_explicit_value_dsv4_serve_would_refuse_is_kept_and_said(tmp_path):
    # --kv-cache-dtype bfloat16 on SM 12.x: dsv4-serve refuses (kv-not-fp8); the plugin keeps
    # the user's value (vLLM's to judge) and says what dsv4-serve would do, once.
    result, log = run(tmp_path, "0.33.0", [{"model": V4, "kv_cache_dtype": "bfloat16"}] * 2,
                      DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    assert result["dtypes"] == ["bfloat16", "bfloat16"] and "changed:" not in log
    (line,) = [x for x in log.splitlines() if "would refuse" in x]
    assert line.startswith("WARNING [vllm.dsv4_launch]") and "--kv-cache-dtype bfloat16" in line


def test_everything_else_is_left_alone(tmp_path):
    cases = [{"model": V4, "kv_cache_dtype": "fp8_ds_mla"}, {"model": V4, "kv_cache_dtype": "fp8"}, {"model": LLAMA},
             {"model": V4, "attention_backend": "FLASHINFER_MLA_SPARSE_DSV4"}]
    result, log = run(tmp_path, "0.24.0", cases, DSV4_LAUNCH_GPU_CAPABILITY="10.0")
    assert result["dtypes"] == ["fp8_ds_mla", "fp8", "auto", "auto"] and "changed:" not in log


@pytest.mark.parametrize("version", ["0.35.0", "0.30.0rc1", "0.24.0.dev12", "not-a-version"])
def test_an_unverified_release_is_never_patched_and_said_once(tmp_path, version):
    result, log = run(tmp_path, version, [{"model": V4}], DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    assert result == {"patched": False, "dtypes": ["auto"]}
    assert log.count("is not a release it was verified against; it does nothing") == 1


def test_the_off_switch(tmp_path):
    result, log = run(tmp_path, "0.24.0", [{"model": V4}], DSV4_LAUNCH_GPU_CAPABILITY="12.0", DSV4_LAUNCH_DISABLE="1")
    assert result == {"patched": False, "dtypes": ["auto"]} and "dsv4-launch" not in log


def test_a_bad_setting_makes_it_do_nothing_and_say_so(tmp_path):
    result, log = run(tmp_path, "0.24.0", [{"model": V4}], DSV4_LAUNCH_GPU_CAPABILITY="twelve")
    assert result["dtypes"] == ["auto"] and "dsv4-launch plugin does nothing: DSV4_LAUNCH_GPU_CAPABILITY" in log


def test_what_it_logs_is_printable_and_masks_url_credentials(tmp_path):
    # vLLM's log goes where dsv4-serve's lines go (journald, a terminal): outside text in it is
    # masked and escaped exactly as dsv4-serve prints it.
    value = "https://user:S3CRET@host/x\u202e"
    result, log = run(tmp_path, "0.24.0", [{"model": V4}], DSV4_LAUNCH_GPU_CAPABILITY=value)
    assert result["dtypes"] == ["auto"]
    assert "S3CRET" not in log and "user:" not in log and "***@host" in log
    assert "\u202e" not in log


def test_an_internal_error_is_said_escaped_and_without_url_credentials(monkeypatch, caplog):
    # the exception's text may quote a model path or URL: into vLLM's log as dsv4-serve prints it
    import logging
    import types

    from dsv4_launch.plugin import kv_patch

    fake_logger = types.ModuleType("vllm.logger")
    fake_logger.init_logger = logging.getLogger
    monkeypatch.setitem(sys.modules, "vllm.logger", fake_logger)
    monkeypatch.setattr(kv_patch, "_said", set())

    def boom(*args, **kwargs):
        raise ValueError("cannot read https://user:S3CRET@host/m \x1b]8;;https://evil\x07 \u202e")

    monkeypatch.setattr(kv_patch, "_decide", boom)
    resolver = kv_patch._wrap_resolver(lambda dtype, config: dtype, "0.33.0")
    with caplog.at_level(logging.WARNING):
        assert resolver("auto", object()) == "auto"  # vLLM's own answer is left alone
    text = caplog.text
    assert "could not check this engine" in text and "ValueError" in text
    assert "S3CRET" not in text and "\x1b" not in text and "\u202e" not in text and "***@host" in text


# vLLM calls each plugin's register() bare (vllm/plugins/__init__.py load_general_plugins): an
# exception there stops every vLLM process. Faked: the vLLM module the plugin imports, made to
# fail three ways (a missing module, an error while importing it, a patch that cannot be set).
FAILING = {
    "import error": "raise ImportError('cannot import name resolve_kv_cache_dtype_string')\n",
    "error at import": "import json\njson.loads('{not json')\n",
    "patch refused": "resolve_kv_cache_dtype_string = lambda dtype, config: dtype\nEngineArgs = 5  # no attribute can "
                     "be set\n",
}
GUARD_SCRIPT = textwrap.dedent("""
    import vllm.logger  # vLLM configures its logging before it loads plugins
    from dsv4_launch.plugin import register
    register(); register()
    print("VLLM GOES ON")
""")


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_failing_register_never_raises_into_vllm_and_says_so_once(tmp_path, case):
    root = tmp_path / "fake-vllm"
    for name, text in FAKE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(version="0.33.0") if name == "vllm/__init__.py" else text)
    (root / "vllm/engine/arg_utils.py").write_text(FAILING[case])
    e = clean_env(tmp_path, PYTHONPATH=str(root), DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    done = subprocess.run([sys.executable, "-c", GUARD_SCRIPT], env=e, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "VLLM GOES ON" in done.stdout, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    (line,) = [x for x in done.stdout.splitlines() if "dsv4-launch" in x]
    assert line.startswith("WARNING [vllm.dsv4_launch] dsv4-launch plugin does nothing in this process: ")
    assert "dsv4-serve still applies the KV-cache fix" in line


def test_the_guard_is_not_a_blanket_over_a_working_patch(tmp_path):
    # the control: the same script on the working stand-in patches and says nothing of the kind
    result, log = run(tmp_path, "0.33.0", [{"model": V4}], DSV4_LAUNCH_GPU_CAPABILITY="12.0")
    assert result["patched"] is True and "does nothing" not in log
