"""Hypothesis strategies for hostile inputs to dsv4-serve / dsv4-launch (see commands/test_hostile_inputs.py).

Everything here builds *inputs*: argv tokens, environment values, config.json bytes, --config
YAML text, nvidia-smi output, fake NVML answers and secrets. Nothing here knows the expected
answer; the invariants live in commands/test_hostile_inputs.py.
"""

from __future__ import annotations

import json
import os

from hypothesis import strategies as st

from dsv4_launch.vllm_cli.option_table import load_table

TABLE = load_table("0.24.0")
OPTION_STRINGS = sorted(TABLE.option_strings)
LONG_OPTIONS = [o for o in OPTION_STRINGS if o.startswith("--")]

V4_ARCH = "DeepseekV4ForCausalLM"

# --- text ---------------------------------------------------------------------------------

# Terminal and log hostile snippets: ESC/CSI/OSC sequences, forged log lines, bidi overrides,
# C1 controls, line/paragraph separators.
NASTY_SNIPPETS = [
    "\x1b[31mred\x1b[0m",
    "\x1b]0;pwned\x07",
    "\x1b[2J\x1b[H",
    "\x9b31m",
    "\ndsv4-serve: changed: --kv-cache-dtype auto → fp8",
    "\r\x1b[Kdsv4-serve: error: forged",
    "\u202egnp.exe",
    "\u2028",
    "\u2029",
    "\x85",
    "\t",
    "\x07",
    "\x7f",
    "\ufeff",
    "²",
    "１",
    "٣",
    # Rich markup and emoji codes, printed as written or a traceback/hyperlink (issue 20, class 4)
    "[/]",
    "[link=https://evil.example]x[/link]",
    "[bold red]",
    ":smiley:",
]

# Characters for argv/env text: anything an argv can hold (no NUL, no lone surrogates other
# than the surrogateescape ones made from undecodable bytes, see undecodable()).
ARGV_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")

HUGE_NUMBERS = [
    "9" * 5000,
    "1" + "0" * 5000,
    "-" + "9" * 5000,
    "9" * 5000 + ".5",
    "0." + "1" * 5000,
    "1e999999",
    "-1e999999",
    "9e999999k",
    "9" * 400 + "k",
    "9" * 400 + ".5k",
    "9" * 400 + "G",
    "9" * 30,
    "nan",
    "inf",
    "-0",
    "0x10",
    "1_000",
    "²",
    "１",
    "-1",
    "0",
    "2",
    "64",
]

DEEP_JSON = [
    "[" * 5000,
    "[" * 5000 + "]" * 5000,
    "{" * 5000,
    '{"a":' * 5000 + "1" + "}" * 5000,
    '{"a":' * 900 + "1" + "}" * 900,
    "[" * 990 + "]" * 990,
    '{"architectures": ' + "[" * 5000 + "]" * 5000 + "}",
    '{"architectures": "' + V4_ARCH + '"}',
    '{"architectures": [["' + V4_ARCH + '"]]}',
    '{"architectures": [{"a": 1}, 5, null, "' + V4_ARCH + '"]}',
    '{"architectures": ["' + V4_ARCH + '"], "num_attention_heads": ' + "9" * 5000 + "}",
    '{"architectures": ["' + V4_ARCH + '"], "num_attention_heads": ' + "9" * 4300 + "}",
    '{"architectures": ["' + V4_ARCH + '"], "model_type": {"x": 1}}',
    '{"method": "dspark", "num_speculative_tokens": ' + "9" * 5000 + "}",
    '{"method": "dspark", "num_speculative_tokens": "' + "9" * 19 + '"}',
    '{"backend": "FLASHINFER_MLA_SPARSE_DSV4"}',
    '{"backend": ["x"]}',
    '{"backend": "\\u001b[31m"}',
    "1e999999",
    "null",
    "[]",
    '"str"',
    "{",
    '{"a": NaN, "b": Infinity}',
]


def undecodable() -> st.SearchStrategy[str]:
    """Text made from random bytes the way Python decodes argv (lone surrogates for bytes
    that are not UTF-8)."""
    return st.binary(min_size=1, max_size=24).map(os.fsdecode).filter(lambda s: "\x00" not in s)


def hostile_text(max_size: int = 24) -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(ARGV_CHARS, max_size=max_size),
        st.sampled_from(NASTY_SNIPPETS),
        undecodable(),
        st.tuples(st.sampled_from(NASTY_SNIPPETS), st.text(ARGV_CHARS, max_size=8), undecodable()).map("".join),
    )


def hostile_value() -> st.SearchStrategy[str]:
    """A value for an option: text with controls, undecodable bytes, huge numbers, deep JSON,
    very long tokens."""
    return st.one_of(
        hostile_text(),
        st.sampled_from(HUGE_NUMBERS),
        st.sampled_from(DEEP_JSON),
        st.sampled_from(["auto", "fp8", "fp8_ds_mla", "bfloat16", "AUTO", " auto", "ray", "dspark", "", "-", "--", "=",
                         "-x", "--x", "-O3", "--help=1"]),
        st.integers(min_value=1000, max_value=60000).map(lambda n: "A" * n),
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
    )


# --- argv ---------------------------------------------------------------------------------

JSON_OPTIONS = ["--hf-overrides", "--speculative-config", "--attention-config", "--compilation-config",
                "--kv-transfer-config", "--model-loader-extra-config", "-ac", "-cc"]
DOTTED = ["--speculative-config.x", "--speculative-config.method", "--speculative-config.num_speculative_tokens",
          "--speculative_config.kv_cache_dtype", "--hf-overrides.architectures", "--hf-overrides.num_attention_heads",
          "--hf-overrides.architectures+", "--attention-config.backend", "--compilation-config.x.y.z",
          "-ac.backend", "--hf_overrides.model_type", "--speculative-config." + ".".join("a" * 50)]
INTERESTING = [
    "--kv-cache-dtype", "--kv_cache_dtype", "--kv-cache-dtype-skip-layers", "-tp", "--tensor-parallel-size",
    "--pipeline-parallel-size", "-pp", "--block-size", "--attention-backend", "--distributed-executor-backend",
    "--nnodes", "--headless", "--model", "--served-model-name", "--hf-config-path", "--revision", "--download-dir",
    "--config", "--port", "--max-model-len", "--enforce-eager", "--no-enforce-eager", "--trust-remote-code",
    "--data-parallel-size", "--tokenizer", "--quantization",
]


def option_token() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(INTERESTING),
        st.sampled_from(OPTION_STRINGS),
        st.sampled_from(JSON_OPTIONS),
        st.sampled_from(DOTTED),
        # spellings vLLM normalises, abbreviations and unknown options
        st.sampled_from(LONG_OPTIONS).map(lambda o: o.replace("-", "_")),
        st.sampled_from(LONG_OPTIONS).map(lambda o: o[: max(4, len(o) // 2)]),
        hostile_text(12).map(lambda t: "--" + t),
        hostile_text(6).map(lambda t: "-" + t),
    )


BENIGN_GROUPS = [
    ["--port", "8000"], ["-tp", "2"], ["-tp", "1"], ["--tensor-parallel-size=4"], ["--max-model-len", "4096"],
    ["--kv-cache-dtype", "auto"], ["--kv_cache_dtype=auto"], ["--kv-cache-dtype", "fp8"], ["--enforce-eager"],
    ["--block-size", "64"], ["--block-size", "48"], ["--attention-backend", "FLASHMLA_SPARSE"],
    ["--attention-backend", "FLASHINFER_MLA_SPARSE_DSV4"], ["--attention-config.backend", "auto"],
    ["--speculative-config", '{"method": "dspark", "num_speculative_tokens": 2}'],
    ["--speculative-config.method", "dspark"], ["--hf-overrides", '{"num_attention_heads": 48}'],
    ["--"], ["-O3"], ["-O", "3"], ["--served-model-name", "x"], ["--served-model-name", "a", "b"],
    ["--trust-remote-code"], ["--no-enable-prefix-caching"], ["-pp", "2"], ["--distributed-executor-backend", "ray"],
    ["--gpu-memory-utilization", "0.9"], ["--api-key", "k"], ["--hf-token"], ["--kv-cache-dtype-skip-layers", "0"],
    ["--model", "x"], ["--headless"], ["--nnodes", "2"],
]


@st.composite
def option_group(draw) -> list[str]:
    """One option as a user might write it: ``--opt value``, ``--opt=value``, a flag, or a stray
    word; ``--`` and ``-O`` forms too; half of them ordinary options vLLM accepts."""
    if draw(st.booleans()):
        return list(draw(st.sampled_from(BENIGN_GROUPS)))
    kind = draw(st.sampled_from(["pair", "pair", "eq", "flag", "stray", "special", "kv", "dotted_json", "config"]))
    if kind == "pair":
        return [draw(option_token()), draw(hostile_value())]
    if kind == "eq":
        return [draw(option_token()) + "=" + draw(hostile_value())]
    if kind == "flag":
        return [draw(option_token())]
    if kind == "stray":
        return [draw(hostile_value())]
    if kind == "kv":
        value = draw(st.sampled_from(["auto", "auto", "fp8", "fp8_ds_mla", "fp8_e4m3", "Auto", "garbage"]))
        spelling = draw(st.sampled_from(["--kv-cache-dtype", "--kv_cache_dtype", "--kv-cache_dtype"]))
        return draw(st.sampled_from([[spelling, value], [f"{spelling}={value}"]]))
    if kind == "dotted_json":
        return [draw(st.sampled_from(JSON_OPTIONS + DOTTED)), draw(st.sampled_from(DEEP_JSON + HUGE_NUMBERS))]
    if kind == "config":  # a --config path that is not there, not YAML, or not text
        name = draw(st.one_of(hostile_text(12), st.sampled_from(["x.yaml", "/", "/dev/null.yaml", "/proc", ""])))
        suffix = draw(st.sampled_from(["", ".yaml", ".yml"]))
        return draw(st.sampled_from([["--config", name + suffix], ["--config=" + name + suffix]]))
    return draw(st.sampled_from([["--"], ["-O3"], ["-O"], ["-O", "3"], ["-O=3"], ["-Ox"], ["--model"], ["-h"],
                                 ["--help=x"], ["--config="], ["-tp", "2"], ["--api-key"], ["--hf-token"]]))


def option_groups(max_size: int = 4) -> st.SearchStrategy[list[str]]:
    return st.lists(option_group(), max_size=max_size).map(lambda groups: [t for g in groups for t in g])


# --- secrets ------------------------------------------------------------------------------

SECRET_EDGES = ["", "-", "--", " ", "\\", '"', "'", "=", ",", "é", "密", "🔑", "-x ", '\\"', "a=b", "%", "\u00a0"]


@st.composite
def secret(draw) -> tuple[str, tuple[str, ...]]:
    """(secret, cores): cores are its long alphanumeric pieces (each at least 8 characters,
    starting with the unlikely "Zq"), checked on their own too so that a secret printed in
    part (cut at a space or a comma) is caught."""
    alnum = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=6, max_size=10)
    first = "Zq" + draw(alnum)
    parts = [draw(st.sampled_from(SECRET_EDGES)), first]
    cores = [first]
    if draw(st.booleans()):
        second = "Zq" + draw(alnum)
        parts += [draw(st.sampled_from(SECRET_EDGES)), second]
        cores.append(second)
    parts.append(draw(st.sampled_from(SECRET_EDGES)))
    return "".join(parts), tuple(cores)


def secret_placement(s: str, s2: str, family: str = "options") -> st.SearchStrategy[list[str]]:
    """The ways a secret reaches vLLM on the command line: as the value of a secret option
    (``options``) or as the password of a URL (``url``)."""
    url = f"https://user:{s}@collector.example:4317/v1"
    if family == "url":
        return st.sampled_from([
            ["--otlp-traces-endpoint", url],
            ["--otlp-traces-endpoint=" + url],
            ["--model", url],
            [url],
            ["--hf-config-path", url],
            ["--tokenizer", url],
            ["--kv-cache-dtype", url],
        ])
    return st.sampled_from([
        ["--api-key", s],
        ["--api-key=" + s],
        ["--api_key", s],
        ["--api_key=" + s],
        ["--api-k", s],
        ["--api-ke=" + s],
        ["--api=" + s],
        ["--api-key", s, s2],
        ["--api-key", "plain-first-key", s],
        ["--api-key", s, "--api-key", s2],
        ["--hf-token", s],
        ["--hf-token=" + s],
        ["--hf_token", s],
        ["--kv-transfer-config.token", s],
        ["--kv-transfer-config.token=" + s],
        ["--kv_transfer_config.auth.token", s],
        ["--kv-transfer-config", json.dumps({"kv_connector": "x", "token": s})],
    ])


# --- environment --------------------------------------------------------------------------

CUDA_VISIBLE = ["²", "１", "-1", "0,-1,1", "0,0", "GPU-", "GPU-1", "MIG-", "MIG-GPU-1/0/0", "", " ", ",", "0,",
                "9" * 5000, "0" * 20 + "1", "\x1b[31m0", "0\n1", "nan", "all", "none", "NoDevFiles"]
CAPABILITY = ["12.0", "9.0", "10.0", "sm_120", "sm120", "12", "12.0,9.0", "１２.0", "²", "12.", ".0", "sm_", "sm",
              "9" * 5000 + ".0", "12.0," * 200, "-1.0", "12.0\n", "\x1b[31m12.0", "x", "12.0,,", "nan"]
FLAGS = ["1", "0", "true", "false", "yes", "no", "on", "off", "", " 1 ", "TRUE", "2", "\x1b[31m1", "ja"]
PREFLIGHT = ["refuse", "warn", "off", "WARN", " off ", "", "x", "refuse\n"]
MEMORY = ["96GiB", "80GB", "143771MiB", "0", "-1", "9" * 5000, "1e9", "96 GiB", "96gib", "1.5TB", "x", ""]


@st.composite
def hostile_env(draw, odd_dirs: list[str]) -> dict[str, str]:
    """Environment variables a user's shell may hold (DSV4_LAUNCH_DISABLE and _DEBUG excluded:
    they change what must happen, and are tested on their own)."""
    env: dict[str, str] = {}

    def maybe(name, values):
        if draw(st.booleans()):
            env[name] = draw(st.one_of(st.sampled_from(values), hostile_text(12)))

    maybe("CUDA_VISIBLE_DEVICES", CUDA_VISIBLE)
    maybe("CUDA_DEVICE_ORDER", ["PCI_BUS_ID", "FASTEST_FIRST", "pci_bus_id", ""])
    if draw(st.integers(0, 3)) == 0:
        env["DSV4_LAUNCH_GPU_CAPABILITY"] = draw(st.one_of(st.sampled_from(CAPABILITY), hostile_text(8)))
    if draw(st.integers(0, 4)) == 0:
        env["DSV4_LAUNCH_GPU_MEMORY"] = draw(st.one_of(st.sampled_from(MEMORY), hostile_text(8)))
    if draw(st.integers(0, 4)) == 0:
        env["DSV4_LAUNCH_PREFLIGHT"] = draw(st.sampled_from(PREFLIGHT))
    if draw(st.integers(0, 4)) == 0:
        env["DSV4_LAUNCH_QUIET"] = draw(st.sampled_from(FLAGS))
    maybe("AWS_USE_FIPS_ENDPOINT", ["false", "true", "0", ""])
    maybe("VLLM_ATTENTION_BACKEND", ["FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE_DSV4", "\x1b[31m"])
    maybe("VLLM_PLUGINS", ["", "dsv4_launch", ","])
    maybe("HF_HUB_OFFLINE", FLAGS)
    maybe("NO_COLOR", ["1", ""])
    maybe("TERM", ["dumb", "xterm-256color", ""])
    maybe("TRANSFORMERS_OFFLINE", FLAGS)
    for name in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        if draw(st.integers(0, 3)) == 0:
            env[name] = draw(st.one_of(st.sampled_from(odd_dirs), st.sampled_from(HF_PATH_FORMS), hostile_text(12)))
    return {k: v for k, v in env.items() if "\x00" not in v}


# --- files --------------------------------------------------------------------------------


def _json_scalar():
    return st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
        st.text(ARGV_CHARS, max_size=12), st.sampled_from(NASTY_SNIPPETS), st.sampled_from([V4_ARCH, "deepseek_v4"]),
    )


def _json_containers(inner):
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(ARGV_CHARS, max_size=8), inner, max_size=4)


JSON_VALUES = st.recursive(_json_scalar(), _json_containers, max_leaves=12)


def json_values():
    return JSON_VALUES


EDGE_INTS = [64, 64, 128, 48, 0, -64, 1, 7, 10**4299, -(10**4299), 10**4300 - 1, -(10**4300 - 1), 2**63, 2**64,
             True, False, 64.0, 1e308, "64", None]


@st.composite
def config_json_bytes(draw) -> bytes:
    """The bytes of a model's config.json: mostly DeepSeek-V4-like with hostile fields, or
    outright garbage."""
    kind = draw(st.sampled_from(["v4ish", "v4ish", "v4ish", "raw", "deep", "huge_int", "bad_utf8", "big"]))
    if kind == "raw":
        return draw(st.binary(max_size=64))
    if kind == "deep":
        n = draw(st.sampled_from([900, 990, 5000, 100000]))
        return ('{"architectures": ' + "[" * n + "]" * n + "}").encode()
    if kind == "huge_int":
        digits = draw(st.sampled_from([4299, 4300, 4301, 5000]))
        key = draw(st.sampled_from(["num_attention_heads", "sliding_window", "architectures", "x"]))
        return (f'{{"architectures": ["{V4_ARCH}"], "{key}": ' + "9" * digits + "}").encode()
    if kind == "bad_utf8":
        return b'{"architectures": ["' + V4_ARCH.encode() + b'\xff\xfe"], "model_type": "deepseek_v4\xc0"}'
    if kind == "big":
        return json.dumps({"architectures": [V4_ARCH], "pad": "x" * 3_000_000}).encode()
    config: dict[str, object] = {}
    config["architectures"] = draw(st.one_of(
        st.just([V4_ARCH]),
        st.just([V4_ARCH]),
        st.just([V4_ARCH]),
        st.lists(st.one_of(st.just(V4_ARCH), json_values()), max_size=4),
        json_values(),
        st.sampled_from([V4_ARCH, {"a": V4_ARCH}, [[V4_ARCH]], ["\x1b[31m" + V4_ARCH]]),
    ))
    if draw(st.booleans()):
        config["model_type"] = draw(st.one_of(st.sampled_from(["deepseek_v4", "deepseek_v41", "\x1b]0;x\x07"]),
                                              json_values()))
    for key in ("num_attention_heads", "sliding_window", "num_hidden_layers", "hidden_size"):
        if draw(st.integers(0, 3)) > 0:
            config[key] = draw(st.one_of(
                st.sampled_from(EDGE_INTS),
                st.integers(-(2**40), 2**40)))
    if draw(st.booleans()):
        config[draw(st.text(ARGV_CHARS, max_size=6))] = draw(json_values())
    return json.dumps(config, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


YAML_TEXTS = [
    "",
    "- a\n- b\n",
    "just a string\n",
    "port: [\n",
    "a: b: c\n",
    "\t- x\n",
    "{" * 5000,
    "[" * 5000,
    "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 400)),
    "port: " + "9" * 5000 + "\n",
    "1: 2\n",
    "true: x\n",
    "~: x\n",
    "[1, 2]: x\n",
    "? [a, b]\n: c\n",
    "port: !!binary aGVsbG8=\n",
    "port: !!python/object:os.system x\n",
    "x: 2020-01-01\ny: {a: 2020-01-01}\n",
    "model: \x1b[31mred\n",
    "\"\": x\n",
    "\"--\": x\n",
    "\"api-key=x y\": z\n",
    "served-model-name: [\"\\e[31m\", b]\n",
    "enforce-eager: false\nenforce_eager: true\n",
    "kv-cache-dtype: auto\n",
    "kv_cache_dtype: fp8\n",
    "speculative-config: {method: dspark, num_speculative_tokens: " + "9" * 5000 + "}\n",
    "hf-overrides: " + "[" * 5000 + "\n",
    "a: &a [*a]\n",
    "a: &a\n  b: *a\n",
    "x: " + "&a [" * 10 + "]" * 10 + "\n",
    "%YAML 9.9\n---\na: b\n",
    "a: b\n---\nc: d\n",
    "\ufeffport: 1\n",
    "port: \udcff\n",
]


@st.composite
def yaml_text(draw) -> str:
    return draw(st.one_of(
        st.sampled_from(YAML_TEXTS),
        st.text(ARGV_CHARS, max_size=40),
        st.dictionaries(st.sampled_from(["port", "model", "kv-cache-dtype", "tensor-parallel-size", "api_key",
                                         "hf-overrides", "served-model-name", "x"]),
                        json_values(), max_size=4).map(lambda d: json.dumps(d, ensure_ascii=False)),
    ))


@st.composite
def smi_output(draw) -> bytes:
    """What a (fake) nvidia-smi prints: random bytes, near-CSV with hostile fields, invalid UTF-8."""
    line = st.tuples(
        st.sampled_from(["0", "1", "²", "１", "-1", "9" * 5000, "99999999", ""]),
        st.sampled_from(["GPU-12000000-0000-0000-0000-000000000000", "", "GPU-\x1b[31m"]),
        st.one_of(st.sampled_from(["NVIDIA RTX PRO 6000", "\x1b]0;x\x07", "a,b", ""]), hostile_text(10)),
        st.sampled_from(["12.0", "9.0", "[N/A]", "１２.0", "9" * 5000 + ".0", "12", ""]),
        st.sampled_from(["97887", "", "9" * 5000, "-1", "[N/A]"]),
    ).map(lambda f: ", ".join(f).encode("utf-8", "surrogateescape"))
    return draw(st.one_of(
        st.binary(max_size=80),
        st.lists(line, max_size=4).map(b"\n".join),
        st.lists(line, max_size=2).map(lambda ls: b"\n".join(ls) + b"\xff\xfe\x1b[31m\r\n"),
    ))


GPU_SPECS = [
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition|GPU-12000000-0000-0000-0000-000000000000|12.0|97887|||",
    "NVIDIA H200|GPU-90000000-0000-0000-0000-000000000000|9.0|143771|||",
    "NVIDIA B200|GPU-10000000-0000-0000-0000-000000000000|10.0|183359|||",
    "NVIDIA A100|GPU-80000000-0000-0000-0000-000000000000|8.0|81920|||",
    "lost|GPU-15000000-0000-0000-0000-000000000000|12.0|1|15||",
    "old|GPU-13000000-0000-0000-0000-000000000000|12.0|1||13|",
    "mig|GPU-77000000-0000-0000-0000-000000000000|9.0|1|||MIG-aaaa+MIG-bbbb",
]


@st.composite
def nvml_gpus(draw) -> list[str]:
    """FAKE_NVML_GPUS entries for the stand-in NVML library, names included hostile ones."""
    def hostile_gpu(name, cc):
        return f"{name}|GPU-{draw(st.sampled_from(['1', '12000000-0000-0000-0000-000000000000', '']))}|{cc}|97887|||"

    name = st.one_of(hostile_text(20), st.sampled_from(NASTY_SNIPPETS)).map(
        lambda s: s.replace("|", "").replace(";", "").encode("utf-8", "surrogateescape")[:90].decode(
            "utf-8", "surrogateescape"))
    cc = st.sampled_from(["12.0", "9.0", "10.0", "-1.-1", "2147483647.2147483647", "0.0"])
    one = st.one_of(st.sampled_from(GPU_SPECS), st.builds(hostile_gpu, name, cc))
    return draw(st.lists(one, min_size=0, max_size=4))


# --- ordinary arguments for DeepSeek-V4, for the argv-edit and doctor checks ---------------

HEADS = [64, 128, 48, 16, 8, 1, 0, -64, 256, 10**4299, 2**63, True, "64", None]
WINDOWS = [128, 10**4300 - 1, 10**4300 - 63, 10**4299, -(10**4300 - 1), 0, -1, 2**63, True, "128", None]


@st.composite
def v4_config_bytes(draw) -> bytes:
    """A DeepSeek-V4 config.json whose numbers sit at the edges (Python's 4300-digit limit for
    int/str conversion, negatives, bools, strings)."""
    config = {"architectures": [V4_ARCH], "model_type": "deepseek_v4"}
    for key, values in (("num_attention_heads", HEADS), ("sliding_window", WINDOWS),
                        ("max_position_embeddings", WINDOWS), ("num_hidden_layers", HEADS)):
        value = draw(st.sampled_from(values) if draw(st.integers(0, 3)) else st.integers(-(2**40), 2**40))
        if value is not None:
            config[key] = value
    if draw(st.booleans()):
        config["compress_ratios"] = draw(st.lists(st.sampled_from([0, 1, 4, 128, -4, 10**4299, 2**70, "4", 4.0]),
                                                  max_size=5))
    return json.dumps(config).encode()


def ordinary_groups(max_size: int = 4) -> st.SearchStrategy[list[str]]:
    """Options vLLM accepts (in every spelling), ``--`` and kv-cache-dtype spellings included."""
    kv = st.tuples(st.sampled_from(["--kv-cache-dtype", "--kv_cache_dtype", "--kv-cache_dtype"]),
                   st.sampled_from(["auto", "auto", "fp8", "fp8_e4m3", "bfloat16"]),
                   st.booleans()).map(lambda t: [f"{t[0]}={t[1]}"] if t[2] else [t[0], t[1]])
    return st.lists(st.one_of(st.sampled_from(BENIGN_GROUPS), kv), max_size=max_size).map(
        lambda groups: [t for g in groups for t in g])


# --- round three (issue 20): one generator per attack class -------------------------------

# Class 2: credential-named options a release the tables do not record may have (or a typo).
CREDENTIAL_STEMS = ["key", "token", "secret", "password", "passwd", "auth", "credential", "credentials", "cookie",
                    "passphrase", "bearer", "apikey", "authtoken", "pwd"]
NAME_WORDS = ["api", "hf", "ssl", "keyfile", "client", "db", "session", "foo", "oauth", "access", "private", "s3",
              "ray", "otlp", "kv"]


@st.composite
def credential_option(draw) -> str:
    """``--words-with-a-credential-stem``: a stem, maybe misspelt (``keyy``, ``tokenn``, ``secret2``),
    among other words, ``-`` or ``_`` between them; sometimes a dotted sub-key of a known option.
    Never ending in ``id``: a name whose last word is a measure or an id is no credential
    (core/credentials.py ``_MEASURES``: eos_token_id, --key-id)."""
    stem = draw(st.sampled_from(CREDENTIAL_STEMS))
    stem += draw(st.sampled_from(["", "", "", stem[-1], "y", "2", "x"]))
    words = [*draw(st.lists(st.sampled_from(NAME_WORDS), max_size=2)), stem,
             *draw(st.lists(st.sampled_from(["value", "v2", "secret", "token"]), max_size=1))]
    name = draw(st.sampled_from(["-", "_"])).join(words)
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(["--speculative-config.", "--hf-overrides.", "--compilation-config.x."])) + name
    return "--" + name


def credential_placement(name: str, value: str) -> st.SearchStrategy[list[str]]:
    return st.sampled_from([[name, value], [name + "=" + value], [name, value, "--port", "8000"]])


def dash_dot_secret(core: str) -> st.SearchStrategy[list[str]]:
    """A secret that starts with ``-`` and holds a ``.`` (vLLM's pre-processing takes it for a
    dotted option), after --api-key or --hf-token in every spelling."""
    return st.tuples(st.sampled_from(["--api-key", "--api_key", "--api-k", "--hf-token"]),
                     st.sampled_from(["-sk.live-", "--s_k.", "-.", "-x.y.", "--a.b="]),
                     st.sampled_from([[], ["--port", "8000"], ["-tp", "2"]])).map(
        lambda t: [t[0], t[1] + core, *t[2]])


# Round four (issue 28): the part of a dash-prefixed secret before its first "." is what vLLM's
# pre-processing makes an option of ("-abc.def" → "-abc" and {"def": …}); argparse quotes it.
DOTTED_HEADS = ["-", "--", "---", "-_"]
DOTTED_SEPARATORS = [".", ".", "..", "=", ".x=", "+", ".+", "'", '"', " ", "é", "_", ",", "-", "=.", "密", "\u00a0"]


@st.composite
def dotted_secret(draw) -> tuple[str, tuple[str, ...]]:
    """(secret, cores): a secret that starts with dashes and holds a "." (and maybe "=", quotes,
    blanks, unicode) with its cores (``Zq…``) before and after the dot — each core must never
    be printed, wherever vLLM's pre-processing and argparse cut the secret."""
    alnum = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", min_size=6, max_size=10)
    cores = ["Zq" + draw(alnum)]
    parts = [draw(st.sampled_from(DOTTED_HEADS)), cores[0], "."]
    for _ in range(draw(st.integers(0, 2))):
        core = "Zq" + draw(alnum)
        parts += [draw(st.sampled_from(DOTTED_SEPARATORS)), core]
        cores.append(core)
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(DOTTED_SEPARATORS)))
    return "".join(parts), tuple(cores)


def dotted_placement(s: str) -> st.SearchStrategy[list[str]]:
    """Where such a secret stands: after --api-key (every spelling, first or later value, with an
    option, a word or nothing after it), --hf-token, a credential-named option vLLM does not
    know, a dotted sub-key; as ``=`` value."""
    return st.sampled_from([
        ["--api-key", s], ["--api-key", s, "--port", "8000"], ["--api-key", "k0", s], ["--api-key", s, "word"],
        ["--api-key=" + s], ["--api_key", s, "-tp", "2"], ["--api-k", s, "--port", "8000"], ["--api-key", s, s],
        ["--hf-token", s], ["--hf-token", s, "--port", "8000"], ["--hf_token=" + s],
        ["--foo-auth-token", s, "--port", "8000"], ["--hf-overrides.hf_token", s], ["--api-key", s, "--"],
    ])


# Class 3: modules a model repository (the working directory) could plant.
PLANTED_MODULES = ["json", "importlib", "torch", "flashinfer", "sitecustomize", "usercustomize", "typing", "re",
                   "enum", "functools", "collections", "vllm", "email", "zipfile", "pathlib", "csv"]
RELATIVE_PYTHONPATHS = [None, ".", "", ":", "./", "sub", "./sub:.", "::"]

# Class 5: `vllm` scripts without a "#!" line.
SCRIPT_LINES = ["", "# a wrapper", "set -e", ": noop", "true", "X=1", "echo starting >&2", "export Y=2"]

# Class 6: how HF_HOME / HF_HUB_CACHE / HUGGINGFACE_HUB_CACHE / XDG_CACHE_HOME may be written.
HF_PATH_FORMS = ["~", "~/hf", "~/", "~root/hf", "~nosuchuser9/hf", "$HOME/hf", "${HOME}/hf", "$HOME$HOME",
                 "$UNSET_HF_VAR/x", "${UNSET_HF_VAR}", "${UNCLOSED", "$", "$$", "", "relative/hf", "/abs/hf",
                 "$BASE_DIR/hf", "${BASE_DIR}", "~/$BASE_DIR", "a~b", "~$HOME"]
OFFLINE_SPELLINGS = ["1", "0", "true", "True", "TRUE", "on", "ON", "yes", "Yes", "y", "n", "no", "off", "", " 1",
                     "1 ", "2", "tru", "ja", "１"]


@st.composite
def hf_env(draw) -> dict[str, str]:
    env = {"HOME": draw(st.sampled_from(["/home/u", "/home/u/", "/", "", "/x y"]))}
    for name in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME", "BASE_DIR"):
        if draw(st.booleans()):
            env[name] = draw(st.one_of(st.sampled_from(HF_PATH_FORMS), hostile_text(8)))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if draw(st.booleans()):
            env[name] = draw(st.one_of(st.sampled_from(OFFLINE_SPELLINGS), hostile_text(4)))
    if draw(st.integers(0, 5)) == 0:
        env.pop("HOME")
    return {k: v for k, v in env.items() if "\x00" not in v}


# Class 8: YAML alias bombs, any width, depth and shape, under real option names too.
@st.composite
def yaml_bomb(draw) -> str:
    width = draw(st.integers(2, 12))
    depth = draw(st.integers(2, 10))
    shape = draw(st.sampled_from(["flow_list", "flow_dict", "block_list", "strings", "mixed"]))
    leaf = draw(st.sampled_from(["x", "abc", "'" + "y" * 200 + "'", "1", "{k: v}", "[a, b]"]))
    names = [f"n{i}" for i in range(depth)]
    if shape == "strings":
        lines = ["n0: &n0 " + "z" * draw(st.integers(1000, 200_000))]
    elif shape == "flow_dict":
        lines = ["n0: &n0 {" + ", ".join(f"k{i}: {leaf}" for i in range(width)) + "}"]
    else:
        lines = ["n0: &n0 [" + ", ".join([leaf] * width) + "]"]
    for prev, name in zip(names, names[1:]):
        refs = [f"*{prev}"] * width
        kind = shape if shape != "mixed" else draw(st.sampled_from(["flow_list", "flow_dict", "block_list"]))
        if kind == "flow_dict":
            lines.append(f"{name}: &{name} {{" + ", ".join(f"k{i}: {r}" for i, r in enumerate(refs)) + "}")
        elif kind == "block_list":
            lines.append(f"{name}: &{name}\n" + "\n".join(f"  - {r}" for r in refs))
        else:
            lines.append(f"{name}: &{name} [" + ", ".join(refs) + "]")
    target = draw(st.sampled_from(["served-model-name", "hf-overrides", "api-key", "x", "speculative-config"]))
    lines.append(f"{target}: *{names[-1]}")
    return "\n".join(lines) + "\n"
