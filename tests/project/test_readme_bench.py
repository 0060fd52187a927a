"""docs/performance.md's tables are the committed benchmark run, rendered by the benchmark itself:
a number there cannot drift from benchmarks/results/latest.json."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "benchmarks" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_block_is_the_committed_run():
    bench = _bench()
    document = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text(encoding="utf-8"))
    readme = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    block = readme.split(bench.README_BEGIN, 1)[1].split(bench.README_END, 1)[0]
    assert block == "\n" + bench.render(document), "run benchmarks/bench.py --json … --write-readme"


def test_committed_run_meets_the_budgets_it_states():
    # docs/performance.md says every budget is met; the run it shows must say so too, on its own numbers.
    bench = _bench()
    document = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text(encoding="utf-8"))
    limits = {b["name"]: b["limit"] for b in document["budgets"]}
    assert limits["plan --json"] == bench.BUDGET_PLAN_MS
    if "release" in document:  # a run against vLLM's recorded import set: what a real start waits is a budget
        name = f"what a real vLLM {document['release']} start waits longer ((dsv4-serve → stub+) − vllm stub+)"
        assert limits[name] == bench.BUDGET_REAL_START_MS
    for budget in document["budgets"]:
        assert budget["ok"] == (budget["value"] <= budget["limit"])
        assert budget["ok"], budget["name"]
    readme = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    where = readme.split("**Where it stands.**", 1)[1].split(bench.README_BEGIN, 1)[0]
    assert document["date"][:10] in where  # the prose speaks of the committed run, by its date


def test_render_marks_a_budget_over_its_limit():
    bench = _bench()
    document = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text(encoding="utf-8"))
    at = [b["name"] for b in document["budgets"]].index("plan --json")
    document["budgets"][at] = {**document["budgets"][at], "value": 99.0, "ok": False}
    assert "| 99.0 ms | 60.0 ms | OVER |" in bench.render(document)


def test_stub_plus_imports_exactly_the_recorded_set():
    # The stand-in for vLLM's CLI imports what the real one left in sys.modules for the release
    # measured (tools/record_vllm_imports.py), less only what is not installed where it runs.
    bench = _bench()
    names = bench.vllm_imports("0.34.0")
    recorded = json.loads((ROOT / "benchmarks" / "vllm_imports" / "vllm-0.34.0.json").read_text(encoding="utf-8"))
    assert names == [*recorded["stdlib"], *recorded["third_party"]]
    assert {"json", "argparse", "ctypes.util", "typing", "importlib.metadata"} <= set(names) and "torch" in names
    # all but the few names that are attributes, not modules (pyexpat.errors, typing.io, …)
    assert len(bench.importable(recorded["stdlib"])) >= len(recorded["stdlib"]) - 8


def test_a_run_against_the_recorded_set_renders_its_budgets_clock_and_release():
    bench = _bench()
    document = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text(encoding="utf-8"))
    for result in document["results"].values():
        result["median_cpu_ms"] = 1.5
    document.pop("releases", None)  # a run of one release, as the bench wrote them before it measured every one
    document.update(release="0.33.0", clock="cpu", note="a shared machine", reported=[
        {"name": "hand-over overhead (dsv4-serve − vllm stub)", "value": 30.0, "unit": "ms"}])
    document["budgets"].append(
        {"name": "what a real vLLM 0.33.0 start waits longer ((dsv4-serve → stub+) − vllm stub+)",
                                "value": 16.0, "unit": "ms", "limit": bench.BUDGET_REAL_START_MS, "ok": False})
    text = bench.render(document)
    assert "| 1.5 ms |" in text and "| 16.0 ms | 15.0 ms | OVER |" in text
    assert "| hand-over overhead (dsv4-serve − vllm stub) | 30.0 ms | — | reported |" in text
    assert text.rstrip().endswith("stub+ imports what vLLM 0.33.0's CLI imports; time budgets judged on CPU time "
                                  "(user + system); a shared machine")


def test_a_run_of_every_pinned_release_renders_each_budget_and_the_machine_noise():
    # benchmarks/results/check-2026-12-05-0.34.json: a run of the bench as it is now (every
    # recorded release side by side, the stand-ins in a group of their own, the floor's noise).
    bench = _bench()
    document = json.loads((ROOT / "benchmarks" / "results" / "check-2026-12-05-0.34.json").read_text(encoding="utf-8"))
    assert document["releases"] == bench.recorded_releases() == ["0.24.0", "0.29.0", "0.34.0"]
    text = bench.render(document)
    for release in document["releases"]:
        assert f"| {bench.real_start_budget(release)} |" in text
        assert f"| vllm stub+ {release}, heap frozen |" in text
    assert "| machine noise (floor median / floor min) |" in text
    assert "stub+ imports what each vLLM release's CLI imports (0.24.0, 0.29.0, 0.34.0)" in text


def test_what_a_start_waits_longer_is_paired_round_by_round():
    """A burst of other work on the machine in some rounds lands on both cases of a pair and
    leaves the paired median alone, where the difference of the two medians moves with it."""
    bench = _bench()
    base = [170.0, 171.0, 169.0, 200.0, 230.0, 228.0, 170.5]  # rounds 4-6 busy
    serve = [x + 8.0 for x in base]
    serve[3] = 150.0 + 8.0  # a busy round of the stub that the serve run of the pair missed
    a = {"median_ms": 0.0, "times_ms": serve, "cpu_times_ms": serve}
    b = {"median_ms": 0.0, "times_ms": base, "cpu_times_ms": base}
    assert bench.paired_difference(a, b, "median_ms") == 8.0
    assert bench.paired_difference(a, b, "median_cpu_ms") == 8.0
    # a run written before the runs were kept: the difference of the medians, as it was computed then
    assert bench.paired_difference({"median_ms": 60.0}, {"median_ms": 50.0}, "median_ms") == 10.0
