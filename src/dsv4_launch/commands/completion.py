"""Shell completion: ``dsv4-launch completion bash|zsh|fish`` prints a script for both commands.

The scripts ask ``dsv4-launch completion --complete PROG -- WORDS...`` (the words after the
program name, the last one being completed; empty for a fresh word) and offer what it prints,
one candidate a line, falling back to file names when it prints nothing. For ``dsv4-serve`` (and
the vLLM part of ``serve``/``plan``/``doctor``/``fit``) the candidates are vLLM's ``serve``
options from the recorded option table (``data/serve-options-*.json``) of the installed vLLM
(found as the hand-over finds it, not imported), the nearest recorded one when that release has
none, or the release given with ``--vllm-version``; values where the table knows them (argparse
choices, and the values recorded for the settings the rules read, such as
``--kv-cache-dtype``). Install, per shell:

* bash: ``dsv4-launch completion bash > ~/.local/share/bash-completion/completions/dsv4-launch``
  and the same file as ``.../completions/dsv4-serve`` (bash-completion loads one file per
  command), or ``eval "$(dsv4-launch completion bash)"`` in ``~/.bashrc``;
* zsh: ``dsv4-launch completion zsh > "${fpath[1]}/_dsv4-launch"`` (a folder on ``$fpath``, then a
  new shell), or ``eval "$(dsv4-launch completion zsh)"`` in ``~/.zshrc`` after ``compinit``;
* fish: ``dsv4-launch completion fish > ~/.config/fish/completions/dsv4-launch.fish`` and the same
  as ``dsv4-serve.fish``, or ``dsv4-launch completion fish | source`` in ``config.fish``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from . import exit_codes

SHELLS = ("bash", "zsh", "fish")
# dsv4-launch's commands that take `vllm serve` arguments, with their own options
VLLM_COMMANDS = ("serve", "plan", "doctor", "fit")

BASH = r"""# dsv4-launch and dsv4-serve completion for bash (dsv4-launch completion bash).
# Install: dsv4-launch completion bash > ~/.local/share/bash-completion/completions/dsv4-launch
#          (and the same file as .../completions/dsv4-serve), or in ~/.bashrc:
#          eval "$(dsv4-launch completion bash)"
_dsv4_launch_complete() {
    local prog="${COMP_WORDS[0]##*/}"
    COMPREPLY=()
    mapfile -t COMPREPLY < <(command dsv4-launch completion --complete "$prog" -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
}
complete -o default -F _dsv4_launch_complete dsv4-launch dsv4-serve
"""

ZSH = r"""#compdef dsv4-launch dsv4-serve
# dsv4-launch and dsv4-serve completion for zsh (dsv4-launch completion zsh).
# Install: dsv4-launch completion zsh > "${fpath[1]}/_dsv4-launch" (then start a new shell),
#          or in ~/.zshrc after compinit: eval "$(dsv4-launch completion zsh)"
_dsv4_launch() {
    local -a candidates
    candidates=("${(@f)$(command dsv4-launch completion --complete "${words[1]:t}" -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
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


def _launch_commands() -> list[str]:
    """dsv4-launch's commands, as its click group lists them (help renders from the same)."""
    import click

    from .click_app import cli

    return sorted({*cli.list_commands(click.Context(cli)), "completion"})


def _click_options(command: str) -> list[str]:
    from .click_app import cli

    cmd = cli.commands.get(command)
    return sorted(o for p in (cmd.params if cmd else ()) for o in (*p.opts, *p.secondary_opts) if o.startswith("-"))


def _vllm_version(words: Sequence[str]) -> str | None:
    for i, word in enumerate(words):
        if word == "--vllm-version" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--vllm-version="):
            return word.split("=", 1)[1]
    from ..adapters.vllm_install import find_vllm

    return find_vllm(os.environ).version


def _vllm_candidates(words: Sequence[str], version: str | None, own: dict[str, list[str] | None]) -> list[str]:
    """Candidates for the last word of ``vllm serve`` arguments (``words``), plus a command's
    own options (name → its values, None for a flag or a free value)."""
    from ..vllm_cli.option_table import load_table

    table = load_table(version)
    current = words[-1] if words else ""
    previous = words[-2] if len(words) > 1 else ""
    if "--" in words[:-1]:
        own = {}  # after `--` everything is vLLM's

    def values_of(option: str) -> list[str] | None:
        if option in own:
            return own[option]
        for action in table.actions:
            if option in action.options and action.nargs != 0:
                choices = action.choices or table.accepted_values.get(action.dest)
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
    return []


def candidates(prog: str, words: Sequence[str], version: str | None = None) -> list[str]:
    """What to offer for the last of ``words`` (the words after ``prog``)."""
    words = list(words) or [""]
    current = words[-1]
    if prog == "dsv4-serve":
        if len(words) == 1 and current.startswith("-V"):
            return ["-V"]
        extra: dict[str, list[str] | None] = {"--version": None} if len(words) == 1 else {}
        return _vllm_candidates(words, version if version is not None else _vllm_version(words), extra)
    if len(words) == 1:
        if current.startswith("-"):
            return [o for o in ("--help", "--version", "-V", "-h") if o.startswith(current)]
        return [c for c in _launch_commands() if c.startswith(current)]
    command, rest = words[0], words[1:]
    if command == "completion":
        return [s for s in SHELLS if s.startswith(rest[-1])] if len(rest) == 1 else []
    if command in VLLM_COMMANDS:
        from ..vllm_cli.option_table import available_versions
        from .cli import OWN_OPTIONS

        own: dict[str, list[str] | None] = {o: None for o in OWN_OPTIONS.get(command, {})}
        if "--vllm-version" in own:
            own["--vllm-version"] = list(available_versions())
        if command == "serve" and len(rest) == 1:
            own["--version"] = None
        return _vllm_candidates(rest, version if version is not None else _vllm_version(rest), own)
    if rest[-1].startswith("-"):
        return [o for o in _click_options(command) if o.startswith(rest[-1])]
    return []


def run_completion(args: Sequence[str], ctx=None) -> int:
    """``completion SHELL`` (the script) or ``completion --complete PROG -- WORDS...``; ``ctx``:
    a ``context.Context`` (None: this process's)."""
    from ..output.lines import safe_write
    from ..output.render import Result, render
    from .context import here

    ctx = here(ctx)
    args = list(args)
    prefix = "dsv4-launch completion"
    if args[:1] == ["--complete"] and len(args) >= 3 and args[2] == "--":
        try:
            found = candidates(os.path.basename(args[1]), args[3:])
        except Exception:  # completion must never print a traceback into the user's prompt
            found = []
        text = "".join(f"{c}\n" for c in found)
        # Each Tab press: whatever happens to the output, the shell gets 0 and no line of ours.
        result = Result(exit_codes.OK, prefix, text=lambda stream, env: safe_write(stream, text) or True)
    elif len(args) != 1 or args[0] not in SHELLS:
        given = " ".join(args) or "nothing"
        result = Result(exit_codes.USAGE, prefix, error=f"expected one shell, {', '.join(SHELLS)}; got {given} "
                        "(see: dsv4-launch completion --help)")
    else:
        script = SCRIPTS[args[0]]
        result = Result(exit_codes.OK, prefix, "the script", text=lambda stream, env: safe_write(stream, script))
    return render(result, as_json=False, stdout=ctx.stdout, stderr=ctx.stderr, env=ctx.env or {})

