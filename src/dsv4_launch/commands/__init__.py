"""The commands: each takes one ``context.Context``, runs the pipeline (``pipeline.prepare``) or
its own reading, and returns a ``Result`` that ``output/render`` prints."""

PROGRAM = "dsv4-launch"  # the console script of the commands (pyproject.toml)
SERVE_PROGRAM = "dsv4-serve"  # the console script of the drop-in (commands/serve.py)
HELP_WIDTH = 100  # every --help (click's and dsv4-serve's own) stays within these columns (tests/commands/test_cli.py)
VERSION_FLAGS = ("--version", "-V")  # dsv4-launch --version and dsv4-serve --version (alone): commands/version.py
