"""README's tables, made from the rule rows (so README cannot drift from what the code does).

    python tools/readme_tables.py          # print the tables
    python tools/readme_tables.py --write  # rewrite them in README.md between their markers

tests/test_readme.py fails when README.md differs from what this writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dsv4_launch.core.gpus import family_words  # noqa: E402
from dsv4_launch.core.model import FAMILY_NAMES  # noqa: E402
from dsv4_launch.core.rules.doctor_rows import DOCTOR_RULES  # noqa: E402
from dsv4_launch.core.rules.engine import words  # noqa: E402
from dsv4_launch.core.rules.kv_paths import readme_rows  # noqa: E402
from dsv4_launch.core.rules.plan import RULES  # noqa: E402
from dsv4_launch.core.settings import ENV_VARS  # noqa: E402

LEVEL_WORDS = {"refuse": "**refuses** (exit 2)", "warn": "warns", "fail": "doctor **FAIL**"}


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def kv_table() -> str:
    lines = ["| GPU (compute capability) | attention backend | vLLM | what dsv4-serve does |", "|---|---|---|---|"]
    lines += [f"| {g} | {b} | {v} | {a} |" for g, b, v, a in readme_rows()]
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


def render(readme: str) -> str:
    """README with every ``<!-- table:NAME -->`` … ``<!-- /table -->`` block regenerated."""
    def fill(match):
        name = match.group(1)
        return f"<!-- table:{name} -->\n{TABLES[name]()}\n<!-- /table -->"

    return re.sub(r"<!-- table:([\w-]+) -->\n.*?<!-- /table -->", fill, readme, flags=re.S)


def main() -> None:
    path = ROOT / "README.md"
    if "--write" in sys.argv[1:]:
        path.write_text(render(path.read_text()))
        return
    for name, make in TABLES.items():
        print(f"<!-- table:{name} -->\n{make()}\n<!-- /table -->\n")


if __name__ == "__main__":
    main()
