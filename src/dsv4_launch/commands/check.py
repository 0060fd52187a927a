"""``dsv4-launch check [URL] [--model NAME] [--json] [--timeout S] [--api-key-env NAME]``:
is the server at URL (default http://127.0.0.1:8000) serving DeepSeek-V4 correctly?

What it asks and its exit statuses (a Kubernetes probe, a CI smoke test): ``COMMAND``'s help
below; what the answers show: ``core/check/judge.py``. The API key comes from the environment
variable named by ``--api-key-env`` (never from the command line) and is never printed; server
text is printed escaped (``output/``).
"""
from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping

from ..core.check import judge as sc
from ..core.credentials import clip
from ..core.settings import read_flag
from ..output.redact import Redactor
from ..output.render import Out, Result, render
from . import exit_codes
from .context import Context, here
from .own_options import JSON, Command, Option, UsageError

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0

# Options that would put a secret on the command line (visible in ps, /proc and shell history).
_SECRET_OPTION = r"--?(?:api[-_]?key|key|token|bearer|password|passwd|secret|auth[\w-]*|header)"
SECRET_REFUSED = ("a secret on the command line is visible to every user of this machine (ps, /proc, shell "
                  "history): put the key in an environment variable and give its name, --api-key-env NAME")
MISSING_VARIABLE = "the variable named by --api-key-env"


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("expected seconds, e.g. 30 or 2.5") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
        raise ValueError(f"expected seconds above 0 and at most {MAX_TIMEOUT:.0f}")
    return value


def _env_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        # A UsageError, not a ValueError: the value is not echoed — someone who gives the key
        # itself instead of its variable's name must not see it printed back.
        raise UsageError("--api-key-env takes the name of an environment variable (such as VLLM_API_KEY), "
                         "not the key itself")
    return text


def _model(text: str) -> str:
    if not text:
        raise ValueError("expected the name the server serves the model as")
    return text


OPTIONS = (
    Option("--model", "The served model to probe (default: the first /v1/models lists).", "NAME", _model),
    JSON,
    Option("--timeout", "Seconds for the whole check; each request gets what is left.", "S", _timeout,
           default=f"{DEFAULT_TIMEOUT:g}"),
    Option("--api-key-env", "The environment variable that holds the server's API key (e.g. VLLM_API_KEY). "
           "A key on the command line is refused: ps and shell history would show it.", "NAME", _env_name),
)

def refused_secret(args) -> str | None:
    """The line for an option that would put a secret on the command line (read before the
    options, so that it is never taken for a mistyped option of ours), else None."""
    for token in args:
        if token == "--":
            break
        name = token.partition("=")[0]
        if re.fullmatch(_SECRET_OPTION, name):
            return f"{name}: {SECRET_REFUSED}"
    return None


def url_of(rest: list[str]) -> str:
    """The one URL among check's positional arguments (default: DEFAULT_URL). Raises UsageError."""
    if len(rest) > 1:
        raise UsageError(f"{COMMAND.prefix}: one URL at most, got {len(rest)}")
    if rest and looks_like_key(rest[0]):
        raise UsageError(f"{COMMAND.prefix}: expected a URL such as {DEFAULT_URL}; the argument given looks like "
                         "an API key and is not printed (a key: put it in an environment variable and give its name, "
                         "--api-key-env NAME; a host: write it as http://HOST:PORT)")
    return rest[0] if rest else DEFAULT_URL


# What API keys and tokens start with (OpenAI-style sk-, Hugging Face hf_, GitHub, GitLab, Slack,
# AWS access keys, JWTs), or a long run of letters and digits that no host name is written as.
_KEY_LIKE = (r"(?:sk|pk|rk)-[A-Za-z0-9_-]{3,}|sk_[A-Za-z0-9_-]{3,}|hf_[A-Za-z0-9]{3,}|gh[pousr]_[A-Za-z0-9]{3,}"
             r"|github_pat_\w+|glpat-[\w-]+|xox[abprs]-[\w-]+|AKIA[A-Z0-9]{8,}"
             r"|(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{32,}")


def looks_like_key(word: str) -> bool:
    """A bare word (no scheme, port, path or dot) shaped like a key rather than a host name: it is
    refused without being echoed, where a host name would be tried (and shown in the report)."""
    if word.startswith("eyJ") and re.fullmatch(r"eyJ[\w-]+(?:\.[\w-]*)*", word):  # a JWT: base64 JSON
        return True
    if any(mark in word for mark in ("://", ":", "/", ".")):
        return False
    return re.fullmatch(_KEY_LIKE, word) is not None or ("_" in word and any(c.isdigit() for c in word))


class Run:
    """What one check found, step by step."""

    def __init__(self) -> None:
        self.findings: list[sc.Finding] = []
        self.steps: list[dict] = []
        self.model: str | None = None
        self.chat: sc.ChatSummary | None = None
        self.tools: sc.ChatSummary | None = None

    def record(self, step: str, request: str, ex: sc.Exchange, findings: list[sc.Finding]) -> list[sc.Finding]:
        self.steps.append({"step": step, "request": request, "http_status": ex.status,
                           "elapsed_s": round(ex.elapsed, 3), "error": ex.error, "error_kind": ex.kind})
        self.findings.extend(findings)
        return findings


def _masking(fetch, scrub: Redactor):
    """``fetch`` whose answers arrive masked, whole, before the judge cuts what it quotes (a key
    cut in half matches no form of it); a body cut at the size limit may end in a key's start; a
    JSON answer is masked in its values too (a key written with ``\\u`` escapes)."""

    def masked(*args, **kwargs) -> sc.Exchange:
        ex = fetch(*args, **kwargs)
        if ex.body:
            text = ex.body.decode("utf-8", "surrogateescape")
            shown = scrub.secrets_only(text, cut=ex.truncated)
            if not ex.truncated and "\\u" in shown:
                shown = _masked_json(shown, scrub)
            if shown != text:
                ex = ex._replace(body=shown.encode("utf-8", "surrogateescape"))
        if ex.error:
            ex = ex._replace(error=scrub(ex.error))
        return ex

    return masked


def _masked_json(text: str, scrub: Redactor) -> str:
    """A JSON text with its string values masked once read (written again only if one changed)."""

    def walk(value):
        if isinstance(value, str):
            return scrub.secrets_only(value)
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    try:
        doc = json.loads(text)
        out = walk(doc)
        return text if out == doc else json.dumps(out)
    except (ValueError, RecursionError):  # not JSON, or nested past what json reads
        return text


def _stop(findings: list[sc.Finding]) -> bool:
    return any(f.level in (sc.FAIL, sc.UNREACHABLE) for f in findings)


def probe(base: sc.BaseUrl, *, model: str | None, headers: Mapping[str, str], deadline: float, client: str,
          key_from: str | None, key_set: bool, clock, fetch, debug: bool = False) -> Run:
    """The four steps, each bounded by the time left before ``deadline``. Something unforeseen
    inside one step (``debug``: raised instead) is that step's finding, a problem, and the
    steps that do not need its result still run."""
    run = Run()
    keys: dict = {"key_from": key_from, "key_set": key_set}

    def step(name: str, request: str, judge, body: dict | None = None) -> tuple[list[sc.Finding], object]:
        """``request`` sent and its answer judged: (its findings, what it gives the next steps)."""
        method, path = request.split()[:2]
        data = json.dumps(body).encode() if body is not None else None
        try:
            ex = fetch(method, base, path, headers={**headers, "Content-Type": "application/json"} if data else headers,
                       body=data, timeout=deadline - clock(), client=client, clock=clock)
            found, given = judge(ex)
        except Exception as exc:
            if debug:
                raise
            ex = sc.Exchange(None, error=f"{type(exc).__name__}", kind="internal")
            found = [sc.Finding(name, sc.FAIL, "internal-error",
                                f"{request}: internal error: {type(exc).__name__}: {clip(str(exc), 160)} "
                                "(DSV4_LAUNCH_DEBUG=1 shows the traceback)")]
            given = None
        return run.record(name, request, ex, found), given

    found, _ = step("health", "GET /health", lambda ex: (sc.judge_health(ex), None))
    if _stop(found) and not _internal(found):
        return run
    found, card = step("models", "GET /v1/models", lambda ex: sc.judge_models(ex, model, **keys))
    if isinstance(card, dict):
        run.model = card["id"]
    elif model is not None and _internal(found):
        run.model = model  # the model list could not be judged here: the model asked for is probed
    if run.model is None:
        return run
    found, chat_summary = step("chat", "POST /v1/chat/completions", lambda ex: sc.judge_chat(ex, **keys),
                               sc.chat_request(run.model))
    run.chat = chat_summary if isinstance(chat_summary, sc.ChatSummary) else None
    if any(f.level == sc.UNREACHABLE for f in found):
        return run
    _, tools_summary = step("tools", "POST /v1/chat/completions (tools)", lambda ex: sc.judge_tools(ex, **keys),
                            sc.tool_request(run.model))
    run.tools = tools_summary if isinstance(tools_summary, sc.ChatSummary) else None
    return run


def _internal(findings: list[sc.Finding]) -> bool:
    return any(f.code == "internal-error" for f in findings)


EXIT = {sc.HEALTHY: exit_codes.OK, sc.PROBLEM: exit_codes.CHECK_PROBLEM, sc.NOT_REACHABLE: exit_codes.NOT_REACHABLE}
LABEL = {sc.OK: "ok", sc.NOTE: "note", sc.WARN: "warning", sc.FAIL: "problem", sc.UNREACHABLE: "not reachable"}


def _run(own: dict, rest: list[str], ctx: Context | None = None) -> int:
    ctx = here(ctx)
    try:
        url = url_of(rest)
    except UsageError as exc:
        result = _bad_input(str(exc), rest, ctx)
    else:
        result = probe_result(own, url, ctx)
    return render(result, as_json=bool(own.get("json")), stdout=ctx.stdout, stderr=ctx.stderr, env=ctx.env or {})


BAD_INPUT_DOCUMENT = {"command": "check", "status": "bad-input", "exit_status": exit_codes.USAGE}


def _bad_input(message: str, words: list[str], ctx: Context) -> Result:
    """Bad input: the one line, masked for the secrets ``words`` (the arguments read) and the
    environment may hold (``pipeline.usage_redactor``)."""
    from .pipeline import usage_redactor

    return Result(exit_codes.USAGE, COMMAND.prefix, error=message, plain_error=True, document=BAD_INPUT_DOCUMENT,
                  scrub=usage_redactor(words, ctx.env or {}))


def probe_result(own: dict, url: str, ctx: Context) -> Result:
    """The check of the server at ``url`` with check's options ``own``."""
    env = ctx.env or {}
    clock = ctx.clock or time.monotonic
    try:
        base = sc.parse_base_url(url)
    except ValueError as exc:
        return _bad_input(f"{COMMAND.prefix}: bad URL: {exc}", [url], ctx)
    key_from = own.get("api_key_env")
    key = env.get(key_from) if key_from else None
    # A name no variable has may be the key itself (an unexported shell variable's value: hf_…,
    # sk_live_…): it is never shown; a variable that exists is shown by its name.
    key_shown = None if not key_from else f"${key_from}" if key_from in env else MISSING_VARIABLE
    auth = f"Bearer {key}" if key else base.basic_auth()
    # Masked wherever they would show (a server may echo the header back): the key, the URL's
    # password and the Basic token made of it.
    # The environment's credentials too, as in every run (a server beside us may quote them).
    secrets = [s for s in (key, base.password, auth.partition(" ")[2] if auth else None) if s]
    scrub = Redactor.for_argv((), env=env).also(secrets)
    timeout = own.get("timeout", DEFAULT_TIMEOUT)
    from ..adapters.http_client import default_client, request

    client = ctx.http_client if ctx.http_client is not None else default_client()
    fetch = ctx.fetch if ctx.fetch is not None else request
    headers = {"Accept": "application/json", "Accept-Encoding": "identity", "User-Agent": "dsv4-launch-check",
               **({"Authorization": auth} if auth else {})}
    start = clock()
    try:
        run = probe(base, model=own.get("model"), headers=headers, deadline=start + timeout, client=client,
                    key_from=key_shown, key_set=bool(key), clock=clock, fetch=_masking(fetch, scrub),
                    debug=read_flag(env, "DSV4_LAUNCH_DEBUG")[0])
    except KeyboardInterrupt:
        return Result(exit_codes.INTERRUPTED, COMMAND.prefix, error="interrupted",
                      document={"command": "check", "url": base.shown, "status": "interrupted"})
    except Exception as exc:  # never a traceback of ours: one line, a problem (DSV4_LAUNCH_DEBUG=1 raises)
        if read_flag(env, "DSV4_LAUNCH_DEBUG")[0]:
            raise
        return Result(exit_codes.CHECK_PROBLEM, COMMAND.prefix, scrub=scrub,
                      error=f"internal error: {type(exc).__name__}: {clip(scrub(str(exc)), 160)} "
                      "(DSV4_LAUNCH_DEBUG=1 shows the traceback)",
                      document={"command": "check", "url": base.shown, "status": sc.PROBLEM})
    notes = []
    if base.stripped_v1:
        notes.append("the URL's /v1 was taken off: /health and /v1/… are asked at the server's root")
    if key_shown and not key:
        why = "empty" if key_from in env else "not set (its name is not shown: it may be the key itself)"
        notes.append(f"{key_shown} is {why}: no API key sent")
    state = sc.verdict(run.findings)
    status = EXIT[state]
    elapsed = clock() - start
    data = {
        "command": "check", "url": base.shown, "client": client, "timeout_s": timeout, "model": run.model,
        "status": state, "exit_status": status, "elapsed_s": round(elapsed, 3), "steps": run.steps,
        "findings": [{"step": f.step, "level": f.level, "code": f.code, "text": f.text,
                      "reference": f.reference} for f in run.findings],
        "notes": notes, "chat": run.chat.data() if run.chat else None,
        "tool_call": run.tools.data() if run.tools else None,
    }

    def text(shown: Out) -> None:
        out = shown.lines
        out.info(f"{base.shown} (timeout {timeout:g} s, {client})", label="check")
        for note in notes:
            out.info(note, label="note")
        for f in run.findings:
            line = f"{f.text} ({f.reference})" if f.reference else f.text
            if f.level == sc.WARN:
                out.warning(line)
            else:
                out.info(line, label=LABEL[f.level])
        out.info(_summary(state, run, elapsed, status), label=state)

    return Result(status, COMMAND.prefix, "the report", None, data, text, scrub)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _summary(state: str, run: Run, elapsed: float, status: int) -> str:
    """The one verdict line: what was asked, and the problems and warnings above counted."""
    asked = len(run.steps)
    warnings = sum(1 for f in run.findings if f.level == sc.WARN)
    warned = f", {_count(warnings, 'warning')} above" if warnings else ""
    if state == sc.HEALTHY:
        said = f": no problem{warned}" if warnings else ", nothing wrong found"
        return f"{asked} requests answered in {elapsed:.2f} s{said} (exit {status})"
    if state == sc.PROBLEM:
        n = sum(1 for f in run.findings if f.level == sc.FAIL)
        return f"{_count(n, 'problem')} found{warned} (exit {status})"
    return f"the server did not answer (exit {status}: not reachable, not ready or too slow){warned}"


COMMAND = Command("check", """Check a running OpenAI-compatible server (vLLM) at URL: is it serving correctly?

URL: default http://127.0.0.1:8000. GET /health, GET /v1/models, one short deterministic chat
completion (temperature 0, 16 tokens, thinking off) and one tool-call request. Finds: not
reachable / not ready; empty or degenerate output (one token repeated, only special tokens such
as BOS); an answer that is not the count asked for; DSML or tool-call markup in `content`;
reasoning in `content`, or the whole answer in the reasoning field; and says the probe's tokens
per second. The API key is never printed.

\b
Exit status:
  0  healthy
  1  a problem found in the server's answers
  2  bad input (a bad URL or --timeout, an unknown option, a key on the command line)
  3  not reachable, not ready (503, still loading) or no answer within --timeout
As a Kubernetes startupProbe: exec `dsv4-launch check --api-key-env VLLM_API_KEY`.""",
                  OPTIONS, _run, arguments="[URL]", screen=refused_secret,
                  error_document=BAD_INPUT_DOCUMENT)
