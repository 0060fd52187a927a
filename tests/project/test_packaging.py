"""Packaging as an index and a new user see it: ``python -m build`` makes an sdist and a wheel
from a copy of the working tree (what a fresh clone has: tracked and not-ignored files), both
pass ``twine check --strict``, the metadata says what pyproject.toml declares, and the tests
shipped in the sdist collect and pass from the unpacked sdist alone.

Nothing is faked. The build runs without network (``--no-isolation``), with the setuptools of
this environment, which the test extra pins to the build requirement (``setuptools>=77``: the
SPDX ``license`` field). Marked ``slow`` (a few seconds of building); it runs in the default suite
and therefore in CI.
"""

from __future__ import annotations

import email.parser
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import dsv4_launch

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NAME = f"dsv4_launch-{dsv4_launch.__version__}"
# In-process test files run again from the unpacked sdist: the C stand-in for NVML, README's
# tables (tools/), the option tables (package data) and the version rules.
SDIST_RUNS = ("tests/adapters/test_nvml.py", "tests/releases/test_versions.py", "tests/rules/test_rules.py")


def _need(module: str, why: str) -> None:
    try:
        __import__(module)
    except ImportError:
        if os.environ.get("DSV4_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{module} is required (DSV4_REQUIRE_TOOLS=1): {why}")
        pytest.skip(f"{module} is not installed ({why}; pip install -e '.[test]')")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSV4_", "PYTHONPATH", "NO_COLOR", "FORCE_COLOR"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _copy_tree(dest: Path) -> Path:
    """The files a fresh clone would have (plus uncommitted work); without git (running from an
    unpacked sdist), everything but build output."""
    git = shutil.which("git")
    listed = None
    if git and (ROOT / ".git").exists():
        out = subprocess.run([git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=False)
        if out.returncode == 0:
            listed = [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
    if listed is None:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
            "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache", ".hypothesis", ".venv", "*.pyc"))
        return dest
    for rel in listed:
        src = ROOT / rel
        if src.is_file():  # deleted but not yet committed files are listed too
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    _need("build", "python -m build makes the sdist and wheel")
    _need("setuptools", "the build backend, used without build isolation")
    import setuptools

    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} < 77 (the build requirement); pip install -e '.[test]'")
    tree = _copy_tree(tmp_path_factory.mktemp("tree") / "dsv4-launch")
    out = tmp_path_factory.mktemp("dist")
    # sdist first, then the wheel built from the unpacked sdist (build's default): a file the
    # sdist forgets makes the wheel fail or lack it.
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    sdist, wheel = out / f"{NAME}.tar.gz", out / f"{NAME}-py3-none-any.whl"
    assert sdist.is_file() and wheel.is_file(), sorted(p.name for p in out.iterdir())
    return {"sdist": sdist, "wheel": wheel, "dir": out}


def test_twine_check_strict_passes_for_both(dists):
    _need("twine", "twine check --strict validates the metadata and README rendering")
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(dists["sdist"]),
                           str(dists["wheel"])],
                          capture_output=True, text=True, env={**_env(), "NO_COLOR": "1"}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def _wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = email.parser.Parser().parsestr(zf.read(f"{NAME}.dist-info/METADATA").decode("utf-8"))
        entry_points = zf.read(f"{NAME}.dist-info/entry_points.txt").decode("utf-8")
    return names, meta, entry_points


def test_wheel_metadata_says_what_pyproject_declares(dists):
    names, meta, entry_points = _wheel_metadata(dists["wheel"])
    assert meta["Name"] == "dsv4-launch" and meta["Version"] == dsv4_launch.__version__
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert f"{NAME}.dist-info/licenses/LICENSE" in names
    # No public address of the repository is known: the metadata claims none (pyproject.toml).
    assert not meta.get_all("Project-URL")
    classifiers = meta.get_all("Classifier")
    for needed in ("Environment :: GPU :: NVIDIA CUDA", "Operating System :: POSIX :: Linux",
                   "Topic :: Scientific/Engineering :: Artificial Intelligence",
                   *(f"Programming Language :: Python :: 3.{m}" for m in range(10, 14))):
        assert needed in classifiers
    assert meta["Requires-Python"] == ">=3.10"
    # the classifiers' Python versions are the ones requires-python allows, no more
    assert min(int(c.rsplit(".", 1)[1]) for c in classifiers
               if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)) == 10
    assert meta["Description-Content-Type"] == "text/markdown"
    assert "dsv4-serve = dsv4_launch.commands.serve:main" in entry_points
    assert "dsv4-launch = dsv4_launch.commands.cli:main" in entry_points
    assert "[vllm.general_plugins]" in entry_points and "dsv4_launch = dsv4_launch.plugin:register" in entry_points
    tables = sorted(p for p in (ROOT / "src" / "dsv4_launch" / "data").iterdir() if p.suffix == ".json")
    for table in tables:
        assert f"dsv4_launch/data/{table.name}" in names
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]


def test_build_requirement_matches_the_fields_used():
    """An SPDX string in ``license`` (and ``license-files``) needs setuptools >= 77 (PEP 639);
    a lower floor fails to build with ``--no-build-isolation`` on an older setuptools."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    assert isinstance(project["license"], str)
    floors = [re.fullmatch(r"setuptools>=(\d+)", r) for r in data["build-system"]["requires"]]
    assert [int(m.group(1)) for m in floors if m] and all(int(m.group(1)) >= 77 for m in floors if m)
    test_extra = project["optional-dependencies"]["test"]
    assert any(r.startswith("build") for r in test_extra) and any(r.startswith("twine") for r in test_extra)


def test_license_file_is_the_apache_2_text():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    assert len(text.splitlines()) == 202


def test_changelog_has_unreleased_and_this_release():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog")
    assert "keepachangelog.com" in text
    assert re.search(r"^## \[Unreleased\]$", text, re.M)
    assert re.search(rf"^## \[{re.escape(dsv4_launch.__version__)}\] - \d{{4}}-\d\d-\d\d$", text, re.M)


@pytest.fixture(scope="module")
def unpacked_sdist(dists, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("sdist")
    with tarfile.open(dists["sdist"]) as tf:
        if sys.version_info >= (3, 12):
            tf.extractall(dest, filter="data")
        else:
            tf.extractall(dest)
    return dest / NAME


def test_sdist_carries_what_its_tests_need(unpacked_sdist):
    for rel in ("LICENSE", "CHANGELOG.md", "README.md", "tests/conftest.py", "tests/fakes/fake_nvml.c",
                "tests/fakes/vllm_on_path.py", "tests/fakes/vllm_pkg/vllm/entrypoints/cli/main.py",
                "tests/vllm_real/conftest.py", "tools/readme_tables.py", "benchmarks/results/latest.json",
                "docs/DESIGN.md"):
        assert (unpacked_sdist / rel).is_file(), rel
    assert not list(unpacked_sdist.rglob("__pycache__"))


def test_sdist_tests_collect_and_pass(unpacked_sdist):
    """Collected from the unpacked sdist with its own src/ first on the path: no collection
    error, as many tests as the checkout has; then a few in-process files run there."""
    env = {**_env(), "PYTHONPATH": str(unpacked_sdist / "src")}
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]

    def count(cwd: Path) -> int:
        done = subprocess.run([*base, "--collect-only"], cwd=cwd, capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        m = re.search(r"(\d+) tests? collected", done.stdout)
        assert m and "error" not in done.stdout.lower().split("collected")[-1], done.stdout[-2000:]
        return int(m.group(1))

    assert count(unpacked_sdist) == count(ROOT)
    probe = subprocess.run([sys.executable, "-c", "import dsv4_launch; print(dsv4_launch.__file__)"],
                           cwd=unpacked_sdist, capture_output=True, text=True, env=env, timeout=60)
    assert probe.stdout.strip().startswith(str(unpacked_sdist / "src")), probe.stdout + probe.stderr
    done = subprocess.run([*base, "-x", *SDIST_RUNS], cwd=unpacked_sdist, capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", done.stdout) and " failed" not in done.stdout
