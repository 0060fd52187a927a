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
5. The checklist: every rule row (plan's and doctor's), explain signature and memory term whose
   release bound is open-ended (no ``before``: it is carried past the newest verified release),
   with the vLLM files it cites, and which of those files differ between the newest verified
   release (``core/vllm_releases.NEWEST_VERIFIED``) and X. The sources: ``--old-src`` /
   ``--new-src`` (directories holding ``vllm/``), else X's from its environment and the newest
   verified release's from the package index (``pip download``, ``*.py`` only, cached).

Nothing here adds X to the release table: after the checklist is reviewed (and the rows, signatures
and memory terms it lists corrected), add X to ``VERIFIED_RELEASES`` in
src/dsv4_launch/core/vllm_releases.py (tests/test_vllm_releases.py fails until the recorded option
tables and the table agree) and run ``tools/oracle_sweep.py --releases X`` for the matrix.

Each step says how long it took. Exit status: 0 done (the checklist may list items: that is the
review), 1 a step failed, 2 usage.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dsv4_launch.core.versions import parse_version  # noqa: E402
from dsv4_launch.core.vllm_releases import NEWEST_VERIFIED, VERIFIED_RELEASES  # noqa: E402

CACHE = Path(os.environ.get("DSV4_LAUNCH_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
             / "dsv4-launch")
# A vLLM file as the rows, signatures and comments cite it: "vllm/config/vllm.py", "config/vllm.py:525@0.26",
# "v1/core/kv_cache_utils.py" (relative to the vllm package).
CITED_FILE = re.compile(r"(?<![\w/.])((?:vllm/)?(?:[A-Za-z_][\w]*/)+[A-Za-z_]\w*\.py)\b")
MEMORY_MODULES = ("core/memory", "core/rules")  # where module-level VersionRange constants (memory terms) live
CONSTANT = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)\s*=\s*VersionRange\((?P<args>[^)]*)\)\s*(?:#(?P<comment>.*))?$")


# --- the checklist ------------------------------------------------------------------------------

class Item:
    """One thing to review: a row, a signature or a memory term, its bound and cited files."""

    def __init__(self, kind: str, name: str, bound: str, text: str, where: str):
        self.kind, self.name, self.bound, self.where = kind, name, bound, where
        self.files = sorted({_package_path(m) for m in CITED_FILE.findall(text)})


def _package_path(path: str) -> str:
    return path if path.startswith("vllm/") else f"vllm/{path}"


def open_ended_items() -> list[Item]:
    """Every row, signature and memory term whose bound reaches past the newest verified release."""
    from dsv4_launch.core.explain.signatures import SIGNATURES
    from dsv4_launch.core.rules.doctor_rows import DOCTOR_RULES
    from dsv4_launch.core.rules.plan import RULES

    items: list[Item] = []
    for rule in (*RULES, *DOCTOR_RULES):
        bounds = [("", rule.vllm), *((f"{name}: ", r) for name, r in rule.releases.items())]
        open_ended = [f"{label}{r.short()}" for label, r in bounds if r.before is None]
        if rule.vllm.before is None and open_ended:
            items.append(Item("row", rule.id, "; ".join(open_ended), f"{rule.reference} {rule.effect}",
                              f"core/rules ({rule.check.__module__.rsplit('.', 1)[-1]}.py)"))
    for sig in SIGNATURES:
        if sig.vllm.before is None:
            items.append(Item("signature", f"{sig.rule} ({sig.exception})", sig.vllm.short(), sig.source,
                              "core/explain/signatures.py"))
    package = ROOT / "src" / "dsv4_launch"
    for folder in MEMORY_MODULES:
        for path in sorted((package / folder).glob("*.py")):
            for line in path.read_text(encoding="utf-8").splitlines():
                match = CONSTANT.match(line.strip())
                if match and "before=" not in match.group("args"):
                    since = re.search(r'since="([^"]+)"', match.group("args"))
                    items.append(Item("memory term" if folder == "core/memory" else "constant", match.group("name"),
                                      f"≥ {since.group(1)}" if since else "all", match.group("comment") or "",
                                      f"{folder}/{path.name}"))
    return items


def _read(root: Path, rel: str) -> list[str] | None:
    path = root / rel
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def compare(items: list[Item], old: Path, new: Path) -> list[dict]:
    """Each item with the state of its cited files between ``old`` and ``new``: changed, added,
    removed, or not found in either (a citation to check by hand)."""
    out = []
    for item in items:
        files = []
        for rel in item.files:
            before, after = _read(old, rel), _read(new, rel)
            if before is None and after is None:
                state, delta = "not found in either release", ""
            elif before is None:
                state, delta = "new", ""
            elif after is None:
                state, delta = "removed", ""
            elif before == after:
                continue
            else:
                diff = list(difflib.unified_diff(before, after, n=0))
                plus = sum(1 for x in diff if x.startswith("+") and not x.startswith("+++"))
                minus = sum(1 for x in diff if x.startswith("-") and not x.startswith("---"))
                state, delta = "changed", f"+{plus} -{minus} lines"
            files.append({"file": rel, "state": state, "delta": delta})
        if files or not item.files:
            out.append({"kind": item.kind, "name": item.name, "bound": item.bound, "where": item.where,
                        "files": files, "cites_nothing": not item.files})
    return out


def render(release: str, reviewed: list[dict], total: int, old_label: str) -> str:
    lines = [f"Checklist for vLLM {release} (against {old_label}): {len(reviewed)} of {total} open-ended bounds "
             "to review"]
    for entry in reviewed:
        head = f"- {entry['kind']} `{entry['name']}` ({entry['bound']}; {entry['where']})"
        if entry["cites_nothing"]:
            lines.append(f"{head}: cites no vLLM file — review by hand")
            continue
        lines.append(head)
        for f in entry["files"]:
            lines.append(f"    {f['file']}: {f['state']}{' (' + f['delta'] + ')' if f['delta'] else ''}")
    if not reviewed:
        lines.append("- nothing: no file cited by an open-ended bound changed")
    return "\n".join(lines)


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
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm=={release}", "-d", tmp],
                              capture_output=True, text=True)
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
    parser.add_argument("--old-src", type=Path, help=f"a directory holding vllm/ of {NEWEST_VERIFIED} (else downloaded)")
    parser.add_argument("--new-src", type=Path, help="a directory holding vllm/ of the new release (else its venv's)")
    parser.add_argument("--checklist-only", action="store_true", help="only step 5 (needs --old-src and --new-src)")
    parser.add_argument("--skip-oracles", action="store_true", help="leave out step 4")
    parser.add_argument("--dry-run", action="store_true", help="print steps 1-4 instead of running them")
    parser.add_argument("--json", action="store_true", help="the checklist as JSON")
    opts = parser.parse_args(argv)
    try:
        parse_version(opts.release)
    except ValueError:
        parser.error(f"not a version: {opts.release!r}")
    if opts.release in VERIFIED_RELEASES:
        print(f"new_release: vLLM {opts.release} is already verified (core/vllm_releases.py)", file=sys.stderr)
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
                made = subprocess.run([str(ROOT / ".ci" / "vllm-venv.sh"), opts.release], cwd=ROOT, stdout=subprocess.PIPE,
                                      text=True)
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
                print(f"new_release: 1. dsv4-launch from this checkout is not installed with {python} (the plugin oracles "
                      f"of step 4 load it through its entry point, as vLLM does): {python} -m pip install -e {ROOT}, "
                      "or --skip-oracles", file=sys.stderr)
                return 1
        cpu = {"VLLM_TARGET_DEVICE": "cpu", "PYTHONPATH": str(ROOT / "src")}
        step("2. option table", [python, "tools/gen_vllm_options.py"], cpu, opts.dry_run)
        step("3. import set", [sys.executable, "tools/record_vllm_imports.py", "--python", python, "--write"], None,
             opts.dry_run)
        if not opts.skip_oracles:
            # X judged as X (tests/vllm_real/site/oracle_harness.py): verified for this run only
            print(f"new_release: 4. with DSV4_ORACLE_AS_VERIFIED={opts.release}", flush=True)
            oracles = step("4. oracle suite", [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "vllm_real",
                                               "tests/vllm_real", "-W", "ignore::DeprecationWarning", "-rfE"],
                           {**cpu, "DSV4_REQUIRE_VLLM": "1", "DSV4_ORACLE_AS_VERIFIED": opts.release}, opts.dry_run,
                           failed)
        if opts.dry_run:
            return 0
    new = opts.new_src or site_of(python)  # type: ignore[arg-type]
    old = opts.old_src or downloaded_source(NEWEST_VERIFIED)
    items = open_ended_items()
    reviewed = compare(items, old, new)
    if opts.json:
        print(json.dumps({"release": opts.release, "against": NEWEST_VERIFIED, "open_ended": len(items),
                          "review": reviewed}, indent=1, ensure_ascii=True))
    else:
        print(render(opts.release, reviewed, len(items), f"vLLM {NEWEST_VERIFIED}"))
        print(f"\nThen: review each item above; add {opts.release} to VERIFIED_RELEASES (and CI_RELEASES when it "
              "becomes the newest pinned) in src/dsv4_launch/core/vllm_releases.py; python3 tools/oracle_sweep.py "
              f"--releases {opts.release}; see docs/releases.md.")
    if oracles:
        named = "".join(f"\n  {name}" for name in failed) or " (none named: see pytest's output above)"
        print(f"new_release: 4. the oracle suite failed on vLLM {opts.release} (exit {oracles}), "
              f"{len(failed)} test(s):{named}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
