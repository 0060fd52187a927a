"""Read ``vllm serve`` arguments exactly the way vLLM does, without importing vLLM.

vLLM's ``FlexibleArgumentParser.parse_args`` (``vllm/utils/argparse_utils.py``, 0.24–0.33)
first rewrites the argument list, then hands it to the stdlib's argparse:

1. the first ``--model X`` / ``--model=X`` is moved to the positional slot;
2. without a positional model (first token an option), no ``--config`` and a
   ``--served-model-name``, it raises ValueError;
3. ``--config FILE`` (that exact token; ``--config=FILE`` is kept as an ordinary option and the
   file is never read) is replaced by the YAML's keys as options, right after the positional
   model, so the command line beats the file;
4. in every ``--name`` / ``--name=value`` token, ``_`` becomes ``-`` in the name up to the first
   ``.``; ``-O3``/``-O=3``/``-O 3`` become ``--optimization-level``;
5. dotted options (``--speculative-config.kv_cache_dtype fp8``) are folded into one JSON value
   per root option and appended at the end.

Steps 1–5 are reproduced here token for token; the parse is argparse's own, on a replica parser
of the recorded options, and every token carries its argv positions, so secrets are masked by
position (docs/DESIGN.md, "Reading vLLM's arguments"). Pure: the caller passes the YAML loader.
"""

from __future__ import annotations

import argparse
import json
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..core.credentials import excerpt, is_credential_name
from ..core.facts import SecretSpans, ServeArgs
from .option_table import OptionTable
from .secrets import (
    AFTER_EQ,
    SECRET_DESTS,
    WHOLE,
    conservative_spans,
    credential_values,
    json_secrets,
    key_is_secret,
    mask_secrets,
    masks_of,
    option_name,
    secret_texts,
    url_credentials_in,
)

KV_CACHE_DTYPE = "kv-cache-dtype"  # option name after vLLM's normalisation

ConfigLoader = Callable[[str], Mapping[str, object]]


class ConfigFileError(Exception):
    """The ``--config`` file cannot be used; vLLM would die on it too."""


class ConfigNotRead(Exception):
    """The ``--config`` file is left to vLLM unread (a FIFO, a device): its options are unknown."""


class _ParseRejected(Exception):
    pass


# Exceptions vLLM's own pre-processing raises on some inputs (a 5000-digit JSON number, nesting
# deeper than the recursion limit, an infinite ``80e999k``): vLLM dies on them too.
_VLLM_FAILURES = (ValueError, RecursionError, OverflowError, TypeError, IndexError)


class _Tok(str):
    """An argument that remembers which parts of the user's argv it came from: ``origins``,
    ``(index, WHOLE | AFTER_EQ)`` pairs, kept by the ``split``/``partition`` argparse splits
    ``--opt=value`` with, so a value argparse hands to an action still says where it came from."""

    origins: tuple[tuple[int, str], ...]

    def __new__(cls, text: str, origins: tuple[tuple[int, str], ...] = ()):
        made = str.__new__(cls, text)
        made.origins = origins
        return made

    def _tail(self, text: str) -> _Tok:
        return _Tok(text, tuple((i, AFTER_EQ) for i, _ in self.origins))

    def split(self, sep=None, maxsplit=-1):
        parts = str.split(self, sep, maxsplit)
        return [parts[0], self._tail(parts[1])] if sep == "=" and len(parts) == 2 else parts

    def partition(self, sep):
        head, found, tail = str.partition(self, sep)
        return (head, found, self._tail(tail)) if sep == "=" and found else (head, found, tail)


def _origins(value: object) -> tuple[tuple[int, str], ...] | None:
    """The argv spans behind an argparse value; None when one part cannot be traced."""
    items = value if isinstance(value, list) else [value]
    spans: list[tuple[int, str]] = []
    for item in items:
        if isinstance(item, _Tok):
            spans.extend(item.origins)
        elif isinstance(item, str):
            return None
    return tuple(spans)


def read_serve_args(tokens: Sequence[str], table: OptionTable, load_config: ConfigLoader | None = None, *,
                    optimized: str | None = None) -> ServeArgs:
    """Parse the arguments given after ``vllm serve``.

    Raises ConfigFileError for a ``--config`` file vLLM cannot use. Every other problem vLLM
    would have with the arguments is returned in ``rejection``: vLLM reports those itself.
    ``optimized``: why vLLM's Python skips bare asserts (-O), or None — what vLLM guards only
    with an assert (two ``--config`` files) is then a warning, and read as vLLM goes on.
    """
    tokens = tuple(tokens)
    conservative = conservative_spans(tokens, table.option_strings, exact=table.exact)
    warnings: list[str] = []
    if any(t in ("-h", "--help") or t.startswith("--help=") for t in tokens):
        return ServeArgs(tokens=tokens, help_requested=True, secrets=conservative)
    if any(t.startswith("--config=") for t in tokens):
        warnings.append("'--config=…' is accepted by vLLM but the file is never read; write "
                        "'--config FILE' (two words) for vLLM to use it")

    tagged: list[str] = [_Tok(t, ((i, WHOLE),)) for i, t in enumerate(tokens)]
    file_secrets: list[str] = []  # values of secret keys in the --config file, never to be quoted
    try:
        args, model_moved = _move_model_option(tagged)
        _check_served_model_name(args)
        config_path = None
        cli_args = list(args)
        if "--config" in args:
            if args.count("--config") > 1:
                if not optimized:
                    raise ConfigFileError("--config is given more than once; vLLM reads exactly one file")
                warnings.append(f"--config is given more than once: vLLM checks this only with an assert, which "
                                f"Python skips under -O ({optimized}), and then reads the first file and never "
                                "the others")
            args, config_path = _pull_config(args, load_config, file_secrets, table.option_strings)
            cli_args = _drop_config(cli_args)
        values, unknown, secret_values, doubt = _parse(args, table)
        traced = [_origins(v) for v in secret_values]
        file_secrets += _from_the_file(secret_values)
        cli_values = _cli_only(cli_args, table) if config_path else values
    except ConfigNotRead as exc:
        return ServeArgs(tokens=tokens, unread=str(exc), warnings=tuple(warnings), secrets=conservative)
    except _ParseRejected as exc:
        return ServeArgs(tokens=tokens, rejection=_scrubbed(str(exc), tokens, conservative, file_secrets),
                         warnings=tuple(warnings), secrets=conservative, file_secrets=tuple(file_secrets))
    except _VLLM_FAILURES as exc:
        # Scrubbed before it is cut: a secret cut in half would escape the scrub (clip marks the cut).
        detail = excerpt(_scrubbed(str(exc), tokens, conservative, file_secrets), 160)
        reason = f"vLLM's argument reading fails on them: {type(exc).__name__}: {detail}"
        return ServeArgs(tokens=tokens, rejection=reason,
                         warnings=tuple(warnings), secrets=conservative, file_secrets=tuple(file_secrets))

    known = [spans for spans in traced if spans is not None]
    if len(known) < len(traced):
        secrets = conservative  # a value argparse rebuilt: mask everything that could be one
    else:
        # The recorded secret options, where the parse put their values; and the options whose
        # names look like credentials where the table cannot say (unknown to it, dotted sub-keys,
        # any option when the table is not this release's own).
        placed = frozenset(span for spans in known for span in spans)
        guessed = conservative_spans(tokens, table.option_strings, exact=table.exact, guessed_only=True, placed=placed)
        secrets = SecretSpans(placed | guessed.spans)
    model = values.get("model_tag")
    model_source: str | None = "positional"
    if model is not None and model_moved:
        model_source = "--model"
    if model is None and values.get("model") is not None:
        model = values["model"]
        model_source = "--model" if cli_values.get("model") is not None else "config file"
    if model is None and table.defaults.get("model"):
        model, model_source = table.defaults["model"], "vLLM default"
    if model is None:
        model_source = None
    plain = {k: _plain(v) for k, v in values.items() if v is not None}  # an option not given: absent
    return ServeArgs(
        tokens=tokens, values=plain, model=_plain(model), model_source=model_source, config_path=config_path,
        cli_values=plain if cli_values is values else {k: _plain(v) for k, v in cli_values.items() if v is not None},
        unknown_options=_unknown_names(unknown, (*secret_texts(tokens, conservative), *file_secrets)),
        model_doubt=doubt if model_source == "positional" else "", warnings=tuple(warnings),
        help_requested=values.get("help") is True, secrets=secrets, file_secrets=tuple(file_secrets))


def _from_the_file(secret_values: Sequence[object]) -> list[str]:
    """What the parse gave to a secret option from the ``--config`` file (a token of no argv
    span): the file's own spelling may be one ``config_secrets`` cannot name (``api-k:``, an
    abbreviation argparse gives to ``--api-key``), and the credentials inside a JSON one."""
    found: list[str] = []
    for value in secret_values:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, _Tok) and not item.origins and item:
                found.append(str(item))
                if "{" in item:
                    found += json_secrets(str(item))
    return found


def _unknown_names(unknown: Sequence[str], secrets: Sequence[str]) -> tuple[str, ...]:
    """The unknown options' names, without any that is part of a secret value, as written or as
    vLLM spells it. Linear: up to ``FEW_NAMES`` names (or ``CHEAP_SEARCH`` characters) each is
    searched in the secrets joined; past both, one pass finds them all (``_occurring``)."""
    names = tuple(dict.fromkeys(u.split("=", 1)[0] for u in unknown))
    if not names or not secrets:
        return names
    # A name is spelt as vLLM's step 4 spells it (``--Zq_x`` → ``--Zq-x``): so is each secret, as well.
    spelt = [str(_normalise([s])[0]) for s in secrets if s.startswith("--") and "_" in s]
    blob = "\x00".join((*secrets, *spelt))  # NUL is in no argument: no name spans two secrets
    if len(names) <= FEW_NAMES or len(names) * len(blob) <= CHEAP_SEARCH:
        return tuple(name for name in names if name not in blob)
    inside = _occurring(names, blob)
    return tuple(name for name in names if name not in inside)


FEW_NAMES = 1024  # names searched for one by one: ~0.3 ns a name a character, about what one pass costs a character
CHEAP_SEARCH = 1 << 24  # names × characters of the secrets searched one by one whatever their number (~5 ms)


def _occurring(words: Sequence[str], text: str) -> set[str]:
    """The ``words`` (not empty, distinct) that occur in ``text``, in one pass over it
    (Aho–Corasick): O(len(text) + the words' total length), whatever their number. A trie of the
    words; each node's fallback is the longest suffix of its path that is a path too; the pass
    follows ``text`` through it and collects every word that ends where it stands. Between
    matches it jumps with ``str.find`` to the next start of a word (option names: ``-``)."""
    goto: list[dict[str, int]] = [{}]
    ends: list[str | None] = [None]  # the word whose path ends at a node
    for word in words:
        node = 0
        for ch in word:
            child = goto[node].get(ch)
            if child is None:
                child = goto[node][ch] = len(goto)
                goto.append({})
                ends.append(None)
            node = child
        ends[node] = word
    fallback = [0] * len(goto)
    nearest = [0] * len(goto)  # the node itself or its nearest fallback where a word ends (0: none)
    queue = list(goto[0].values())  # breadth first: a fallback is shallower, so settled already
    for node in queue:
        nearest[node] = node if ends[node] is not None else nearest[fallback[node]]
        for ch, child in goto[node].items():
            back = fallback[node]
            while back and ch not in goto[back]:
                back = fallback[back]
            fallback[child] = goto[back].get(ch, 0)
            queue.append(child)
    starts = {word[0] for word in words}
    lead = next(iter(starts)) if len(starts) == 1 else None
    found: set[str] = set()
    done = [False] * len(goto)  # a node whose words, and its fallbacks' words, are collected
    node, i, size = 0, 0, len(text)
    while i < size:
        if node == 0 and lead is not None:
            i = text.find(lead, i)
            if i < 0:
                break
        ch = text[i]
        while node and ch not in goto[node]:
            node = fallback[node]
        node = goto[node].get(ch, 0)
        hit = nearest[node]
        while hit and not done[hit]:
            done[hit] = True
            found.add(ends[hit])  # type: ignore[arg-type]  # nearest points at a node where a word ends
            hit = nearest[fallback[hit]]
        i += 1
    return found


def _scrubbed(message: str, tokens: Sequence[str], spans: SecretSpans, more: Sequence[str] = ()) -> str:
    """A message argparse built from the tokens, with every token that may be a secret value
    masked — whatever it looks like (``-k x``, ``--Zq…``) and wherever argparse quoted it — and
    the values of the ``--config`` file's secret keys."""
    found = {*secret_texts(tokens, spans), *more}
    found |= {_normalise([s])[0] for s in found if s.startswith("--")}  # as quoted after step 4
    # Each in every form a message may quote it (argparse's %r, JSON; the name before "=" as a word);
    # a short one only where it stands as its own word (secrets.mask_secrets).
    return mask_secrets(message, *masks_of(found))


def _cli_only(cli_args: list[str], table: OptionTable) -> dict[str, object]:
    """The command line's own values (to say where a value came from). vLLM never parses the
    command line without the file, so this parse may fail where vLLM's does not (a stray word
    the file's greedy option swallows): then nothing is attributed to the command line."""
    try:
        return _parse(cli_args, table)[0]
    except (_ParseRejected, *_VLLM_FAILURES):
        return {}


def _plain(value):
    """Parsed values as plain ``str`` (no origin tags) for everything downstream."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return str(value) if isinstance(value, str) else value


# --- vLLM's pre-processing, step by step -------------------------------------------------

# Patterns, compiled by re at first use (re caches them), not at import: start-up time. Loops
# over the arguments take the compiled pattern once.
_MODEL_RE = r"^--model(=.+|$)"
_CONFIG_RE = r"^--config(=.+|$)"
_SERVED_NAME_RE = r"^--served[-_]model[-_]name(=.+|$)"


def _move_model_option(args: list[str]) -> tuple[list[str], bool]:
    model = re.compile(_MODEL_RE).match  # once per call, not once per argument
    for i, arg in enumerate(args):
        if model(arg):
            if arg == "--model":
                if i + 1 >= len(args):
                    raise _ParseRejected("--model needs a value")
                return [args[i + 1], *args[:i], *args[i + 2 :]], True
            return [arg.partition("=")[2], *args[:i], *args[i + 1 :]], True
    return args, False


def _check_served_model_name(args: list[str]) -> None:
    if (args and args[0].startswith("-") and not any(map(re.compile(_CONFIG_RE).match, args))
            and any(map(re.compile(_SERVED_NAME_RE).match, args))):
        raise _ParseRejected("with --served-model-name, vLLM needs the model as the first positional "
                             "argument (vllm serve <model> --served-model-name …)")


def config_secrets(config: Mapping[str, object], options: Sequence[str] | None = None) -> list[str]:
    """The secrets of a ``--config`` file's mapping: the values of its keys that name a secret
    option (``secrets.key_is_secret`` against ``options``, None: the newest table), of credential
    keys at any depth (``hf_overrides: {hf_token: …}``) and the credentials of its URLs."""
    if options is None:
        from .option_table import load_table

        options = load_table(None).option_strings
    found: list[str] = []
    for key, value in config.items():
        if key_is_secret(str(key), options):
            items = value if isinstance(value, list) else [value]
            found += [json.dumps(v) if isinstance(v, dict) else str(v) for v in items]
            found += credential_values(value)  # a JSON option's credential, which a message quotes alone
        elif isinstance(value, (dict, list)):  # hf_overrides: {hf_token: …}, at any depth
            found += credential_values(value)
    return found + url_credentials_in(config)


def _pull_config(args: list[str], load_config: ConfigLoader | None,
                 file_secrets: list[str] | None = None, options: Sequence[str] | None = None) -> tuple[list[str], str]:
    index = args.index("--config")  # the first (two: read_serve_args)
    if index == len(args) - 1:
        raise ConfigFileError("--config needs a file name (--config FILE.yaml)")
    path = str(args[index + 1])
    extension = path.split(".")[-1]
    if extension not in ("yaml", "yml"):
        raise ConfigFileError(f"--config {path}: vLLM reads only .yaml/.yml files; rename it or pass the "
                              "options on the command line")
    if load_config is None:
        raise ConfigFileError(f"--config {path}: no reader for config files")
    config = load_config(path)
    if file_secrets is not None:
        try:
            file_secrets += config_secrets(config, options)
        except (TypeError, ValueError, RecursionError):
            pass
    try:
        config_args = [_Tok(t) for t in config_to_args(config)]
    except (TypeError, ValueError, RecursionError) as exc:
        # the message may quote the file's values: its credentials masked before the cut
        detail = excerpt(mask_secrets(str(exc), *masks_of(file_secrets or ())), 120)
        raise ConfigFileError(f"--config {path}: vLLM cannot turn it into options "
                              f"({type(exc).__name__}: {detail})") from None
    model_in_cli = bool(args) and not args[0].startswith("-")
    if not model_in_cli and "--model" not in config_args:
        raise _ParseRejected("no model: give it as the first positional argument or as 'model:' in the --config file")
    if model_in_cli:
        return [args[0], *config_args, *args[1:index], *args[index + 2 :]], path
    return [*config_args, *args[:index], *args[index + 2 :]], path


def _drop_config(args: list[str]) -> list[str]:
    index = args.index("--config")
    return args[:index] + args[index + 2 :]


def config_to_args(config: Mapping[str, object]) -> list[str]:
    """A ``--config`` YAML mapping as the option tokens vLLM inserts (``load_config_file``), with
    vLLM's expressions, so the same inputs fail (a key not a string, a value JSON cannot hold)."""
    out: list[str] = []
    for key, value in config.items():
        if isinstance(value, bool):
            if value:
                out.append("--" + key)
        elif isinstance(value, list):
            if value:
                out.append("--" + key)
                out.extend(str(item) for item in value)
        elif isinstance(value, dict):
            out += ["--" + key, json.dumps(value)]
        else:
            out += ["--" + key, str(value)]
    return out


_NAME_PART = r"(?<=--)[^\.]*"


def _dashes(match: re.Match) -> str:
    return match.group(0).replace("_", "-")


def _normalise(args: list[str]) -> list[str]:
    name_part = re.compile(_NAME_PART).sub
    out: list[str] = []
    for i, arg in enumerate(args):
        origins = getattr(arg, "origins", ())
        if arg.startswith("--"):
            if "=" in arg:
                key, value = str.split(arg, "=", 1)
                out.append(_Tok(f"{name_part(_dashes, key, count=1)}={value}", origins))
            else:
                out.append(_Tok(name_part(_dashes, arg, count=1), origins))
        elif arg.startswith("-O") and arg != "-O":
            out += ["--optimization-level", arg[3:] if arg[2] == "=" else arg[2:]]
        elif arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    return out


def _fold_dotted(args: list[str]) -> list[str]:
    delete: set[int] = set()
    dicts: dict[str, dict[str, object]] = {}
    sources: dict[str, list[tuple[int, str]]] = {}
    for i, arg in enumerate(args):
        if i in delete:
            continue
        if arg.startswith("--") and "." not in arg:
            continue
        if arg.startswith("-") and "." in arg:
            if "=" in arg:
                name, value_str = str.split(arg, "=", 1)
                if "." not in name:
                    continue
                spans = [(j, AFTER_EQ) for j, _ in getattr(arg, "origins", ())]
            else:
                if i + 1 >= len(args):
                    # The whole token: a secret value that looks like a dotted option
                    # (``--api-key -sk.live-4f9a``) is then masked whole by the scrub.
                    raise _ParseRejected(f"{arg} needs a value")
                name, value_str = str(arg), args[i + 1]
                spans = list(getattr(value_str, "origins", ()))
                delete.add(i + 1)
            if name.endswith("+"):
                name = name[:-1]
                value_str = json.dumps(str(value_str).split(","))
            key, *keys = name.split(".")
            try:
                value: object = json.loads(value_str)
            except json.JSONDecodeError:
                value = _human_readable_int(str(value_str))
            nested: dict[str, object] = {keys[-1]: value}  # the name has a '.': keys is not empty
            for k in reversed(keys[:-1]):
                nested = {k: nested}
            _merge(dicts.setdefault(key, {}), nested)
            sources.setdefault(key, []).extend(spans)
            delete.add(i)
    kept = [a for i, a in enumerate(args) if i not in delete]
    for key, value in dicts.items():
        kept += [key, _Tok(json.dumps(value), tuple(sources[key]))]
    return kept


def _merge(original: dict[str, object], update: dict[str, object]) -> None:
    for k, v in update.items():
        old = original.get(k)
        if isinstance(v, dict) and isinstance(old, dict):
            _merge(old, v)
        elif isinstance(v, list) and isinstance(old, list):
            old += v  # in place, as original[k] += v
        else:
            original[k] = v


def _human_readable_int(value: str) -> object:
    """vLLM's fallback for dotted values that are not JSON (``80g`` → 80000000000)."""
    text = value.strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text)
    if m:
        number, suffix = m.groups()
        if suffix in "kmgt":
            return int(float(number) * 10 ** (3 * ("kmgt".index(suffix) + 1)))
        return int(number) * 2 ** (10 * ("KMGT".index(suffix) + 1)) if number.isdigit() else value
    try:
        return int(text)
    except ValueError:
        return value


class _ReplicaParser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.secret_values: list[object] = []

    def error(self, message: str):  # argparse would print and exit(2)
        raise _ParseRejected(message)

    def _get_formatter(self):
        # add_argument() asks for a formatter on every call (and the terminal's size with it);
        # this parser never prints help, so one fixed-width formatter serves all.
        if not hasattr(self, "_formatter"):
            self._formatter = argparse.HelpFormatter(self.prog, width=80)
        return self._formatter


def _parse(args: list[str], table: OptionTable) -> tuple[dict[str, object], list[str], list[object], str]:
    """(values, unknown options, the values argparse gave to secret options, the unknown option
    right before the word argparse took as the model, else "") of ``args``."""
    processed = _fold_dotted(_normalise(args))
    parser = _replica(table, processed)
    try:
        namespace, extras = parser.parse_known_args(processed)
    except argparse.ArgumentError as exc:
        raise _ParseRejected(str(exc)) from None
    unknown = [str(e) for e in extras if e.startswith("-") and e != "--"]  # "--" names no option
    if extras and (table.exact or not unknown):
        # The table was recorded from this very vLLM: it would reject these too. Only option
        # names are quoted: a stray word may be a secret meant for a misspelt option.
        # argparse's order; "--" names itself, an option its name, any other word is counted.
        words = [str(e).split("=", 1)[0] for e in extras if e.startswith("-")]
        others = len(extras) - len(words)
        words += [f"{others} other word{'s' if others > 1 else ''}"] if others else []
        raise _ParseRejected(f"unrecognized arguments: {', '.join(words)}")
    model = getattr(namespace, "model_tag", None)
    doubt = next((str(a).split("=", 1)[0] for a, b in zip(processed, processed[1:])
                  if b is model and a in unknown and "=" not in a), "") if unknown and model is not None else ""
    return vars(namespace), unknown, parser.secret_values, doubt


# The replica parser holds only the options a parse of these tokens can reach, in the table's
# order (docs/DESIGN.md says why that is argparse's whole parse; all ~300 options cost ~2 ms a
# start): a single-dash token is also read as a two-character option and its value (``-q5``).
_REPLICAS: dict[tuple[int, tuple[int, ...]], tuple[OptionTable, _ReplicaParser]] = {}
_REPLICAS_KEPT = 8  # a process parses a few argvs (serve, the --config split, doctor's retry)
_INDEXES: dict[int, tuple[OptionTable, dict[str, int], frozenset[int], list[str]]] = {}


def _negative_like(option: str) -> bool:
    r"""An option argparse's negative-number check may read: its _negative_number_matcher is
    ``^-\d+$|^-\d*\.\d+$`` up to 3.13.0 and ``^-\.?\d`` later; this is the latter, covering both."""
    return option[1:2].isdigit() or (option[1:2] == "." and option[2:3].isdigit())


def _index(table: OptionTable) -> tuple[dict[str, int], frozenset[int], list[str]]:
    """(each option string's action, the actions every parse keeps, the option strings sorted —
    filled on the first token that names no option), per table."""
    kept = _INDEXES.get(id(table))
    if kept is not None and kept[0] is table:
        return kept[1], kept[2], kept[3]
    action_of = {o: at for at, action in enumerate(table.actions) for o in action.options}
    always = frozenset(at for o, at in action_of.items() if len(o) == 2 or _negative_like(o))
    _INDEXES[id(table)] = (table, action_of, always, [])
    return action_of, always, _INDEXES[id(table)][3]


# The options the plan may write into the argv (core/rules/kv_paths.py's one change): always in the replica,
# so the pipeline's re-read of the edited argv parses with the same parser.
_WRITTEN = ("--" + KV_CACHE_DTYPE,)


def needed_actions(table: OptionTable, tokens: Sequence[str]) -> tuple[int, ...]:
    """The indexes of the table's actions that can take part in parsing ``tokens`` (and those
    of the options the plan may write), in the table's order. Linear in the tokens: a prefix is
    looked up in the sorted option strings."""
    action_of, always, strings = _index(table)
    wanted = set(always)
    options = tokens[: tokens.index("--")] if "--" in tokens else tokens  # after "--": positionals
    for token in dict.fromkeys([*(t for t in options if t[:1] == "-" and len(t) > 1), *_WRITTEN]):
        name = token.split("=", 1)[0]  # argparse looks up the text before "=" too, and by prefix
        at = action_of.get(token, action_of.get(name))
        if at is not None:
            wanted.add(at)
            continue
        if not strings:
            strings.extend(sorted(action_of))
        i = bisect_left(strings, name)
        while i < len(strings) and strings[i].startswith(name):
            wanted.add(action_of[strings[i]])
            i += 1
    return tuple(sorted(wanted))


def _replica(table: OptionTable, tokens: Sequence[str]) -> _ReplicaParser:
    """The replica parser of ``table`` for parsing ``tokens`` (kept for the next parse of the
    same options). argparse keeps no state between parses but our record of secret values,
    reset here."""
    wanted = needed_actions(table, tokens)
    key = (id(table), wanted)
    kept = _REPLICAS.get(key)
    if kept is not None and kept[0] is table:
        kept[1].secret_values = []
        return kept[1]
    parser = _build_replica(table, wanted)
    if len(_REPLICAS) >= _REPLICAS_KEPT:
        _REPLICAS.pop(next(iter(_REPLICAS)))
    _REPLICAS[key] = (table, parser)
    return parser


def _build_replica(table: OptionTable, wanted: Sequence[int] | None = None) -> _ReplicaParser:
    """A parser with the table's positionals and its actions ``wanted`` (None: all of them)."""
    parser = _ReplicaParser(prog="vllm serve", add_help=False, exit_on_error=False)
    for dest in table.positionals:
        parser.add_argument(dest, nargs="?", default=None)
    actions = table.actions if wanted is None else [table.actions[at] for at in wanted]
    for action in actions:
        if action.nargs == 0:
            parser.add_argument(*action.options, dest=action.dest, action=_StoreFlag, default=None,
                                values_by_option=dict(action.flag_values or {}))
        else:  # "store": argparse's default
            parser.add_argument(*action.options, dest=action.dest, nargs=None if action.nargs == 1 else action.nargs,
                                choices=action.choices, default=None,
                                action=_StoreSecret if _secret_action(action, table.exact) else "store")
    return parser


def _secret_action(action, exact: bool) -> bool:
    """A recorded secret option; or, in a table that is not the installed release's own, an
    option whose name looks like a credential (``credentials.is_credential_name``)."""
    return action.dest in SECRET_DESTS or (
        not exact and any(is_credential_name(o) for o in action.options if o.startswith("--")))


class _StoreFlag(argparse.Action):
    """An option without a value; stores what vLLM's own action stores for that spelling."""

    def __init__(self, option_strings, dest, values_by_option, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)
        self.values_by_option = values_by_option

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.values_by_option.get(option_string, True))


class _StoreSecret(argparse.Action):
    """Stores like argparse's default, and tells the parser which tokens it was given."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        parser.secret_values.append(values)


# Writing a planned change into the user's argv so that vLLM reads it, touching nothing else: a
# value replaced in place or two tokens inserted before a bare ``--`` (if any), so every other token
# keeps its bytes and every token before the insertion its position — the secret positions found by
# the parse stay valid, as argparse gives no option a value after a bare ``--``.


def set_option(argv: Sequence[str], option: str, value: str, replaces: str = "auto") -> list[str]:
    """``option`` set to ``value``: the last command-line occurrence rewritten in place, in the
    user's own spelling, when its value is ``replaces``; otherwise ``option value`` appended —
    before a bare ``--`` if there is one (after it, everything is a positional to argparse).
    Never inserted right after ``serve`` (vLLM's positional-model checks would fail); the pipeline
    re-reads the result (``pipeline._verified``)."""
    out = list(argv)
    name = option[2:]
    last = None
    end = out.index("--") if "--" in out else len(out)
    for i, token in enumerate(out[:end]):
        if option_name(token) == name:
            last = i
    if last is not None:
        head, eq, current = out[last].partition("=")
        if eq and current == replaces:
            out[last] = f"{head}={value}"
            return out
        if not eq and last + 1 < len(out) and out[last + 1] == replaces:
            out[last + 1] = value
            return out
    return out[:end] + [option, value] + out[end:]


def apply_changes(argv: Sequence[str], changes: Iterable) -> tuple[str, ...]:
    """Every ``core.kv.Change`` (``option``, ``after``) written into ``argv``."""
    out = list(argv)
    for change in changes:
        out = set_option(out, change.option, change.after)
    return tuple(out)
