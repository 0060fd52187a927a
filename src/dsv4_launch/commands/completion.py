"""Shell completion: ``dsv4-launch completion bash|zsh|fish`` prints a script for both commands.

The scripts ask ``dsv4-launch completion --complete PROG -- WORDS...`` (the words after the
program name, the last one being completed; empty for a fresh word) and offer what it prints,
one candidate a line, falling back to file names when it prints nothing. For ``dsv4-serve`` (and
the vLLM part of ``serve``/``plan``/``doctor``/``fit``) the candidates are vLLM's ``serve``
options from the recorded option table (``data/serve-options-*.json``) of the installed vLLM
(found as the hand-over finds it, not imported), the nearest recorded one when that release has
none, or the release given with ``--vllm-version``; values where the table knows them (argparse
choices, and the values recorded for the settings the rules read, such as
``--kv-cache-dtype``). How to install each shell's script: ``COMMAND``'s help and the script's
own header.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from ..core.vllm.facts import fact
from . import SERVE_PROGRAM, exit_codes
from .own_options import COMMANDS, VLLM_VERSION, Command, load

SHELLS = ("bash", "zsh", "fish")

BASH = r"""# dsv4-launch and dsv4-serve completion for bash (dsv4-launch completion bash).
# Install: dsv4-launch completion bash > ~/.local/share/bash-completion/completions/dsv4-launch
#          (and the same file as .../completions/dsv4-serve), or in ~/.bashrc:
#          eval "$(dsv4-launch completion bash)"
_dsv4_launch_complete() {
    local prog="${COMP_WORDS[0]##*/}"
    COMPREPLY=()
    mapfile -t COMPREPLY < <(command dsv4-launch completion --complete "$prog" -- \
        "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
}
complete -o default -F _dsv4_launch_complete dsv4-launch dsv4-serve
"""

ZSH = r"""#compdef dsv4-launch dsv4-serve
# dsv4-launch and dsv4-serve completion for zsh (dsv4-launch completion zsh).
# Install: dsv4-launch completion zsh > "${fpath[1]}/_dsv4-launch" (then start a new shell),
#          or in ~/.zshrc after compinit: eval "$(dsv4-launch completion zsh)"
_dsv4_launch() {
    local -a candidates
    candidates=("${(@f)$(command dsv4-launch completion --complete "${words[1]:t}" -- \
        "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    candidates=("${(@)candidates:#}")
    if (( ${#candidates} )); then
        compadd -Q -- "${candidates[@]}"
    else
        _files
    fi
}
if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then
    _dsv4_launch "$@"
else
    compdef _dsv4_launch dsv4-launch dsv4-serve
fi
"""

FISH = r"""# dsv4-launch and dsv4-serve completion for fish (dsv4-launch completion fish).
# Install: dsv4-launch completion fish > ~/.config/fish/completions/dsv4-launch.fish
#          (and the same as dsv4-serve.fish), or in config.fish: dsv4-launch completion fish | source
function __dsv4_launch_complete
    set -l tokens (commandline -opc) (commandline -ct)
    command dsv4-launch completion --complete (basename -- $tokens[1]) -- $tokens[2..-1] 2>/dev/null
end
complete -c dsv4-launch -a '(__dsv4_launch_complete)'
complete -c dsv4-serve -a '(__dsv4_launch_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


# Parsers vLLM registers for DeepSeek (no option table records them: `--tool-call-parser` and
# `--reasoning-parser` take any registered name), per release. The recipes pass deepseek_v4 to both.
KNOWN_VALUES = {"tool_call_parser": fact("tool-parser-names"), "reasoning_parser": fact("reasoning-parser-names")}
MODEL_OPTIONS = ("--model",)  # vLLM's options that take a model id, as the positional does


def _declared(command: str) -> tuple[dict[str, list[str] | None], bool]:
    """A command's own options (name → the values completion offers: []: a free value, None: a
    flag), and whether it takes vLLM's arguments (its declaration's ``vllm_args``). serve is
    dsv4-serve's fast path: no options of its own, vLLM's arguments, its module not imported."""
    if command == "serve":
        return {}, True
    if command not in COMMANDS:
        return {}, False
    declared = load(command)
    return {o.name: list(o.values()) if o.values else ([] if o.metavar else None) for o in declared.options}, \
        declared.vllm_args


def _vllm_version(words: Sequence[str]) -> str | None:
    for i, word in enumerate(words):
        if word == VLLM_VERSION.name and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(f"{VLLM_VERSION.name}="):
            return word.split("=", 1)[1]
    from ..adapters.vllm_install import find_vllm

    return find_vllm(os.environ).version


def _known_values(dest: str, version: str) -> list[str]:
    known = KNOWN_VALUES.get(dest)
    names = known.at(version) if known else None
    return list(names) if isinstance(names, tuple) else []


def model_ids(env: Mapping[str, str]) -> list[str]:
    """Model ids to offer: the known-checkpoint table's, then those in the local Hugging Face cache
    (``models--org--name`` folders of HF_HUB_CACHE, HF_HOME/hub, …; a directory listing only)."""
    from ..adapters.checkpoints import load_checkpoints
    from ..adapters.model_files import hub_cache

    ids = [str(entry["id"]) for entry in load_checkpoints().values() if entry.get("id")]
    try:
        names = sorted(os.listdir(hub_cache(env)))
    except (OSError, ValueError):
        names = []
    for name in names:
        parts = name.split("--")
        if len(parts) == 3 and parts[0] == "models" and all(re.fullmatch(_REPO_PART, p) for p in parts[1:]):
            model = f"{parts[1]}/{parts[2]}"
            if model not in ids:
                ids.append(model)
    return ids


# A folder name is offered only where it is a repo id huggingface_hub accepts (utils/_validators.py
# validate_repo_id: ASCII letters, digits, "_", "-", "." — no "--" or "..", no "-" or "." at either
# end): none of those is special to bash, zsh or fish, so the word is inserted as it is, unquoted,
# in each. Anything else ($(…), ;, backticks, blanks, quotes, newlines, globs: a shared cache can
# hold any name) is no model vLLM could load, and would put a command on the user's line: not offered.
_REPO_PART = r"(?![-.])(?!.*\.\.)[A-Za-z0-9_.-]{1,96}(?<![-.])"


def _has_positional(words: Sequence[str], table, own: dict[str, list[str] | None]) -> bool:
    """Whether the words before the last already give vLLM's positional (the model)."""
    takes_value = {o for a in table.actions if a.nargs != 0 for o in a.options}
    skip = False
    for word in words[:-1]:
        if skip:
            skip = False
        elif word == "--":
            continue
        elif word.startswith("-"):
            name = word.partition("=")[0]
            skip = "=" not in word and (name in takes_value or (name in own and own[name] is not None))
        else:
            return True
    return False


def _vllm_candidates(words: Sequence[str], version: str | None, own: dict[str, list[str] | None]) -> list[str]:
    """Candidates for the last word of ``vllm serve`` arguments (``words``), plus a command's
    own options (name → its values, [] for a free value, None for a flag)."""
    from ..vllm_cli.option_table import load_table

    table = load_table(version)
    current = words[-1] if words else ""
    previous = words[-2] if len(words) > 1 else ""
    if "--" in words[:-1]:
        own = {}  # after `--` everything is vLLM's

    def values_of(option: str) -> list[str] | None:
        if option in own:
            return own[option]
        if option in MODEL_OPTIONS and option in table.option_strings:
            return model_ids(os.environ)
        for action in table.actions:
            if option in action.options and action.nargs != 0:
                choices = (action.choices or table.accepted_values.get(action.dest)
                           or _known_values(action.dest, table.vllm_version))
                return [str(c) for c in choices] if choices else []
        return None

    # bash splits `--opt=val` into `--opt`, `=`, `val` (COMP_WORDBREAKS): complete the value only
    if previous == "=" and len(words) > 2:
        return [v for v in values_of(words[-3]) or () if v.startswith(current)]
    if current == "=" and previous:
        return values_of(previous) or []
    if current.startswith("--") and "=" in current:
        option, _, partial = current.partition("=")
        return [f"{option}={v}" for v in values_of(option) or () if v.startswith(partial)]
    if previous.startswith("-") and not current.startswith("-"):
        values = values_of(previous)
        if values is not None:
            return [v for v in values if v.startswith(current)]
    if current.startswith("-"):
        names = {*table.option_strings, *own}
        return sorted(n for n in names if n.startswith(current))
    if not _has_positional(words, table, own):
        return [m for m in model_ids(os.environ) if m.startswith(current)]
    return []


def candidates(prog: str, words: Sequence[str], version: str | None = None) -> list[str]:
    """What to offer for the last of ``words`` (the words after ``prog``)."""
    words = list(words) or [""]
    current = words[-1]
    if prog == SERVE_PROGRAM:
        if len(words) == 1 and current.startswith("-V"):
            return ["-V"]
        extra: dict[str, list[str] | None] = {"--version": None} if len(words) == 1 else {}
        return _vllm_candidates(words, version if version is not None else _vllm_version(words), extra)
    if len(words) == 1:
        if current.startswith("-"):
            return [o for o in ("--help", "--version", "-V", "-h") if o.startswith(current)]
        return [c for c in sorted(COMMANDS) if c.startswith(current)]  # as the door and its help list them
    command, rest = words[0], words[1:]
    if command == "completion":
        return [s for s in SHELLS if s.startswith(rest[-1])] if len(rest) == 1 else []
    own, vllm_args = _declared(command)
    if vllm_args:
        if command == "serve" and len(rest) == 1:
            own["--version"] = None
        return _vllm_candidates(rest, version if version is not None else _vllm_version(rest), own)
    previous = rest[-2] if len(rest) > 1 else ""
    if previous in own and not rest[-1].startswith("-"):
        return [v for v in own[previous] or () if v.startswith(rest[-1])]
    if rest[-1].startswith("-"):
        return sorted(o for o in own if o.startswith(rest[-1]))
    return []


def run_completion(args: Sequence[str], ctx=None) -> int:
    """``completion SHELL`` (the script) or ``completion --complete PROG -- WORDS...``; ``ctx``:
    a ``context.Context`` (None: this process's)."""
    from ..output.render import Result, render
    from .context import here

    ctx = here(ctx)
    args = list(args)
    prefix = COMMAND.prefix
    if args[:1] == ["--complete"] and len(args) >= 3 and args[2] == "--":
        try:
            found = candidates(os.path.basename(args[1]), args[3:])
        except Exception:  # completion must never print a traceback into the user's prompt
            found = []
        text = "".join(f"{c}\n" for c in found)
        # Each Tab press: whatever happens to the output, the shell gets 0 and no line of ours.
        result = Result(exit_codes.OK, prefix, text=lambda out: out.verbatim(text, failure_is_ok=True))
    elif len(args) != 1 or args[0] not in SHELLS:
        from .pipeline import usage_redactor  # only for the error line: each Tab press imports nothing more

        given = " ".join(args) or "nothing"
        result = Result(exit_codes.USAGE, prefix, error=f"expected one shell, {', '.join(SHELLS)}; got {given} "
                        f"(see: {prefix} --help)", scrub=usage_redactor(args, ctx.env or {}))
    else:
        script = SCRIPTS[args[0]]
        result = Result(exit_codes.OK, prefix, "the script", text=lambda out: out.verbatim(script))
    return render(result, as_json=False, stdout=ctx.stdout, stderr=ctx.stderr, env=ctx.env or {})


def _run(own: dict, rest: list[str], ctx=None) -> int:
    return run_completion(rest, ctx)


COMMAND = Command("completion", """Print the completion script for SHELL (bash, zsh or fish).

It completes dsv4-launch and dsv4-serve: vLLM's `serve` options for the installed release (from
the recorded option table), their values where known (--kv-cache-dtype, --tool-call-parser,
--reasoning-parser, ...), model ids (the known checkpoints and the local Hugging Face cache),
--gpus presets and --vllm-version releases.

\b
bash: dsv4-launch completion bash > ~/.local/share/bash-completion/completions/dsv4-launch
      (and the same as .../completions/dsv4-serve), or in ~/.bashrc:
      eval "$(dsv4-launch completion bash)"
zsh:  dsv4-launch completion zsh > "${fpath[1]}/_dsv4-launch" (then a new shell),
      or in ~/.zshrc after compinit: eval "$(dsv4-launch completion zsh)"
fish: dsv4-launch completion fish > ~/.config/fish/completions/dsv4-launch.fish
      (and the same as dsv4-serve.fish), or: dsv4-launch completion fish | source""",
                  (), _run, arguments="SHELL")
