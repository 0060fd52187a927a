"""The generated tables of README.md and docs/, made from the rule rows and the settings (so the
documentation cannot drift from what the code does). A table lives between
``<!-- table:NAME -->`` and ``<!-- /table -->`` in whichever of those files holds its markers:
the KV decision, the rule rows and doctor's rows in docs/rules.md, the environment variables in
README.md.

    python tools/readme_tables.py          # print the tables
    python tools/readme_tables.py --write  # rewrite them between their markers, in every file

tests/rules/test_rules.py fails when a file differs from what this writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dsv4_launch.core.gpus import family_words  # noqa: E402
from dsv4_launch.core.model import FAMILY_NAMES  # noqa: E402
from dsv4_launch.core.rules.engine import words  # noqa: E402
from dsv4_launch.core.rules.kv_paths import FIX_REFERENCE, KV_PATHS, PLAIN_ROWS  # noqa: E402
from dsv4_launch.core.rules.plan import RULES  # noqa: E402
from dsv4_launch.core.rules.registry import DOCTOR_RULES  # noqa: E402
from dsv4_launch.core.settings import ENV_VARS  # noqa: E402

LEVEL_WORDS = {"refuse": "**refuses** (exit 2)", "warn": "warns", "fail": "doctor **FAIL**"}


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# The files whose tables this writes (a file without markers is left as it is).
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def kv_rows() -> list[tuple[str, str, str, str]]:
    """The "How it decides" table, read from KV_PATHS: (GPUs, backend, vLLM, action)."""
    rows = []
    for path in KV_PATHS:
        backends = " or ".join(
            "default" if b is None else f"`{b}`" for b in sorted(path.backends, key=lambda b: (b is not None, b or ""))
        )
        gpus = family_words(path.families)
        if path.layout == PLAIN_ROWS:
            rows.append((gpus, backends, "all",
                         "left alone: plain rows, where `auto` = bf16 and `fp8` would change the format"))
        elif path.auto_crashes is None:
            continue  # an fp8_ds_mla path with no crash range: nothing to say (none today)
        elif path.always_rewrite:
            rows.append((gpus, backends, "all", "`auto` → `fp8` (fp8_ds_mla is the only layout; vLLM ≥ "
                         f"{path.auto_crashes.before} picks the same)"))
        else:
            rows.append((gpus, backends, path.auto_crashes.short() + " or unknown", "`auto` → `fp8`"))
            rows.append((gpus, backends, f"≥ {path.auto_crashes.before}",
                         f"left alone: vLLM resolves `auto` itself ({FIX_REFERENCE}), said in one line"))
    return rows


def kv_table() -> str:
    lines = ["| GPU (compute capability) | attention backend | vLLM | what dsv4-serve does |", "|---|---|---|---|"]
    lines += [f"| {g} | {b} | {v} | {a} |" for g, b, v, a in kv_rows()]
    return "\n".join(lines)


def rules_table(rules) -> str:
    lines = ["| rule | configuration | models | GPUs | vLLM | what vLLM does | dsv4-launch | evidence | reference |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rules:
        models = ", ".join(FAMILY_NAMES[m] for m in sorted(r.models))
        gpus = family_words(r.families) if r.families else "any"
        lines.append(
            f"| `{r.id}` | {cell(words(r, 'title'))} | {models} | {gpus} | {cell(r.vllm.short())} | "
            f"{cell(words(r, 'effect'))} | "
            f"{LEVEL_WORDS[r.level]} | {r.evidence} | {cell(r.reference)} |"
        )
    return "\n".join(lines)


def env_table() -> str:
    lines = ["| variable | effect |", "|---|---|"]
    lines += [f"| `{name}` | {cell(effect)} |" for name, effect in ENV_VARS]
    return "\n".join(lines)


TABLES = {
    "kv": kv_table,
    "rules": lambda: rules_table(RULES),
    "doctor-rules": lambda: rules_table(DOCTOR_RULES),
    "env": env_table,
}


def render(text: str) -> str:
    """``text`` with every ``<!-- table:NAME -->`` … ``<!-- /table -->`` block regenerated."""
    def fill(match):
        name = match.group(1)
        return f"<!-- table:{name} -->\n{TABLES[name]()}\n<!-- /table -->"

    return re.sub(r"<!-- table:([\w-]+) -->\n.*?<!-- /table -->", fill, text, flags=re.S)


def tables_in(text: str) -> list[str]:
    """The names of the tables a file holds, in order."""
    return re.findall(r"<!-- table:([\w-]+) -->", text)


def main() -> None:
    if "--write" in sys.argv[1:]:
        for path in FILES:
            text = path.read_text(encoding="utf-8")
            if tables_in(text):
                path.write_text(render(text), encoding="utf-8")
        return
    for name, make in TABLES.items():
        print(f"<!-- table:{name} -->\n{make()}\n<!-- /table -->\n")


if __name__ == "__main__":
    main()
