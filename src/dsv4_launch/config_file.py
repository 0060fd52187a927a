"""Read vLLM's ``--config`` YAML file (adapter). PyYAML is imported only when one is given."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up time; annotations are strings
if TYPE_CHECKING:
    from typing import Any

from .serve_args import ConfigFileError


def load_config_file(path: str) -> dict[str, Any]:
    """The YAML mapping vLLM would read, or ConfigFileError with a one-line reason.

    vLLM itself (``FlexibleArgumentParser.load_config_file``) uses ``yaml.safe_load`` and dies
    with a traceback on any of these problems, after its slow imports.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise ConfigFileError(f"--config {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigFileError(f"--config {path}: is a directory, not a YAML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigFileError(f"--config {path}: cannot read it ({reason})") from None

    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise ConfigFileError(f"--config {path}: not valid YAML{where} ({problem})") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise ConfigFileError(
            f"--config {path}: vLLM needs a mapping of option: value, but the file is {kind}"
        )
    return data
