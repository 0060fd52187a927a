"""The command surface as click shows it, built from each command's one declaration
(``own_options.Command``): the help, ``--version``, the errors for an unknown command. A lazily
loading group (click's ``LazyGroup`` pattern); a command it is asked to run goes through the door
(``cli.run_command``, handed in), so click never re-parses vLLM's arguments."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

import click

from . import HELP_WIDTH, PROGRAM, VERSION_FLAGS, exit_codes
from .own_options import COMMANDS, Command, load

Door = Callable[[str, Sequence[str]], int]


class DoorCommand(click.Command):
    """A declared command: click shows its help; running it is the door's."""

    def __init__(self, *args, door: Door, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.door = door

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        head = args[: args.index("--")] if "--" in args else args
        if self.get_help_option(ctx) is not None and any(a in ctx.help_option_names for a in head):
            return super().parse_args(ctx, ["--help"])  # prints the help and exits
        ctx.meta["dsv4_launch.args"] = list(args)
        return []

    def invoke(self, ctx: click.Context) -> None:
        ctx.exit(self.door(self.name or "", ctx.meta.get("dsv4_launch.args", [])))


class LazyGroup(click.Group):
    """``dsv4-launch``: the commands of ``COMMANDS``, each imported when asked for."""

    def __init__(self, *args, door: Door, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.door = door

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        return to_click(load(cmd_name), self.door)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)


def to_click(command: Command, door: Door) -> click.Command:
    """click's view of a declared command: its options, arguments and help."""
    params: list[click.Parameter] = []
    for option in command.options:
        if option.metavar:
            params.append(click.Option([option.name], metavar=option.metavar, help=option.help,
                                       default=option.default, show_default=option.default is not None))
        else:
            params.append(click.Option([option.name], is_flag=True, help=option.help))
    if command.arguments:
        params.append(click.Argument(["arguments"], nargs=-1, metavar=command.arguments))
    help_names = [] if command.name == "serve" else ["-h", "--help"]  # dsv4-serve: --help is vLLM's (and ours first)
    settings = {"max_content_width": HELP_WIDTH, "help_option_names": help_names}
    return DoorCommand(command.name, params=params, help=command.help, context_settings=settings,
                       add_help_option=command.name != "serve", door=door)


def _version(ctx: click.Context, _param, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from .version import run_version

        ctx.exit(run_version(PROGRAM))


def group(door: Door) -> LazyGroup:
    """``dsv4-launch`` itself."""
    return LazyGroup(
        PROGRAM,
        door=door,
        help="Run DeepSeek-V4 on vLLM without the known start-up crashes.\n\n"
             "`dsv4-launch serve ARGS` (or `dsv4-serve ARGS`) takes exactly the arguments of `vllm serve`, "
             "fixes the settings vLLM is known to crash on, says so, and runs vLLM.",
        params=[click.Option(list(VERSION_FLAGS[::-1]), is_flag=True, expose_value=False, is_eager=True,
                             callback=_version, help="Show dsv4-launch's version, the vLLM it would run (and where) "
                             "and Python's, then exit.")],
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": HELP_WIDTH},
    )


def run_click(args: list[str], door: Door) -> int:
    try:
        group(door).main(args=args, prog_name=PROGRAM, standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except OSError:
        # The help or an error that stdout/stderr cannot take (a full disk): decided where every command's
        # broken stream is (output/render.finish: one line and 74; click itself handles a closed pipe).
        import sys

        from ..output.render import finish

        return finish(False, exit_codes.OK, sys.stdout, sys.stderr, {}, PROGRAM, "the help")
    return exit_codes.OK
