"""Run the real-vLLM oracle suite release by release and write the release matrix.

    python3 tools/oracle_sweep.py [--releases 0.24.0 0.25.0 …] [--tables] [--out docs/release-matrix.md]
    python3 tools/oracle_sweep.py --render     # rows changed, outcomes not: rewrite the matrix only
    python3 tools/oracle_sweep.py --releases 0.33.0 --venv 0.33.0=$(.ci/vllm-venv.sh 0.33.0)  # reuse a venv

For each release: a fresh virtual environment (one at a time, deleted after: ~9 GB each) with
that vLLM from the package index, dsv4-launch from this checkout, then
``pytest -m vllm_real tests/vllm_real`` (and, with ``--tables``, tools/gen_vllm_options.py to
re-record the option table). The outcomes of tests marked ``@pytest.mark.rule("id")`` say
which rule rows vLLM's own code confirmed on that release; the rest of each row's status comes
from the row itself (cited file:line, or not applicable to that release). The matrix is written
to docs/release-matrix.md, which is committed.

About 4–5 minutes per release on a 2-core machine (222–294 s in the last sweep; most of it the
install). Needs network access to the package index.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dsv4_launch.core.rules.engine import CITED, CONFIRMED  # noqa: E402
from dsv4_launch.core.rules.plan import RULES  # noqa: E402
from dsv4_launch.core.rules.registry import DOCTOR_RULES  # noqa: E402
from dsv4_launch.core.vllm.releases import CI_RELEASES, VERIFIED_RELEASES  # noqa: E402

RELEASES = VERIFIED_RELEASES


def sh(cmd, log, env=None, cwd=ROOT) -> int:
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(map(str, cmd))}\n")
        out.flush()
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd).returncode


def run_release(release: str, work: Path, tables: bool, existing: Path | None = None) -> dict:
    """``existing``: a venv that already holds this vLLM (CI's cache, .ci/vllm-venv.sh): used as
    it is, with this checkout first on PYTHONPATH, and kept."""
    venv = existing or work / f"vllm-{release}"
    log = work / f"{release}.log"
    report = work / f"{release}.json"
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    started = time.monotonic()
    result = {"release": release, "installed": False, "tests": [], "commit": checkout_commit()}
    try:
        py = str(venv / "bin" / "python")
        if existing is None:
            if sh([sys.executable, "-m", "venv", str(venv)], log, env) != 0:
                return result
            if sh([py, "-m", "pip", "install", "--no-cache-dir", f"vllm=={release}", "-r",
                   str(ROOT / ".ci/requirements-test.txt")], log, env) != 0:
                return result
            if sh([py, "-m", "pip", "install", "--no-cache-dir", "--no-deps", "-e", str(ROOT)], log, env) != 0:
                return result
        else:
            env["PYTHONPATH"] = str(ROOT / "src")
        result["installed"] = True
        test_env = {**env, "DSV4_REQUIRE_VLLM": "1", "VLLM_TARGET_DEVICE": "cpu", "DSV4_ORACLE_REPORT": str(report),
                    "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
        if tables:
            result["table"] = sh([py, str(ROOT / "tools/gen_vllm_options.py")], log, test_env) == 0
        result["returncode"] = sh([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "vllm_real",
                                   "tests/vllm_real", "-W", "ignore::DeprecationWarning"], log, test_env)
        if report.exists():
            result["tests"] = json.loads(report.read_text())
    finally:
        if existing is None:
            shutil.rmtree(venv, ignore_errors=True)
        result["seconds"] = round(time.monotonic() - started)
    return result


def checkout_commit() -> str:
    """The commit the oracle suite runs from (``+changes`` when the checkout has uncommitted ones)."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    # the sweep's own output (the matrix and its results) is not a change to what it runs
    changed = [line for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
               if not line.split(maxsplit=1)[-1].startswith("docs/release-matrix.")]
    return commit + ("+changes" if changed else "")


def status(rule, result: dict) -> str:
    """One cell: what is known about ``rule`` on ``result['release']``."""
    release = result["release"]
    if rule.vllm.contains(release) is False:
        return "n/a"
    oracles = [t for t in result["tests"] if rule.id in t["rules"]]
    if any(t["outcome"] == "failed" for t in oracles):
        return "**FAILED**"
    if oracles and all(t["outcome"] == "passed" for t in oracles):
        return "confirmed"
    if rule.evidence == CONFIRMED:
        return "confirmed (no oracle ran)" if not result["installed"] else "not run"
    return "cited" if rule.evidence == CITED else rule.evidence


def matrix(results: list[dict]) -> str:
    releases = [r["release"] for r in results]
    lines = [
        "# Release matrix: every rule row × every vLLM release",
        "",
        "Written by `python3 tools/oracle_sweep.py` (do not edit by hand). **confirmed**: an oracle test",
        "called that release's own vLLM code on the CPU and it behaved as the row says; **cited**: the",
        "row cites the failing line for the releases in its range (docs/rules-evidence.md); **derived** /",
        "**reported**: the row only warns; **n/a**: the release is outside the row's range.",
        "",
        "Oracle suite run from commit " + ", ".join(sorted({r.get("commit") or "not recorded" for r in results}))
        + f"; rows as of commit {checkout_commit()}. CI runs the same suite on every change for "
        f"vLLM {', '.join(CI_RELEASES)} (CI_RELEASES in src/dsv4_launch/core/vllm/releases.py).",
        "",
        "| oracle suite | " + " | ".join(releases) + " |",
        "|---|" + "---|" * len(releases),
    ]
    cells = []
    for r in results:
        if not r["installed"]:
            cells.append("not installed")
            continue
        passed = sum(t["outcome"] == "passed" for t in r["tests"])
        failed = sum(t["outcome"] == "failed" for t in r["tests"])
        cells.append(f"{passed} passed" + (f", **{failed} failed**" if failed else ""))
    lines.append("| tests/vllm_real | " + " | ".join(cells) + " |")
    lines += ["", "| rule | " + " | ".join(releases) + " |", "|---|" + "---|" * len(releases)]
    for rule in (*RULES, *DOCTOR_RULES):
        lines.append(f"| `{rule.id}` | " + " | ".join(status(rule, r) for r in results) + " |")
    plugin = []
    for r in results:
        tests = [t for t in r["tests"] if "test_plugin.py" in t["test"]]
        ok = tests and all(t["outcome"] == "passed" for t in tests)
        plugin.append("verified" if ok else ("**FAILED**" if tests else "not run"))
    lines.append("| vLLM plugin (tests/vllm_real/test_plugin.py) | " + " | ".join(plugin) + " |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="+", default=list(RELEASES))
    parser.add_argument("--tables", action="store_true", help="re-record each release's option table too")
    parser.add_argument("--out", default=str(ROOT / "docs/release-matrix.md"))
    parser.add_argument("--results", default=str(ROOT / "docs/release-matrix.json"),
                        help="the raw outcomes (committed beside the matrix)")
    parser.add_argument("--work", help="where the venvs and logs go (default: a temporary directory)")
    parser.add_argument("--venv", action="append", default=[], metavar="RELEASE=PATH",
                        help="use this existing venv for RELEASE (e.g. CI's cached one) instead of a new one")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite the matrix from --results (after a row changed), running nothing")
    opts = parser.parse_args()
    if opts.render:
        Path(opts.out).write_text(matrix(json.loads(Path(opts.results).read_text())))
        return
    work = Path(opts.work or tempfile.mkdtemp(prefix="dsv4-oracle-"))
    work.mkdir(parents=True, exist_ok=True)
    previous = {}
    if Path(opts.results).exists():
        previous = {r["release"]: r for r in json.loads(Path(opts.results).read_text())}
    for release in opts.releases:
        print(f"oracle sweep: vLLM {release} (log: {work / (release + '.log')})", file=sys.stderr, flush=True)
        existing = dict(v.split("=", 1) for v in opts.venv).get(release)
        previous[release] = run_release(release, work, opts.tables, Path(existing) if existing else None)
        r = previous[release]
        print(f"oracle sweep: vLLM {release}: installed={r['installed']} rc={r.get('returncode')} "
              f"{r['seconds']} s", file=sys.stderr, flush=True)
        ordered = [previous[v] for v in sorted(previous, key=lambda v: tuple(int(p) for p in v.split(".")))]
        Path(opts.results).write_text(json.dumps(ordered, indent=1) + "\n")
        Path(opts.out).write_text(matrix(ordered))


if __name__ == "__main__":
    main()
