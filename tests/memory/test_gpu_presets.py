"""``dsv4-launch fit --gpus``: only what the preset table knows (or a plain count) is accepted;
anything else is one clear line, exit 2, no traceback, outside text escaped. Pure
(``core/gpu_presets.parse_gpus``) and through ``dsv4-launch``'s own option reading, in process;
nothing faked (the command stops before any planning)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsv4_launch.commands import cli
from dsv4_launch.core.memory.presets import ALIASES, MAX_GPUS, PRESETS, parse_gpus

CONTROL = [chr(c) for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))]
LOOK_ALIKES = ["Ｈ", "Н", "Η", "Β", "Α", "０", "２", "８", "𝟖", "ｘ", "х", "\u200b", "\u200d", "\u202e", "\u00a0",
               "\u3000", "\ufeff", "Ⅷ", "¹"]
BAD = [
    *[f"8x{c}H200" for c in CONTROL], *[f"{c}8xH200" for c in CONTROL], *[f"8xH200{c}" for c in CONTROL],
    *[f"8xH{c}200" for c in LOOK_ALIKES], "8xＨ200", "8xН200", "８xH200", "8ｘH200",
    "", " ", "x", "8x", "8x ", "x8", "xH200", "8xx", "*H200", "8*", "×",  # empty parts
    "0", "0xH200", "0x10", "00", "-1xH200", "-8", "+8xH200", "8.0xH200", "1e3xH200",  # counts
    "4097", f"{MAX_GPUS + 1}xH200", "9" * 30, "9" * 30 + "xH200", "9" * 5000 + "xH200",  # huge counts
    "8xH200xH200", "8xH×200", "8xH*200", "8xfoo", "8xH2OO", "H200;rm", "8xH200\n", "8x'H200'", "8x[H200]",
]


@pytest.mark.parametrize("text", BAD)
def test_refused_with_one_clear_line(text):
    with pytest.raises(ValueError) as info:
        parse_gpus(text)
    message = str(info.value)
    assert message and "\n" not in message and message.isprintable(), message
    assert all(ch not in message for ch in CONTROL + LOOK_ALIKES), message


@pytest.mark.parametrize("text", ["8x\x1bH200", "8x\x1b[31mH200", "\x9b8xH200", "8xH\u202e200", "8xＨ200", "", "0xH200",
                                  "9" * 5000 + "xH200", "8xfoo"])
def test_fit_says_it_in_one_escaped_line_and_exits_2(text, capsys):
    assert cli.main(["fit", "--gpus", text]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("dsv4-launch fit: --gpus "), err
    assert "Traceback" not in err
    assert all(unicodedata.category(ch)[0] != "C" for ch in err.rstrip("\n")), ascii(err)  # no control, no bidi
    assert "see: dsv4-launch fit --help" in err


GOOD = [("8", 8, None), ("8xH200", 8, "H200"), ("8XH200", 8, "H200"), ("8×H200", 8, "H200"), ("8*H200", 8, "H200"),
        ("8 x h200", 8, "H200"), (" 2xrtx pro 6000 ", 2, "RTXPRO6000"), ("2xRTX-PRO_6000", 2, "RTXPRO6000"),
        ("GB10", 1, "GB10"), ("dgx spark", 1, "GB10"), ("2XRTX5090", 2, "RTX5090"), (f"{MAX_GPUS}", MAX_GPUS, None),
        ("008xH200", 8, "H200")]


@pytest.mark.parametrize("text,count,key", GOOD)
def test_accepted(text, count, key):
    n, preset = parse_gpus(text)
    assert n == count and (preset.key if preset else None) == key


NAMES = [p.key for p in PRESETS] + list(ALIASES)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.one_of(
    st.text(max_size=12),
    st.tuples(st.integers(-5, 10**6).map(str), st.sampled_from(["x", "X", "×", "*", "", " x "]),
              st.sampled_from(NAMES), st.text(max_size=2)).map(lambda t: t[0] + t[1] + t[2] + t[3]),
))
def test_accepted_only_when_it_is_a_count_and_a_known_name(text):
    try:
        count, preset = parse_gpus(text)
    except ValueError as exc:
        assert "\n" not in str(exc) and str(exc).isprintable()
        return
    assert 1 <= count <= MAX_GPUS
    allowed = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 -_*×")
    assert set(text) <= allowed, ascii(text)
    if preset is None:
        assert text.strip(" ").isdigit()
    else:
        assert preset in PRESETS


def test_a_huge_value_is_cut_in_the_error_line(capsys):
    """Outside text in an own option's error: escaped and cut (a 5,000-character --gpus is not
    worth a 5,000-character line), exit 2, no traceback."""
    from dsv4_launch.commands.cli import main

    status = main(["fit", "--gpus", "8xH" + "2" * 5000])
    err = capsys.readouterr().err
    assert status == 2 and len(err) < 500 and "…" in err and "Traceback" not in err
    status = main(["fit", "--gpu-memory", "9" * 5000 + "\x1b"])
    err = capsys.readouterr().err
    assert status == 2 and len(err) < 500 and "\x1b" not in err
