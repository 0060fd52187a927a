"""explain's one walk over a repr's quotes and brackets (core/walker.py) and its two users:
the log masker (masking.py: where a credential's bracketed value ends) and the scanner
(scanner.py: the items of vLLM's ``non-default args: {...}`` line, and the secrets in it).

Each of the two users walked quotes and brackets with its own loop before (masking's
``_closing``, scanner's ``_split_top_level``). Those loops are kept here, verbatim, as the
oracle: the walker and both users must give what they gave on generated inputs dense in what a
walk can get wrong (nested brackets of three kinds, mismatched ones, quotes of both kinds,
backslashes, strings left open, a repr cut anywhere, as a log line's end cuts it), and on the
reprs of generated Python values, whose items are known. The walker's cost grows linearly with
long, deeply nested and escape-laden inputs (tests/scaling.py). Nothing is faked; the users are
run once with the old loops swapped in (``mock.patch``) and once as they are.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsv4_launch.core import walker
from dsv4_launch.core.explain import masking, scanner
from dsv4_launch.core.walker import bracket_items, closing
from tests.scaling import SCALE, assert_linear, assert_linear_count

# --- the oracle: the two loops as they were (masking.py and scanner.py before the walker) ------

def old_closing(text: str, start: int) -> int:
    """The end of the bracketed value opening at ``start`` (quotes respected), or of ``text``."""
    quote, depth, i, n = "", 0, start, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def old_pieces(text: str) -> tuple[list[str], bool]:
    """scanner's ``_split_top_level`` as it was, returning the item texts before ``_item``."""
    items: list[str] = []
    if not text.startswith("{"):
        return items, False
    depth, quote, start, i, n = 0, None, 1, 0, len(text)
    complete = False
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                items.append(text[start:i])
                complete = True
                break
        elif ch == "," and depth == 1:
            items.append(text[start:i])
            start = i + 1
        i += 1
    return items, complete


def old_split_top_level(text: str) -> tuple[list[tuple[str, str]], bool]:
    pieces, complete = old_pieces(text)
    return [it for it in (scanner._item(p) for p in pieces) if it[0]], complete


def _old(function, *args):
    """``function(*args)`` with the old loops in place of the walker, in both users."""
    with mock.patch.object(masking, "closing", old_closing), mock.patch.object(scanner, "closing", old_closing), \
            mock.patch.object(scanner, "_split_top_level", old_split_top_level):
        return function(*args)


# --- generated inputs ---------------------------------------------------------------------------

# Text made of what a walk reads: every bracket, both quotes, backslashes (escaping a quote, a
# bracket, a backslash, the end), commas, ": " and plain characters, a newline.
_STRUCTURE = st.text(alphabet="[]{}()'\"\\,: ax\n", max_size=80)
_FRAGMENTS = ("'api_key': ", "'hf_token': ", "api_key=", "token: ", "password=", "credentials=", "--api-key ",
              "--api-key=", "'--api-key', ", "{", "[", "(", "}", "]", ")", "'", '"', "\\", "\\'", '\\"', "\\\\", ",",
              ", ", " ", ": ", "sk-", "ZqS3cr3tV4lue9", "abc", "x", "'k1'", '"k2"', "None", "...", "\n",
              "input_value=", "AttentionConfig(", "<Enum.X: 'a.b'>", "'it\\'s'", "[]", "{}", "\\\n")
_LINE = st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join)
# Escapes dense: a backslash before a quote, a bracket, a line break, a backslash, the end.
_ESCAPES = st.lists(st.sampled_from(["'", '"', "\\", "\n", "[", "]", "{", "(", ")", "}", ",", "a", "\\'", '\\"',
                                     "\\\n", "\\\\", "\\]"]), min_size=4, max_size=40).map("".join)
_TEXT = st.one_of(_STRUCTURE, _LINE, _ESCAPES)


def _strings() -> st.SearchStrategy[str]:
    return st.text(alphabet="ab '\"\\[]{}(),:\n\té", max_size=12)


_KEYS = st.sampled_from(["model", "port", "k", "api_key", "hf_token", "watermark_config", "kv_transfer_config",
                         "password", "served_model_name", "compilation_config", "it's", 'say "hi"', "a\\b"])
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), _strings()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=12,
)
_ARGS = st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=6)


@st.composite
def _cut_repr(draw) -> str:
    """A ``non-default args`` dict's repr, whole or cut anywhere (a log line's end)."""
    text = repr(draw(_ARGS))
    return text[:draw(st.integers(0, len(text)))] if draw(st.booleans()) else text


# --- the walker agrees with the old loops ---------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(st.one_of(_TEXT, _cut_repr()), st.data())
def test_closing_agrees_with_the_old_walk(text, data):
    start = data.draw(st.integers(0, len(text)))
    assert closing(text, start) == old_closing(text, start)
    for i, ch in enumerate(text):  # and from every opening bracket, as the users call it
        if ch in "[{(":
            assert closing(text, i) == old_closing(text, i), i


@settings(max_examples=400, deadline=None)
@given(st.one_of(_TEXT.map(lambda t: "{" + t), _cut_repr()))
def test_items_agree_with_the_old_split(text):
    spans, complete = bracket_items(text)
    assert ([text[a:b] for a, b in spans], complete) == old_pieces(text)
    assert scanner._split_top_level(text) == old_split_top_level(text)


def test_items_of_known_inputs():
    """What the old loops gave, written out: the cases each quoting rule decides."""
    cases = {
        "{'a': 1, 'b': [1, 2], 'c': {'d': (3, 4)}}": (["'a': 1", " 'b': [1, 2]", " 'c': {'d': (3, 4)}"], True),
        "{'a': 'x, y', 'b': \"q'\"}": (["'a': 'x, y'", " 'b': \"q'\""], True),
        "{'a': 'it\\'s, }', 'b': 2}": (["'a': 'it\\'s, }'", " 'b': 2"], True),  # an escaped quote
        "{'a': 1, 'b': 'cut, her": (["'a': 1"], False),  # a string left open: the cut item is left out
        "{'a': [1, 2": ([], False),
        "{'a': 1]": (["'a': 1"], True),  # a mismatched closer closes (depth, not pairs)
        "{'a': '\\\\', 'b': 2}": (["'a': '\\\\'", " 'b': 2"], True),  # an escaped backslash ends nothing
        "{'a': 'x\\": ([], False),  # a backslash at the end of a string left open
        "{'a': 'x\\\n', 'b': 2}": (["'a': 'x\\\n'", " 'b': 2"], True),  # an escaped line break
        "{": ([], False),
        "{}": ([""], True),
    }
    for text, expected in cases.items():
        spans, complete = bracket_items(text)
        assert ([text[a:b] for a, b in spans], complete) == expected, text
        assert old_pieces(text) == expected, text


def test_closing_of_known_inputs():
    cases = [("[1, [2], 3] tail", 0, 11), ("x = {'a': '}'} y", 4, 14), ("['a', \"b]\"]", 0, 11),
             ("['it\\'s]'] z", 0, 10), ("[unterminated 'x]", 0, 17), ("(a, {b: [c]}) d", 0, 13),
             ("[a) b", 0, 3), ("abc]", 0, 4), ("['a\\\n]', 'b'] z", 0, 13)]
    for text, start, end in cases:
        assert closing(text, start) == end == old_closing(text, start), text
    assert closing("] [x]", 0) == 5 == old_closing("] [x]", 0)  # depth below 0 first: no closer counts


@settings(max_examples=200, deadline=None)
@given(_ARGS)
def test_the_items_of_a_whole_repr_are_its_entries(value):
    """Ground truth without the oracle: a dict's repr splits into its entries' reprs."""
    text = repr(value)
    spans, complete = bracket_items(text)
    assert complete and closing(text, 0) == len(text)
    assert [text[a:b].strip() for a, b in spans] == [f"{k!r}: {v!r}" for k, v in value.items()]


# --- both users give what they gave ---------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT)
def test_the_masker_agrees_with_the_old_walk(line, below):
    assert masking.mask_secrets_in_text(line) == _old(masking.mask_secrets_in_text, line)
    assert masking.mask_lines([line, below]) == _old(masking.mask_lines, [line, below])
    assert masking._leaves_value_below(line) == _old(masking._leaves_value_below, line)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_cut_repr(), _TEXT.map(lambda t: "{" + t)))
def test_the_args_reader_agrees_with_the_old_walk(text):
    assert scanner.args_secrets(text) == _old(scanner.args_secrets, text)
    assert scanner.parse_args_text(text, 7) == _old(scanner.parse_args_text, text, 7)


def test_the_oracle_is_in_use():
    """The swap reaches both users (else the two tests above compare the walker with itself)."""
    calls = []

    def spy(text: str, start: int) -> int:
        calls.append(start)
        return old_closing(text, start)

    with mock.patch.object(masking, "closing", spy), mock.patch.object(scanner, "closing", spy):
        masking.mask_secrets_in_text("credentials={'a': 'b'} x")
        scanner.args_secrets("{'api_key': ['k1', 'k2'], 'port': 1}")
    assert len(calls) == 2
    with mock.patch.object(scanner, "_split_top_level", lambda text: ([("port", "8")], True)):
        assert scanner.parse_args_text("{}", 1).values == {"port": 8}


# --- cost: linear in long, deep and escape-laden inputs ---------------------------------------

_LINEAR_CASES = {
    "deep": lambda n: "[" * n + "]" * n,
    "deep, open": lambda n: "{(" * n,
    "long list": lambda n: "[" + "'a', " * n + "]",
    "escapes": lambda n: "['" + "\\'" * n + "']",
    "open string": lambda n: "['" + "\\\\ a," * n,
    "both quotes": lambda n: "{" + "'\"', \"'\", " * n,
}


@pytest.mark.parametrize("name", list(_LINEAR_CASES))
def test_the_walk_is_linear(name):
    make = _LINEAR_CASES[name]
    n = 40_000 // (2 * SCALE)
    assert_linear(make, lambda text: closing(text, 0), n)
    assert_linear(make, lambda text: bracket_items("{" + text), n)
    # and in the walker's own Python lines (no load changes a count)
    assert_linear_count(walker, make, lambda text: bracket_items("{" + text), 2000 // SCALE)


def test_the_args_of_a_long_repr_are_read_in_linear_time():
    """The scanner's user: a long args line (many items, deep values) read whole."""
    def make(n: int) -> str:
        values = {f"k{i}": [[i, "a'b", {"x": '"}]'}]] for i in range(n)}
        return repr({"api_key": [f"k{i}'" for i in range(n)], **values, "hf_token": values})

    assert_linear(make, lambda text: scanner._split_top_level(text), 4000 // SCALE)
    assert_linear(make, scanner.args_secrets, 4000 // SCALE)
