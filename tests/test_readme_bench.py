"""README's performance tables are the committed benchmark run, rendered by the benchmark itself:
a number in the README cannot drift from benchmarks/results/latest.json."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "benchmarks" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_block_is_the_committed_run():
    bench = _bench()
    document = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(bench.README_BEGIN, 1)[1].split(bench.README_END, 1)[0]
    assert block == "\n" + bench.render(document), "run benchmarks/bench.py --json … --write-readme"


def test_committed_run_meets_the_budgets_it_states():
    # The README says every budget is met; the run it shows must say so too, on its own numbers.
    bench = _bench()
    document = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text(encoding="utf-8"))
    limits = {b["name"]: b["limit"] for b in document["budgets"]}
    assert limits["plan --json"] == bench.BUDGET_PLAN_MS
    assert limits["hand-over overhead (dsv4-serve − vllm stub)"] == bench.BUDGET_HANDOVER_MS
    for budget in document["budgets"]:
        assert budget["ok"] == (budget["value"] <= budget["limit"])
        assert budget["ok"], budget["name"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "every budget is met" in readme


def test_render_marks_a_budget_over_its_limit():
    bench = _bench()
    document = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text(encoding="utf-8"))
    document["budgets"][0] = {**document["budgets"][0], "value": 99.0, "ok": False}
    assert "| 99.0 ms | 40.0 ms | OVER |" in bench.render(document)
