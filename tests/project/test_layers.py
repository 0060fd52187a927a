"""The layers stay layers: the pure core imports nothing but itself and the standard library;
reading vLLM's arguments is pure too; adapters gather, output prints, commands wire.

Read from the source with ``ast`` (imports inside functions count too), so a violation fails
here before it costs start-up time or purity anywhere else.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "dsv4_launch"
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
    return imports_at(path, PACKAGE.parent)


def imports_at(path: Path, root: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    here = path.relative_to(root).with_suffix("").parts
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
    check_layers(path, imports(path), layer)


def check_layers(path: Path, found: list[tuple[str, int]], layer: str) -> None:
    for name, line in found:
        top = name.split(".")[0]
        if top == "dsv4_launch":
            parts = name.split(".")
            target = parts[1] if len(parts) > 1 else ""
            if target in ALLOWED:
                assert target in ALLOWED[layer], f"{path}:{line}: {layer}/ imports {name}"
        elif top in THIRD_PARTY:
            assert top in THIRD_PARTY_ALLOWED[layer], f"{path}:{line}: {layer}/ imports {top}"


# commands/ gather through one pipeline (commands/pipeline.py → adapters/gather.py): serve, plan,
# doctor and fit read nothing of the machine themselves. The modules that may import adapters/
# (module -> the adapters they may import) are the pipeline, and those whose own act needs one.
ADAPTER_USERS = {
    "pipeline": None,  # any: it gathers for every command
    "serve": {"handover"},  # its act: handing the arguments over to vLLM
    "check": {"http_client"},  # asking a running server
    "explain": {"log_reader", "vllm_install"},  # reading the log; the log's release as the vLLM planned for
    "completion": {"vllm_install", "checkpoints", "model_files"},  # the installed release's options, model ids
    "version": {"vllm_install"},  # which vLLM is installed, without importing it
    "own_options": {"vllm_install", "nvml"},  # --vllm-version's release; --gpus N of this machine's first GPU
    "context": {"vllm_install"},  # a type only (under TYPE_CHECKING)
}
COMMANDS = sorted((PACKAGE / "commands").glob("*.py"))


@pytest.mark.parametrize("path", COMMANDS, ids=[p.stem for p in COMMANDS])
def test_commands_gather_through_the_pipeline(path):
    check_adapter_users(path, imports(path))


def check_adapter_users(path: Path, found: list[tuple[str, int]]) -> None:
    allowed = ADAPTER_USERS.get(path.stem, set())
    for name, line in found:
        parts = name.split(".")
        if parts[:2] == ["dsv4_launch", "adapters"]:
            adapter = parts[2] if len(parts) > 2 else ""
            assert allowed is None or adapter in allowed, f"{path}:{line}: commands/{path.stem} imports {name}"


# What a command module may import of commands/ besides the shared modules: no command imports
# another (doctor once took plan_document from commands/plan; it lives in output/documents.py).
SHARED_COMMAND_MODULES = {"pipeline", "context", "own_options", "exit_codes", "collector"}
COMMAND_IMPORTS = {
    "cli": None,  # the door: it loads every command by name
    "click_app": None,  # help and errors for the door
    "serve": {"version"},  # dsv4-serve --version
}


@pytest.mark.parametrize("path", COMMANDS, ids=[p.stem for p in COMMANDS])
def test_no_command_imports_another(path):
    check_command_imports(path, imports(path))


def check_command_imports(path: Path, found: list[tuple[str, int]]) -> None:
    if path.stem in SHARED_COMMAND_MODULES:
        allowed: set[str] | None = SHARED_COMMAND_MODULES
    else:
        extra = COMMAND_IMPORTS.get(path.stem, set())
        allowed = None if extra is None else SHARED_COMMAND_MODULES | extra
    for name, line in found:
        parts = name.split(".")
        if parts[:2] == ["dsv4_launch", "commands"] and len(parts) > 2 and allowed is not None:
            assert parts[2] in allowed, f"{path}:{line}: commands/{path.stem} imports {name}"


def test_the_command_import_check_can_fail(tmp_path):
    bad = tmp_path / "dsv4_launch" / "commands" / "doctor.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from .pipeline import prepare\nfrom .plan import plan_document\n")
    with pytest.raises(AssertionError, match="commands/doctor imports dsv4_launch.commands.plan"):
        check_command_imports(bad, imports_at(bad, tmp_path))


def test_the_adapter_check_can_fail(tmp_path):
    """doctor once imported five adapters itself (review 4 §8.2): a copy of that is caught."""
    bad = tmp_path / "dsv4_launch" / "commands" / "doctor.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from ..adapters.nvml import read_gpus\ndef f():\n    from ..adapters.installer import x\n")
    found = imports_at(bad, tmp_path)
    assert found == [("dsv4_launch.adapters.nvml", 1), ("dsv4_launch.adapters.installer", 3)]
    with pytest.raises(AssertionError, match="commands/doctor imports dsv4_launch.adapters.nvml"):
        check_adapter_users(bad, found)
    serve = bad.with_name("serve.py")
    serve.write_text("from ..adapters.handover import hand_over\nfrom ..adapters.nvml import read_gpus\n")
    with pytest.raises(AssertionError, match="adapters.nvml"):
        check_adapter_users(serve, imports_at(serve, tmp_path))


# core/'s rooms (by product) -> the rooms they may import; the fact modules lie flat in core/
# ("facts") and import only each other. Rules may use memory; nothing in core uses explain or check.
# The vLLM room (per-release facts about vLLM's code) imports only versions and records.
ROOMS = {
    "facts": {"facts"},
    "vllm": {"vllm", "facts"},
    "memory": {"facts", "memory", "vllm"},
    "rules": {"facts", "memory", "rules", "vllm"},
    "explain": {"facts", "explain", "vllm"},
    "check": {"facts", "check", "vllm"},
}
VLLM_ROOM_IMPORTS = {"dsv4_launch.core.versions", "dsv4_launch.core.records"}  # its only flat imports


def room_of(name: str) -> str | None:
    """The room of an absolute module name inside dsv4_launch.core, or None outside core."""
    parts = name.split(".")
    if parts[:2] != ["dsv4_launch", "core"]:
        return None
    if len(parts) > 3 and parts[2] in ROOMS:
        return parts[2]
    if len(parts) == 3 and parts[2] in ROOMS and (PACKAGE / "core" / parts[2]).is_dir():
        return parts[2]
    return "facts"


CORE = sorted((PACKAGE / "core").rglob("*.py"))


@pytest.mark.parametrize("path", CORE, ids=[str(p.relative_to(PACKAGE)) for p in CORE])
def test_core_rooms(path):
    here = room_of(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    assert here in ROOMS, f"{path}: a new room needs its row in ROOMS"
    for name, line in imports(path):
        there = room_of(name)
        if there is not None:
            assert there in ROOMS[here], f"{path}:{line}: core/{here} imports {name} (core/{there})"
            if here == "vllm" and there == "facts":
                assert name in VLLM_ROOM_IMPORTS, f"{path}:{line}: core/vllm imports {name}"


def import_graph(root: Path, *, top_level_only: bool) -> dict[str, set[str]]:
    """module -> the package modules it imports (``from . import x`` counts as importing x)."""

    def name_of(path: Path) -> str:
        return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")

    known = {name_of(p) for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        found: set[str] = set()
        for node in tree.body if top_level_only else ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                (name, _), = imports_at_node(path, node)
                found |= {f"{name}.{a.name}" for a in node.names} | {name}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name_of(path)] = (found & known) - {name_of(path)}
    return graph


def imports_at_node(path: Path, node: ast.ImportFrom) -> list[tuple[str, int]]:
    here = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if node.level:
        return [(".".join(list(here[: len(here) - node.level]) + ([node.module] if node.module else [])), node.lineno)]
    return [(node.module or "", node.lineno)]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_in_the_core():
    """core/ imports form no cycle, counting imports inside functions too (memory.py ↔
    rules_memory.py once did)."""
    assert cycles(import_graph(PACKAGE / "core", top_level_only=False)) == []


def _without_own_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` less the edges from a module to the packages that contain it (``from . import
    MARK`` in plugin/kv_patch.py): Python initialises a package before any of its submodules, so
    such an import reads a finished module — unless the package imports the submodule at import
    time, which the top-level graph (every edge kept) catches."""
    return {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in graph.items()}


def test_no_import_cycle_in_the_package():
    """The whole package imports in no loop, counting imports inside functions too: commands/
    once had a five-file loop (cli, click_app, check, explain, completion: review 4 §1); the door
    (commands/cli.py) now loads a command by its name in own_options.COMMANDS, and the commands
    import only the declarations (own_options.py)."""
    assert cycles(_without_own_packages(import_graph(PACKAGE, top_level_only=False))) == []
    assert cycles(import_graph(PACKAGE, top_level_only=True)) == []


def test_the_package_cycle_check_sees_a_loop_inside_functions(tmp_path):
    """The loop review 4 found, rebuilt in a copy: the check finds it (imports inside functions count)."""
    root = tmp_path / "dsv4_launch"
    (root / "commands").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "commands" / "__init__.py").write_text("")
    (root / "commands" / "cli.py").write_text("def f():\n    from .click_app import run\n")
    (root / "commands" / "click_app.py").write_text("def run():\n    from .check import x\n")
    (root / "commands" / "check.py").write_text("x = 1\ndef g():\n    from .cli import f\n")
    found = cycles(_without_own_packages(import_graph_at(root)))
    assert found == [["dsv4_launch.commands.check", "dsv4_launch.commands.cli", "dsv4_launch.commands.click_app"]]


def import_graph_at(root: Path) -> dict[str, set[str]]:
    """``import_graph`` of a package copy under another folder (every import counted)."""
    known = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
             for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        here = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(here).removesuffix(".__init__")
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(list(here[: len(here) - node.level]) + ([node.module] if node.module else [])) \
                    if node.level else (node.module or "")
                found |= {f"{base}.{a.name}" for a in node.names} | {base}
        graph[name] = (found & known) - {name}
    return graph


def test_the_cycle_check_can_fail():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_check_can_fail(tmp_path):
    # A core module that imports an adapter, and one that imports click, are both caught; the
    # probe lives in a copy of the package's path under tmp_path, so nothing is written into src/.
    bad = tmp_path / "dsv4_launch" / "core" / "_probe_for_layer_test.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from ..adapters import nvml\nimport click\nfrom .explain.signatures import Signature\n")
    found = imports_at(bad, tmp_path)
    assert ("dsv4_launch.adapters", 1) in found and ("click", 2) in found
    assert ("dsv4_launch.core.explain.signatures", 3) in found
    with pytest.raises(AssertionError):
        check_layers(bad, found, "core")
    # a memory module that reads the rules' room is caught too
    assert room_of("dsv4_launch.core.rules.engine") not in ROOMS["memory"]
    assert room_of("dsv4_launch.core.explain.signatures") not in ROOMS["rules"]
    # the vLLM room reads no room but its own, and of the flat modules only versions and records
    assert room_of("dsv4_launch.core.vllm.facts") == "vllm" and "rules" not in ROOMS["vllm"]
    assert "dsv4_launch.core.gpus" not in VLLM_ROOM_IMPORTS
