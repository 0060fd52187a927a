"""A hostile pass on explain's round two (argument errors, the did-you-mean, gated signatures):
what a careless user's log or an attacker's makes it print. Each test failed before its fix."""

from __future__ import annotations

import io
import json

import pytest

from dsv4_launch.commands.context import Context
from dsv4_launch.commands.explain import run_explain
from dsv4_launch.core.vllm.releases import NEWEST_VERIFIED


def _explain(tmp_path, lines, *, as_json):
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    status = run_explain([str(path)], as_json=as_json, ctx=Context(env={}, stdout=out, stderr=err))
    return status, out.getvalue(), err.getvalue()


def _argument_error(words: str, version: str | None = "0.33.0") -> list[str]:
    head = [f"INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version {version}"] if version else []
    return [*head, f"vllm serve: error: unrecognized arguments: {words}"]


S = "Zq81xPLAINkey0042"  # a key with no shape of its own: only the option before it says it is one


# The user meant a secret option and vLLM did not recognise it: the word argparse quotes after it
# is the key. Before: printed in the quoted line, the effect and the did-you-mean, text and JSON.
@pytest.mark.parametrize("words", [
    f"--api-kye {S}", f"--api-kye={S}", f"--apikey {S}", f"-api-key {S}", f"\u2014api-key {S}",
    f"\u2013hf-token={S}", f"--hf-tokn {S}", f"--api-key{S}", f"-hf-token={S} --enable-expert-paralel",
    f"--Api-Key {S}", f"\uff0dapi-kye {S}", f"\u2015hf-tokn={S}",  # every look-alike dash credentials.DASHES has
])
@pytest.mark.parametrize("as_json", [True, False])
def test_a_misspelt_secret_option_in_an_argument_error_never_prints_its_value(tmp_path, words, as_json):
    status, out, err = _explain(tmp_path, _argument_error(words), as_json=as_json)
    assert status == 0 and "vllm-argument-error" in out
    assert S not in out and S not in err


@pytest.mark.parametrize("words", [f"--api-kye {S}", f"--hf-tokens {S}", f"--token {S}", f"--api_key {S}"])
def test_the_did_you_mean_of_a_credential_named_option_is_not_eaten_by_the_mask(tmp_path, words):
    """The masking reads the word after a credential's name as its value: the suggestion must not
    put "(did" there (before: "--api_key *** --api-key?)")."""
    _, out, _ = _explain(tmp_path, _argument_error(words), as_json=True)
    fix = json.loads(out)["explained"][0]["fix"]
    assert "did you mean --" in fix and "***" not in fix, fix


@pytest.mark.parametrize(("version", "recorded"), [("0.23.0", "0.24.0"), ("9.0.0", NEWEST_VERIFIED),
                                                   ("0.34.0rc1", "0.33.0"), (None, NEWEST_VERIFIED)])
def test_the_did_you_mean_of_an_unrecorded_release_names_the_table_it_used(tmp_path, version, recorded):
    """No table is recorded for the log's release: the answer must not say that release's parser
    (nor the stand-in's as if it were the log's) does not know the option."""
    _, out, _ = _explain(tmp_path, _argument_error("--enable-expert-paralel", version), as_json=True)
    fix = json.loads(out)["explained"][0]["fix"]
    assert "did you mean --enable-expert-parallel?" in fix
    assert f"vLLM {recorded}'s parser does not know" not in fix and "nearest recorded parser" in fix, fix
    assert f"vLLM {recorded}'s" in fix and (version is None or f"{version}'s is not recorded" in fix)


def test_the_did_you_mean_of_a_recorded_release_is_its_own(tmp_path):
    _, out, _ = _explain(tmp_path, _argument_error("--enable-expert-paralel", "0.33.0"), as_json=True)
    assert json.loads(out)["explained"][0]["fix"].startswith(
        "vLLM 0.33.0's parser does not know --enable-expert-paralel")


def test_the_did_you_mean_is_bounded_by_the_options_named_not_the_words(tmp_path):
    """20,000 unknown words (one line under the reader's limit): each distinct option named once,
    at most a dozen (before: a line of ~370 kB, one entry per word)."""
    _, out, _ = _explain(tmp_path, _argument_error(" ".join(["--api-kye"] * 3000 + [f"--x{i}" for i in range(3000)])),
                         as_json=True)
    fix = json.loads(out)["explained"][0]["fix"]
    assert len(fix) < 1000 and fix.count("--api-kye") == 1 and "more" in fix, fix[:300]


# --- the release and the GPU a gated signature is judged by --------------------------------------

_PREFILL = ("RuntimeError: Assertion error (/workspace/.deps/flashmla-src/csrc/sm90/prefill/sparse/instantiations/"
            "../phase1.cuh:614): Assertion `res == CUresult::CUDA_SUCCESS` failed.")


def _version(v: str) -> str:
    return f"INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version {v}"


@pytest.mark.parametrize(("runs", "named"), [
    (("0.26.0", "0.29.0"), True),  # the crash in a 0.26.0 run, then an upgrade that started
    (("0.26.0", "0.25.1"), True),  # ... a downgrade
    (("0.29.0", "0.26.0"), False),  # the crash in a 0.29.0 run: another cause, though the log ends on 0.26.0
    (("0.25.1", "0.26.0"), False),
    (("0.26.0", "0.26.0"), True),
])
def test_a_release_gated_signature_is_judged_by_the_release_of_its_own_run(tmp_path, runs, named):
    """A log of two runs (a restart after an upgrade): the crash belongs to the run it is in, not
    to the release the log names last (before: judged by the last version line)."""
    lines = [_version(runs[0]), f"ERROR 12-01 10:00:05 [core.py:1] {_PREFILL}", _version(runs[1]),
             "INFO 12-01 11:00:09 [api_server.py:1] Started server process"]
    _, out, _ = _explain(tmp_path, lines, as_json=True)
    doc = json.loads(out)
    found = [i for i in doc["explained"] if i["rule"] == "flashmla-sparse-prefill-0.26"]
    assert bool(found) is named, doc["explained"]
    if found:
        assert found[0]["vllm_version"] == runs[0]
        _, text, _ = _explain(tmp_path, lines, as_json=False)
        assert (f"in a run of vLLM {runs[0]}" in text) is (runs[0] != runs[1])


_SM12_ONLY = "RuntimeError: Sparse Attention Forward Kernel is only supported on SM90a and SM100f architectures"


def _found_gpu(number: int, name: str, capability: str) -> str:
    return f"WARNING Found GPU{number} {name} which is of cuda capability {capability}."


@pytest.mark.parametrize(("gpus", "named"), [
    ((("NVIDIA RTX PRO 6000 Blackwell", "12.0"), ("NVIDIA H100", "9.0")), True),  # before: the last GPU judged alone
    ((("NVIDIA H100", "9.0"), ("NVIDIA RTX PRO 6000 Blackwell", "12.0")), True),
    ((("NVIDIA GeForce RTX 5090", "12.0"), ("NVIDIA B200", "10.0")), True),
    ((("NVIDIA H100", "9.0"), ("NVIDIA B200", "10.0")), False),
    ((("NVIDIA H100", "9.0"), ("NVIDIA H100", "9.0")), False),
])
def test_the_gpu_gate_reads_every_gpu_the_log_names(tmp_path, gpus, named):
    lines = [*(_found_gpu(i, n, c) for i, (n, c) in enumerate(gpus)), f"ERROR [core.py:1] {_SM12_ONLY}"]
    _, out, _ = _explain(tmp_path, lines, as_json=True)
    doc = json.loads(out)
    assert ("flashmla-on-sm12" in {i["rule"] for i in doc["explained"]}) is named, doc["explained"]
    assert doc["gpu_capabilities"] == list(dict.fromkeys(c for _, c in gpus))


def test_a_log_naming_gpus_of_two_kinds_plans_for_unknown_gpus(tmp_path):
    """The corrected command is not planned for one of two kinds as if it were every GPU's."""
    args = "{'model_tag': 'deepseek-ai/DeepSeek-V4-Flash', 'kv_cache_dtype': 'auto'}"
    lines = [_found_gpu(0, "NVIDIA RTX PRO 6000 Blackwell", "12.0"), _found_gpu(1, "NVIDIA H100", "9.0"),
             _version("0.29.0"), f"INFO 12-01 10:00:01 [utils.py:1] non-default args: {args}",
             f"ERROR [core.py:1] {_SM12_ONLY}"]
    _, out, _ = _explain(tmp_path, lines, as_json=True)
    doc = json.loads(out)
    assert doc["explained"] and doc["corrected"] is not None
    assert doc["corrected"]["gpus"] == "unknown (the log names SM 12.0 and SM 9.0)"


# --- a pasted command ------------------------------------------------------------------------------

@pytest.mark.parametrize("paste", [
    f"vllm serve deepseek-ai/DeepSeek-V4-Flash --api-kye {S} --max-model-len 4096",
    f"$ HF_HOME=/data vllm serve deepseek-ai/DeepSeek-V4-Flash -api-key {S}",
    f"vllm serve deepseek-ai/DeepSeek-V4-Flash \u2014hf-token={S} -tp 8",
    f"vllm serve deepseek-ai/DeepSeek-V4-Flash --api-key{S}",
    f"vllm serve deepseek-ai/DeepSeek-V4-Flash --hf-tokn '{S}'",
])
@pytest.mark.parametrize("as_json", [True, False])
def test_a_misspelt_secret_option_in_a_pasted_command_is_a_secret_wherever_quoted(tmp_path, paste, as_json):
    """vLLM rejects the paste, so no parse places the key: the word after a secret option's
    misspelt name is one all the same (before: printed where a later line quoted it)."""
    lines = [paste, _version("0.33.0"), f"RuntimeError: could not open {S} (no such file)"]
    status, out, err = _explain(tmp_path, lines, as_json=as_json)
    assert "could not open" in out and S not in out and S not in err


def test_a_pasted_command_of_thousands_of_options_is_read_in_linear_time():
    """argparse's parse is quadratic in the options it is given (13,000 unknown ones: 5 s, twice
    as many: 14 s; a log's paste may hold 400 lines of 64 KiB): a paste longer than any command
    is not parsed; its secrets are still found (as without a parse)."""
    from dsv4_launch.commands.explain import PARSED_WORDS, _read_command
    from tests.scaling import assert_linear

    def make(n: int) -> tuple[str, ...]:
        return ("deepseek-ai/DeepSeek-V4-Flash", *(["--xpi-kqe"] * n), "--api-key", S, f"--n{n}")

    def work(words: tuple[str, ...]) -> object:
        _read_command.cache_clear()
        return _read_command(words, "0.33.0")

    assert_linear(make, work, PARSED_WORDS)  # both past the bound: the cost of the reading without a parse
    assert S in work(make(PARSED_WORDS * 2))[1]


def test_an_argument_error_before_the_logs_only_release_line_is_answered_with_that_release(tmp_path):
    """argparse refuses before vLLM logs its release: a refused run has no version line of its
    own; the release the log names for its other run is the guess, not "not named"."""
    lines = [*_argument_error("--enable-expert-paralel", None), _version("0.29.0")]
    _, out, _ = _explain(tmp_path, lines, as_json=True)
    assert json.loads(out)["explained"][0]["fix"].startswith("vLLM 0.29.0's parser does not know")
