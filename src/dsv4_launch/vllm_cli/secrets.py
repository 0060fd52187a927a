"""Which ``vllm serve`` options carry secrets, and where their values sit in an argv.

The exact positions come from the parse itself (``serve_args`` records which tokens argparse
gave to these options: every spelling, abbreviation, ``=`` form, repeat and dotted form). When
vLLM will reject the arguments there is no parse to ask, and ``conservative_spans`` masks
everything that could be such a value instead.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from ..core.credentials import DASHES, SECRET_OPTIONS, is_credential_name, url_credentials
from ..core.facts import SecretSpans

SECRET_DESTS = frozenset(o.replace("-", "_") for o in SECRET_OPTIONS)

WHOLE, AFTER_EQ = "whole", "after="  # a span is a whole token, or the part after its first "="


def option_name(token: str) -> str | None:
    """The option a ``--name``/``--name=value`` token names, normalised as vLLM does up to the
    first ``.`` (``--speculative_config.kv_cache_dtype`` → ``speculative-config.kv_cache_dtype``);
    None for anything that is not a long option."""
    if not token.startswith("--") or token == "--":
        return None
    name = token[2:].split("=", 1)[0]
    root, dot, rest = name.partition(".")
    return root.replace("_", "-") + dot + rest


def _resolves_to_secret(root: str, known: frozenset[str]) -> bool | None:
    """True: names a secret option; False: names another known option; None: unknown. An
    abbreviation argparse resolves is that option; an ambiguous one is unknown (judged by its
    name: ``--token``) unless one of its candidates is a secret option (``--a``, ``--h``: the
    word after them is the key the user meant for ``--api-key``/``--hf-token``)."""
    root = root.translate(_HYPHEN)  # --api‐key (U+2010): the option the user meant
    if root in SECRET_OPTIONS:
        return True
    if root in known:
        return False
    matches = _starting_with(root, known)  # argparse abbreviates at any length: --a, --h
    if any(m in SECRET_OPTIONS for m in matches):
        return True  # a unique or ambiguous abbreviation that may be a secret option
    if len(matches) == 1:
        return False  # argparse gives it to that option
    return None  # no such option, or an ambiguous abbreviation of other options only


_HYPHEN = str.maketrans(dict.fromkeys(DASHES[1:], "-"))


def key_is_secret(key: str, options: Sequence[str]) -> bool:
    """Whether a ``--config`` file's ``key`` (vLLM makes it ``--key``) holds a secret: it names a
    recorded secret option as the same word on the command line would, against a table's
    ``options`` (any spelling, an abbreviation: ``api-k``), or it is a credential's name."""
    name = option_name("--" + key) or ""
    return bool(_resolves_to_secret(name.split(".", 1)[0], _option_sets(tuple(options))[0])) or \
        is_credential_name(name)


def _starting_with(root: str, known: frozenset[str]) -> list[str]:
    """The options of ``known`` that start with ``root``: a range of the sorted table (a scan of
    the whole table per unknown option cost seconds for thousands of them)."""
    ordered = _sorted(known)
    at = bisect_left(ordered, root)
    end = at
    while end < len(ordered) and ordered[end].startswith(root):
        end += 1
    return list(ordered[at:end])


@lru_cache(maxsize=8)
def _sorted(known: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(known))


@lru_cache(maxsize=8)
def _option_sets(options: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """(long options without their ``--``, short options): built once per table, not per call."""
    return (frozenset(o[2:] for o in options if o.startswith("--")),
            frozenset(o for o in options if not o.startswith("--")))


def conservative_spans(tokens: Sequence[str], known_options: Iterable[str], *, exact: bool = True,
                       guessed_only: bool = False, placed: frozenset[tuple[int, str]] = frozenset()) -> SecretSpans:
    """Every span that may hold a secret when there is no parse to ask (vLLM rejects the
    arguments): after a secret option (or one whose name looks like a credential, where the
    table cannot say: an unknown option, a dotted sub-key, any option when the table is not
    ``exact``), the word right after it, whatever it looks like, but a known option or an
    unknown ``--lower-case-name=value``, and every later word up to the next option of its own
    (argparse ends any arity there): a known one (any spelling, a short one also glued: ``-tp=2``,
    ``-q3``, ``-O3``), or an unknown ``--lower-case-name`` that does not look like a credential's.
    Any other word starting with ``-`` (``--Zq81x``, ``-sk.live``) may be one more secret value.

    ``guessed_only``: only the options judged by their name start masking (the parse already
    placed the recorded secret options' values exactly: ``placed``); used after a successful
    parse."""
    known, short = _option_sets(tuple(known_options))
    spans: set[tuple[int, str]] = set()
    masking = False
    right_after = False  # the word right after the option that started masking
    separated = False  # after a bare "--": argparse reads every word as a positional
    for i, token in enumerate(tokens):
        first, right_after = right_after, False
        name = option_name(token)
        if name is None and not masking and _misspelt_secret(token, known, short, exact):
            # argparse reads no option here (one dash, a look-alike dash), but the user wrote
            # one of a secret: its words are masked as that option's would be; it never ends
            # the values of an earlier option (argparse does not read it as an option's name).
            masking = right_after = "=" not in token
            if not masking:
                spans.add((i, AFTER_EQ))
            continue
        if name is None:
            separated = separated or token == "--"
            if token == "--" or _names_short(token, short, glued=masking and not first):
                masking = False
            elif masking:
                spans.add((i, WHOLE))
            continue
        root = name.split(".", 1)[0].rstrip("+")
        secret = _resolves_to_secret(root, known)
        if secret is None and masking:
            own = re.match(_OWN_OPTION, token) is not None and not is_credential_name(name)
            if (first and "=" not in token) or not own:  # "--name=value" right after: its own option
                spans.add((i, WHOLE))  # maybe the secret itself, or one more value of it
                masking = masking and not own
                continue
            masking = False  # an unknown option of its own: the earlier option's values end here
        if secret and guessed_only and not separated and root.translate(_HYPHEN) == root:
            # A recorded secret option: the parse placed its values (dotted ones too; after a
            # bare "--" it placed none, nor for a look-alike dash in the name, which argparse does
            # not read as the option: there its words are masked as without a parse). The word
            # the user wrote right after it is the value they meant, whatever vLLM's
            # pre-processing makes of it (``--api-key -sk.live-4f9a``: a "dotted option" that
            # swallows the next token): masked too, unless it names a known option.
            following = tokens[i + 1] if i + 1 < len(tokens) and "=" not in token else None
            if following is not None and following != "--" and following.split("=", 1)[0] not in short:
                after = option_name(following)
                if after is None or _resolves_to_secret(after.split(".", 1)[0].rstrip("+"), known) is None:
                    spans.add((i + 1, WHOLE))
                    # Further values the user meant (``--api-key k0 -sk.live-4f9a``): past the
                    # words the parse gave the option, every word starting with "-" that is no
                    # option of its own — vLLM's pre-processing reads a dotted one as an option,
                    # argparse an undotted one as an unknown option; either way it is quoted.
                    j = i + 2
                    while j < len(tokens) and ((j, WHOLE) in placed or _dash_value(tokens[j], known, short)):
                        spans.add((j, WHOLE))
                        j += 1
            secret = False
        elif not secret:
            secret = _by_its_name(secret, name, exact)
        masking = bool(secret) and "=" not in token
        right_after = masking
        if secret and "=" in token:
            spans.add((i, AFTER_EQ))
    return SecretSpans(frozenset(spans))


def _misspelt_secret(token: str, known: frozenset[str], short: frozenset[str], exact: bool) -> bool:
    """``token`` is no long option to argparse (``-api-key``, ``—hf-token=…``), but read with two
    dashes names a secret option or, where the table cannot say (as for ``--``: unknown to it, a
    dotted sub-key ``—speculative-config.hf_token``, a table not ``exact``), a credential's name —
    unless it names a known short option (``-tp``, ``-q3``, ``-O3``, ``-e`` for ``-ep``)."""
    body = token.lstrip(DASHES)
    if token.startswith("--") or token[:1] not in DASHES or not body or _names_short(token, short, glued=True) \
            or len(_starting_with(token.split("=", 1)[0], short)) == 1:
        return False
    name = option_name("--" + body) or ""
    secret = _resolves_to_secret(name.split(".", 1)[0].rstrip("+"), known)
    return bool(secret) or _by_its_name(secret, name, exact)


def _by_its_name(secret: bool | None, name: str, exact: bool) -> bool:
    """An option the table does not call secret, judged by its name where the table cannot say
    (``secret`` None: unknown to it; a dotted sub-key; a table not ``exact``)."""
    return (secret is None or not exact or "." in name) and is_credential_name(name)


def _dash_value(token: str, known: frozenset[str], short: frozenset[str]) -> bool:
    """A word starting with "-" that is no option of its own: not a known option (any spelling,
    a short one also glued), not an unknown ``--lower-case-name`` that does not look like a
    credential's, not the bare ``--``."""
    if not token.startswith("-") or token == "--" or _names_short(token, short, glued=True):
        return False
    name = option_name(token)
    if name is None:
        return True
    if _resolves_to_secret(name.split(".", 1)[0].rstrip("+"), known) is not None:
        return False
    return re.match(_OWN_OPTION, token) is None or is_credential_name(name)


# An unknown long option that has the shape of an option's name (vLLM's are lower-case words),
# alone or with ``=value``: not a secret value that happens to start with ``--``.
_OWN_OPTION = r"--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*(?:=|$)"  # compiled at first use


def _names_short(token: str, short: frozenset[str], *, glued: bool) -> bool:
    """``token`` names a known short option: ``-tp``, ``-tp=2``; with ``glued`` also the forms
    whose value is glued on — ``-q3`` (argparse: ``-q`` with ``3``; only two-character options
    take this form) and ``-O3``/``-Ox``/``-O=3`` (vLLM's pre-processing: ``--optimization-level``)."""
    if token.split("=", 1)[0] in short:
        return True
    # "-h" is the one two-character flag of every recorded table: "-hX" is argparse's error
    # ("ignored explicit argument 'X'"), no value of an option: judged like any other word.
    return glued and len(token) > 2 and ((token[:2] in short and token[:2] != "-h")
                                         or (token.startswith("-O") and token != "-O"))


def follow_edit(spans: SecretSpans, before: Sequence[str], after: Sequence[str]) -> SecretSpans:
    """``spans`` of ``before`` moved onto ``after`` as ``serve_args.set_option`` edits: a token
    rewritten in place (positions stay) or a block inserted (later positions move by its length);
    any other difference: both positions of each span, so that nothing masked is shown."""
    grown = len(after) - len(before)
    if grown == 0 or not spans.spans:
        return spans
    found = spans.spans
    prefix = 0
    while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
        prefix += 1
    if grown > 0 and tuple(after[prefix + grown:]) == tuple(before[prefix:]):
        return SecretSpans(frozenset((i + grown if i >= prefix else i, kind) for i, kind in found))
    return SecretSpans(found | frozenset((i + grown, kind) for i, kind in found if i + grown >= 0))


def secret_texts(tokens: Sequence[str], spans: SecretSpans) -> list[str]:
    """The secret strings of ``tokens`` (to scrub from a message that quotes tokens): those the
    spans point at, and the values of credential-named keys inside a JSON value of any other
    token (``--speculative-config '{"hf_token": "…"}'``: ``json_secrets``)."""
    placed, named = secret_texts_by_kind(tokens, spans)
    return placed + named


def secret_texts_by_kind(tokens: Sequence[str], spans: SecretSpans) -> tuple[list[str], list[str]]:
    """``secret_texts`` in two: (the texts at the spans, the values found by their keys' names
    inside a JSON value) — the second are global masks only where ``credentials.masked_everywhere``
    says so."""
    placed: list[str] = []
    named: list[str] = []
    for i, token in enumerate(tokens):
        if (i, WHOLE) in spans.spans:
            placed.append(token)
        elif (i, AFTER_EQ) in spans.spans:
            placed.append(token.partition("=")[2])
        if "{" in token:  # also a secret JSON option's: a message may quote one of its credentials alone
            named += json_secrets(token)
    return [t for t in placed if t], [t for t in named if t]


# A credential-named key and its value in a JSON-like text that json cannot read (vLLM rejects it,
# and its message quotes it): "hf_token": "x", 'token': 'x', token: x.
_LOOSE_PAIR = (r"""(["']?)([^"'{}\[\],:\s]{1,200})\1\s*:\s*"""
               r"""("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|[^\s,}\]]+)""")


def json_secrets(token: str) -> list[str]:
    """The values of credential-named keys, at any depth, in a token that holds a JSON object
    (``--hf-overrides={"a": {"api_key": ["k1"]}}``): strings, numbers as written, all the leaves of
    a key's object or list; text json cannot read is searched for ``"key": value`` pairs instead."""
    text = token[token.index("{"):]  # "--name={...}": the value after the option's "="
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        found = []
        for m in re.finditer(_LOOSE_PAIR, text):
            if is_credential_name(m.group(2)):
                raw = m.group(3)
                quoted = len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\""
                found.append(raw[1:-1] if quoted else raw.lstrip("'\""))
        return [f for f in found if f]
    return credential_values(value)


def credential_values(value: object) -> list[str]:
    """The leaves under credential-named keys, at any depth, of a parsed JSON or YAML value."""
    found: list[str] = []
    for item, secret in _leaves(value):
        if secret and isinstance(item, str):
            found.append(item)
        elif secret and isinstance(item, (int, float)) and not isinstance(item, bool):
            try:
                found.append(json.dumps(item))
            except ValueError:  # an integer past Python's digit limit: vLLM cannot print it either
                pass
    return found


def url_credentials_in(value: object) -> list[str]:
    """The credentials of every URL among the strings of a parsed JSON or YAML value, keys
    included, at any depth (``model: https://user:PASS@host/m``): ``credentials.url_credentials``
    of each, so that one a line-level pattern cannot delimit (a blank or ``@`` in the password)
    is masked wherever a line quotes it."""
    return url_credentials(item for item, _ in _leaves(value, keys=True) if isinstance(item, str) and "://" in item)


def _leaves(value: object, *, keys: bool = False) -> Iterator[tuple[object, bool]]:
    """(leaf, under a credential-named key) for every leaf of a parsed JSON or YAML value, and
    with ``keys`` every key too (as not a credential). Each container is read once (twice at
    most: outside and under a credential's key), so a YAML alias bomb — one list referred to
    thousands of times — costs its size, not its paths."""
    seen: set[tuple[int, bool]] = set()
    stack: list[tuple[object, bool]] = [(value, False)]
    while stack:
        item, secret = stack.pop()
        if isinstance(item, (dict, list)):
            if (id(item), secret) in seen:
                continue
            seen.add((id(item), secret))
            if isinstance(item, dict):
                stack += [(v, secret or is_credential_name(str(k))) for k, v in item.items()]
                if keys:
                    stack += [(k, False) for k in item]
            else:
                stack += [(v, secret) for v in item]
        else:
            yield item, secret


# --- masking the texts of secrets in messages --------------------------------------------------

MASK = "***"
SHORT = 3  # a secret form shorter than this is masked only where it stands as its own word
# What may stand beside a word: blanks, quotes, brackets and the separators messages use.
_BESIDE = r"\s'\"`,;:()\[\]{}<>="
_SHORT_WORD = r"(?<![^{b}]){text}(?![^{b}.!?])"


def secret_forms(secret: str) -> tuple[str, ...]:
    """The texts a message may show for ``secret``, wherever in a line: as written; as
    argparse and Python quote a value (``%r``, with its escapes of quotes, backslashes and
    unprintable characters); JSON-escaped (vLLM's pre-processing folds a dotted option's value
    into JSON, which argparse may quote again). Longest first; empty forms left out."""
    forms = {secret}
    for text in (secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
        forms.add(text)
        forms.add(repr(text)[1:-1])
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))


def secret_words(secret: str, short_value: bool = True) -> tuple[str, ...]:
    """The parts of a secret that looks like an option which argparse and our messages quote
    as words of their own, masked only as whole words (``--po`` inside ``--port`` gives nothing
    away): the name before its ``=`` (also with vLLM's ``_`` → ``-``), the value after it, the
    value glued to a two-character option (``-qZq01``: ``-q Zq01``). ``short_value`` False leaves
    out a value shorter than ``SHORT`` (argparse's messages are masked with it: serve_args._scrubbed;
    in every line ``--api-key=--Zq.x=1`` made "GPU 1" ``***``)."""
    if not secret.startswith("-") or secret == "-":
        return ()
    head, eq, value = secret.partition("=")
    words = {head, value} if eq and (short_value or len(value) >= SHORT) else {head}
    if head.startswith("--"):
        root, dot, rest = head[2:].partition(".")
        words.add("--" + root.replace("_", "-") + dot + rest)
    else:
        words.add(secret[2:])
    if "." in head:
        # vLLM's pre-processing reads it as a dotted option (``-abc.def`` → ``-abc`` and the JSON
        # ``{"def": …}``): argparse quotes the part before the first "." as an option of its own
        # ("unrecognized arguments: -abc"), the parts after it become JSON keys (one or two
        # characters of them give nothing away, and as words they would mask "a" in every line)
        key, *parts = head.rstrip("+").split(".")
        words.update((key, *(p for p in parts if len(p) >= SHORT)))
        if key.startswith("--"):
            words.add("--" + key[2:].replace("_", "-"))
    # each as a JSON text and a Python repr quote it too (a dotted part is a key of vLLM's JSON)
    words |= {form for word in words for form in secret_forms(word)}
    return tuple(sorted((w for w in words if w), key=len, reverse=True))


def masks_of(secrets: Iterable[str], short_values: bool = True) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What ``mask_secrets`` takes to mask ``secrets`` in any message: every form of each
    (``secret_forms``) and the words of each (``secret_words``; ``short_values``: its
    ``short_value``, False for every line of output, True for argparse's own messages)."""
    found = [s for s in secrets if s]
    return (tuple({form for s in found for form in secret_forms(s)}),
            tuple({word for s in found for word in secret_words(s, short_values)}))


def mask_secrets(text: str, forms: Iterable[str], words: Iterable[str] = ()) -> str:
    """``text`` with every one of ``forms`` and ``words`` present in it as ``***``: a form of
    ``SHORT`` characters or more wherever it occurs; a shorter one, and each of ``words``, only
    as its own word (between blanks, quotes, brackets, ``,;:=``): masking every ``a`` or ``8``
    would mangle the output, and inside a longer word it gives nothing away."""
    whole = {w for w in words if w and w in text}
    present = sorted({f for f in forms if f and f in text} | whole, key=len, reverse=True)
    if not present:
        return text
    parts = [re.escape(f) if len(f) >= SHORT and f not in whole else _SHORT_WORD.format(b=_BESIDE, text=re.escape(f))
             for f in present]
    return re.sub("|".join(parts), MASK, text)


# A key, what stands between it and its value, and the value (``"password": "true"``,
# ``password=true``, ``'api_key': ['8'``, ``--db-pass true``): where a weak value is masked.
_KEY_PLACE = (r"""(?P<key>[A-Za-z0-9_.\-]+)(?P<sep>["']?[ \t]*[:=][ \t]*\[?[ \t]*["']?|["']?[ \t]+["']?)"""
              r"""(?P<value>{values})(?![A-Za-z0-9_])""")


def mask_in_place(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` masked only where it stands as a credential-named key's
    value (``credentials.is_credential_name``): after ``key:``, ``key=``, ``"key": "``, or an
    option's name and a blank (``--db-pass true``). For the values too weak to mask everywhere
    (``credentials.masked_everywhere``: ``true``, ``8``): ``"enable": true`` keeps its ``true``."""
    present = sorted({v for v in values if v and v in text}, key=len, reverse=True)
    if not present:
        return text

    def place(m: re.Match) -> str:
        key, sep = m.group("key"), m.group("sep")
        if (":" not in sep and "=" not in sep and not key.startswith("--")) or not is_credential_name(key):
            return m.group(0)
        return key + sep + MASK

    alternatives = "|".join(map(re.escape, present))
    text = re.sub(_KEY_PLACE.format(values=alternatives), place, text)
    return _in_brackets(text, alternatives) if "[" in text or "{" in text else text


# A key whose value is a list or an object (``"api_keys": [``, ``'auth': {``), and one of the
# values as an item or a leaf in it (after ``[ { , :``, before ``] } , :``, in its quotes or bare).
_KEY_OPENS = r"""(?<![A-Za-z0-9_.\-])(?P<key>[A-Za-z0-9_.\-]+)["']?[ \t]*[:=][ \t]*(?=[\[{])"""
_ITEM = r"""(?<=[\[{{,:])(?P<lead>[ \t]*)(?P<q>["']?)(?:{values})(?P=q)(?=[ \t]*[\]}},:])"""


def _in_brackets(text: str, alternatives: str) -> str:
    """``text`` with the values of ``alternatives`` masked where they are items or leaves, at any
    depth, of a credential-named key's list or object (``"hf_token": ["ab", "cd"]``, ``"auth":
    {"user": "u1"}``): the list's later items and the object's leaves are that key's too. The
    value's end is found by the one walk over quotes and brackets (``core/walker``)."""
    from ..core.walker import closing

    out: list[str] = []
    pos = 0
    item = re.compile(_ITEM.format(values=alternatives))
    for m in re.finditer(_KEY_OPENS, text):
        if m.start() < pos or not is_credential_name(m.group("key")):
            continue
        start = m.end()
        end = closing(text, start)
        out += [text[pos:start], item.sub(lambda i: f"{i.group('lead')}{i.group('q')}{MASK}{i.group('q')}",
                                          text[start:end])]
        pos = end
    return "".join(out) + text[pos:] if out else text
