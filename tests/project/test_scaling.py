"""The tests of cost (tests/scaling.py) fail on the blow-ups they guard against, and only then.

Each converted test is run here against a version of the code with its blow-up put back (a
quadratic state, a pattern retried at every position, a per-pair search, an alias walk that
expands every alias, the pure-Python YAML loader asked) and must fail; the real code passes it
(the test itself, in its own file). Nothing is timed against a constant here either.
"""

from __future__ import annotations

from functools import partial

import pytest

from tests.scaling import LineCounter, TooMuchWork, assert_linear, assert_linear_count, growth, lines_run


def _linear(n: int) -> int:
    return sum(i & 7 for i in range(n))


def _quadratic(n: int) -> int:
    return sum(1 for i in range(n) for _ in range(i))


def test_linear_work_passes_and_quadratic_work_fails():
    assert_linear(lambda n: n, _linear, 50_000)
    assert growth(lambda n: n, _quadratic, 300) > 12
    with pytest.raises(AssertionError, match="quadratic"):
        assert_linear(lambda n: n, _quadratic, 300)


def test_the_counter_counts_lines_of_the_named_module_only_and_stops_a_blow_up():
    import tests.project.test_scaling as here

    assert lines_run(here, lambda: _linear(10)) == lines_run(here, lambda: _linear(10))
    assert lines_run(pytest, lambda: _linear(10)) == 0  # another module's lines are not counted
    with pytest.raises(TooMuchWork):
        lines_run(here, lambda: _quadratic(10_000), limit=10_000)


def test_a_limit_passed_inside_a_broad_except_still_fails():
    import tests.project.test_scaling as here

    def swallowing():
        try:
            _quadratic(1000)
        except Exception:
            pass

    with pytest.raises(TooMuchWork):
        with LineCounter(here, limit=100):
            swallowing()


# --- each converted test against its blow-up -------------------------------------------------

def _one_round(monkeypatch, module) -> None:
    """The converted test's growth measured once (a blow-up fails every round; this saves time)."""
    monkeypatch.setattr(module, "assert_linear", partial(assert_linear, rounds=1))


def test_the_line_state_test_fails_on_a_quadratic_state(monkeypatch):
    """test_explain_secrets' line-state case [lines3], with a scanner that looks through every
    line it has kept at each new line."""
    from dsv4_launch.core.explain.scanner import Scanner
    from tests.secrets import test_explain_secrets as t

    feed = Scanner.feed

    def rereading(self, line, *args, **kwargs):
        kept = self.__dict__.setdefault("_kept_for_test", [])
        kept.append(line)
        for _ in range(10):  # enough that the quadratic part outweighs a 300-bracket line's own scan (×19 measured)
            kept.count(None)  # the whole history, at each line
        return feed(self, line, *args, **kwargs)

    _one_round(monkeypatch, t)
    monkeypatch.setattr(Scanner, "feed", rereading)
    with pytest.raises(AssertionError, match="quadratic"):
        t.test_the_line_state_reads_a_hostile_log_in_linear_time(t.LINE_STATES[3])


def test_the_hostile_line_test_fails_on_a_pattern_retried_at_every_position(monkeypatch):
    import re

    from tests.secrets import test_explain_secrets as t

    mask, word = t.mask_secrets_in_text, re.compile(r"\w*'")

    def retrying(line: str) -> str:
        for start in range(0, len(line), 2):  # a pattern tried again from every other character
            word.match(line, start)
        return mask(line)

    _one_round(monkeypatch, t)
    monkeypatch.setattr(t, "mask_secrets_in_text", retrying)
    with pytest.raises(AssertionError, match="quadratic"):
        t.test_a_hostile_line_is_masked_in_linear_time(t.HOSTILE_LINES[0])


# The per-pair search of unknown option names in the secret values (4.5 s for 3,000), compiled as
# serve_args.py's own code: the counter sees its lines.
_PER_PAIR_SEARCH = '''
def _unknown_names(unknown, secrets):
    names = []
    for u in unknown:
        name = u.split("=", 1)[0]
        if not any(name in s for s in secrets):
            names.append(name)
    return tuple(dict.fromkeys(names))
'''


def test_the_unknown_credentials_test_fails_on_a_per_pair_search(monkeypatch):
    from dsv4_launch.vllm_cli import serve_args
    from tests.secrets import test_secret_unrecorded as t

    space: dict = {}
    exec(compile(_PER_PAIR_SEARCH, serve_args.__file__, "exec"), space)
    monkeypatch.setattr(serve_args, "_unknown_names", space["_unknown_names"])
    with pytest.raises(AssertionError, match="quadratic"):
        t.test_thousands_of_unknown_credential_options_are_linear()


def test_a_count_grows_as_the_work_does():
    import tests.project.test_scaling as here

    assert_linear_count(here, lambda n: n, _linear, 1000)
    with pytest.raises(AssertionError, match="quadratic"):
        assert_linear_count(here, lambda n: n, _quadratic, 100)


# An alias walk that writes every alias out (what expanded_size avoids by remembering each
# container's size), compiled as config_file.py's own code: the counter sees its lines.
_EXPANDING_WALK = '''
def expanded_size(data, limit):
    def size(value):
        if isinstance(value, str):
            return 1 + len(value)
        if isinstance(value, dict):
            return 1 + sum(size(k) + size(v) for k, v in value.items())
        if isinstance(value, list):
            return 1 + sum(size(v) for v in value)
        return 1
    return size(data)
'''


@pytest.mark.parametrize("kind", ["list", "dict", "block"])
def test_the_alias_bomb_test_fails_on_a_walk_that_expands_the_aliases(monkeypatch, tmp_path, kind, v4_dir):
    from dsv4_launch.adapters import config_file
    from tests.adapters import test_config_yaml as t

    space: dict = {}
    exec(compile(_EXPANDING_WALK, config_file.__file__, "exec"), space)
    monkeypatch.setattr(config_file, "expanded_size", space["expanded_size"])
    with pytest.raises(TooMuchWork):
        t.test_yaml_alias_bomb_is_left_to_vllm_quickly(tmp_path, kind, v4_dir)


def test_the_nesting_test_fails_when_the_pure_python_loader_is_asked(monkeypatch, tmp_path):
    from dsv4_launch.adapters import config_file
    from tests.adapters import test_config_yaml as t

    def asking(yaml, path, text, exc):  # no short cut: vLLM's own loader decides every failure
        return config_file._load_like_vllm(yaml, path, text)

    monkeypatch.setattr(config_file, "_after_the_c_loader", asking)
    with pytest.raises(pytest.fail.Exception, match="pure-Python loader"):
        t.test_yaml_nested_past_the_c_loaders_limit_costs_nothing(tmp_path, "[" * 5000, monkeypatch)


_PER_ENTRY_WALK = '''
def split_weights(config, *args, **kwargs):
    for _ in config.get("compress_ratios") or ():  # every entry read, not only the layers'
        pass
    return real(config, *args, **kwargs)
'''


def test_the_compress_ratios_test_fails_on_a_walk_of_every_entry(monkeypatch):
    from dsv4_launch.core.memory import weights
    from tests.memory import test_weights as t

    space: dict = {"real": weights.split_weights}
    exec(compile(_PER_ENTRY_WALK, weights.__file__, "exec"), space)
    monkeypatch.setattr(t, "split_weights", space["split_weights"])
    with pytest.raises(AssertionError):
        t.test_a_huge_compress_ratios_list_costs_nothing_more()


def test_the_absent_shards_test_fails_on_a_quadratic_accounting(monkeypatch, tmp_path):
    import json
    import os

    from tests.adapters import test_model_weights as t

    read = t.read_weights

    def accounting(folder, *args, **kwargs):
        with open(os.path.join(folder, t.INDEX)) as handle:
            named = list(dict.fromkeys(json.load(handle)["weight_map"].values()))
        present = [name for name in named if os.path.exists(os.path.join(folder, name))]
        [name for name in named if name not in named[:len(named) - len(present)]]  # a list searched per shard
        return read(folder, *args, **kwargs)

    _one_round(monkeypatch, t)
    monkeypatch.setattr(t, "read_weights", accounting)
    with pytest.raises(AssertionError, match="quadratic"):
        t.test_an_index_naming_20000_absent_shards_is_read_in_linear_time(tmp_path)
