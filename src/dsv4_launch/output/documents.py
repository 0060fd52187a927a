"""The versioned JSON documents (``plan --json``, ``doctor --json``, ``fit --json``).

Secrets are masked in the data *before* it is serialised (argv by position, URL credentials
in every string), so no escaping can let one through and the output is always valid JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..core.facts import Facts
from ..core.plan import Plan
from .redact import NO_SCRUB, Scrubber, masked

SCHEMA_VERSION = 1


def plan_data(plan: Plan, facts: Facts | None, argv_shown: Sequence[str], *, vllm_version: str | None,
              exit_status: int, memory: dict | None = None) -> dict:
    """The plan as plain data (argv already masked)."""
    gpus = facts.gpus.gpus if facts and facts.gpus else ()
    model = facts.model if facts else None
    return {
        "argv": list(argv_shown),
        "changes": [
            {"option": c.option, "before": c.before, "after": c.after, "reason": c.reason, "reference": c.reference}
            for c in plan.changes
        ],
        "gpus": [
            {"index": g.index, "name": g.name, "compute_capability": g.capability_str, "uuid": g.uuid,
             "memory_bytes": g.memory_total_bytes}
            for g in gpus
        ],
        "gpus_ambiguous": bool(facts and facts.gpus and facts.gpus.ambiguous),
        "gpu_source": facts.gpu_source if facts else None,
        "gpu_error": facts.gpu_error if facts else None,
        "model": {
            "name": model.name if model else None,
            "architecture": model.architecture if model else None,
            "source": model.source if model else None,
        },
        "vllm_version": vllm_version,
        "preflight": plan.preflight,
        "disabled": plan.disabled,
        "exit_status": exit_status,
        "refusals": list(plan.refusals),
        "warnings": list(plan.warnings),
        "notes": list(plan.notes),
        "findings": [
            {"rule": f.rule, "level": f.level, "evidence": f.evidence, "certain": f.certain, "text": f.text}
            for f in plan.findings
        ],
        "memory": memory,
    }


def dump(data: dict, scrub: Scrubber = NO_SCRUB) -> str:
    """One JSON object, with credentials in URLs masked in every string."""
    return json.dumps({"schema_version": SCHEMA_VERSION, **masked(data, scrub)}, indent=2, ensure_ascii=False)
