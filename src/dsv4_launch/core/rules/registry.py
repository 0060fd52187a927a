"""Every rule row, collected once: the plan rows in the order their findings are shown, and
doctor's rows.

A topic module's rows are its ``ROWS`` list, filled by ``@row`` as the module is read, so a row
written anywhere in a module is registered; a new topic module is one more name in
``PLAN_MODULES``. tests/rules/test_rules.py counts the ``@row`` decorators of every module under
core/rules/ (with ``ast``) and fails for one whose row is not here.
"""

from __future__ import annotations

from types import ModuleType

from . import kv, memory, parallel, recipe, releases, speculative
from .engine import TOPICS, Rule

# The plan rows' modules, in the order their rows are read: within a topic, findings keep it.
PLAN_MODULES: tuple[ModuleType, ...] = (parallel, speculative, releases, recipe, kv, memory)


def collect(modules: tuple[ModuleType, ...]) -> tuple[Rule, ...]:
    return tuple(rule for module in modules for rule in module.ROWS)


# The order findings are shown in (plan, dsv4-serve, plan --json, the plugin's log, docs/rules.md's
# table): topic by topic in ``engine.TOPICS``' order (sorted is stable: within a topic, as above).
RULES: tuple[Rule, ...] = tuple(sorted(collect(PLAN_MODULES), key=lambda rule: TOPICS.index(rule.topic)))


def __getattr__(name: str) -> tuple:  # no typing import before the hand-over (test_imports)
    """``DOCTOR_MODULES`` and ``DOCTOR_RULES``, read on first use: doctor and explain read them, a
    start does not (its import costs a real start ~1 ms: docs/performance.md)."""
    if name == "DOCTOR_MODULES":
        from . import doctor_rows

        return (doctor_rows,)
    if name == "DOCTOR_RULES":
        return collect(__getattr__("DOCTOR_MODULES"))
    raise AttributeError(name)
