#!/usr/bin/env python3
"""A new vLLM release in one command: install it, record what dsv4-launch needs of it, run the
real-vLLM oracles against it, and list exactly what a maintainer must review.

    python3 tools/new_release.py 0.34.0                        # a cached venv via .ci/vllm-venv.sh
    python3 tools/new_release.py 0.34.0 --vllm-python /opt/vllm/bin/python   # an installed vLLM
    python3 tools/new_release.py 0.34.0 --checklist-only --old-src OLD --new-src NEW

Steps (docs/releases.md says why each one):

1. vLLM X in a virtual environment: ``.ci/vllm-venv.sh X`` (cached outside the checkout, ~9 GB
   when new; a pin the index lacks is replaced as ``.ci/vllm-overrides/X.txt`` says), and this
   checkout installed into it (``pip install -e .``: the plugin oracles load dsv4-launch through its
   entry point, as vLLM does); or the interpreter given with ``--vllm-python``, where this checkout
   must already be installed (the tool checks, and names the command; it installs nothing there).
2. Its option table: ``tools/gen_vllm_options.py`` writes ``src/dsv4_launch/data/serve-options-X.json``.
3. Its import set: ``tools/record_vllm_imports.py --write`` (benchmarks/vllm_imports/vllm-X.json).
4. The oracle suite: ``pytest -m vllm_real tests/vllm_real`` in that environment, this checkout
   first on PYTHONPATH, with ``DSV4_ORACLE_AS_VERIFIED=X``: the harness judges X as a verified
   release for this run only (tests/vllm_real/site/oracle_harness.py). A failing suite does not stop
   the tool: the checklist follows, then the failing tests are named and the exit status is 1.
5. The checklist, from the fact table (core/vllm/facts.py; no reading of our source): every
   open-ended fact (carried past the newest verified release, ``NEWEST_VERIFIED``) whose
   citations at that release no longer hold in X: the anchor gone (or its file), or the cited
   lines changed (their diff), or no citation at all; then the citations to write for X where
   only the line moved, and the facts whose cited files changed elsewhere. The sources:
   ``--old-src`` / ``--new-src`` (directories holding ``vllm/``), else X's from its environment
   and the newest verified release's from the package index (``pip download``, ``*.py`` only, cached).

Nothing here adds X to the release table: after the checklist is reviewed (the facts it lists
corrected, and their citations at X written: the CI pin's citations are checked by
tests/vllm_real/test_citations.py), add X to ``VERIFIED_RELEASES`` in
src/dsv4_launch/core/vllm/releases.py (tests/releases/test_vllm_releases.py fails until the recorded option
tables and the table agree) and run ``tools/oracle_sweep.py --releases X`` for the matrix.

Each step says how long it took. Exit status: 0 done (the checklist may list items: that is the
review), 1 a step failed, 2 usage.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dsv4_launch.core.versions import parse_version, same_release  # noqa: E402
from dsv4_launch.core.vllm.facts import FACTS, WINDOW, Cite  # noqa: E402
from dsv4_launch.core.vllm.releases import NEWEST_VERIFIED, VERIFIED_RELEASES  # noqa: E402

CACHE = Path(os.environ.get("DSV4_LAUNCH_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
             / "dsv4-launch")
# --- the checklist ------------------------------------------------------------------------------

def _read(root: Path, rel: str) -> list[str] | None:
    try:
        return (root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _anchored(lines: list[str], anchor: str, near: int) -> int | None:
    """The 1-based line holding ``anchor`` nearest to line ``near``; None when no line holds it."""
    found = [n for n, line in enumerate(lines, 1) if anchor in line]
    return min(found, key=lambda n: (abs(n - near), n)) if found else None


def _window(lines: list[str], line: int) -> list[str]:
    """The cited statement: the anchor's line and the ``WINDOW`` lines after it."""
    return lines[line - 1: line + WINDOW]


def compare_cite(cite: Cite, old: Path, new: Path, release: str) -> dict:
    """One citation at the old release against the new release's tree: its state, the diff of its
    lines, and the citation to write for the new release where its anchor is still found."""
    entry: dict = {"cite": str(cite), "state": "same", "diff": [], "suggest": None}
    before, after = _read(old, cite.path), _read(new, cite.path)
    at_old = _anchored(before or [], cite.anchor, cite.line)
    if before is None or at_old is None or abs(at_old - cite.line) > WINDOW:
        entry["state"] = f"citation not found in the old release's {cite.path}"
        return entry
    at_new = _anchored(after or [], cite.anchor, at_old)
    if after is None or at_new is None:
        entry["state"] = "file removed" if after is None else "anchor not found"
        return entry
    entry["suggest"] = str(cite._replace(line=at_new, release=release))
    old_lines, new_lines = _window(before, at_old), _window(after, at_new)
    if old_lines != new_lines:
        entry["state"] = "lines changed"
        entry["diff"] = list(difflib.unified_diff(old_lines, new_lines, lineterm="", n=WINDOW))[2:]
    elif at_new != cite.line:
        entry["state"] = f"moved to line {at_new}"
    elif before != after:
        entry["state"] = "file changed elsewhere"
    return entry


REVIEW = ("lines changed", "anchor not found", "file removed", "citation not found", "no citation")


def checklist(old: Path, new: Path, release: str, against: str = NEWEST_VERIFIED) -> tuple[list[dict], int]:
    """(each open-ended fact of core/vllm/facts.py whose cited files differ between the trees, with
    the state of each citation at ``against``; the number of open-ended facts)."""
    facts = [f for f in FACTS if f.open_ended]
    out = []
    for f in facts:
        cites = [compare_cite(c, old, new, release) for c in f.cites if same_release(c.release, against)]
        if not cites:
            cites = [{"cite": None, "state": f"no citation at {against}", "diff": [], "suggest": None}]
        if any(c["state"] != "same" for c in cites):
            out.append({"fact": f.id, "releases": "; ".join(r.short() for r, _ in f.by_release if r.before is None),
                        "oracle": f.oracle, "review": any(c["state"].startswith(REVIEW) for c in cites),
                        "cites": cites})
    return out, len(facts)


def render(release: str, found: list[dict], total: int, old_label: str) -> str:
    review = [e for e in found if e["review"]]
    lines = [f"Checklist for vLLM {release} (against {old_label}): {len(review)} of {total} open-ended facts "
             "to review (core/vllm/facts.py)"]
    for entry in review:
        oracle = f"; oracle {entry['oracle']}" if entry["oracle"] else ""
        lines.append(f"- `{entry['fact']}` ({entry['releases']}{oracle})")
        for c in entry["cites"]:
            lines.append(f"    {c['cite'] + ' — ' if c['cite'] else ''}{c['state']}")
            lines += [f"      {d}" for d in c["diff"]]
    if not review:
        lines.append("- nothing: no line an open-ended fact cites changed")
    moved = [(e["fact"], c["suggest"]) for e in found for c in e["cites"] if c["state"].startswith("moved")]
    if moved:
        lines.append(f"Citations that moved (write them at {release} into the facts' cites):")
        lines += [f"    {fact}: {suggest!r}" for fact, suggest in moved]
    elsewhere = sorted({e["fact"] for e in found for c in e["cites"] if c["state"] == "file changed elsewhere"})
    if elsewhere:
        lines.append(f"Cited files changed elsewhere (the cited lines the same): {', '.join(elsewhere)}")
    return "\n".join(lines)


def citations_at(old: Path, new: Path, release: str, against: str = NEWEST_VERIFIED) -> list[tuple[str, str]]:
    """(fact, citation at ``release``) for every open-ended fact's citation at ``against`` whose
    anchor ``release`` still holds: what to add when ``release`` becomes CI's newest pin."""
    out = []
    for f in FACTS:
        for c in f.cites if f.open_ended else ():
            if same_release(c.release, against):
                entry = compare_cite(c, old, new, release)
                if entry["suggest"]:
                    out.append((f.id, entry["suggest"]))
    return out


# --- the sources ------------------------------------------------------------------------------

def site_of(python: str) -> Path:
    """The directory holding ``vllm/`` in the environment of ``python``."""
    done = subprocess.run([python, "-c", "import os, importlib.util; "
                           "print(os.path.dirname(os.path.dirname(importlib.util.find_spec('vllm').origin)))"],
                          capture_output=True, text=True, env={**os.environ, "VLLM_TARGET_DEVICE": "cpu"}, timeout=300)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"new_release: no vllm importable with {python}: {done.stderr.strip()[-300:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def downloaded_source(release: str) -> Path:
    """vLLM ``release``'s ``*.py`` files from the package index, cached under the dsv4-launch cache."""
    dest = CACHE / "vllm-src" / release
    if (dest / ".complete").exists():
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm=={release}",
                               "-d", tmp], capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise SystemExit(f"new_release: cannot download vLLM {release}: {done.stderr.strip()[-300:]}")
        staging = Path(tempfile.mkdtemp(dir=dest.parent if dest.parent.exists() else None))
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(staging, [n for n in wheel.namelist() if n.endswith(".py")])
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(dest)
    (dest / ".complete").touch()
    return dest


# --- the steps --------------------------------------------------------------------------------

def step(title: str, cmd: list[str], env: dict | None = None, dry: bool = False, failed: list | None = None) -> int:
    """Run one step in the checkout, its output shown as it comes, and say how long it took. A
    failing step stops the tool (exit 1), unless ``failed`` collects the names of the tests it
    failed (pytest's ``-rfE`` lines) and the tool goes on to the checklist."""
    print(f"new_release: {title}: {' '.join(cmd)}", flush=True)
    if dry:
        return 0
    started = time.monotonic()
    with subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        for line in proc.stdout or ():
            print(line, end="", flush=True)
            if failed is not None and line.startswith(("FAILED ", "ERROR ")):
                failed.append(line.split(" - ", 1)[0].strip())
    print(f"new_release: {title.split('.', 1)[0]}. took {time.monotonic() - started:.0f} s (exit {proc.returncode})",
          flush=True)
    if proc.returncode != 0 and failed is None:
        raise SystemExit(1)
    return proc.returncode


# What tests/vllm_real needs of the environment besides vLLM: this checkout installed (the plugin
# oracles load dsv4-launch through its vllm.general_plugins entry point, as vLLM does).
INSTALLED = ("import os, importlib.metadata as m, importlib.util as u; "
             "ep = [e for e in m.entry_points(group='vllm.general_plugins') if e.name == 'dsv4_launch']; "
             "spec = u.find_spec('dsv4_launch'); "
             "print(os.path.dirname(spec.origin) if ep and spec and spec.origin else '')")


def installed_here(python: str) -> bool:
    """dsv4-launch from this checkout is what ``python`` imports, with its plugin entry point."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([python, "-c", INSTALLED], capture_output=True, text=True, env=env, timeout=120)
    found = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    return bool(found) and Path(found[0]).resolve() == (ROOT / "src" / "dsv4_launch").resolve()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", help="the new vLLM release, X.Y.Z")
    parser.add_argument("--vllm-python", help="an interpreter whose environment has vLLM X and this checkout installed "
                        "(pip install -e .); else .ci/vllm-venv.sh X, into which the tool installs it")
    parser.add_argument("--old-src", type=Path,
                        help=f"a directory holding vllm/ of {NEWEST_VERIFIED} (else downloaded)")
    parser.add_argument("--new-src", type=Path, help="a directory holding vllm/ of the new release (else its venv's)")
    parser.add_argument("--checklist-only", action="store_true", help="only step 5 (needs --old-src and --new-src)")
    parser.add_argument("--skip-oracles", action="store_true", help="leave out step 4")
    parser.add_argument("--dry-run", action="store_true", help="print steps 1-4 instead of running them")
    parser.add_argument("--json", action="store_true", help="the checklist as JSON")
    parser.add_argument("--citations", action="store_true",
                        help="print every open-ended fact's citation at the new release (where its anchor holds)")
    opts = parser.parse_args(argv)
    try:
        parse_version(opts.release)
    except ValueError:
        parser.error(f"not a version: {opts.release!r}")
    if opts.release in VERIFIED_RELEASES:
        print(f"new_release: vLLM {opts.release} is already verified (core/vllm/releases.py)", file=sys.stderr)
    if opts.checklist_only and not (opts.old_src and opts.new_src):
        parser.error("--checklist-only needs --old-src and --new-src")
    for given in (opts.old_src, opts.new_src):
        if given is not None and not (given / "vllm").is_dir():
            parser.error(f"{given}: no vllm/ folder in it")

    python = opts.vllm_python
    failed: list[str] = []
    oracles = 0
    if not opts.checklist_only:
        if python is None:
            print(f"new_release: 1. vLLM {opts.release} in a cached venv: .ci/vllm-venv.sh {opts.release}", flush=True)
            if opts.dry_run:
                python = f"$(.ci/vllm-venv.sh {opts.release})/bin/python"
            else:
                started = time.monotonic()
                made = subprocess.run([str(ROOT / ".ci" / "vllm-venv.sh"), opts.release], cwd=ROOT,
                                      stdout=subprocess.PIPE, text=True)
                if made.returncode != 0:
                    return 1
                python = str(Path(made.stdout.strip().splitlines()[-1]) / "bin" / "python")
                print(f"new_release: 1. took {time.monotonic() - started:.0f} s", flush=True)
            # as .ci/run does: the plugin oracles need this checkout's entry point in that venv
            step("1. this checkout into that venv (the plugin oracles load it as vLLM does)",
                 [python, "-m", "pip", "install", "-q", "-e", "."], {"PIP_CONFIG_FILE": os.devnull}, opts.dry_run)
        else:
            print(f"new_release: 1. vLLM {opts.release}: {python}, with this checkout installed in it", flush=True)
            if not opts.dry_run and not opts.skip_oracles and not installed_here(python):
                print(f"new_release: 1. dsv4-launch from this checkout is not installed with {python} (the plugin "
                      f"oracles of step 4 load it through its entry point, as vLLM does): {python} -m pip install -e "
                      f"{ROOT}, or --skip-oracles", file=sys.stderr)
                return 1
        cpu = {"VLLM_TARGET_DEVICE": "cpu", "PYTHONPATH": str(ROOT / "src")}
        step("2. option table", [python, "tools/gen_vllm_options.py"], cpu, opts.dry_run)
        step("3. import set", [sys.executable, "tools/record_vllm_imports.py", "--python", python, "--write"], None,
             opts.dry_run)
        if not opts.skip_oracles:
            # X judged as X (tests/vllm_real/site/oracle_harness.py): verified for this run only
            print(f"new_release: 4. with DSV4_ORACLE_AS_VERIFIED={opts.release}", flush=True)
            oracles = step("4. oracle suite", [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m",
                                               "vllm_real", "tests/vllm_real", "-W", "ignore::DeprecationWarning",
                                               "-rfE"],
                           {**cpu, "DSV4_REQUIRE_VLLM": "1", "DSV4_ORACLE_AS_VERIFIED": opts.release}, opts.dry_run,
                           failed)
        if opts.dry_run:
            return 0
    new = opts.new_src or site_of(python)  # type: ignore[arg-type]
    old = opts.old_src or downloaded_source(NEWEST_VERIFIED)
    if opts.citations:
        print("\n".join(f"{fact}: {cite!r}" for fact, cite in citations_at(old, new, opts.release)))
        return 0
    found, total = checklist(old, new, opts.release)
    if opts.json:
        print(json.dumps({"release": opts.release, "against": NEWEST_VERIFIED, "open_ended": total,
                          "facts": found}, indent=1, ensure_ascii=True))
    else:
        print(render(opts.release, found, total, f"vLLM {NEWEST_VERIFIED}"))
        print(f"\nThen: review each item above; add {opts.release} to VERIFIED_RELEASES (and CI_RELEASES when it "
              "becomes the newest pinned) in src/dsv4_launch/core/vllm/releases.py; python3 tools/oracle_sweep.py "
              f"--releases {opts.release}; see docs/releases.md.")
    if oracles:
        named = "".join(f"\n  {name}" for name in failed) or " (none named: see pytest's output above)"
        print(f"new_release: 4. the oracle suite failed on vLLM {opts.release} (exit {oracles}), "
              f"{len(failed)} test(s):{named}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
