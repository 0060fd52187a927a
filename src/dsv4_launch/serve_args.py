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

Steps 1–5 are reproduced here token for token. The final parse is done by argparse itself, on a
replica parser that has vLLM's option strings, arities and string choices (recorded from the
real parser by ``tools/gen_vllm_options.py``) — so positional/option splitting, greedy
``nargs='+'``, abbreviations and "ambiguous option" errors are argparse's own, not imitations.

This module is pure: the YAML file is read by a loader passed in by the caller.
"""

from __future__ import annotations

import argparse
import json
import re

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Optional, Sequence

    ConfigLoader = Callable[[str], Mapping[str, Any]]

from .option_table import OptionTable
from .records import EMPTY, record

KV_CACHE_DTYPE = "kv-cache-dtype"  # option name after vLLM's normalisation


class ConfigFileError(Exception):
    """The ``--config`` file cannot be used; vLLM would die on it with a traceback."""


class _ParseRejected(Exception):
    pass


@record
class ServeArgs:
    """What ``vllm serve`` will make of an argument list."""

    tokens: tuple[str, ...]  # the user's arguments after ``serve``, untouched
    values: Mapping[str, Any] = EMPTY  # dest -> effective value
    cli_values: Mapping[str, Any] = EMPTY  # from the command line alone
    model: Optional[str] = None
    model_source: Optional[str] = None  # "positional", "--model", "config file"
    config_path: Optional[str] = None  # the --config file that vLLM reads
    unknown_options: tuple[str, ...] = ()  # options this vLLM's table does not know
    rejection: Optional[str] = None  # why vLLM will refuse these arguments, if it will
    warnings: tuple[str, ...] = ()
    help_requested: bool = False

    def value(self, dest: str) -> Any:
        return self.values.get(dest)

    def source(self, dest: str) -> Optional[str]:
        """Where the effective value of ``dest`` came from."""
        if self.values.get(dest) is None:
            return None
        if self.cli_values.get(dest) is not None:
            return "command line"
        return "config file"


def option_name(token: str) -> Optional[str]:
    """The option a ``--name``/``--name=value`` token names, normalised as vLLM does.

    ``--kv_cache_dtype=auto`` → ``kv-cache-dtype``; ``--speculative_config.kv_cache_dtype`` →
    ``speculative-config.kv_cache_dtype`` (only the part before the first ``.`` is normalised).
    Returns None for anything that is not a long option.
    """
    if not token.startswith("--") or token == "--":
        return None
    name = token[2:].split("=", 1)[0]
    root, dot, rest = name.partition(".")
    return root.replace("_", "-") + dot + rest


def read_serve_args(
    tokens: Sequence[str],
    table: OptionTable,
    load_config: Optional[ConfigLoader] = None,
) -> ServeArgs:
    """Parse the arguments given after ``vllm serve``.

    Raises ConfigFileError for a ``--config`` file vLLM cannot use. Every other problem vLLM
    would have with the arguments is returned in ``rejection``: vLLM reports those itself.
    """
    tokens = tuple(tokens)
    warnings: list[str] = []
    if any(t in ("-h", "--help") or t.startswith("--help=") for t in tokens):
        return ServeArgs(tokens=tokens, help_requested=True)
    for t in tokens:
        if t.startswith("--config="):
            warnings.append(
                f"'{t.split('=', 1)[0]}=…' is accepted by vLLM but the file is never read; "
                "write '--config FILE' (two words) for vLLM to use it"
            )
            break

    try:
        args, model_moved = _move_model_option(list(tokens))
        _check_served_model_name(args)
        config_path = None
        cli_args = list(args)
        if "--config" in args:
            args, config_path = _pull_config(args, load_config)
            cli_args = _drop_config(cli_args)
        parser = _replica(table)  # built once: ~300 options
        full = _parse(args, parser, table.exact)
        cli = _parse(cli_args, parser, table.exact) if config_path else full
    except _ParseRejected as exc:
        return ServeArgs(tokens=tokens, rejection=str(exc), warnings=tuple(warnings))

    values, unknown = full
    cli_values, _ = cli
    model, model_source = values.get("model_tag"), "positional"
    if model is not None and model_moved:
        model_source = "--model"
    if model is None and values.get("model") is not None:
        model = values["model"]
        model_source = "--model" if cli_values.get("model") is not None else "config file"
    if model is None and table.defaults.get("model"):
        model, model_source = table.defaults["model"], "vLLM default"
    if model is None:
        model_source = None
    return ServeArgs(
        tokens=tokens,
        values=values,
        cli_values=cli_values,
        model=model,
        model_source=model_source,
        config_path=config_path,
        unknown_options=tuple(unknown),
        warnings=tuple(warnings),
    )


# --- vLLM's pre-processing, step by step -------------------------------------------------

_MODEL_RE = re.compile(r"^--model(=.+|$)")
_CONFIG_RE = re.compile(r"^--config(=.+|$)")
_SERVED_NAME_RE = re.compile(r"^--served[-_]model[-_]name(=.+|$)")


def _move_model_option(args: list[str]) -> tuple[list[str], bool]:
    for i, arg in enumerate(args):
        if _MODEL_RE.match(arg):
            if arg == "--model":
                if i + 1 >= len(args):
                    raise _ParseRejected("--model needs a value")
                return [args[i + 1], *args[:i], *args[i + 2 :]], True
            return [arg.removeprefix("--model="), *args[:i], *args[i + 1 :]], True
    return args, False


def _check_served_model_name(args: list[str]) -> None:
    if (
        args
        and args[0].startswith("-")
        and not any(_CONFIG_RE.match(a) for a in args)
        and any(_SERVED_NAME_RE.match(a) for a in args)
    ):
        raise _ParseRejected(
            "with --served-model-name, vLLM needs the model as the first positional "
            "argument (vllm serve <model> --served-model-name …)"
        )


def _pull_config(args: list[str], load_config: Optional[ConfigLoader]) -> tuple[list[str], str]:
    if args.count("--config") > 1:
        raise ConfigFileError("--config is given more than once; vLLM reads exactly one file")
    index = args.index("--config")
    if index == len(args) - 1:
        raise ConfigFileError("--config needs a file name (--config FILE.yaml)")
    path = args[index + 1]
    extension = path.split(".")[-1]
    if extension not in ("yaml", "yml"):
        raise ConfigFileError(
            f"--config {path}: vLLM reads only .yaml/.yml files; rename it or pass the "
            "options on the command line"
        )
    if load_config is None:
        raise ConfigFileError(f"--config {path}: no reader for config files")
    config = load_config(path)
    config_args = config_to_args(config)
    model_in_cli = bool(args) and not args[0].startswith("-")
    if not model_in_cli and "--model" not in config_args:
        raise _ParseRejected(
            "no model: give it as the first positional argument or as 'model:' in the "
            "--config file"
        )
    if model_in_cli:
        return [args[0], *config_args, *args[1:index], *args[index + 2 :]], path
    return [*config_args, *args[:index], *args[index + 2 :]], path


def _drop_config(args: list[str]) -> list[str]:
    index = args.index("--config")
    return args[:index] + args[index + 2 :]


def config_to_args(config: Mapping[str, Any]) -> list[str]:
    """A ``--config`` YAML mapping as the option tokens vLLM inserts (``load_config_file``)."""
    out: list[str] = []
    for key, value in config.items():
        if isinstance(value, bool):
            if value:
                out.append(f"--{key}")
        elif isinstance(value, list):
            if value:
                out.append(f"--{key}")
                out.extend(str(item) for item in value)
        elif isinstance(value, dict):
            out += [f"--{key}", json.dumps(value)]
        else:
            out += [f"--{key}", str(value)]
    return out


_NAME_PART = re.compile(r"(?<=--)[^\.]*")


def _normalise(args: list[str]) -> list[str]:
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                key = _NAME_PART.sub(lambda m: m.group(0).replace("_", "-"), key, count=1)
                out.append(f"{key}={value}")
            else:
                out.append(_NAME_PART.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1))
        elif arg.startswith("-O") and arg != "-O":
            out += ["--optimization-level", arg[3:] if arg[2] == "=" else arg[2:]]
        elif arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    return out


def _fold_dotted(args: list[str]) -> list[str]:
    delete: set[int] = set()
    dicts: dict[str, dict[str, Any]] = {}
    for i, arg in enumerate(args):
        if i in delete:
            continue
        if arg.startswith("--") and "." not in arg:
            continue
        if arg.startswith("-") and "." in arg:
            if "=" in arg:
                arg, value_str = arg.split("=", 1)
                if "." not in arg:
                    continue
            else:
                if i + 1 >= len(args):
                    raise _ParseRejected(f"{arg} needs a value")
                value_str = args[i + 1]
                delete.add(i + 1)
            if arg.endswith("+"):
                arg = arg[:-1]
                value_str = json.dumps(value_str.split(","))
            key, *keys = arg.split(".")
            try:
                value: Any = json.loads(value_str)
            except json.JSONDecodeError:
                value = _human_readable_int(value_str)
            nested: Any = value
            for k in reversed(keys):
                nested = {k: nested}
            _merge(dicts.setdefault(key, {}), nested)
            delete.add(i)
    kept = [a for i, a in enumerate(args) if i not in delete]
    for key, value in dicts.items():
        kept += [key, json.dumps(value)]
    return kept


def _merge(original: dict[str, Any], update: dict[str, Any]) -> None:
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            _merge(original[k], v)
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            original[k] = v


def _human_readable_int(value: str) -> Any:
    """vLLM's fallback for dotted values that are not JSON (``80g`` → 80000000000)."""
    text = value.strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text)
    if m:
        number, suffix = m.groups()
        if suffix in "kmgt":
            return int(float(number) * 10 ** (3 * ("kmgt".index(suffix) + 1)))
        if number.isdigit():
            return int(number) * 2 ** (10 * ("KMGT".index(suffix) + 1))
        return value
    try:
        return int(text)
    except ValueError:
        return value


class _ReplicaParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print and exit(2)
        raise _ParseRejected(message)

    def _get_formatter(self):
        # add_argument() asks for a formatter on every call (and the terminal's size with it);
        # this parser never prints help, so one fixed-width formatter serves all.
        if not hasattr(self, "_formatter"):
            self._formatter = argparse.HelpFormatter(self.prog, width=80)
        return self._formatter


def _parse(args: list[str], parser: argparse.ArgumentParser, exact: bool) -> tuple[dict[str, Any], list[str]]:
    processed = _fold_dotted(_normalise(args))
    try:
        namespace, extras = parser.parse_known_args(processed)
    except argparse.ArgumentError as exc:
        raise _ParseRejected(str(exc)) from None
    unknown = [e for e in extras if e.startswith("-")]
    if extras and (exact or not unknown):
        # The table was recorded from this very vLLM: it would reject these too. Only option
        # names are quoted: a stray word may be a secret meant for a misspelt option.
        others = len(extras) - len(unknown)
        words = unknown + ([f"{others} other word{'s' if others > 1 else ''}"] if others else [])
        raise _ParseRejected(f"unrecognized arguments: {', '.join(words)}")
    return vars(namespace), unknown


def _replica(table: OptionTable) -> argparse.ArgumentParser:
    parser = _ReplicaParser(prog="vllm serve", add_help=False, exit_on_error=False)
    for dest in table.positionals:
        parser.add_argument(dest, nargs="?", default=None)
    for action in table.actions:
        if action.nargs == 0:
            parser.add_argument(
                *action.options,
                dest=action.dest,
                action=_StoreFlag,
                values_by_option=dict(action.flag_values or {}),
                default=None,
            )
        else:
            parser.add_argument(
                *action.options,
                dest=action.dest,
                nargs=None if action.nargs == 1 else action.nargs,
                choices=action.choices,
                default=None,
            )
    return parser


class _StoreFlag(argparse.Action):
    """An option without a value; stores what vLLM's own action stores for that spelling."""

    def __init__(self, option_strings, dest, values_by_option, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)
        self.values_by_option = values_by_option

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.values_by_option.get(option_string, True))
