"""Secrets out of everything printed: one ``Redactor`` per run, built where the arguments are
read (``commands/pipeline.prepare``: ``Prepared.redact``), applied by ``render`` to the
document's values and the error line and by the command's text through its reporter or table —
no command builds its own. What is masked, and where, is docs/output.md's "Secrets never
appear": secret values by position (``vllm_cli/secrets.py``), in every form a message may quote
them (``secrets.secret_forms``/``secret_words``), URL credentials in every string, the
environment's credentials, and the start of a secret cut short before a ``…`` (``_cut_short``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..core.credentials import CUT, env_secrets, masked_everywhere, url_credentials, url_userinfo
from ..vllm_cli.secrets import (
    AFTER_EQ,
    MASK,
    WHOLE,
    SecretSpans,
    json_secrets,
    mask_in_place,
    mask_secrets,
    masks_of,
    secret_texts_by_kind,
)
from .escape import mask_url_credentials

_CUT_PREFIX = 4  # the shortest start of a secret masked before a CUT
_CUT_WINDOW = 1024  # how far before a CUT a secret's start is looked for


def _mask_token(token: str) -> str:
    userinfo = url_userinfo(token)
    if userinfo:
        token = token.replace(userinfo + "@", MASK + "@", 1)
    return mask_url_credentials(token)


def masked_argv(argv: Sequence[str], secrets: SecretSpans) -> list[str]:
    """``argv`` with secret spans as ``***``, credential values inside JSON values masked, and
    URL credentials masked; linear in its size."""
    out = []
    for i, token in enumerate(argv):
        if (i, WHOLE) in secrets.spans:
            token = MASK
        elif (i, AFTER_EQ) in secrets.spans:
            token = token.partition("=")[0] + "=" + MASK
        elif "{" in token:
            found = json_secrets(token)
            if found:  # each in its key's place; a strong one wherever the token quotes it
                token = mask_in_place(token, found)
                token = mask_secrets(token, *masks_of(v for v in found if masked_everywhere(v)))
        out.append(_mask_token(token))
    return out


class Redactor:
    """Masks, in any printed text, the secret values of the run (every form a message may quote
    one), the credentials of URLs the user passed (a model name, an endpoint, a path) — also the
    odd ones a line-level pattern cannot delimit (a password with blanks in it) — and every URL
    credential the pattern can; ``shown_argv``: the arguments as they may be printed."""

    def __init__(self, secrets: Iterable[str] = (), argv: Sequence[str] = (), spans: SecretSpans = SecretSpans(),
                 in_place: Iterable[str] = (), lines: Callable[[str], str] | None = None):
        """``secrets``: masked wherever a line quotes them; ``in_place``: values found by their
        keys' names that are too weak for that (``credentials.masked_everywhere``), masked only as
        a credential-named key's value (``secrets.mask_in_place``); ``lines``: a masker each line
        goes through first (explain's, for the credentials a log line shows by its own words)."""
        self._lines = lines
        # Every form of every secret, any length (mask_secrets masks a short one only as its own
        # word). The pattern is built per line from the forms that line holds: compiling one
        # alternation of 10,000 `--api-key` values up front would cost ~90 ms of every such start.
        found = [s for s in secrets if s]
        self._found = tuple(found)
        # A one- or two-character value after a secret's "=" is masked in argparse's messages, where it is
        # quoted alone (serve_args._scrubbed), not as a word of every line (secrets.secret_words).
        self._secrets, self._words = masks_of(found, short_values=False)
        self._long = tuple({s for s in found if len(s) > _CUT_PREFIX})  # for a secret cut short
        self._argv = tuple(argv)
        self._spans = spans
        self._in_place = tuple({v for v in in_place if v} - set(found))

    @classmethod
    def for_argv(cls, argv: Sequence[str], spans: SecretSpans = SecretSpans(), more: Iterable[str] = (),
                 env: Mapping[str, str] | None = None) -> "Redactor":
        """The run's redactor: the secret values at ``spans`` of ``argv``, the values of
        credential-named keys in its JSON values, ``more`` (a ``--config`` file's), its URLs' and
        ``env``'s credentials — masked in every line; a value found only by its key's name that is
        too weak to mask everywhere (``credentials.masked_everywhere``) in its key's place."""
        found = url_credentials(argv)  # with the password alone, which a message may quote
        placed, named = secret_texts_by_kind(argv, spans)
        found += placed
        named += more
        found += [v for v in named if masked_everywhere(v)]
        if env:
            found += env_secrets(env)
            # A credential option's value that names an environment variable (check's
            # ``--api-key-env VLLM_API_KEY``, whatever the variable is called): its value is the secret.
            found += [env[p] for p in placed if p in env and masked_everywhere(env[p])]
        return cls(found, argv, spans, [v for v in named if not masked_everywhere(v)])

    @classmethod
    def for_engine(cls, engine: object, env: Mapping[str, str]) -> "Redactor":
        """The plugin's redactor, inside vLLM where there is no argv: the engine's ``hf_token``
        (vLLM's own credential field; ``True`` means "use the stored one") and ``env``'s
        credentials."""
        token = getattr(engine, "hf_token", None)
        return cls.for_argv((), env=env).also([token] if isinstance(token, str) else [])

    def also(self, secrets: Sequence[str]) -> "Redactor":
        """This redactor with ``secrets`` masked everywhere too, whatever their length (check's
        key and the password of its URL)."""
        if not secrets:
            return self
        found = [*self._found, *secrets]
        return Redactor(found, self._argv, self._spans, self._in_place, self._lines)

    @classmethod
    def for_log(cls, secrets: Iterable[str], lines: Callable[[str], str],
                env: Mapping[str, str] | None = None) -> "Redactor":
        """explain's redactor: the secrets of vLLM's logged arguments and ``env``'s credentials
        (as every run's: a log of this machine's vLLM may quote them), masked wherever a line
        quotes them, after ``lines`` (``core/explain/masking.mask_line``) masked what each line
        shows by its own words."""
        return cls([*secrets, *(env_secrets(env) if env else ())], lines=lines)

    @classmethod
    def for_words(cls, words: Sequence[str], env: Mapping[str, str] | None = None,
                  more: Iterable[str] = ()) -> "Redactor":
        """``for_argv`` for arguments no parse has read (a usage error, a command's bad input): the
        words ``conservative_spans`` finds against the newest recorded table (any credential-named
        option judged by its name), ``more`` (the ``--config`` file's: ``pipeline.usage_redactor``)."""
        from ..vllm_cli.option_table import load_table
        from ..vllm_cli.secrets import conservative_spans

        words = tuple(words)
        return cls.for_argv(words, conservative_spans(words, load_table(None).option_strings, exact=False), more, env)

    @property
    def shown_argv(self) -> list[str]:
        """The arguments as they may be printed (``masked_argv``)."""
        return masked_argv(self._argv, self._spans)

    def __call__(self, text: str) -> str:
        if self._lines is not None:
            text = self._lines(text)
        if self._secrets:
            text = mask_secrets(text, self._secrets, self._words)
            if CUT in text:
                text = self._cut_short(text)
        if self._in_place:
            text = mask_in_place(text, self._in_place)
        return mask_url_credentials(text)

    def secrets_only(self, text: str, *, cut: bool = False) -> str:
        """``text`` with the secret values masked and nothing else changed (an answer still to be
        read: its URLs stay as they are); ``cut``: the text was cut at its end, which may hold
        the start of a secret."""
        if self._in_place:
            text = mask_in_place(text, self._in_place)
        if not self._secrets:
            return text
        text = mask_secrets(text, self._secrets, self._words)
        if cut:
            text = self._cut_short(text + CUT)[: -len(CUT)]
        elif CUT in text:
            text = self._cut_short(text)
        return text

    def _cut_short(self, text: str) -> str:
        """``text`` with the start of a secret right before a ``…`` masked (an excerpt cut inside
        one): the earliest place in the ``_CUT_WINDOW`` characters before it from which the rest
        up to the ``…`` starts a secret (4 characters or more). Bounded work per cut: the secrets
        whose first 4 characters are in that window, 16 places each."""
        out, pos = [], 0
        while (at := text.find(CUT, pos)) != -1:
            low = max(pos, at - _CUT_WINDOW)
            window = text[low:at]
            start = at
            for secret in self._long:
                head = secret[:_CUT_PREFIX]
                p = window.find(head, max(0, len(window) - len(secret) + 1))
                for _ in range(16):
                    if p == -1 or low + p >= start:
                        break
                    if secret.startswith(window[p:]):
                        start = low + p
                        break
                    p = window.find(head, p + 1)
            out += [text[pos:start], MASK if start < at else "", CUT]
            pos = at + len(CUT)
        out.append(text[pos:])
        return "".join(out)

    def document(self, data):
        """A JSON-ready structure with every string masked (``masked``)."""
        return masked(data, self)


NO_REDACT = Redactor()


def masked(data, redact: Redactor = NO_REDACT):
    """A JSON-ready structure with every string masked by ``redact`` (URL credentials, without
    one; argv is masked separately, by position, before it gets here)."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {k: masked(v, redact) for k, v in data.items()}
    return [masked(v, redact) for v in data] if isinstance(data, (list, tuple)) else data
