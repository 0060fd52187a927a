"""``dsv4-launch explain [FILE|-] [--json]``: which known failure a vLLM log shows, and the fix.

What it prints, reads and masks, and its exit statuses: docs/commands.md, "After a crash". The
log is streamed through ``core/explain/scanner``; each line printed is masked on its own
(``core/explain/masking.mask_lines``) and for the secrets of vLLM's logged arguments, then escaped.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from functools import lru_cache

from ..core.credentials import DASHES, option_key, secret_option_name
from ..core.explain.masking import mask_line, mask_lines
from ..core.explain.scanner import Match, Scan, Scanner
from ..core.explain.signatures import KV_AUTO
from . import exit_codes
from .context import Context, here
from .own_options import JSON, Command

EXPLAINED, NOT_FOUND = 0, 1
BAD_INPUT = exit_codes.USAGE  # a log that cannot be read: bad input, as for every command
_SKIPPED_DESTS = frozenset({"model_tag", "model", "config", "subparser", "dispatch_function"})
_PASSED_ENV = ("HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE")  # where the model's config.json may be read


def _rules() -> dict:
    from ..core.rules.plan import RULES
    from ..core.rules.registry import DOCTOR_RULES

    return {rule.id: rule for rule in (*RULES, *DOCTOR_RULES)}


class _Fill(dict):
    """A row's fix template filled where no plan can: the signature's words, else ``<name>``."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def _filled(words: str | tuple[str, ...], values: Mapping[str, str]) -> str:
    """A signature's words with the log's values (``<name>`` where the log has none); of
    alternatives, the first whose every ``{name}`` the log gives."""
    *first, last = (words,) if isinstance(words, str) else words
    for text in first:
        try:
            return text.format_map(values)
        except KeyError:
            continue
    return last.format_map(_Fill(values))


def row_text(rule_id: str, signature=None, values: Mapping[str, str] | None = None) -> dict:
    """What happened, the fix and the reference, from the row itself (the KV rule: core/rules/kv_paths.py;
    a failure with no row: the signature's own words). ``values``: the log's, for ``{name}`` in the words."""
    logged = _Fill(values or {})
    if signature is not None and signature.text is not None:
        own = {k: v.format_map(logged) for k, v in signature.text.items()}
        return {"title": own["title"], "effect": own["effect"], "fix": own["fix"], "reference": own["reference"],
                "level": "fail", "evidence": own.get("evidence", "reported")}
    if rule_id == KV_AUTO:
        from ..core.rules.kv_paths import CRASH_REFERENCE, CRASHES_BEFORE_FIX, FIX_REFERENCE, KV_FIX_VALUE, KV_OPTION

        return {
            "title": f"{KV_OPTION} missing or auto for DeepSeek-V4 on an fp8_ds_mla path",
            "effect": f"AssertionError when the attention layers are built: vLLM before {CRASHES_BEFORE_FIX.before} "
            f"does not resolve auto on the fp8_ds_mla layout ({FIX_REFERENCE} made it do so)",
            "fix": f"{KV_OPTION} {KV_FIX_VALUE}", "reference": CRASH_REFERENCE, "level": "changed",
            "evidence": "confirmed"}
    from ..core.rules.engine import version_words, words

    rule = _rules()[rule_id]
    words_of_signature = {k: _filled(v, values or {}) for k, v in (signature.fill or {} if signature else {}).items()}
    fill = _Fill({**version_words(rule), **words_of_signature})
    fill.setdefault("gpus", "these GPUs")
    fill.setdefault("vllm", "vLLM")
    return {"title": words(rule, "title"), "effect": words(rule, "effect"), "fix": rule.fix.format_map(fill),
            "reference": rule.reference, "level": rule.level, "evidence": rule.evidence}


def _logged(values: Mapping[str, object], dest: str):
    """A logged argument by dest; ``a.b`` reads key ``b`` of the dict ``a``. Missing: None."""
    value: object = values
    for part in dest.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


PARSED_WORDS = 2_000  # words of a pasted command read with the release's parser (argparse's cost is quadratic)


@lru_cache(maxsize=4)
def _read_command(command: tuple[str, ...], version: str | None):
    from ..vllm_cli.option_table import load_table
    from ..vllm_cli.secrets import conservative_spans, secret_texts
    from ..vllm_cli.serve_args import read_serve_args

    table = load_table(version)
    if len(command) > PARSED_WORDS:  # no command vLLM is given: its secrets as without a parse, no values
        return None, tuple(secret_texts(command, conservative_spans(command, table.option_strings, exact=False)))
    try:
        parsed = read_serve_args(command, table)
    except Exception:  # a --config file or any paste vLLM cannot read: no values
        return None, ()
    values = parsed.values if parsed.values and not parsed.rejection else None
    return values, tuple(secret_texts(command, parsed.secrets))


def command_values(scan: Scan) -> Mapping[str, object] | None:
    """What vLLM makes of the ``vllm serve`` command pasted into the log (dest → value), read with
    the release's recorded parser; None without one, or when vLLM would not parse it."""
    return _read_command(scan.command, scan.version)[0] if scan.command else None


def _shown(scan: Scan, wanted: Mapping[str, object]) -> bool:
    """Whether the log's arguments line (or, without one, its pasted command) shows every one of
    ``wanted`` (``...``: set to anything)."""
    values = scan.args.values if scan.args is not None else command_values(scan)
    if values is None:
        return False
    return all((value := _logged(values, dest)) is not None and (want is ... or value == want)
               for dest, want in wanted.items())


def _args_fit(match: Match, scan: Scan) -> bool:
    sig = match.signature
    return (sig.args is None or _shown(scan, sig.args)) and not (sig.not_args and _shown(scan, sig.not_args))


def group_matches(scan: Scan) -> list[list[Match]]:
    """Matches by log line; on each line the signatures of the release the log names (when
    any of them is in range), and only those the log's arguments allow (``Signature.args``)."""
    by_line: dict[int, list[Match]] = {}
    for match in scan.matches:
        if match.signature.release_only and match.signature.vllm.contains(match.version) is False:
            continue  # the same text has another cause on the release of the run the line is in
        majors = match.signature.gpu_majors
        if majors and scan.gpu_capabilities and not any(c[0] in majors for c in scan.gpu_capabilities):
            continue  # the same text means another thing on the log's GPUs (each one it names)
        if _args_fit(match, scan):
            by_line.setdefault(match.line.number, []).append(match)
    return [[m for m in found if m.signature.vllm.contains(m.version) is not False] or found
            for _, found in sorted(by_line.items())]


# --- the arguments in the log, through the same pipeline as plan ------------------------------

def _option_text(value) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)


def rebuild_argv(values: Mapping[str, object], table) -> tuple[list[str], list[str]]:
    """``vllm serve`` arguments equivalent to vLLM's logged non-default args: (argv, dests that
    could not be written as options)."""
    by_dest = {action.dest: action for action in table.actions}
    argv: list[str] = []
    model = values.get("model_tag") or values.get("model")
    if isinstance(model, str):
        argv.append(model)
    skipped = []
    for dest, value in values.items():
        if dest in _SKIPPED_DESTS or value is None:
            continue
        action = by_dest.get(dest)
        longs = [o for o in action.options if o.startswith("--")] if action else []
        if action is None or not longs:
            skipped.append(dest)
            continue
        if action.nargs == 0:
            chosen = [o for o, v in (action.flag_values or {}).items() if v == value and type(v) is type(value)]
            if chosen:
                argv.append(chosen[0])
            else:
                skipped.append(dest)
        elif action.nargs in ("+", "*") and isinstance(value, list):
            if value:
                argv += [longs[0], *(_option_text(v) for v in value)]
        else:
            argv += [longs[0], _option_text(value)]
    return argv, skipped


def corrected_plan(scan: Scan, env: Mapping[str, str]):
    """(Prepared, argv rebuilt, dests left out) for the log's arguments, or None without them."""
    if scan.args is None:
        return None
    from ..adapters.vllm_install import VllmInstall
    from ..core.facts import GpuReport
    from ..vllm_cli.option_table import load_table
    from .pipeline import PLAN, prepare

    table = load_table(scan.version)
    argv, skipped = rebuild_argv(scan.args.values, table)
    run_env = {k: env[k] for k in _PASSED_ENV if env.get(k)}
    if scan.gpu is not None and len(scan.gpu_capabilities) == 1:  # GPUs of two kinds named: unknown
        run_env["DSV4_LAUNCH_GPU_CAPABILITY"] = "{}.{}".format(*scan.gpu.capability)
    note = "the version the log shows" if scan.version else "the log does not show vLLM's version"
    vllm = VllmInstall(version=scan.version, importable=False, note=note)
    prepared = prepare(argv, run_env, PLAN, vllm=vllm,
                       read_gpus=lambda: GpuReport(error="the log does not say which GPUs vLLM ran on"))
    return prepared, argv, skipped


def _plan_rules(prepared) -> set[str]:
    if prepared is None:
        return set()
    found = {f.rule for f in prepared.plan.findings}
    if any(c.option == "--kv-cache-dtype" for c in prepared.plan.changes):
        found.add(KV_AUTO)
    return found


# --- the document both renderings are made from ------------------------------------------------

ARGUMENT_ERROR = "vllm-argument-error"  # the generic answer: named only where no other signature is
_PORT_IN_USE = ("Address already in use", "EADDRINUSE", "address already in use")




def _unrecognized(message: str) -> list[str]:
    """The words vLLM's argparse could not place (``unrecognized arguments: …``, as it joined them)."""
    found = re.search(r"unrecognized arguments: (.+)$", message)
    return found.group(1).split() if found else []


def argument_suggestion(message: str, version: str | None) -> str:
    """What to change for vLLM's argparse ``message``: for each option it does not know, the
    nearest one of the release's recorded parser (``data/serve-options-X.json``; where the log's
    release has none, the nearest recorded one, named as such)."""
    from ..vllm_cli.option_table import load_table

    table = load_table(version)
    parser = f"vLLM {table.vllm_version}'s parser" if table.exact else (
        f"the nearest recorded parser (vLLM {table.vllm_version}'s; " +
        (f"{version}'s is not recorded)" if version else "the log does not name vLLM's release)"))
    known = table.option_strings
    words = _unrecognized(message)
    if not words:
        return f"correct the option the message names ({parser}: `vllm serve --help`)"
    parts = []
    for word in words:  # "NAME: …", never "NAME (…": a credential's name is masked with the word after it
        name = word.split("=", 1)[0]
        if name[:1] not in DASHES or not name.lstrip(DASHES) or name in known:
            continue
        close = difflib.get_close_matches("--" + name.lstrip(DASHES).lower(), known, n=1, cutoff=0.8)
        parts.append(f"{name}: did you mean {close[0]}?" if close else f"{name}: no such option")
    parts = list(dict.fromkeys(parts))
    more = f"; and {len(parts) - _NAMED} more" if len(parts) > _NAMED else ""
    unknown = "; ".join(parts[:_NAMED]) + more if parts else "the words after the model (a second positional argument)"
    return f"{parser} does not know {unknown} — correct or drop it"


_NAMED = 12  # unknown options named in the suggestion


def misspelt_secrets(words: tuple[str, ...] | list[str]) -> list[str]:
    """The words that may be a secret among argv ``words`` argparse rejects (vLLM's ``unrecognized
    arguments``, a pasted command): the value of a word that names a secret option misspelt
    (``--api-kye K``, ``--apikey=K``), with one dash or a look-alike (``-api-key K``,
    ``\u2014api-key K``), abbreviated (``--a K``) or glued to it (``--api-keyK``). No parse says
    whose value they are."""
    found: list[str] = []
    for i, word in enumerate(words):
        if not word[:1] or word[0] not in DASHES:
            continue
        name, eq, value = word.lstrip(DASHES).partition("=")
        named, glued = secret_option_name(option_key(name))
        if glued:
            found.append(name[len(name) - glued:])
        if not named:
            continue
        if eq:
            found.append(value)
        elif i + 1 < len(words) and words[i + 1][:1] not in DASHES:
            found.append(words[i + 1])
    return [f for f in found if f]


def _values(match: Match, scan: Scan) -> Mapping[str, str] | None:
    values = dict(match.values or {})
    if match.signature.rule == ARGUMENT_ERROR:
        # vLLM logs its release after parsing: a run refused by argparse has none; the log's other run's is the guess
        values["suggestion"] = argument_suggestion(values.get("message", ""), match.version or scan.version)
    return values or None


def explain_data(scan: Scan, source: str, env: Mapping[str, str]) -> dict:
    from ..output.redact import masked_argv
    from ..output.report import command_line

    plan_error: str | None = None
    try:
        corrected = corrected_plan(scan, env)
    except Exception as exc:  # never a traceback of ours: the explanation stands without the command
        if env.get("DSV4_LAUNCH_DEBUG"):
            raise
        corrected = None
        plan_error = f"the logged arguments could not be planned (internal error: {type(exc).__name__})"
    prepared = corrected[0] if corrected else None
    planned = _plan_rules(prepared)
    explained = []
    groups = group_matches(scan)
    if any(m.signature.rule != ARGUMENT_ERROR for group in groups for m in group):  # vLLM's argument error
        groups = [g for g in groups if any(m.signature.rule != ARGUMENT_ERROR for m in g)]  # only where none else
    for group in groups:
        rules = list(dict.fromkeys(m.signature.rule for m in group))
        confirmed = [r for r in rules if r in planned]
        chosen = confirmed or rules
        shown = list(chosen)
        for match in group:
            if match.signature.rule not in chosen:
                continue
            item = {"rule": match.signature.rule, "candidates": shown, "line": match.line.number,
                    "text": mask_line(match.line.text), "count": match.count, "vllm_version": match.version,
                    "exception": match.signature.exception,
                    "signature": {"releases": match.signature.vllm.short(), "source": match.signature.source},
                    "plan_agrees": (match.signature.rule in planned) if prepared is not None and
                    prepared.facts is not None else None}
            item.update(row_text(match.signature.rule, match.signature, _values(match, scan)))
            finding = next((f for f in prepared.plan.findings if f.rule == match.signature.rule), None) \
                if prepared is not None else None
            item["plan_text"] = finding.text if finding else None
            explained.append(item)
            chosen = [r for r in chosen if r != match.signature.rule]  # one entry per rule and line
    root = [{"line": x.number, "text": text}
            for x, text in zip(scan.root_cause, mask_lines([x.text for x in scan.root_cause]))]
    pointers = [{"line": x.number, "text": mask_line(x.text)} for x in scan.pointers]
    corrected_doc = None
    if corrected is not None and scan.args is not None:  # a corrected plan is made from the args
        prepared, argv, skipped = corrected
        shown = masked_argv(prepared.argv, prepared.secrets)
        kv_fixed = any(c.option == "--kv-cache-dtype" for c in prepared.plan.changes)
        refused = {f.rule for f in prepared.plan.findings if f.level == "refuse"}
        rules = list(dict.fromkeys(str(item["rule"]) for item in explained))
        corrected_doc = {
            "argv": shown, "command": command_line(shown), "exit_status": prepared.status,
            # what the command changes about the failures explained: fixed by dsv4-serve's own
            # change, refused before vLLM starts, or left as it is (the fix above is the user's)
            "fixed": [r for r in rules if r == KV_AUTO and kv_fixed],
            "refused": [r for r in rules if r in refused],
            "unfixed": [r for r in rules if not (r == KV_AUTO and kv_fixed) and r not in refused],
            "changes": [{"option": c.option, "before": c.before, "after": c.after, "reason": c.reason,
                         "reference": c.reference} for c in prepared.plan.changes],
            "refusals": list(prepared.plan.refusals), "warnings": list(prepared.plan.warnings),
            "left_out": skipped + [d for d in scan.args.unread if d not in _SKIPPED_DESTS], "error": prepared.error,
            "vllm_version": scan.version,
            "gpus": "SM {}.{} (line {} of the log)".format(*scan.gpu.capability, scan.gpu.line)
            if scan.gpu and len(scan.gpu_capabilities) == 1 else "unknown (not named in the log)" if not scan.gpu
            else "unknown (the log names " + " and ".join("SM {}.{}".format(*c) for c in scan.gpu_capabilities) + ")",
        }
    return {
        "command": "explain", "source": source, "lines_read": scan.lines,
        "vllm_version": scan.version, "vllm_version_line": scan.version_line,
        "gpu": {"name": scan.gpu.name, "compute_capability": "{}.{}".format(*scan.gpu.capability),
                "line": scan.gpu.line} if scan.gpu else None,
        "gpu_capabilities": ["{}.{}".format(*c) for c in scan.gpu_capabilities],
        "arguments_line": scan.args.line if scan.args else None,
        "explained": explained, "root_cause": root, "pointers": pointers, "traceback_cut": scan.traceback_cut,
        "hint": "a port vLLM binds is taken: another vLLM (or a previous one still exiting) holds it; pass another "
                "--port (VLLM_PORT moves vLLM's internal ports), or stop the process holding it (`ss -ltnp`)"
        if any(p in x.text for x in scan.root_cause for p in _PORT_IN_USE) else None,
        "corrected": corrected_doc, "exit_status": EXPLAINED if explained else NOT_FOUND, "error": None,
        "plan_error": plan_error,
    }


def _scrubber(scan: Scan | None, env):
    """The run's redactor (``Redactor.for_log``): applied by ``render`` to what explain prints."""
    from ..output.redact import Redactor

    return Redactor.for_log(scan.secrets if scan else (), mask_line, env)


def _error_document(source: str, message: str) -> dict:
    return {"command": "explain", "source": source, "lines_read": 0, "vllm_version": None, "vllm_version_line": None,
            "gpu": None, "gpu_capabilities": [], "arguments_line": None, "explained": [], "root_cause": [],
            "pointers": [], "traceback_cut": None, "hint": None, "corrected": None, "exit_status": BAD_INPUT,
            "error": message, "plan_error": None}


# --- reading and rendering -----------------------------------------------------------------------

def scan_source(path: str, stdin=None) -> Scan:
    """Stream ``path`` (``-``: ``stdin``, None: this process's) through the signatures. Raises
    LogReadError."""
    from ..adapters.log_reader import LogReadError, open_log, read_lines

    stream = open_log(path, stdin)
    scanner = Scanner()
    try:
        for text, level in read_lines(stream):
            scanner.feed(text, level)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise LogReadError(f"{path!r}: read failed after {scanner.count} lines ({why})") from None
    finally:
        if path != "-":
            stream.close()
    return scanner.result()


def render_text(out, data: dict) -> None:
    where = "standard input" if data["source"] == "-" else data["source"]
    count = data["lines_read"]
    facts = [f"{count:,} {'line' if count == 1 else 'lines'} from {where}"]
    facts.append(f"vLLM {data['vllm_version']} (line {data['vllm_version_line']})" if data["vllm_version"]
                 else "vLLM's version not in the log")
    gpu = data["gpu"]
    kinds = data["gpu_capabilities"]
    facts.append(f"GPUs of {len(kinds)} kinds (SM {', '.join(kinds)}; the last: {gpu['name']}, line {gpu['line']})"
                 if len(kinds) > 1 else f"GPU {gpu['name']} (SM {gpu['compute_capability']}, line {gpu['line']})" if gpu
                 else "GPUs not named in the log")
    facts.append(f"vLLM's arguments on line {data['arguments_line']}" if data["arguments_line"]
                 else "no 'non-default args' line")
    out.info("; ".join(facts), label="read")
    for item in data["explained"]:
        others = [r for r in item["candidates"] if r != item["rule"]]
        one_of = f" (or {', '.join(others)}: the log does not tell them apart)" if others else ""
        repeat = f", {item['count']} lines alike" if item["count"] > 1 else ""
        if item["vllm_version"] != data["vllm_version"]:  # a run before the log's last release line
            repeat += f", in a run of vLLM {item['vllm_version'] or '(release not in the log)'}"
        out.info(f"{item['rule']}{one_of} — line {item['line']}{repeat}: {item['text']}", label="known failure")
        out.info(f"  what vLLM does: {item['effect']}")
        if item["plan_text"]:
            out.info(f"  on the logged arguments: {item['plan_text']}")
        else:
            out.info(f"  fix: {item['fix']}")
            out.info(f"  reference: {item['reference']}")
        out.info(f"  raised at ({item['signature']['releases']}): {item['signature']['source']}")
    corrected = data["corrected"]
    if data["explained"] and corrected is not None:
        context = f"vLLM {corrected['vllm_version'] or 'version unknown'}, GPU type {corrected['gpus']}"
        if corrected["error"]:
            out.info(f"the logged arguments cannot be planned: {corrected['error']}", label="corrected command")
        elif corrected["refusals"]:
            for refusal in corrected["refusals"]:
                out.info(refusal, label="dsv4-serve would refuse")
            out.info("fix the arguments above first; `dsv4-launch plan ARGS` checks them", label="corrected command")
        elif corrected["unfixed"]:
            out.info(f"{corrected['command']}   ({context})", label="dsv4-serve would run")
            out.info(f"  which still fails with {', '.join(corrected['unfixed'])}: apply the fix above first "
                     "(`dsv4-launch plan ARGS` checks the result)")
        else:
            out.info(f"{corrected['command']}   (as dsv4-serve would run it; {context})", label="corrected command")
            for change in corrected["changes"]:
                out.info(f"  {change['option']} {change['before'] or '(not set)'} → {change['after']}: "
                         f"{change['reason']} ({change['reference']})")
        if corrected["left_out"]:
            out.info(f"  not rebuilt from the log (add them yourself): {', '.join(corrected['left_out'])}")
    elif data["explained"] and data["plan_error"]:
        out.info(data["plan_error"], label="corrected command")
    elif data["explained"]:
        out.info("the log has no 'non-default args' line (vLLM logs it at start): run `dsv4-launch plan` with "
                 "your arguments for the corrected command", label="corrected command")
    if not data["explained"]:
        out.info("no known DeepSeek-V4 failure found in the log", label="unknown")
        root = data["root_cause"]
        if root:
            out.info(f"line {root[0]['line']}: {root[0]['text']}", label="root cause")
            for line in root[1:]:  # the lines its message wraps onto
                out.info(f"  line {line['line']}: {line['text']}")
        elif data["traceback_cut"]:
            out.info(f"not in the log: it ends inside a traceback (line {data['traceback_cut']}); the exception "
                     "line comes after the last frame — copy the log from there", label="root cause")
        elif data["pointers"]:
            out.info("not in the log: vLLM's line below points above it, at lines this log does not have",
                     label="root cause")
        else:
            out.info("no exception or error line found", label="root cause")
        for line in data["pointers"]:
            out.info(f"line {line['line']}: {line['text']}", label="vLLM says")
        if data["hint"]:
            out.info(data["hint"], label="hint")
        out.info("`dsv4-launch doctor` checks this machine; `dsv4-launch plan ARGS` checks the arguments",
                 label="next")


def run_explain(rest: list[str], *, as_json: bool, ctx: Context | None = None) -> int:
    """``dsv4-launch explain [FILE|-] [--json]``; ``rest``: the operands the door read (a word
    that starts with ``-`` is a file's name here: options are the door's); ``ctx``: the world it
    reads (None: this process's; ``-`` reads ``ctx.stdin``)."""
    from ..output.render import render

    ctx = here(ctx)
    return render(explain_result(rest, ctx), as_json=as_json, stdout=ctx.stdout, stderr=ctx.stderr, env=ctx.env or {})


def explain_result(rest: list[str], ctx: Context):
    """What explain has to show: the explanation as lines or a document, or the one error line."""
    from ..adapters.log_reader import LogReadError
    from ..output.render import Result

    env = ctx.env or {}

    def failed(source: str, message: str) -> Result:
        return Result(BAD_INPUT, COMMAND.prefix, "the explanation", message, _error_document(source, message), None,
                      _scrubber(None, env))

    # ``rest`` holds operands only: the door (own_options.parse) refused every option it does
    # not declare before a ``--``, and after ``--`` every word is an operand (POSIX), a log file
    # named ``-file`` or ``--json`` too.
    if len(rest) > 1:
        return failed(rest[0], f"expected one log file (or - for standard input), got {' '.join(rest)!r} "
                      "(see: dsv4-launch explain --help)")
    source = rest[0] if rest else "-"
    if source == "-" and _is_terminal(ctx.stdin):
        return failed(source, "no log given: dsv4-launch explain FILE, or pipe vLLM's output in (journalctl -u vllm "
                      "| dsv4-launch explain -)")
    try:
        scan = scan_source(source, ctx.stdin)
    except LogReadError as exc:
        return failed(source, str(exc))
    except KeyboardInterrupt:
        return Result(exit_codes.INTERRUPTED, COMMAND.prefix, error="interrupted", scrub=_scrubber(None, env),
                      document=_error_document(source, "interrupted"))
    # masked wherever they appear: the pasted command's secrets, and the value of a secret option
    # misspelt in vLLM's argument error
    pasted = (*_read_command(scan.command, scan.version)[1], *misspelt_secrets(scan.command)) if scan.command else ()
    said = [w for m in scan.matches if m.signature.rule == ARGUMENT_ERROR
            for w in misspelt_secrets(_unrecognized((m.values or {}).get("message", "")))]
    scan = scan._replace(secrets=(*scan.secrets, *pasted, *said))
    data = explain_data(scan, source, env)
    return Result(data["exit_status"], COMMAND.prefix, "the explanation", None, data,
                  lambda out: render_text(out.lines, data), _scrubber(scan, env))


def _is_terminal(stream) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, OSError, AttributeError):
        return False


def _run(own: dict, rest: list[str], ctx: Context | None = None) -> int:
    return run_explain(rest, as_json=bool(own.get("json")), ctx=ctx)


COMMAND = Command("explain", """Explain a vLLM crash from its log: which known DeepSeek-V4 failure, the fix,
and the command that works.

FILE is vLLM's output (a terminal's, `journalctl -u vllm`, `kubectl logs`); `-` or nothing reads
standard input. Large logs are streamed; ANSI colour and journald, kubectl and vLLM prefixes are
tolerated. Where the log shows vLLM's version and its `non-default args`, the corrected command
is planned as dsv4-serve would run it. Secrets are never printed.

\b
Exit status:
  0  a known failure is explained
  1  none found (the root-cause lines are shown; see `dsv4-launch doctor`)
  2  bad input (a missing file, a directory)""", (JSON,), _run, arguments="[FILE|-]",
                  error_document=_error_document("-", ""))
