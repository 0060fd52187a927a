"""The one credential vocabulary: which *names* hold a credential, and which *values* are shaped
like one. Every place that decides whether to hide a value asks here — argv option names, a
``--config`` file's keys, the keys inside a JSON value, environment names, a log line's keys
(docs/output.md lists the words and their exceptions).

``is_credential_name(name)`` works on words (``name_words``: ``--ssl_keyfile-Password`` → ``ssl
keyfile password``): a location or quantity last is no credential (``_LAST_NOT_SECRET``), nor a
word followed by a measure (``_MEASURES``); else a credential word whole (``_WHOLE``; the short
ones only last, ``_SHORT_WORDS``), a plural of credentials (``_plural_secret``) or a fused word with
a credential stem (``_STEMS``) that is no ordinary word (``_ORDINARY``) makes it one. Masking too
much only hides a value from our own output (vLLM always gets it unchanged); masking too little
prints a secret, so the rule leans to masking where a name is unclear.

``looks_like_credential_value(value)``: a word shaped like a generated credential — where only the
shape can say (the word after the bare "token" in a log line). Pure: nothing imported but ``re``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

# Whole words that make a name a credential's.
_WHOLE = frozenset({
    "key", "apikey", "token", "secret", "secrets", "password", "passwd", "pwd", "passphrase", "credential",
    "credentials", "auth", "authorization", "bearer", "cookie", "cookies", "signature", "sig", "jwt",
    # short ones: credentials only as a whole word (db_pass, github_pat; not passthrough, patch)
    "pass", "pw", "psk", "otp", "pat",
})
# "key" glued to a word that makes it a credential's (not monkey or hockey).
_KEY_WORDS = frozenset({"apikey", "accesskey", "secretkey", "privatekey", "authkey", "sessionkey", "masterkey",
                        "signingkey", "clientkey", "passkey"})
# Stems that make a fused or misspelt word a credential's (apikeyy, authtoken, oauth, pgpassword).
_STEMS = ("key", "token", "secret", "passw", "passphrase", "pwd", "credential", "auth", "cookie", "bearer")
# Ordinary words that contain a stem: counts and tokenizers, authors, keywords and keyboards, a
# vision model's keypoints, English words ending in "key", and plurals of "key" (a checkpoint's
# "missing_keys", "hotkeys"; a list of credentials is caught before: _plural_secret).
_ORDINARY = (  # patterns are compiled at first use (re caches them): nothing at import
    r"(?:.*tokens|.*tokeniz.*|detokeniz.*|author.*|keyword.*|keyboard.*|keyframe.*|keypoint.*|keystroke.*"
    r"|keynote.*|keystone.*|keypad.*|(?:mon|hoc|tur|don|joc|whis|lac|hot)keys?|.*keys"
    r"|tokenspeed.*)"  # vLLM's TokenSpeed MLA kernel (AttentionConfig.tokenspeed_mla_min_split_kv@0.33)
)
# "token"/"key" words: the bare word's plural is a credential's list only after these.
_PLURAL_TOKENS_AFTER = frozenset({"hf", "api", "auth", "access", "bearer", "refresh", "session"})
# The endings of a fused word that is a credential's (hftoken, dbpassword).
_ENDINGS = ("token", "secret", "password", "passwd", "passphrase", "credential", "credentials")
# A word after a credential word that makes the name a count, an id, a setting of the vocabulary,
# of a kernel or of the KV cache, not a credential: prompt_token_ids, eos_token_id, max_token_num,
# token_suffix, min_token_prob, key_fp8, key_cache, --return-tokens-as-token-ids.
_MEASURES = frozenset({
    "id", "ids", "num", "nums", "count", "counts", "len", "lens", "length", "lengths", "budget", "threshold",
    "thresholds", "prob", "probs", "logprob", "logprobs", "suffix", "prefix", "index", "indices", "idx", "pos",
    "position", "positions", "limit", "limits", "size", "sizes", "type", "types", "level", "rate", "usage", "mode",
    "dtype", "fp8", "bits", "scale", "scales", "dim", "dims", "shape", "offset", "offsets",
    "cache", "caches", "proj", "states", "stride", "strides", "speed", "budgets",
})
# The short credential words count only as a name's last word (DB_PASS, redis_pw, GITHUB_PAT,
# wifi_psk; not pass_config, pw_conv — vLLM's pointwise —, pat_str): vLLM's own identifiers use
# them in other senses before another word, and a hump split of random text makes them
# ("Zq0PwA00": zq0 pw a00). "pass" after these words is a compiler or algorithm pass
# (vLLM 0.33: FusionPass, InductorPass, forward_pass, first_pass, load_pass, k_pass …), "pat"
# after these a pattern (_HEADER_PAT); "pat" alone stays one (PAT=…: a personal access token).
_SHORT_WORDS = frozenset({"pass", "pw", "psk", "otp", "pat"})
_PASS_KINDS = frozenset({
    "fusion", "graph", "inductor", "custom", "forward", "backward", "fwd", "bwd", "first", "second", "third",
    "single", "one", "two", "multi", "final", "last", "post", "pre", "lowering", "compile", "compiler",
    "compilation", "optimization", "opt", "each", "every", "load", "radix", "gemv", "gate", "cleanup",
    "elimination", "matcher", "functionalization", "coalescing", "replacement", "hidden", "query", "col", "row",
    "reduce", "norm", "quant", "rope", "cache", "kernel", "ir", "pm", "q", "k", "v", "ug", "decode", "prefill",
})
_PATTERN_WORDS = frozenset({"header", "regex", "re", "search", "match", "glob", "name", "file", "line", "word"})
# A last word that says the value is where a secret is, or how much: a location or a quantity
# (``--ssl-keyfile``, ``--token-path``, ``--dbo-decode-token-threshold``).
_LAST_NOT_SECRET = (
    r"(?:.*(?:file|files|path|paths|dir|dirs|directory|filename|location)|threshold|count|limit|size|len)"
)

# Every credential name holds one of these words (a fast gate for scanning text:
# tests/secrets/test_credentials.py checks it against is_credential_name); the short ones only where no
# lower-case letter follows ("GITHUB_PAT", "dbPw"; not "path", "patch").
HINT_WORDS = ("key", "token", "secret", "passw", "passphrase", "pass", "pwd", "credential", "auth", "cookie", "bearer",
              "sig", "jwt")
HINT_SHORT = ("pw", "psk", "otp", "pat")


def hint_pattern(words: tuple[str, ...], short: tuple[str, ...] = ()) -> str:
    """A pattern that finds any of ``words`` (any case) and of ``short`` (any case, not followed
    by a lower-case letter) — written to start with one character class, so that the search
    skips every position that cannot start one (a plain alternation of the words tries each word
    at every position: several times slower on a long line with none of them)."""
    rests: dict[str, list[str]] = {}
    for word in words:
        rests.setdefault(word[0].lower(), []).append(re.escape(word[1:].lower()))
    for word in short:
        rests.setdefault(word[0].lower(), []).append(re.escape(word[1:].lower()) + "(?-i:(?![a-z]))")
    firsts = "".join(re.escape(c) for c in sorted(rests))
    alternatives = "|".join(f"(?<={re.escape(c)})(?:{'|'.join(sorted(set(r), key=len, reverse=True))})"
                            for c, r in sorted(rests.items()))
    return f"(?i:[{firsts}](?:{alternatives}))"


NAME_HINT = hint_pattern(HINT_WORDS, HINT_SHORT)


def name_words(name: str) -> list[str]:
    """``name`` as ``is_credential_name`` reads it: without quotes and leading dashes, split at
    camelCase humps and at every other character than a letter or a digit, lower-cased."""
    name = name.strip().strip("'\"`").lstrip("-")
    if not name.islower():
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return [w for w in re.split(r"[^a-z0-9]+", name) if w]


def _plural_secret(before: str, word: str) -> bool:
    return (word in ("passwords", "passphrases", "passwds", "secrets", "credentials", "cookies", "signatures")
            or (word.endswith("keys") and word[:-1] in _KEY_WORDS)  # apikeys, accesskeys
            or (word == "keys" and before + "key" in _KEY_WORDS)
            or (word == "tokens" and before in _PLURAL_TOKENS_AFTER))


def _a_kind_of_pass(before: str) -> bool:
    """``before`` names a kind of compiler pass: one of ``_PASS_KINDS``, or a word a hump split
    left glued that ends in a long one (``QKNormRoPEFusionPass``: ``pefusion``)."""
    return before in _PASS_KINDS or any(before.endswith(k) for k in _PASS_KINDS if len(k) >= 5)


def _credential_word(before2: str, before: str, word: str, after: str) -> bool:
    if after in _MEASURES or before == "per":  # num_experts_per_token: a count per token
        return False
    if word in _SHORT_WORDS:
        return after == "" and not (word == "pass" and _a_kind_of_pass(before)) and \
            not (word == "pat" and before in _PATTERN_WORDS)
    if word == "key" and before in ("and", "or") and before2 in _MEASURES:
        return False  # a pair: the measure and the key it was read under (derived_max_model_len_and_key)
    return (word in _WHOLE or word in _KEY_WORDS or _plural_secret(before, word)
            or (len(word) > 5 and word.endswith(_ENDINGS))
            or (any(stem in word for stem in _STEMS) and re.fullmatch(_ORDINARY, word) is None))


def is_credential_name(name: str) -> bool:
    """Whether a value under ``name`` (an option, a key, an environment name) holds a credential."""
    words = name_words(name)
    if not words or re.fullmatch(_LAST_NOT_SECRET, words[-1]):
        return False
    padded = ["", "", *words, ""]
    return any(_credential_word(padded[i - 2], padded[i - 1], padded[i], padded[i + 1])
               for i in range(2, len(padded) - 1))


# What a keyboard, a word processor or a chat client puts where "-" was meant: the hyphen, the
# non-breaking hyphen, figure, en and em dashes, the horizontal bar, the minus sign, the small and
# full-width hyphen-minus (an em or en dash is what autocorrect makes of "--"). An option written
# with them is no option to argparse, but the user's: its value is masked as the option's.
DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"

# vLLM's options that carry secrets: a credential (--api-key, --hf-token, --watermark-config), then
# JSON options that may carry credentials.
SECRET_OPTIONS = frozenset({"api-key", "hf-token", "watermark-config",
                            "kv-transfer-config", "ec-transfer-config", "model-loader-extra-config",
                            "additional-config"})
_OPTION_KEY = str.maketrans(dict.fromkeys(DASHES[1:] + "_", "-"))


def option_key(name: str) -> str:
    """An option's name (without its leading dashes) as one key: its look-alike dashes and ``_``
    as ``-``, lower-cased (``API_Key``, ``api\u2010key`` → ``api-key``)."""
    return name.translate(_OPTION_KEY).lower()


WORD_SECRET_OPTIONS = ("api-key", "hf-token")  # whose value is the credential itself, a word
NEAR_SECRET_OPTION = 0.75  # difflib's ratio from which a name is a secret option misspelt ("api-kye")
_GLUED = 6  # characters glued to a secret option's name that are taken for its value (not a typo's "s")


@lru_cache(maxsize=4096)
def secret_option_name(name: str, options: Iterable[str] = SECRET_OPTIONS) -> tuple[bool, int]:
    """(whether ``name`` — an option's name without its dashes, lower-cased, ``-`` for ``_`` — may
    name one of ``options``: a credential's name, a near miss (difflib ≥ 0.75: ``api-kye``,
    ``hf-tokn``), an abbreviation (``a``) or the option with something glued on (``api-keyK``); the
    length of what is glued on). vLLM refuses all of these but the abbreviation, and its message or
    a pasted command quotes the word after: the key the user meant."""
    import difflib  # here: not on a start's path (tests/commands/test_cli.py)

    glued = next((len(name) - len(o) for o in options if name.startswith(o) and len(name) >= len(o) + _GLUED), 0)
    return bool(glued or is_credential_name(name) or any(o.startswith(name) for o in options if name)
                or difflib.get_close_matches(name, options, n=1, cutoff=NEAR_SECRET_OPTION)), glued

# Values that say there is no secret, or a setting: never masked wherever a line quotes them.
_NO_SECRET = frozenset("true false yes no on off none null nil empty unset disabled enabled auto default".split())
STRONG_MIN = 4  # a value found by its key's name shorter than this is masked only in its key's place


def masked_everywhere(value: str) -> bool:
    """Whether a value found only by the *name* of its key (a JSON option's, the ``--config``
    file's, an environment variable's) is masked wherever a line quotes it, or only in its key's
    place (``password: true``): not a value shorter than ``STRONG_MIN``, a boolean or "no value"
    word, a number — a setting rather than a secret, which as a global mask would hide every
    ``true`` and ``8`` of every line. (``--api-key``'s values: everywhere, by position.)"""
    text = value.strip()
    if len(text) < STRONG_MIN or text.lower() in _NO_SECRET:
        return False
    try:
        float(text)
    except ValueError:
        return True
    return False


# Environment variables whose names read as a credential's but whose values are not secrets.
_ENV_NOT_SECRET = frozenset({"PWD", "OLDPWD"})  # the shell's working directories


def env_credential(name: str, value: str) -> bool:
    """Whether an environment variable holds a credential to mask wherever a line quotes it
    (``HF_TOKEN``, ``VLLM_API_KEY``, ``DB_PASS``): a credential's name, a value worth masking
    everywhere (``masked_everywhere``), and not a path (``SSH_AUTH_SOCK``, ``XAUTHORITY``: the
    credential is in the file) nor the shell's ``PWD``."""
    return (name not in _ENV_NOT_SECRET and not value.startswith(("/", "~")) and masked_everywhere(value)
            and is_credential_name(name))


def env_credentials(env: Mapping[str, str]) -> list[str]:
    """The values of ``env``'s credentials (``env_credential``). A name is read only when it
    holds one of the vocabulary's words: each word is looked for once in all the names joined
    (a ``str.find`` per word), so dsv4-serve's start pays ~30 µs for a hundred variables."""
    from bisect import bisect_right

    names = list(env)
    joined = "\n".join(names).lower()
    starts, at = [], 0
    for name in names:
        starts.append(at)
        at += len(name) + 1
    hit: set[int] = set()
    for word in HINT_WORDS + HINT_SHORT:
        pos = joined.find(word)
        while pos != -1:
            index = bisect_right(starts, pos) - 1
            hit.add(index)
            pos = joined.find(word, starts[index + 1] if index + 1 < len(starts) else len(joined))
    return [env[names[i]] for i in sorted(hit) if env_credential(names[i], env[names[i]])]


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """Every secret ``env`` holds: its credentials (``env_credentials``) and the credentials of
    the URLs among its values, whatever the variable's name (``HTTPS_PROXY=http://user:PASS@…``,
    ``DATABASE_URL``: ``url_credentials``)."""
    return env_credentials(env) + url_credentials(v for v in env.values() if "://" in v)


CUT = "…"  # what a cut text ends with: output/redact masks a secret's start right before it


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``…`` when cut. Outside text (an exception's
    message, a server's answer) is cut before it is printed; a secret cut in half matches no form
    of it, so the cut is marked: the redactor masks the start of a secret right before a ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + CUT


def excerpt(text: str, limit: int) -> str:
    """Outside text cut for a message where the run's secrets are not known (an adapter, the
    plugin): URL credentials masked first (a cut would leave them without their ``@``), then
    ``clip``. Never ``text[:limit]``: a secret straddling the cut would escape."""
    return clip(mask_url_credentials(text), limit)


# Patterns compiled on first use (re caches them): most runs print no URL at all.
_URL_USERINFO = r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/\s@?#]+)@"


# A URL with a query or a fragment (up to a blank, a quote or a bracket that ends it in a line),
# and one ``name=value`` of that query: ``?access_token=…``, ``&X-Amz-Signature=…``, ``#token=…``.
_URL_WITH_QUERY = r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s'\"`<>?#]*[?#][^\s'\"`<>]*"
_QUERY_PAIR = r"([?#&;])([^=?#&;]+)=([^?#&;]*)"


def mask_url_credentials(text: str) -> str:
    """Credentials in any URL, anywhere in a line: ``https://user:PASS@host`` →
    ``https://***@host`` (the user part ends at the first ``/ ? # @`` or blank), and the values
    of its query's or fragment's parameters with a credential's name (``is_credential_name``:
    ``?access_token=***``, ``&X-Amz-Signature=***``, ``#token=***``; ``?revision=main`` stays)."""
    if "://" not in text:
        return text
    if "@" in text:
        text = re.sub(_URL_USERINFO, r"\1***@", text)
    if "=" in text and ("?" in text or "#" in text):
        text = re.sub(_URL_WITH_QUERY, _mask_query, text)
    return text


def _mask_query(url: re.Match) -> str:
    def pair(m: re.Match) -> str:
        return m.group(0) if not m.group(3) or not is_credential_name(m.group(2)) else f"{m.group(1)}{m.group(2)}=***"

    return re.sub(_QUERY_PAIR, pair, url.group(0))


def _query_credentials(text: str) -> list[str]:
    """The values of the credential-named parameters of the URLs in ``text`` (``_mask_query``'s)."""
    if "://" not in text or "=" not in text:
        return []
    return [m.group(3) for url in re.finditer(_URL_WITH_QUERY, text) for m in re.finditer(_QUERY_PAIR, url.group(0))
            if m.group(3) and is_credential_name(m.group(2))]


_SCHEME = r"(?i)\b[a-z][a-z0-9+.\-]*://"


def url_userinfo(token: str) -> str | None:
    """The credentials of a URL that is a whole argument, however odd (a password with blanks,
    ``#``, ``/`` or ``@`` in it): everything between ``scheme://`` and the *last* ``@`` — unless
    that stretch is a plain path (a ``/`` and no ``:``), as in ``https://host/a@b``."""
    if "://" not in token:
        return None
    m = re.search(_SCHEME, token)
    if m is None:
        return None
    rest = token[m.end():]
    at = rest.rfind("@")
    if at <= 0:
        return None
    userinfo = rest[:at]
    return None if "/" in userinfo and ":" not in userinfo else userinfo


def url_credentials(texts: Iterable[str]) -> list[str]:
    """The credentials of the URLs among ``texts`` (each a whole argument or value:
    ``url_userinfo``), each also as its password alone (``user:PASS`` → ``PASS``), which a
    message may quote without the user; and the values of their credential-named query
    parameters (``?access_token=…``) worth masking wherever a line quotes them
    (``masked_everywhere``: a weak one is masked in its URL only, by ``mask_url_credentials``)."""
    found: list[str] = []
    query: list[str] = []
    for text in texts:
        userinfo = url_userinfo(text)
        if userinfo:
            found.append(userinfo)
        query += _query_credentials(text)
    found += [u.partition(":")[2] for u in found if ":" in u and u.partition(":")[2]]
    return found + [v for v in query if masked_everywhere(v)]


def looks_like_credential_value(value: str) -> bool:
    """A word shaped like a generated credential: 8 characters or more of a token's alphabet
    (letters, digits, ``+/_.~-``, base64's closing ``=``), with letters and digits or both cases
    ("ZqSECRET5", "dXNlcjpwYXNz"); not "ids", "budget", "IDs", "8192", "threshold=0"."""
    value = value.rstrip(".,;:!?)]}")
    return (len(value) >= 8 and re.fullmatch(r"[A-Za-z0-9+/_.~-]+={0,2}", value) is not None
            and (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)
                 or any(c.isupper() for c in value) and any(c.islower() for c in value)))
