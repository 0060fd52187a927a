"""Credentials in the lines explain prints. explain prints a few lines of a log, never a region of
it (the matched line, the root cause and the one or two lines its message wraps onto, vLLM's
pointer), so each line is masked on its own (``mask_lines``, ``mask_line``): the key formats,
a credential word's phrasing, ``--option value`` — every word up to the next option after
``--api-key``, as vLLM's parser reads it —, ``name: value``, a config dump's line to its end, a
URL's password (``@``, ``#``, ``/`` and blanks in it too), a private key's base64 body line
whole (``mask_secrets_in_text``, ``key_body``). What is left alone after a credential word, and
the evidence for it (the string literals of vLLM and its dependencies): docs/output.md.

Pure: no I/O.
"""

from __future__ import annotations

import re

from ..credentials import (
    DASHES,
    HINT_SHORT,
    HINT_WORDS,
    NEAR_SECRET_OPTION,
    WORD_SECRET_OPTIONS,
    hint_pattern,
    is_credential_name,
    looks_like_credential_value,
    option_key,
    secret_option_name,
)
from ..walker import closing

SECRET_VALUE_DESTS = frozenset({"api_key", "hf_token", "watermark_config"})  # vLLM's own list, 0.30+
MASK = "***"


# --- credentials in free text ----------------------------------------------------------------
# The key formats anywhere (_KEY_FORMATS); then readings of the same text whose spans are masked
# together (_passes). "token" is the commonest word of an LLM's log ("token ids", "Image token
# '<|image_pad|>'"), so after the bare word a value is masked only where it has a credential's
# shape; after password/secret/api key/… any value but an ordinary word.

# A private key's armor: PEM (RSA, EC, DSA, OPENSSH, ENCRYPTED, plain PKCS#8), PGP's "PRIVATE KEY
# BLOCK", RFC 4716's "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----". Public keys and certificates
# are not secrets and are shown.
_PEM_LABEL = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
_PEM_BEGIN = rf"-{{4,5}} ?BEGIN {_PEM_LABEL} ?-{{4,5}}"
_PEM_END = rf"-{{4,5}} ?END {_PEM_LABEL} ?-{{4,5}}"
# Key formats by their prefixes and shapes: Hugging Face, OpenAI/Anthropic/OpenRouter (sk-…), Stripe,
# AWS access key ids, GitHub, GitLab, Slack, Google API keys, npm, PyPI, JWTs, PEM private keys.
_KEY_FORMATS = (
    r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{20,}"
    r"|(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{16,}"
    r"|(?<![A-Za-z0-9_])[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9_])gh[oprsu]_[A-Za-z0-9]{30,}"
    r"|(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{30,}"
    r"|(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}"
    r"|(?<![A-Za-z0-9_-])xox[abeoprs]-[A-Za-z0-9-]{10,}"
    r"|(?<![A-Za-z0-9_-])xapp-[A-Za-z0-9-]{10,}"
    r"|(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}"
    r"|(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"
    r"|(?<![A-Za-z0-9_-])pypi-[A-Za-z0-9_-]{50,}"
    r"|(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"
    rf"|{_PEM_BEGIN}(?s:.*?{_PEM_END}|.*)"
)
# A credential word in prose. Compounds first (the longest reading wins): "secret key X" is the key's.
_ENV_WORD = r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)"
_STRONG_WORD = (
    r"(?:api|access|secret|private|auth|signing|session|client|master|encryption)[ _-]?keys?"
    r"|(?:access|auth|api|bearer|refresh|session|oauth|hf|github|user|slack)[ _-]?tokens?"
    r"|client[ _-]?secrets?|apikeys?|pass(?:word|wd|phrase)s?|pwd|secrets?|credentials?|jwts?|bearer"
)
_CREDENTIAL_WORD = (rf"(?<![\w-])(?:(?P<env>{_ENV_WORD})|(?i:(?P<strong>{_STRONG_WORD}))|(?i:(?P<loose>tokens?|basic)))"
                    r"(?![\w-])")
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`"
_BARE = r"[^\s'\"`,;]+"
# What follows the word: a quoted value; "is"/"was" and a value; "provided:" and a value; a value.
_AFTER_WORD = (
    rf"\s+(?P<quoted>{_QUOTED})"
    rf"|\s+(?i:is|was)\s+(?i:set\s+to\s+)?(?P<is>{_QUOTED}|{_BARE})"
    rf"|\s+(?i:provided|given|supplied|used|passed|specified|received|sent|value)\s*[:=]\s*(?P<given>{_QUOTED}|{_BARE})"
    rf"|[ \t]+(?P<bare>{_BARE})"
)
# Words that end a phrase, not a credential: "the password is not set", "HF_TOKEN environment variable".
_NOT_VALUES = frozenset("""
    not no none null nil empty blank missing required needed mandatory optional invalid incorrect wrong bad expired
    revoked disabled enabled locked malformed truncated unset set too very a an the being also only now still either
    neither stored saved read used given provided specified supplied correct valid present absent unknown
    unavailable available deprecated ignored hidden masked redacted changed reset updated configured defined loaded
    found rejected denied accepted ok okay in on at from for to of by with without and or but if when that this it
    its is was are were be been has have had must should can could will would may might does did do environment env
    variable var file longer shorter less more than same different unsupported supported case sensitive encrypted
    encoded
""".split())
# The words of _NOT_VALUES that are a setting's value, not a credential: after "name=" only these.
_NO_VALUE = frozenset("none null nil empty blank missing unset disabled enabled hidden masked redacted not no".split())
# "Authorization: Token X", "Proxy-Authorization: Digest X": the scheme is named by _NAMED_VALUE's pass.
_AUTH_HEADER = r"(?i:\b(?:proxy-)?authori[sz]ation)['\"]?\s*[:=]\s*['\"]?[A-Za-z][\w-]*[ \t]+([^\s'\",}]+)"
_COOKIE = r"(?i:\b(?:set-)?cookie\s*[:=]\s*)(.+)"  # to the end of the line

# A value after a name in free text: 'api_key': ['sk-…'], token=abc, "password": "…", sig=…&,
# token%3D… (URL-encoded), credentials={"key": "…"} (an opening bracket: the value runs to its
# closing one).
_NAMED_VALUE = (
    r"(['\"]?(?<![\w.\-])([\w.\-]+)['\"]?\s*(?:[:=]|%3[ADad])\s*)"  # a name starts a word: linear
    r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|(?:[A-Za-z_][\w.]*)?[\[{(]|[^\s,})\]]+)"
)
# An option's dashes: "--", one dash or look-alike ones ("-api-key", "—api-key": vLLM refuses
# them and its message quotes the word after, the key the user meant).
_DASHES = "\\-" + DASHES[1:]  # inside a class: "-" escaped
_OPTION_VALUE = rf"((?<![\w{_DASHES}])[{_DASHES}]{{1,2}}([A-Za-z][\w{_DASHES}]*)(?:=|\s+))(\S+)"
# A fast test before the passes: every word above contains one of these (tests/secrets/test_explain_secrets.py).
_HINT = hint_pattern((*HINT_WORDS, "basic", *(d + x for d in DASHES for x in "ah")), HINT_SHORT)  # -api-k, —hf
_EXCEPTION_NAME = r"(?:Error|Exception|Warning|Exit)$"  # KeyError: 'model.layers.0' is vLLM's, not a key


def credential_name(name: str) -> bool:
    """A name whose value is a credential's (``credentials.is_credential_name``), not an exception's
    (``KeyError``, ``TokenizerError``: what follows is vLLM's message)."""
    return is_credential_name(name) and not re.search(_EXCEPTION_NAME, name)


_KEEP = ("None", "True", "False", "null", "true", "false", MASK, f"'{MASK}'", f'"{MASK}"', f"['{MASK}']",
         "|", ">", "|-", ">-", "|+", ">+")  # the last: YAML's block indicators (the value is on the lines below)


def _named_spans(text: str) -> list[tuple[int, int]]:
    """Where the value of every ``name: value`` / ``--name value`` whose name is a credential's
    stands. A name that is not one (``ValueError:``, ``KeyError:``) never swallows what follows:
    the search resumes inside its value, so ``ValueError: HF_TOKEN=x`` still masks x."""
    compiled = re.compile(_NAMED_VALUE)
    spans, pos = [], 0
    while (m := compiled.search(text, pos)) is not None:
        name, pos = m.group(2), m.start(3)  # not a credential's name: the search resumes inside its value
        if credential_name(name):
            # an opening bracket: to its closing one (looked for only here, so the scan stays linear)
            bracket = m.group(3)[-1] in "[{("
            end = closing(text, m.end(3) - 1) if bracket else m.end(3)
            quote = m.group(1)[:1]
            if not bracket and quote in ("'", '"') and m.group(1).count(quote) == 1 and m.group(3)[:1] not in "'\"" \
                    and quote in text[m.start(3):end]:
                end = text.index(quote, m.start(3), end)  # 'name=value' quoted whole: the value ends at its quote
            value = text[m.start(3):end]
            # prose ("HF_TOKEN: not set", "--seed-token to enable"); right after a bare "=" a word is
            # a value ("password=correct") unless it says there is none ("auth=disabled")
            prose = _NO_VALUE if m.group(1).rstrip("'\"").endswith(("=", "%3D", "%3d")) else _NOT_VALUES
            # an option after "name= " is the next argument, not the value (a key ending in base64's "="
            # is followed by "--port": "--api-key Zq0PwA00= --port 8000")
            if value not in _KEEP and value.rstrip(".,;:!?").lower() not in prose and not value.startswith("--"):
                spans.append((m.start(3), end))
                pos = end
    return spans


# vLLM's --api-key takes every word up to the next option (nargs "+"; vLLM's own redaction of an
# argv masks each: vllm/snapshot/runtime.py:847@0.33.0, :775@0.31.0, also for the abbreviations
# argparse accepts); --hf-token takes one.
_MULTI_VALUED = "api-key"
# The words after a value, up to one starting with "-" (or argparse usage's "[-": "[--hf-token").
_MORE_WORDS = r"(?:[ \t]+(?!-|\[-)\S+)*"


def _option_of(name: str) -> str:
    """Which of vLLM's credential options ``--name`` is (``api-key``, ``hf-token``) as its parser
    reads it (``_`` for ``-``, an abbreviation), ``secret`` for another credential's name or one
    misspelt (``api-kye``, ``hf-tokn``: ``secret_option_name``, the rule explain reads vLLM's
    ``unrecognized arguments`` with), or ""."""
    import difflib  # here: not on a start's path

    norm = option_key(name)
    if _MULTI_VALUED.startswith(norm) or difflib.get_close_matches(norm, [_MULTI_VALUED], 1, NEAR_SECRET_OPTION):
        return _MULTI_VALUED  # misspelt too, the user's keys: every word up to the next option ("--api-kye k1 k2")
    if "hf-token".startswith(norm):
        return "hf-token"
    return "secret" if credential_name(name) or secret_option_name(norm, WORD_SECRET_OPTIONS)[0] else ""


# A word that names an option, its value glued on ("--api-keyK"), and argparse's message about
# an option's value ("argument --api-key: invalid int value: 'K'", "... invalid choice: 'K'").
_OPTION_WORD = rf"""(?<![\w{_DASHES}])[{_DASHES}]{{1,2}}([A-Za-z][^\s='"]*)"""
_ARGPARSE_ARGUMENT = rf"\bargument ((?:[{_DASHES}]{{1,2}}[A-Za-z][\w{_DASHES}]*/?)+): (.*)"


def _glued_spans(text: str) -> list[tuple[int, int]]:
    """What is glued onto a credential option's name: ``--api-keyK``, ``-hf-tokenK``."""
    spans = []
    for m in re.finditer(_OPTION_WORD, text):
        norm = option_key(m.group(1))
        glued = secret_option_name(norm, WORD_SECRET_OPTIONS)[1]
        if glued:
            spans.append((m.start(1) + len(norm) - glued, m.end(1)))
    return spans


def _argparse_spans(text: str) -> list[tuple[int, int]]:
    """The quoted words of argparse's message about a credential option's value."""
    spans = []
    for m in re.finditer(_ARGPARSE_ARGUMENT, text):
        if any(_option_of(o.lstrip(DASHES)) for o in m.group(1).split("/") if o):
            spans += [(m.start(2) + q.start(), m.start(2) + q.end()) for q in re.finditer(_QUOTED, m.group(2))]
    return spans


def _option_spans(text: str) -> list[tuple[int, int]]:
    """Where the value of every credential ``--option`` stands: one word (``--hf-token X``,
    ``--name=X``), every word up to the next option after ``--api-key`` (``--api-key k1 k2
    --port 8000``); in a quoted argv item (``'--api-key=k1'``) the value ends at its quote."""
    compiled = re.compile(_OPTION_VALUE)
    spans, pos = [], 0
    while (m := compiled.search(text, pos)) is not None:
        pos = m.start(3)  # not a credential's option: the search resumes inside its value
        option = _option_of(m.group(2))
        if not option:
            continue
        end = m.end(3)
        quote = text[m.start() - 1: m.start()]
        close = text.find(quote, m.start(3), end) if quote in ("'", '"') else -1
        value = text[m.start(3):end if close == -1 else close]  # its first word ("--seed-token to enable")
        if option == _MULTI_VALUED and not m.group(1).endswith("="):  # every word up to the next option
            more = re.compile(_MORE_WORDS).match(text, end)
            end = more.end() if more else end
        after = m.start(3)
        if text[after] == "[":  # a list (['k1', 'k2']): to its closing bracket, its items' quotes inside
            after = closing(text, after)
            end = max(end, after)
        if quote in ("'", '"'):  # a quoted item or string ('--api-key=k1', '--api-key k1 k2'): to its quote
            close = text.find(quote, after, end)
            end = close if close != -1 else end
        if not value or value.rstrip(".,;:!?").lower() in _NOT_VALUES or \
                all(word in _KEEP for word in text[m.start(3):end].split()):  # "--seed-token to enable"
            continue
        spans.append((m.start(3), end))
        pos = end
    return spans


# An argv as a list ('--api-key', 'k1', 'k2', '--port'; JSON's "--api-key", "k1"): the items after
# a credential option's.
_QUOTED_OPTION = rf"""(['"])[{_DASHES}]{{1,2}}([A-Za-z][\w.{_DASHES}]{{0,200}})\1"""
_NEXT_ITEM = r"""\s*,\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""


def _argv_item_spans(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    option_re, item_re = re.compile(_QUOTED_OPTION), re.compile(_NEXT_ITEM)
    while (m := option_re.search(text, pos)) is not None:
        pos = m.end()
        option = _option_of(m.group(2))
        if not option:
            continue
        first = last = None
        while (item := item_re.match(text, pos)) is not None and not item.group(1)[1:].startswith("-"):
            first = item.start(1) if first is None else first
            last, pos = item.end(1), item.end()
            if option != _MULTI_VALUED:
                break
        if first is not None and last is not None and text[first:last] not in _KEEP:
            spans.append((first, last))
    return spans


# A config dump's line (YAML, INI, .env, TOML without quotes): "password = correct horse battery
# staple", "  api_key: k1 k2", "export HF_TOKEN=…": the value is the rest of the line. Kept only
# when every word of it says there is none ("password: not set"). In the middle of a line a
# value is one word (the line goes on after it: "ValueError: token = X (see the docs)").
_CONFIG_LINE = r"""[ \t]*(?:-[ \t]+|export[ \t]+)?(['"]?)(\w[\w.\-]{0,200})\1[ \t]*[:=][ \t]*(?=[^\s'"\[{(`])"""


# A name/value pair (Kubernetes' env, a JSON list of settings): {"name": "HF_TOKEN", "value": "…"}.
_PAIR = (r"""(['"]?)\bname\1[ \t]*[:=][ \t]*(['"]?)([\w.\-]{1,200})\2[ \t]*,[ \t]*(['"]?)value\4[ \t]*[:=][ \t]*"""
         r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s,})\]]+)""")


def _pair_spans(text: str) -> list[tuple[int, int]]:
    return [m.span(5) for m in re.finditer(_PAIR, text) if is_credential_name(m.group(3)) and m.group(5) not in _KEEP]


def _config_line_spans(text: str) -> list[tuple[int, int]]:
    m = re.compile(_CONFIG_LINE).match(text)
    if m is None or not credential_name(m.group(2)):
        return []
    value = text[m.end():].partition("\n")[0].rstrip()  # one line (a caller may pass several)
    words = value.split()
    if value in _KEEP or re.fullmatch(r"[|>][-+0-9]{0,2}", value) or \
            all(w in _KEEP or w.rstrip(".,;:!?").lower() in _NOT_VALUES for w in words):  # YAML's "|": below
        return []
    return [(m.end(), m.end() + len(value))]


def _vocabulary_token(value: str) -> bool:
    """A quoted token of a vocabulary, not a credential: ``<|image_pad|>``, ``[CLS]``, ``▁``."""
    return (len(value) <= 2 or not value.strip() or value[0] + value[-1] in ("<>", "[]")
            or value.startswith(("▁", "Ġ", "Ċ")))


# The words that follow "password" in prose, from vLLM's and its dependencies' own messages (string
# literals of vLLM 0.24.0, 0.29.0, 0.33.0 and the packages its 0.33.0 install brings: huggingface_hub,
# transformers, openai, ray, httpx, aiohttp, …; "password must", "password prompt", "password
# encoding", "password replacement", "password interactively"), with PostgreSQL's "password
# authentication failed". After "passphrase", "passwd" and "pwd" those sources have no prose word
# at all ("pwd module", psutil's, is the one). Any other lowercase word after these four is a
# value: "passphrase swordfish", "wrong password hunter".
_PASSWORD_WORDS = ("password", "passwords", "passphrase", "passphrases", "passwd", "pwd")
_PROSE_AFTER_PASSWORD = frozenset("""
    must prompt prompts encoding replacement interactively part type value values credentials authentication
    auth protected protection required reset hash hashing policy manager field mismatch length change changes
    login based grant flow module rejected defined will too file files
""".split())


def _phrase_value_shown(kind: str, how: str, value: str, head: str = "") -> bool:
    """Whether the value a credential word's phrasing gives it stays (it is not a credential)."""
    quoted = value[:1] in "'\"`" and len(value) >= 2 and value[-1] == value[0]
    inner = value[1:-1] if quoted else value
    if inner in _KEEP or value in _KEEP or not any(c.isalnum() for c in inner):
        return True
    if kind == "loose":  # "token", "basic": ordinary words of a log
        return _vocabulary_token(inner) if quoted else not looks_like_credential_value(inner)
    if quoted or how == "given":
        return False
    word = inner.strip("([{<>}]).,;:!?").lower()
    if word in _NOT_VALUES:
        return True
    # "password authentication failed", "credentials verify", "FP8_PER_CHANNEL_PER_TOKEN currently":
    # without "is" or a quote, a lowercase word is prose — except after a password's words, where
    # only the prose words their messages use are (_PROSE_AFTER_PASSWORD).
    if how != "bare" or re.fullmatch(r"[a-z]+", inner.rstrip(".,;:!?")) is None:
        return False
    return head.lower() not in _PASSWORD_WORDS or word in _PROSE_AFTER_PASSWORD


def _phrase_spans(text: str) -> list[tuple[int, int]]:
    """Where the value a credential word's phrasing gives it stands, and an Authorization
    header's credential and a cookie header's value."""
    spans: list[tuple[int, int]] = []
    after = re.compile(_AFTER_WORD)
    for m in re.finditer(_CREDENTIAL_WORD, text):
        kind = next(k for k in ("env", "strong", "loose") if m.group(k) is not None)
        found = after.match(text, m.end())
        if found is None:
            continue
        how = next(k for k in ("quoted", "is", "given", "bare") if found.group(k) is not None)
        if not _phrase_value_shown(kind, how, found.group(how), m.group(kind)):
            spans.append(found.span(how))
    for pattern in (_AUTH_HEADER, _COOKIE):
        spans += [m.span(1) for m in re.finditer(pattern, text) if m.group(1).strip() not in _KEEP]
    return spans


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (overlapping ones joined) as one ``***``."""
    out, pos = [], 0
    for start, end in sorted(spans):
        if start >= pos:
            out += [text[pos:start], MASK]
            pos = end
        elif end > pos:  # overlapping spans: the mask covers both
            pos = end
    out.append(text[pos:])
    return "".join(out)


# pydantic's error shows a long input_value cut in its middle (its first 25 characters, "...", its
# last 24: "input_value={'auth_...3cr3tV4lue9ZqAbCdEfGh'}]"), so a credential's tail can stand with
# its name cut off. In a container's value cut so, a word of the tail shaped like a credential is
# masked (a plain value is its location's, which the line state reads).
_TRUNCATED = r"input_value=(?:[A-Za-z_][\w.]{0,60})?[\[{(].{0,40}?\.\.\.(.{1,40}?), input_type="


def _truncated_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in re.finditer(_TRUNCATED, text):
        spans += [(m.start(1) + w.start(), m.start(1) + w.end())
                  for w in re.finditer(r"[A-Za-z0-9+/_.~=-]+", m.group(1)) if looks_like_credential_value(w.group())]
    return spans


def mask_secrets_in_text(text: str) -> str:
    """``text`` with every credential masked: the key formats anywhere, the value a credential
    word's phrasing gives it (``token 'X'``, ``the password is X``, ``Bearer X``), the value of
    every credential-named ``--option``, key, header or query parameter. Conservative: a log line
    is outside text of unknown shape."""
    text = re.sub(_KEY_FORMATS, MASK, text)
    cut = _truncated_spans(text) if "..." in text and "input_value=" in text else []
    if not re.search(_HINT, text):
        return _masked(text, cut) if cut else text
    spans = _passes(text) + _unescaped_spans(text) + cut
    return _masked(text, spans) if spans else text


def _passes(text: str) -> list[tuple[int, int]]:
    # Every pass reads the same text, so none hides a name or a value from another: in "token
    # 'hf_token': 'X'" the phrase masks 'hf_token' and the name still masks 'X'.
    return (_phrase_spans(text) + _option_spans(text) + _argv_item_spans(text) + _named_spans(text)
            + _config_line_spans(text) + _pair_spans(text) + _glued_spans(text) + _argparse_spans(text))


def _unescaped_spans(text: str) -> list[tuple[int, int]]:
    """The passes' spans over ``text`` read without the backslashes before its quotes — a JSON
    text inside a JSON string or a repr (``{\\"api_key\\": \\"…\\"}``, ``\\'token\\': \\'…\\'``,
    escaped twice or more) —, mapped back onto ``text``, each with the backslashes before it."""
    drop = {i for m in re.finditer(r"\\+(?=['\"])", text) for i in range(*m.span())}
    if not drop:
        return []
    keep = [i for i in range(len(text)) if i not in drop]
    return [(keep[start - 1] + 1 if start else 0, keep[end - 1] + 1)
            for start, end in _passes("".join(text[i] for i in keep)) if end > start]


# --- the lines explain prints: each masked on its own (no state runs across the log) ----------

# A URL's credentials where a password holds "@", "#", "/" or blanks: from "scheme://user:" to the
# last "@" on the line that a host follows.
_URL_USER = r"(?i)\b[a-z][a-z0-9+.\-]{0,30}://([^\s/@?#:]{0,200}):"
_URL_TOKEN = r"(?i)\b[a-z][a-z0-9+.\-]{0,30}://([^\s/@?#]{1,200})@"
_PORT_THEN = r"\d{1,5}(?:[/?#\s]|$)"
# A name alone on its line that leaves its value to the next: "api_key:", "password: |", "- --api-key",
# "'--hf-token',", pydantic's "kv_transfer_config.token" / "api_key.0".
_NAME_ALONE = (r"""[ \t]*(?:-[ \t]+)?(['"]?)(--)?([A-Za-z_][\w.\-`]{0,200})\1[ \t]*"""
               r"""(?::[ \t]*(?:[|>][-+0-9]{0,2})?|=|,)?[ \t]*(?:#.*)?""")
_INPUT_VALUE = r"input_value=(.*?)(?=, input_type=|$)"
_PAIR_NAME = r"""[ \t]*(?:-[ \t]+)?\{?[ \t]*(['"]?)name\1[ \t]*[:=][ \t]*(['"]?)([\w.\-]{1,200})\2[ \t]*,?[ \t]*"""


def _url_password_spans(text: str) -> list[tuple[int, int]]:
    """``scheme://user:PASSWORD@host`` with a password the one-word pattern cannot delimit: the
    password runs to the last ``@`` of the line (before another URL) that a host follows."""
    spans = []
    for m in re.finditer(_URL_USER, text):
        nxt = text.find("://", m.end())
        stretch = text[m.end(): nxt if nxt != -1 else len(text)]
        at = max((i for i in range(len(stretch)) if stretch[i] == "@" and stretch[i + 1: i + 2].isalnum()), default=-1)
        if at <= 0:
            continue
        password = stretch[:at]
        if re.match(_PORT_THEN, password) and any(c in password for c in " \t"):
            continue  # "http://host:8000/v1 … user@example.org": a port, then prose
        spans.append((m.start(1), m.end() + at))
    spans += [m.span(1) for m in re.finditer(_URL_TOKEN, text)]  # "https://TOKEN@host"
    return spans


def key_body(text: str) -> bool:
    """A line that is a private key's base64 body alone, or its tail (PEM's 64 columns, OpenSSH's
    70, PGP's 76, a shorter last line with base64's ``=``, PGP's checksum ``=ZqCk``): base64 of 48
    characters or more with both cases and a digit, or one with ``+ / =`` in it; not a word, a
    class name (``DeepSeekV4EngineToolParser``), a number or a path."""
    word = text.strip(" \t")
    if not 4 <= len(word) <= 100 or re.fullmatch(r"=?[A-Za-z0-9+/]+={0,2}", word) is None:
        return False
    if re.fullmatch(r"=[A-Za-z0-9+/]{4}", word):  # PGP's checksum
        return True
    mixed = any(c.isupper() for c in word) and any(c.islower() for c in word) and any(c.isdigit() for c in word)
    return mixed and (len(word) >= 48 or any(c in "+/=" for c in word[1:]))


# A private key's armor headers (PEM's encryption IV, PGP's and RFC 4716's comments).
_ARMOR_HEADER = r"([ \t]*(?:Proc-Type|DEK-Info|Comment):[ \t]*).+"


def mask_line(text: str) -> str:
    """One printed line with its credentials masked: ``mask_secrets_in_text``, a URL password
    of any characters, a key's base64 body line and its armor's headers whole."""
    if key_body(text):
        return text[: len(text) - len(text.lstrip(" \t"))] + MASK
    if text.lstrip(" \t")[:1] in "PDC" and (armor := re.fullmatch(_ARMOR_HEADER, text)):
        return armor.group(1) + MASK
    spans = _url_password_spans(text) if "://" in text and "@" in text else []
    return mask_secrets_in_text(_masked(text, spans) if spans else text)


def _leaves_value_below(text: str) -> bool:
    """Whether a line names a credential and leaves its value to the lines below: a name alone
    (YAML's ``api_key:``, ``password: |2``, a credential ``--option`` alone, pydantic's location
    ``kv_transfer_config.token``), Kubernetes' ``- name: HF_TOKEN`` (its ``value:`` below) or a
    credential's bracket left open (``{'api_key': [``)."""
    pair = re.fullmatch(_PAIR_NAME, text) if "name" in text else None
    if pair is not None:  # Kubernetes' "- name: HF_TOKEN", its "value:" on the next line
        return credential_name(pair.group(3))
    m = re.fullmatch(_NAME_ALONE, text)
    if m is not None:
        name = m.group(3).strip("`")
        # pydantic's location: the credential's name is its last part but a list's index ("api_key.0")
        last = next((p for p in reversed(name.split(".")) if p and not p.isdigit()), "")
        return credential_name(last) or (m.group(2) is not None and _option_of(last) != "")
    return text.rstrip()[-1:] in "[{(," and any(
        found.group(3)[-1] in "[{(" and credential_name(found.group(2)) and closing(text, found.end(3) - 1) == len(text)
        and text.rstrip()[-1:] not in ")]}" for found in re.finditer(_NAMED_VALUE, text))


def _key_tail(word: str) -> bool:
    """A line that may go on a key's base64 body (its shorter last line, PGP's checksum): base64
    with a digit, ``+``, ``/`` or ``=``, or 16 characters or more ("Traceback" is a word)."""
    return (0 < len(word) <= 100 and re.fullmatch(r"=?[A-Za-z0-9+/]+={0,2}", word) is not None
            and (len(word) >= 16 or any(c in "0123456789+/=" for c in word)))


def mask_lines(lines: list[str]) -> list[str]:
    """Lines printed together (a message and the lines it wraps onto), each masked
    (``mask_line``). Below a line that leaves a credential's value to the next ones
    (``_leaves_value_below``) the lines are masked past their indentation — pydantic's message
    below its location only in its ``input_value=…`` —, and the tail of a key's base64 body
    below a line of it."""
    out: list[str] = []
    hidden = body = False
    for text in lines:
        indent = text[: len(text) - len(text.lstrip(" \t"))]
        if hidden and "input_value=" in text:
            shown, hidden = mask_line(re.sub(_INPUT_VALUE, "input_value=" + MASK, text, count=1)), False
        elif hidden or (body and _key_tail(text.strip(" \t"))):
            shown = indent + MASK
        else:
            shown = mask_line(text)
        hidden = hidden or _leaves_value_below(text)
        body = key_body(text)
        out.append(shown)
    return out
