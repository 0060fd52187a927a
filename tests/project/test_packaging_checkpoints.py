"""The known-checkpoint files (data/checkpoints/*.json) reach the wheel and the sdist,
and a start from the installed wheel finds an entry. tests/project/test_packaging.py checks only the
top-level data/*.json (the option tables), so a package-data glob that lost the folder would
pass there. Nothing is faked: the wheel is the one tests/project/test_packaging.py builds."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile

import pytest

from tests.project.test_packaging import NAME, ROOT, _env, dists  # noqa: F401  (the module-scoped build)

pytestmark = pytest.mark.slow

CHECKPOINTS = sorted(p.name for p in (ROOT / "src" / "dsv4_launch" / "data" / "checkpoints").glob("*.json"))


def test_there_are_checkpoint_files():
    assert len(CHECKPOINTS) >= 10


def test_wheel_and_sdist_carry_every_checkpoint_file(dists):  # noqa: F811
    with zipfile.ZipFile(dists["wheel"]) as zf:
        in_wheel = set(zf.namelist())
    with tarfile.open(dists["sdist"]) as tf:
        in_sdist = set(tf.getnames())
    for name in CHECKPOINTS:
        assert f"dsv4_launch/data/checkpoints/{name}" in in_wheel, name
        assert f"{NAME}/src/dsv4_launch/data/checkpoints/{name}" in in_sdist, name


def test_the_installed_wheel_finds_a_checkpoint(dists, tmp_path):  # noqa: F811
    with zipfile.ZipFile(dists["wheel"]) as zf:
        zf.extractall(tmp_path)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import dsv4_launch.adapters.checkpoints as c; "
            "assert c.__file__.startswith(sys.argv[1]), c.__file__; "
            "e = c.known_checkpoint('DeepSeek-AI/DeepSeek-V4-Flash'); "
            "print(e['id'], len(c.load_checkpoints()))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          env=_env(), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["deepseek-ai/DeepSeek-V4-Flash", str(len(CHECKPOINTS))]
