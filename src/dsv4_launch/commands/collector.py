"""CPython's cyclic garbage collector while ``plan``, ``doctor`` or ``fit`` runs: paused.

Such a command imports some 140 modules (nvidia-ml-py's ~300 ctypes classes among them), builds
small data that lives until it ends (the option table, the replica parser, facts, rows, the
plan), prints, and exits. Meanwhile the collector would walk the young objects ~35 times
(one pass per 700 allocations, nearly all of them during the imports) and find almost nothing
to free; then, at exit, the interpreter's last collection walks the whole heap once more and
frees its cycles (every class and function is one) object by object, a memory the operating
system takes back at once. On the benchmark machine (benchmarks/bench.py) the two are ~4 and
~6 ms of a ~60 ms ``plan --json``.

So, for the command's run only (``Paused``):

* the collector is off. Reference counting still frees every acyclic object at once; the few
  cycles a run makes (argparse's parser and its actions, a caught exception's traceback) are
  bounded by the command and collected when the collector is back on;
* when the process ends with the command (the console script, ``ending``), everything the run
  left is frozen (``gc.freeze()``) before the interpreter exits, so its last collection does
  not walk it. Nothing is lost: the output is written and flushed by then (the interpreter
  flushes the standard streams itself), files are closed by ``with``, ``atexit`` still runs,
  and no object of ours has a finalizer that must run.

An in-process caller (tests, a program calling ``main([...])``) gets its collector back as it
was, nothing frozen. ``dsv4-serve`` does not pause: it hands over to vLLM in the same process,
which collects and freezes once before vLLM is imported (``adapters/handover.py``).
"""

from __future__ import annotations

import gc


class Paused:
    """``with Paused(ending=...):`` the collector off inside; afterwards on again if it was
    (or, ``ending``, the heap frozen for the exit)."""

    def __init__(self, *, ending: bool = False) -> None:
        self.ending = ending
        self.was_enabled = False

    def __enter__(self) -> Paused:
        self.was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.ending:
            gc.freeze()  # before enabling: counts restart from zero, nothing walked again
        if self.was_enabled:
            gc.enable()
