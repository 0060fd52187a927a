"""The layers stay layers: the pure core imports nothing but itself and the standard library;
reading vLLM's arguments is pure too; adapters gather, output prints, commands wire.

Read from the source with ``ast`` (imports inside functions count too), so a violation fails
here before it costs start-up time or purity anywhere else.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "dsv4_launch"
THIRD_PARTY = {"click", "rich", "pynvml", "yaml", "vllm", "torch", "flashinfer"}

# layer -> the layers of this package it may import
ALLOWED = {
    "core": {"core"},
    "vllm_cli": {"core", "vllm_cli"},
    "adapters": {"core", "vllm_cli", "adapters"},
    "output": {"core", "vllm_cli", "output"},
    "commands": {"core", "vllm_cli", "adapters", "output", "commands"},
    "plugin": {"core", "vllm_cli", "adapters", "output", "commands", "plugin"},
}
# third-party imports each layer may make (always inside the function that needs it)
THIRD_PARTY_ALLOWED = {
    "core": set(),
    "vllm_cli": set(),
    "adapters": {"pynvml", "yaml", "vllm"},  # vllm: only the hand-over itself
    "output": {"rich"},
    "commands": {"click"},
    "plugin": {"vllm"},
}


def imports(path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) for every import in a module of the package."""
    tree = ast.parse(path.read_text())
    here = path.relative_to(PACKAGE.parent).with_suffix("").parts
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - node.level])
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((name, node.lineno))
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE)


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_layer_imports(path):
    layer = path.relative_to(PACKAGE).parts[0]
    assert layer in ALLOWED, f"{path}: a new layer needs its row in ALLOWED"
    for name, line in imports(path):
        top = name.split(".")[0]
        if top == "dsv4_launch":
            parts = name.split(".")
            target = parts[1] if len(parts) > 1 else ""
            if target in ALLOWED:
                assert target in ALLOWED[layer], f"{path}:{line}: {layer}/ imports {name}"
        elif top in THIRD_PARTY:
            assert top in THIRD_PARTY_ALLOWED[layer], f"{path}:{line}: {layer}/ imports {top}"


def test_the_check_can_fail(tmp_path, monkeypatch):
    # A core module that imports an adapter, and one that imports click, are both caught.
    bad = PACKAGE / "core" / "_probe_for_layer_test.py"
    try:
        bad.write_text("from ..adapters import nvml\nimport click\n")
        found = imports(bad)
        assert ("dsv4_launch.adapters", 1) in found and ("click", 2) in found
        with pytest.raises(AssertionError):
            test_layer_imports(bad)
    finally:
        bad.unlink()
