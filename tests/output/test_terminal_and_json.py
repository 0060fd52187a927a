"""Terminal and JSON integrity (round three of "never worse than plain ``vllm serve``", issue 20,
class 4): Rich tables print outside text as written, the JSON is ASCII and valid for strict
parsers. Faked: the vLLM install, NVML (the stand-in library)."""

import io
import json
import os
import subprocess

import pytest

from dsv4_launch.adapters.vllm_install import VllmInstall
from dsv4_launch.commands.context import Context
from tests.conftest import BIN, clean_env
from tests.planning import plan_on_bytes

M = "deepseek-ai/DeepSeek-V4-Flash"
NEWER = VllmInstall("0.35.0", True)  # a release the option tables do not record


def _plan(argv, env=None, vllm=NEWER, as_json=False):
    return plan_on_bytes(argv, env, vllm, as_json)


# --- class 4: terminal and JSON integrity ------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("text", ["[/]", "[link=https://evil.example]click[/link]", "[bold red]x", "[/bold]",
                                  ":smiley: [", "\\[x]", "[on #ff0000]"])
def test_rich_tables_print_outside_text_as_written(text):
    from dsv4_launch.output.tables import render_table

    stream = _Tty()
    ok = render_table(f"fit for /models/{text}", [f"h{text}", "b"], [[f"cell {text}", "1"]], [None], stream, {},
                      footer=[f"foot {text}"])
    out = stream.getvalue()
    assert ok, out
    assert "\x1b]8;" not in out  # no OSC 8 hyperlink
    assert out.count(text) >= 3 or text.startswith(":"), out  # title, cell and footer as written


@pytest.mark.parametrize("text", ["[/]", "[link=https://evil.example]x[/link]"])
def test_fit_on_a_terminal_with_markup_in_the_model_path(tmp_path, text):
    from dsv4_launch.commands.fit import run_fit

    folder = tmp_path / f"m{text}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["DeepseekV4ForCausalLM"],
                                                    "model_type": "deepseek_v4", "num_attention_heads": 64}))
    out, err = _Tty(), io.StringIO()
    rc = run_fit([str(folder)], as_json=False, ctx=Context(env={"DSV4_LAUNCH_GPU_CAPABILITY": "12.0",
                                                    "DSV4_LAUNCH_GPU_MEMORY": "96GiB"}, stdout=out, stderr=err,
                                                    vllm=VllmInstall("0.33.0", True)))
    assert "Traceback" not in err.getvalue() and "\x1b]8;" not in out.getvalue(), err.getvalue()
    assert rc in (0, 2), err.getvalue()


HOSTILE_JSON_TEXT = ["\u202egnp.exe", "\x9b31m", "\x85line", "\u2028", "\x1b[31m", "é密🔑", "\ufeff"]


@pytest.mark.parametrize("raw", [b"mod\xff", b"\xc3", b"ok\xed\xa0\x80", b"a\x80b\xfe", "密".encode()[:2]])
@pytest.mark.parametrize("encoding", ["ascii", "utf-8", "latin-1"])
def test_json_is_ascii_and_valid_for_strict_parsers(tmp_path, fake_vllm_path, raw, encoding):
    """Undecodable argv bytes and C1/bidi characters: an ASCII document that a strict parser (no
    lone surrogates) accepts, with ``not_utf8`` saying which strings held undecodable bytes."""
    name = os.fsdecode(raw)
    argv = [str(BIN / "dsv4-launch"), "plan", "--json", name, "--served-model-name", *HOSTILE_JSON_TEXT]
    done = subprocess.run([os.fsencode(a) for a in argv], capture_output=True, timeout=60,
                          env=clean_env(tmp_path, PYTHONIOENCODING=encoding, DSV4_LAUNCH_GPU_CAPABILITY="12.0",
                                        PYTHONPATH=str(fake_vllm_path("0.33.0"))))
    assert done.returncode in (0, 2), done.stderr
    text = done.stdout.decode("ascii")  # ASCII only
    doc = json.loads(text)
    _strict(doc)
    assert "/argv/0" in doc["not_utf8"]
    assert doc["argv"][2:] == HOSTILE_JSON_TEXT  # the valid text survives, as \\u escapes
    assert doc["argv"][0] == "".join(f"\\x{b:02x}" if b >= 0x80 else chr(b) for b in raw)


def _strict(value):
    """What a strict JSON parser insists on: every string is valid Unicode (no lone surrogate)."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for k, v in value.items():
            _strict(k)
            _strict(v)
    elif isinstance(value, list):
        for v in value:
            _strict(v)


def test_json_of_ordinary_input_has_an_empty_not_utf8():
    rc, out, _ = _plan([M, "--port", "8000"], as_json=True)
    doc = json.loads(out)
    assert doc["not_utf8"] == [] and out.isascii()
