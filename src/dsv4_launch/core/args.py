"""What ``vllm serve`` makes of its arguments, as a value the core reads (``Facts.args``).

Two readings fill it, both outside the core: ``vllm_cli/serve_args.read_serve_args`` (the
replica of vLLM's argument parsing, for dsv4-serve, plan, doctor and fit) and
``vllm_cli/engine_args.read_engine_args`` (vLLM's own ``EngineArgs``, for the plugin).
"""

from __future__ import annotations

from collections.abc import Mapping

from .records import EMPTY, Record


class SecretSpans(Record):
    """Positions in the user's argv whose text is a secret: ``(token index, WHOLE|AFTER_EQ)``."""

    spans: frozenset[tuple[int, str]] = frozenset()


class ServeArgs(Record):
    """What ``vllm serve`` will make of an argument list."""

    tokens: tuple[str, ...]  # the user's arguments after ``serve``, untouched
    values: Mapping[str, object] = EMPTY  # dest -> effective value
    cli_values: Mapping[str, object] = EMPTY  # from the command line alone
    model: str | None = None
    model_source: str | None = None  # "positional", "--model", "config file", "vLLM default", "engine"
    config_path: str | None = None  # the --config file that vLLM reads
    unknown_options: tuple[str, ...] = ()  # option names this vLLM's table does not know
    # An unknown option right before the word read as the model: if it takes a value, that word
    # is its value and the model is another (the option, else "").
    model_doubt: str = ""
    rejection: str | None = None  # why vLLM will refuse these arguments, if it will
    unread: str | None = None  # why some arguments could not be seen (a --config left to vLLM)
    warnings: tuple[str, ...] = ()
    help_requested: bool = False
    secrets: SecretSpans = SecretSpans()
    file_secrets: tuple[str, ...] = ()  # values of the --config file's credential keys (never printed)

    def value(self, dest: str) -> object:
        return self.values.get(dest)

    def source(self, dest: str) -> str | None:
        """Where the effective value of ``dest`` came from."""
        if self.values.get(dest) is None:
            return None
        if self.cli_values.get(dest) is not None:
            return "command line"
        return "config file"
