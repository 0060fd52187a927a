"""dsv4-serve handing over to the real `vllm.entrypoints.cli.main.main()`, in-process.

Faked: only the GPU (DSV4_LAUNCH_GPU_CAPABILITY=12.0; a fake NVML would make vLLM 0.24 pick its
CUDA platform) and the server start: vLLM's serve command is replaced by a recorder of the
namespace it receives, so everything up to the moment the server would start is vLLM's own.
"""

from __future__ import annotations

import pytest

from dsv4_launch.commands.serve import run_serve

from .conftest import real_parse


@pytest.fixture
def served(real_vllm, monkeypatch):
    """Replace the server start with a recorder; returns the list it fills."""
    import vllm.entrypoints.cli.serve as serve

    calls = []
    monkeypatch.setattr(serve.ServeSubcommand, "cmd", staticmethod(lambda args: calls.append(args)))
    monkeypatch.setenv("DSV4_LAUNCH_GPU_CAPABILITY", "12.0")
    return calls


def comparable(namespace):
    data = dict(vars(namespace))
    for key in ("dispatch_function",):
        data.pop(key, None)
    return data


@pytest.mark.parametrize(
    "tokens",
    [
        ["{m}"],
        ["{m}", "--port", "8001", "-tp", "2"],
        ["{m}", "--kv_cache_dtype=auto", "--enforce-eager"],
        ["{m}", "--served-model-name", "ds-v4"],
        ["--model", "{m}", "-tp", "2"],
        ["{m}", "--kv-cache-dtype-skip-layers", "auto", "--kv-cache-dtype", "auto"],
        ["{m}", "--kv-cache-dtype", "auto", "--kv-cache-dtype-skip-layers", "auto"],
        ["{m}", "--kv_cache_dtype_skip_layers=auto"],
        ["{m}", "--speculative-config.kv_cache_dtype", "fp8_e4m3"],
        ["--config", "{yaml}"],
        ["{m}", "--config", "{yaml}", "--served-model-name", "ds"],
    ],
    ids=lambda t: " ".join(t)[:60],
)
def test_vllm_parses_the_fix_and_nothing_else(real_vllm, served, v4_dir, tmp_path, tokens):
    top, _, version = real_vllm
    yaml = tmp_path / "serve.yaml"
    yaml.write_text(f"model: {v4_dir}\nkv_cache_dtype: auto\nport: 8002\n")
    tokens = [t.format(m=v4_dir, yaml=yaml) for t in tokens]

    assert run_serve(tokens) == 0
    (handed,) = served
    assert handed.kv_cache_dtype == "fp8"

    status, original = real_parse(top, tokens)
    assert status == "ok"
    # main() runs the subcommand's validate() before dispatching; do the same to the original.
    import vllm.entrypoints.cli.serve as serve

    (command,) = [c for c in serve.cmd_init() if c.name == "serve"]
    command.validate(original)
    before, after = comparable(original), comparable(handed)
    assert before.pop("kv_cache_dtype") == "auto"
    after.pop("kv_cache_dtype")
    # main() may add derived settings after parsing (0.33: logging_config); compare the parsed
    # fields, all of them.
    assert {k: after.get(k, "<missing>") for k in before} == before


def test_vllm_rejection_keeps_vllms_status_and_message(real_vllm, served, v4_dir, capsys):
    with pytest.raises(SystemExit) as exit_:
        run_serve([v4_dir, "--no-such-flag"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --no-such-flag" in err  # vLLM's own argparse message
    # and ours, before it: the installed release's own table, so certain ("will likely reject" is for a
    # release without its own table)
    assert "vLLM rejects these arguments" in err and "handing them over unchanged" in err
    assert served == []
