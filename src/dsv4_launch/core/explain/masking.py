"""Credentials in the lines explain prints: ``mask_secrets_in_text`` masks a line (the key formats,
a credential word's phrasing, ``--option value`` — every word up to the next option after
``--api-key``, as vLLM's parser reads it —, ``name: value``, a config dump's line to its end);
``LineMasker``, fed every line by the scanner, masks what spans lines (a private key's block,
a YAML/JSON/pprint value over several lines, an argv one item a line, pydantic's location then
``input_value``), so the lines kept are kept masked. Left alone, on evidence: a lowercase word
after ``secret``, ``credential``, ``api key``, ``token``, ``bearer``, ``HF_TOKEN`` and the other
credential words but a password's (``secret dragon`` is shown): in the string literals of vLLM
0.24.0, 0.29.0, 0.33.0 and of the packages its install brings (huggingface_hub, transformers,
openai, ray, httpx, …) those words are followed by a lowercase word 521 times, all prose
("credential chain", "secret value", "api key obtained"); after ``password`` 64 times, in the
words of ``_PROSE_AFTER_PASSWORD``; after ``passphrase``, ``passwd`` and ``pwd`` only in psutil's
"pwd module". So after those four any other lowercase word is masked (``passphrase
swordfish``); after every credential word a value shaped like a credential is. In the middle of
a line ``name = value`` masks one word (the line goes on: "token = X (see the docs)"), and
after ``name:`` or ``name = `` a word of ``_NOT_VALUES`` is read as prose ("password: correct";
right after ``name=`` only the words that say there is no value are: ``_NO_VALUE``).

Pure: no I/O.
"""

from __future__ import annotations

import re

from ..credentials import HINT_SHORT, HINT_WORDS, hint_pattern, is_credential_name, looks_like_credential_value

SECRET_VALUE_DESTS = frozenset({"api_key", "hf_token", "watermark_config"})  # vLLM's own list, 0.30+
MASK = "***"


# --- credentials in free text (explain prints vLLM's log lines) --------------------------------
# The well-known key formats wherever they stand (_KEY_FORMATS); then three readings of the same
# text, whose spans are masked together: a credential word and the value its phrasing gives it
# (_phrase_spans: "token 'X'", "the password is X", "passphrase X", "Bearer X", "Authorization:
# Token X", "HF_TOKEN X", "Cookie: …"); ``--option value`` (_OPTION_VALUE); ``name: value`` /
# ``name=value`` of a credential's name: dicts, JSON, query strings, headers (_NAMED_VALUE). "token" is the commonest
# word of an LLM's log ("token ids", "Image token '<|image_pad|>'"), so after the bare word a value
# is masked only where it has a credential's shape; after password/secret/api key/… any value but
# an ordinary word.

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
_OPTION_VALUE = r"((?<![\w\-])--([A-Za-z][\w\-]*)(?:=|\s+))(\S+)"
# A fast test before the passes: every word above contains one of these (tests/test_explain_secrets.py).
_HINT = hint_pattern((*HINT_WORDS, "basic", "--a", "--h"), HINT_SHORT)  # --api-k, --hf
_EXCEPTION_NAME = r"(?:Error|Exception|Warning|Exit)$"  # KeyError: 'model.layers.0' is vLLM's, not a key


def _credential_name(name: str) -> bool:
    """A name whose value is a credential's (``credentials.is_credential_name``), not an exception's
    (``KeyError``, ``TokenizerError``: what follows is vLLM's message)."""
    return is_credential_name(name) and not re.search(_EXCEPTION_NAME, name)


_KEEP = ("None", "True", "False", "null", "true", "false", MASK, f"'{MASK}'", f'"{MASK}"', f"['{MASK}']",
         "|", ">", "|-", ">-", "|+", ">+")  # the last: YAML's block indicators (the value is on the lines below)


def _closing(text: str, start: int) -> int:
    """The end of the bracketed value opening at ``start`` (quotes respected), or of ``text``."""
    end, _ = _depth_after(text, start, 0)
    return len(text) if end == -1 else end


def _named_spans(text: str) -> list[tuple[int, int]]:
    """Where the value of every ``name: value`` / ``--name value`` whose name is a credential's
    stands. A name that is not one (``ValueError:``, ``KeyError:``) never swallows what follows:
    the search resumes inside its value, so ``ValueError: HF_TOKEN=x`` still masks x."""
    compiled = re.compile(_NAMED_VALUE)
    spans, pos = [], 0
    while (m := compiled.search(text, pos)) is not None:
        name, pos = m.group(2), m.start(3)  # not a credential's name: the search resumes inside its value
        if _credential_name(name):
            # an opening bracket: to its closing one (looked for only here, so the scan stays linear)
            bracket = m.group(3)[-1] in "[{("
            end = _closing(text, m.end(3) - 1) if bracket else m.end(3)
            quote = m.group(1)[:1]
            if not bracket and quote in ("'", '"') and m.group(1).count(quote) == 1 and m.group(3)[:1] not in "'\"" \
                    and quote in text[m.start(3):end]:
                end = text.index(quote, m.start(3), end)  # 'name=value' quoted whole: the value ends at its quote
            value = text[m.start(3):end]
            # prose ("HF_TOKEN: not set", "--seed-token to enable"); right after a bare "=" a word is
            # a value ("password=correct") unless it says there is none ("auth=disabled")
            prose = _NO_VALUE if m.group(1).rstrip("'\"").endswith(("=", "%3D", "%3d")) else _NOT_VALUES
            if value not in _KEEP and value.rstrip(".,;:!?").lower() not in prose:
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
    reads it (``_`` for ``-``, an abbreviation), ``secret`` for another credential's name, or ""."""
    norm = name.replace("_", "-").lower()
    if _MULTI_VALUED.startswith(norm):
        return _MULTI_VALUED
    if "hf-token".startswith(norm):
        return "hf-token"
    return "secret" if _credential_name(name) else ""


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
            after = _closing(text, after)
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
_QUOTED_OPTION = r"""(['"])--([A-Za-z][\w.\-]{0,200})\1"""
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
    if m is None or not _credential_name(m.group(2)):
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
    """``text`` with every credential masked: the well-known key formats (``hf_…``, ``sk-…``,
    ``AKIA…``, ``ghp_…``, JWTs, …) anywhere; the value a credential word's phrasing gives it
    (``token 'X'``, ``the password is X``, ``Bearer X``, ``Cookie: …``); the value of every
    credential-named ``--option``, key, header or query parameter (``'api_key': [...]``,
    ``token=…``, ``&sig=…``, ``credentials={...}``). Conservative: a log line is outside text of
    unknown shape."""
    text = re.sub(_KEY_FORMATS, MASK, text)
    cut = _truncated_spans(text) if "..." in text and "input_value=" in text else []
    if not re.search(_HINT, text):
        return _masked(text, cut) if cut else text
    # Every pass reads the same text, so none hides a name or a value from another: in "token
    # 'hf_token': 'X'" the phrase masks 'hf_token' and the name still masks 'X'.
    spans = (_phrase_spans(text) + _option_spans(text) + _argv_item_spans(text) + _named_spans(text)
             + _config_line_spans(text) + _pair_spans(text) + cut)
    return _masked(text, spans) if spans else text


# --- credentials across lines: what one line's masking cannot see ----------------------------------
# Masking is per line; a credential that spans lines is followed by ``LineMasker``, fed every line
# of the log in order (the scanner's), which gives each line as it may be shown:
# * a private key's armor (_PEM_BEGIN … _PEM_END): every line from BEGIN to END (the text before
#   BEGIN and after END kept). An END at the start of a line with no BEGIN before it means the log
#   (a ``tail``, a scrollback) starts inside the block: the lines before it are masked back to the
#   last known end (``Scanner`` rewrites the lines it keeps). A block never closed masks to the end
#   of the log: a key's body has no shape to trust for where it ends (base64, "Proc-Type:",
#   "DEK-Info:", PGP's "Version:" and blank lines, a wrap of any width), and an END lost to the
#   reader's 64 KiB line limit or to a cut log would otherwise print the rest of the key; the
#   signatures still match those lines (the failure is named), only their text is not shown;
# * a credential's name alone on its line (YAML ``api_key:``, ``password: |2``, ``token:  # c``):
#   the lines below it indented deeper, or its ``- `` items, are its value;
# * a credential's bracketed value left open (``"api_key": [`` of an indented JSON, pprint's
#   wrapped ``{'api_key': ['k1',``): to its closing bracket, on lines that continue it (indented or
#   a closing bracket; any other line means the value was cut);
# * a credential option alone on its line (kubectl describe's ``Args:``, a YAML ``- --api-key``,
#   a JSON array's ``"--api-key",``): its value on the next line, every one up to the next option
#   for ``--api-key``;
# * a line of a key's base64 body alone, indented or not (``_key_body``: the log cut on both sides
#   of a block), and the base64 lines that go on it (``_key_tail``: its shorter last line, PGP's
#   checksum) — not inside a certificate's or a public key's block, which are shown;
# * pydantic's error for a credential's field: its location alone on a line
#   (``kv_transfer_config.token``: a key a config with extra='forbid' does not know), then the
#   message with ``input_value=…`` on the next: that value (a list's index after the name,
#   ``api_key.0``, and an indented location too);
# * a name/value pair over two lines (Kubernetes' ``- name: HF_TOKEN`` then ``value: …``): the value.
# A traceback's source line (after its ``  File`` line) is code: it opens no state but a private
# key's and a dict literal's (``{'api_key': [``), so ``    key = (`` does not mask the frames below.
# Each line is read once, in linear time; a line outside every state costs a substring test.

_PUBLIC_BEGIN = r"-{4,5} ?BEGIN [A-Z0-9 ]{0,40}(?:CERTIFICATE|PUBLIC KEY)"
_PEM_MARKS = rf"(?P<begin>{_PEM_BEGIN})|(?P<end>{_PEM_END})"
# YAML's block indicators take an indentation digit before or after the chomping sign ("|2",
# "|-2", ">2+"); a comment may follow ("api_key:  # from the vault").
_NAME_ALONE = (r"""([ \t]*)(-[ \t]+)?(['"]?)([\w.\-]{1,200})\3[ \t]*:[ \t]*(?:[|>](?:[1-9][-+]?|[-+][1-9]?)?)?"""
               r"""[ \t]*(?:(?<=[ \t:|>+\-0-9])#.*)?""")
_OPTION_ALONE = r"""[ \t]*(?:-[ \t]+)?(['"]?)--([A-Za-z][\w.\-]{0,200})\1,?[ \t]*"""
_OPENERS = "[{("
_PAIR_NAME = r"""[ \t]*(?:-[ \t]+)?\{?[ \t]*(['"]?)name\1[ \t]*:[ \t]*(['"]?)([\w.\-]{1,200})\2[ \t]*,?[ \t]*"""
_PAIR_VALUE = r"""[ \t]*(['"]?)value\1[ \t]*:[ \t]*"""
_LOCATION = r"[\w\-]{1,100}(?:\.[\w\-`]{1,100}){0,20}"  # pydantic's "a.b.0.c" (loc_str)
_INPUT_VALUE = r"input_value=(.*?)(?:, input_type=\w+\]?$|$)"
_OPEN_TAILS = ":|>-+,[{( \t"  # how a line that leaves a value open ends (a PEM marker has "--")


def _depth_after(text: str, start: int, depth: int) -> tuple[int, int]:
    """(where the bracket open at ``depth`` before ``start`` closes, or -1; the depth at the end
    of ``text``), quotes respected within the line."""
    quote, i, n = "", start, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _OPENERS:
            depth += 1
        elif ch in "]})":
            depth -= 1
            if depth == 0:
                return i + 1, 0
        i += 1
    return -1, depth


def _open_value(text: str, quoted: bool = False) -> int:
    """The depth a credential's bracketed value is left open at the end of ``text`` (0: none);
    ``quoted``: only a quoted name's bare bracket (a dict's literal key, ``'api_key': [``)."""
    compiled = re.compile(_NAMED_VALUE)
    pos = 0
    while (m := compiled.search(text, pos)) is not None:
        pos = m.start(3)
        if m.group(3)[-1] in _OPENERS and _credential_name(m.group(2)) \
                and (not quoted or m.group(1)[:1] in "'\"" and len(m.group(3)) == 1):  # not "'x': getattr("
            end, depth = _depth_after(text, m.end(3) - 1, 0)
            if end == -1:
                return depth
            pos = end
    return 0


def _key_body(text: str) -> bool:
    """A line of a key's base64 body (PEM's 64 columns, OpenSSH's 70, PGP's 64-76): 48 to 80
    characters of base64 with upper and lower case letters and digits."""
    return (48 <= len(text) <= 82 and re.fullmatch(r"[A-Za-z0-9+/]{48,80}={0,2}", text) is not None
            and any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text))


def _key_tail(text: str) -> bool:
    """A line that may go on a key's base64 body (its last, shorter line; a log cut in the middle of
    one; PGP's checksum ``=ZqCk``): base64 with a digit, ``+``, ``/`` or ``=``, or 16 characters or
    more ("Traceback" is a word)."""
    return (0 < len(text) <= 82 and re.fullmatch(r"=?[A-Za-z0-9+/]+={0,2}", text) is not None
            and (len(text) >= 16 or any(c in "0123456789+/=" for c in text)))


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


class LineMasker:
    """``feed(line)`` per line of a log, in order: (the line as it may be shown, whether an END
    of a private key's block with no BEGIN before it was read — the lines before it were in the
    block); ``closed``: whether that line closed a block."""

    def __init__(self) -> None:
        self._kind = ""  # "", "pem", "public", "body", "yaml", "bracket", "loc", "pair", "argv"
        self._indent = 0
        self._depth = 0
        self._multi = False
        self.closed = False  # the last line fed closed a private key's block

    @property
    def open(self) -> bool:
        """Whether a credential's value goes on to the next line."""
        return bool(self._kind)

    def feed(self, text: str, source: bool = False) -> tuple[str, bool]:
        """``source``: the line is a traceback's source line (after its ``  File "…"`` line): code,
        not a value logged, so it opens no state but a private key's and a dict literal's
        (``    key = (`` would mask the frames below it)."""
        kind = self._kind
        self.closed = False
        if kind == "pem" or "--" in text:
            shown, orphan = self._pem(text)
            if shown is not None:
                return shown, orphan
        if kind == "body":  # after a line of a key's body alone: its short last line, PGP's "=ZqCk" checksum
            word = text.strip(" \t") if text[:1] in " \t" else text
            if _key_tail(word):
                return text[:_indent(text)] + MASK, False
            self._kind = kind = ""
        if kind == "public":  # a certificate's or a public key's body (base64 only): not a secret, shown
            if "END" in text or re.fullmatch(r"[A-Za-z0-9+/=]*", text.strip()):
                self._kind = "public" if "END" not in text else ""
                return text, False
            self._kind = kind = ""  # not a body line: the block was cut
        if kind == "yaml":
            stripped = text.lstrip(" \t")
            at = len(text) - len(stripped)
            if not stripped:
                return text, False
            if at > self._indent or (at == self._indent and (stripped == "-" or stripped.startswith("- "))):
                return text[:at] + MASK, False
            self._kind = ""
        elif kind == "bracket":
            at = _indent(text)
            if at or text[:1] in "]})":
                end, self._depth = _depth_after(text, at, self._depth)
                if end == -1:
                    return (text[:at] + MASK if text.strip() else text), False
                self._kind = ""
                return text[:at] + MASK + text[end:], False
            self._kind = ""
        elif kind == "loc":
            self._kind = ""
            found = re.compile(_INPUT_VALUE).search(text) if "input_value=" in text else None
            if found is not None:
                return text[:found.start(1)] + MASK + text[found.end(1):], False
        elif kind == "pair":
            self._kind = ""
            found = re.compile(_PAIR_VALUE).match(text) if "value" in text else None
            if found is not None and text[found.end():].strip() and text[found.end():].strip() not in _KEEP:
                return text[:found.end()] + MASK, False
        elif kind == "argv":
            stripped = text.strip()
            item = (stripped[2:] if stripped.startswith("- ") else stripped).strip(",").strip("'\"")
            if not stripped:
                return text, False
            # at the line's start an item is one word (one argv item a line: printf '%s\n' "$@"); a
            # line with a blank there is the log going on
            if item and not item.startswith("-") and item not in "]})" and \
                    (_indent(text) or stripped[:1] in "-'\"" or not any(c in stripped for c in " \t")):
                if not self._multi:
                    self._kind = ""
                return text[:_indent(text)] + MASK, False
            self._kind = ""
        word = text.strip(" \t") if text[:1] in " \t" else text  # indented too (a YAML "key: |" block)
        if " " not in word and _key_body(word):  # a log cut on both sides of a key: its BEGIN and END lost
            self._kind = "body"
            return text[:_indent(text)] + MASK, False
        self._open(text, source)
        return text, False

    def _pem(self, text: str) -> tuple[str | None, bool]:
        """The line with what of it is in a private key's block masked (None: no block here)."""
        inside = self._kind == "pem"
        marks = list(re.compile(_PEM_MARKS).finditer(text)) if "BEGIN" in text or "END" in text else []
        if not inside and not marks:
            return None, False
        out, pos, orphan = ([MASK] if inside else []), 0, False
        for mark in marks:
            if mark.group("begin"):
                if not inside:
                    out += [text[pos:mark.start()], MASK]
                    inside = True
            elif inside:
                inside, pos, self.closed = False, mark.end(), True
            elif not text[:mark.start()].strip():  # an END that starts its line: the block began before the log
                out, pos, orphan = [MASK], mark.end(), True
        self._kind = "pem" if inside else ""
        if inside:
            return ("".join(out) if text.strip() else text), orphan
        return "".join(out) + text[pos:], orphan

    def _open(self, text: str, source: bool = False) -> None:
        """Whether ``text`` leaves a credential's value open on the lines after it. A traceback's
        source line only by a dict's literal key (``{'api_key': ['k1',``): ``key = (`` is code."""
        tail = text.rstrip()[-1:]
        if not tail:
            return
        if source:
            if tail in _OPENERS + "," and re.search(_HINT, text) and (depth := _open_value(text, quoted=True)) > 0:
                self._kind, self._depth = "bracket", depth
            return
        if "BEGIN" in text and re.search(_PUBLIC_BEGIN, text) and "END" not in text[text.index("BEGIN"):]:
            self._kind = "public"
            return
        if (tail in ":|>-+" or tail.isdigit() or "#" in text) and ":" in text \
                and (m := re.compile(_NAME_ALONE).fullmatch(text)) is not None:
            name = m.group(4)
            if _credential_name(name):
                self._kind, self._indent = "yaml", len(m.group(1)) + len(m.group(2) or "")
                return
        if "name" in text and (m := re.compile(_PAIR_NAME).fullmatch(text)) is not None and is_credential_name(m.group(3)):
            self._kind = "pair"
            return
        word = text.lstrip(" \t")  # indented when pydantic's message is quoted inside another one
        # the credential's name is the last part but a list's index ("api_key.0")
        if " " not in word and word[:1] != "-" and re.compile(_LOCATION).fullmatch(word) and \
                is_credential_name(next((p for p in reversed(word.split(".")) if not p.isdigit()), "").strip("`")):
            self._kind = "loc"
            return
        if "--" in text and (m := re.compile(_OPTION_ALONE).fullmatch(text)) is not None:
            option = _option_of(m.group(2))
            if option:
                self._kind, self._multi = "argv", option == _MULTI_VALUED
                return
        if tail in _OPENERS + "," and re.search(_HINT, text):
            depth = _open_value(text)
            if depth > 0:
                self._kind, self._depth = "bracket", depth
