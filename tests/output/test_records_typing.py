"""``class X(Record)`` (core/records.py): round trips through every pickle protocol and
copy, fields named like the methods' own parameters or like tuple's methods, class attributes
and properties kept out of the fields; and mypy (with tools/mypy_records.py, as [tool.mypy]
configures it) still reports wrong field types, unknown fields and attributes, writes, and
reads _replace as returning the record's own type. mypy runs for real on a probe file."""

from __future__ import annotations

import copy
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsv4_launch.core.records import Record

ROOT = Path(__file__).resolve().parents[2]


class Odd(Record):
    """kept"""

    cls: int
    self: str = "s"
    count: int = 0  # tuple has a method of that name
    index: int = 1
    LIMIT = 7  # not annotated: a class attribute

    @property
    def twice(self) -> int:
        return self.cls * 2


class Other(Record):
    cls: int
    self: str = "s"
    count: int = 0
    index: int = 1


def test_fields_and_class_attributes():
    odd = Odd(1, count=3)
    assert Odd._fields == ("cls", "self", "count", "index")
    assert (odd.cls, odd.self, odd.count, odd.index, odd.twice, Odd.LIMIT) == (1, "s", 3, 1, 2, 7)
    assert Odd.__doc__ == "kept" and repr(odd) == "Odd(cls=1, self='s', count=3, index=1)"
    assert odd != Other(1, count=3) and odd != (1, "s", 3, 1) and odd == Odd(cls=1, self="s", count=3)
    assert odd._replace(cls=2, self="t") == Odd(2, "t", 3)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_pickle_protocol_round_trips(protocol):
    odd = Odd(5, "x", 2, 9)
    back = pickle.loads(pickle.dumps(odd, protocol))
    assert back == odd and type(back) is Odd


def test_copy_and_deepcopy_keep_type_and_values():
    odd = Odd(5, "x", [1], 9)
    assert copy.copy(odd) == odd and type(copy.copy(odd)) is Odd
    deep = copy.deepcopy(odd)
    assert deep == odd and deep.count is not odd.count


PROBE = '''
from __future__ import annotations
from dsv4_launch.core.records import Record
from dsv4_launch.core.facts import ServeArgs

class L(Record):
    tp: int
    pp: int = 1

ok1: L = L(1)._replace(tp=2)
ok2 = L(tp=1, pp=2)._fields
ok3: int = L(1).pp
bad1 = L(tp="x")  # E arg-type
bad2 = L(1, 2, 3)  # E call-arg
bad3 = L()  # E call-arg
bad4 = L(1).nope  # E attr-defined
L(1).tp = 3  # E misc
bad6: str = L(1).tp  # E assignment
bad7: int = L(1)._replace(tp=2)  # E assignment
bad8 = ServeArgs(tokens=("a",), bogus=1)  # E call-arg
'''


def test_mypy_still_checks_records(tmp_path):
    mypy = shutil.which("mypy", path=os.path.dirname(sys.executable))
    if mypy is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    done = subprocess.run([mypy, "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "c"),
                           "--no-error-summary", str(probe)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    reported = {int(m.group(1)): m.group(2) for m in re.finditer(r"probe\.py:(\d+): error: .*\[([\w-]+)\]$",
                                                                   done.stdout, re.M)}
    expected = {n: line.rsplit("# E ", 1)[1] for n, line in enumerate(PROBE.splitlines(), 1) if "# E " in line}
    assert reported == expected, done.stdout + done.stderr
