r"""The versioned JSON documents (``plan --json``, ``doctor --json``, ``fit --json``; ``explain`` and
``check`` write theirs through ``dump`` too).

**One error shape** (every command; ``render.render`` sets the two keys, tests/schemas/envelope-v1.json):
every document has ``schema_version``, ``exit_status`` and ``error`` — null, or the one line the
command also says on stderr. On an error ``plan --json`` is the plan document with ``error`` set;
``doctor --json`` is ``{"ok": false, "exit_status", "error", "checks": [], "plan"}``; ``fit --json``
is ``{"error", "rows": [], "vllm_version", ...}``. Keys are added, never changed (schema 1).

Secrets are masked in the data *before* it is serialised. Documents are ASCII (``ensure_ascii``);
a code point that is not valid Unicode text (a surrogateescape byte, a lone surrogate) is written
as the text ``\xff``/``\ud800``, which strict parsers accept, and listed in ``not_utf8``
(JSON pointers) — docs/output.md, "Outside text is escaped".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from .redact import NO_REDACT, Redactor, masked

SCHEMA_VERSION = 1


def plan_document(prepared, misses: Sequence = ()) -> dict:
    """``plan --json``'s document (and doctor's ``plan``) from the pipeline's ``Prepared``
    (commands/pipeline.py; read by its fields, output sits below commands): the plan, argv as the
    run's redactor shows it (already masked), the exit status (``Prepared.plan_status``) and the
    one error line; ``misses``: the door's near misses of the command's own options
    (``near_misses``). Keys are only added (schema 1), each new one beside those it belongs with."""
    plan, facts, vllm = prepared.plan, prepared.facts, prepared.vllm
    gpus = facts.all_gpus if facts else ()
    model = facts.model if facts else None
    return {
        "argv": list(prepared.redact.shown_argv),
        "changes": [{"option": c.option, "before": c.before, "after": c.after, "reason": c.reason,
                     "reference": c.reference} for c in plan.changes],
        "gpus": [{"index": g.index, "name": g.name, "compute_capability": g.capability_str, "uuid": g.uuid,
                  "memory_bytes": g.memory_total_bytes} for g in gpus],
        "gpus_ambiguous": bool(facts and facts.gpus.ambiguous), "gpu_source": facts.gpus.source if facts else None,
        "gpu_error": facts.gpus.error if facts else None,
        "model": {"name": model.name if model else None, "architecture": model.architecture if model else None,
                  "source": model.source if model else None},
        "vllm_version": vllm.version if vllm else None,
        "vllm_version_assumed": bool(vllm and vllm.assumed),  # --vllm-version's, not the installed vLLM's
        # DSV4_LAUNCH_PREFLIGHT's mode, not the outcome; "preflight": its old name, kept for schema 1
        "preflight_mode": plan.preflight, "preflight": plan.preflight, "disabled": plan.disabled,
        "exit_status": prepared.plan_status, "refusals": list(plan.refusals), "warnings": list(plan.warnings),
        "near_misses": near_misses(misses),  # beside the warning that lists each option
        "notes": list(plan.notes),
        "findings": [{"rule": f.rule, "level": f.level, "evidence": f.evidence, "certain": f.certain, "text": f.text}
                     for f in plan.findings],
        "memory": memory_data(prepared),
        "error": prepared.error or prepared.no_vllm,
        # the installed vLLM's own parser message when it rejects the arguments (exit_status 2;
        # ``refusals`` stays dsv4-serve's, which hands them over)
        "rejected_by_vllm": prepared.rejected,
    }


def near_misses(misses: Sequence) -> list[dict]:
    """The near misses of the command's own options that the door handed to vLLM as written
    (``commands/own_options.NearMiss``: a release without a recorded option table may know
    them): ``option`` as given, ``did_you_mean`` the own option it is near, ``warning`` the line
    also said on stderr. ``[]`` when there is none (plan, doctor and fit; new in schema 1)."""
    return [{"option": m.option, "did_you_mean": m.meant, "warning": m.warning} for m in misses]


def memory_data(prepared) -> dict | None:
    """The memory summary of ``plan --json`` (None where no plan was made of the arguments)."""
    if prepared.facts is None or prepared.facts.args.rejection or prepared.plan.disabled:
        return None
    from ..core.memory.verdicts import summary

    return summary(prepared.facts)


def rejected_line(prepared) -> str:
    """plan's and doctor's line when the installed vLLM's own parser rejects the arguments."""
    vllm = prepared.vllm
    release = f"vLLM {vllm.version}{' (--vllm-version)' if vllm.assumed else ''}" if vllm and vllm.version else "vLLM"
    return (f"{release} rejects these arguments: {prepared.rejected} (its own option parser; dsv4-serve "
            "hands them over unchanged and vLLM exits 2 with its own message)")


def _surrogates_as_text(text: str) -> str:
    """Each lone surrogate as text: ``\\xff`` for surrogateescape's undecodable byte, else ``\\ud800``."""
    return re.sub("[\ud800-\udfff]", lambda m: f"\\x{ord(m[0]) - 0xDC00:02x}" if "\udc80" <= m[0] <= "\udcff"
                  else f"\\u{ord(m[0]):04x}", text)


def _valid_text(data, path: str, found: list[str]):
    """``data`` with every string that holds a lone surrogate rewritten (``_surrogates_as_text``);
    ``found`` collects the JSON-pointer paths of those strings."""
    if isinstance(data, str):
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            found.append(path or "/")
            return _surrogates_as_text(data)
        return data
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            key = _valid_text(k, f"{path}/{_pointer(_surrogates_as_text(k))}", found) if isinstance(k, str) else k
            out[key] = _valid_text(v, f"{path}/{_pointer(key)}", found)
        return out
    if isinstance(data, (list, tuple)):
        return [_valid_text(v, f"{path}/{i}", found) for i, v in enumerate(data)]
    return data


def _pointer(key) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def dump(data: dict, redact: Redactor = NO_REDACT) -> str:
    """One JSON object, with credentials in URLs masked in every string; ASCII only, and valid
    for strict parsers (see the module's docstring: ``not_utf8``)."""
    found: list[str] = []
    clean = _valid_text(masked(data, redact), "", found)
    document = {"schema_version": SCHEMA_VERSION, **clean, "not_utf8": found}
    return json.dumps(document, indent=2, ensure_ascii=True)
