"""Tests of cost that hold on a loaded machine: growth and counts, never a time limit.

A test that guards against a quadratic or exponential blow-up does not compare a duration with a
constant (that measures the machine: CI's 2 cores run other jobs too); the budgets live in
benchmarks/. It either

- compares the cost of one input with that of an input ``SCALE`` times larger, measured in the
  same run (``assert_linear``): the CPU time of this thread (other processes do not count), the
  best of a few rounds taken in turns, the collector paused. Linear work grows × 4, quadratic
  × 16; the bound is × 10; or
- counts operations (``LineCounter``, ``assert_linear_count``): the lines of a module's (or a
  package's) Python code that run, which no load changes; past a bound it stops the work
  (``TooMuchWork``), so a blow-up fails at once rather than running for minutes. Work done in C
  (a regular expression, a substring search) or in modules not named (argparse) is not
  counted: growth of CPU time judges that.

tests/project/test_scaling.py shows that both fail on a quadratic or exponential version of the same work.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

SCALE = 4  # linear work grows ~× 4 (less where a fixed cost counts), n log n ~× 4.5, quadratic ~× 16
ROUNDS = 3


def _cpu(work: Callable[[Any], object], arg: Any) -> float:
    start = time.thread_time()
    work(arg)
    return time.thread_time() - start


def growth(make: Callable[[int], Any], work: Callable[[Any], object], n: int, *, scale: int = SCALE,
           rounds: int = ROUNDS) -> float:
    """CPU time of ``work(make(scale * n))`` over that of ``work(make(n))``: each the best of
    ``rounds``, the two taken in turns (drift hits both), inputs built outside the timing, the
    garbage collector paused (its passes cost by the heap the test holds, not by the work)."""
    small, large = make(n), make(scale * n)
    best_small = best_large = float("inf")
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            best_small = min(best_small, _cpu(work, small))
            best_large = min(best_large, _cpu(work, large))
    finally:
        if enabled:
            gc.enable()
    return best_large / max(best_small, 1e-6)


def assert_linear(make: Callable[[int], Any], work: Callable[[Any], object], n: int, *, scale: int = SCALE,
                  rounds: int = ROUNDS, bound: float | None = None) -> float:
    """``work`` grows at most linearly from ``make(n)`` to ``make(scale * n)`` (× ``bound``,
    default 2.5 × ``scale``: a quadratic cost grows × ``scale``²)."""
    limit = bound if bound is not None else 2.5 * scale
    ratio = growth(make, work, n, scale=scale, rounds=rounds)
    assert ratio < limit, (f"{scale}× the input cost {ratio:.1f}× the CPU time (linear: ~{scale}×, quadratic: "
                           f"~{scale * scale}×; bound {limit:g}×)")
    return ratio


class TooMuchWork(Exception):
    """Raised inside the counted code once it ran more lines than allowed."""


class LineCounter:
    """Counts the lines of Python code that run in ``modules`` while active (``with``):
    ``counter.lines``. With ``limit``, raises TooMuchWork inside the counted code past it, so a
    blow-up ends at the limit. Code of other modules runs untraced (only their calls are seen)."""

    def __init__(self, modules: ModuleType | Iterable[ModuleType], limit: int | None = None) -> None:
        mods = [modules] if isinstance(modules, ModuleType) else list(modules)
        self.files = {m.__file__ for m in mods}  # a package (dsv4_launch): every module in it
        self.folders = tuple(os.path.dirname(m.__file__) + os.sep for m in mods if hasattr(m, "__path__"))
        self.limit = limit
        self.lines = 0

    def _local(self, frame, event, arg):
        if event == "line":
            self.lines += 1
            if self.limit is not None and self.lines > self.limit:
                raise TooMuchWork(self._said())
        return self._local

    def _said(self) -> str:
        return f"more than {self.limit:,} lines of {', '.join(sorted(map(str, self.files)))}"

    def _global(self, frame, event, arg):
        name = frame.f_code.co_filename
        return self._local if name in self.files or name.startswith(self.folders) else None

    def __enter__(self) -> LineCounter:
        self._previous = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        sys.settrace(self._previous)
        if kind is None and self.limit is not None and self.lines > self.limit:
            raise TooMuchWork(self._said())  # raised inside and caught there (a broad except): still a failure


def lines_run(modules: ModuleType | Iterable[ModuleType], work: Callable[[], object], limit: int | None = None) -> int:
    """How many lines of ``modules`` ``work()`` runs (TooMuchWork past ``limit``)."""
    with LineCounter(modules, limit) as counter:
        work()
    return counter.lines


def assert_linear_count(modules: ModuleType | Iterable[ModuleType], make: Callable[[int], Any],
                        work: Callable[[Any], object], n: int, *, scale: int = SCALE,
                        bound: float | None = None) -> int:
    """The lines of ``modules`` that ``work`` runs grow at most linearly from ``make(n)`` to
    ``make(scale * n)``: × ``bound`` (default 1.25 × ``scale``; a count does not vary, so the
    bound is tight: a quadratic count grows × ``scale``²). The larger run is stopped at the bound."""
    limit = bound if bound is not None else 1.25 * scale
    small, large = make(n), make(scale * n)
    few = lines_run(modules, lambda: work(small))
    try:
        many = lines_run(modules, lambda: work(large), limit=int(limit * few))
    except TooMuchWork:
        raise AssertionError(f"{scale}× the input ran more than {limit:g}× the lines ({few:,} for {n}; linear: "
                             f"~{scale}×, quadratic: ~{scale * scale}×)") from None
    return many
