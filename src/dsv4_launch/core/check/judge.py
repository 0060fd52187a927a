"""Judging a running OpenAI-compatible server's answers, for ``dsv4-launch check`` (pure).

The command sends four requests — ``GET /health``, ``GET /v1/models``, one short
deterministic chat completion and one tool-call request — and hands each answer here as an
``Exchange``; this module says what it shows. Nothing here does I/O.

What vLLM answers, release by release (0.24.0 … 0.33.0; paths under ``vllm/entrypoints/``):

- ``/health``: 200 once the engine is up, 503 when it is dead
  (``serve/instrumentator/health.py:22@0.33.0``); vLLM's API server binds its port before the
  engine loads but listens only after (``launchers/api_server/entry.py:174-190@0.33.0``), so
  during loading a connection is refused. vLLM's launchers that answer while loading (the DP
  supervisor ``launchers/dp_supervisor.py:228@0.29.0+``, ``vllm preload``
  ``cli/preload.py:74@0.31.0+``) say 503 until ready.
- ``/v1/models``: ``{"object": "list", "data": [{"id": NAME, "root": …, "max_model_len": …}]}``
  (``openai/models/api_router.py:20``, ``serve/engine/protocol.py`` ModelCard@0.33.0).
- ``/v1`` paths need ``Authorization: Bearer KEY`` when vLLM runs with ``--api-key`` /
  ``VLLM_API_KEY``; ``/health`` never does (``serve/middleware/authenticate.py:59-61@0.33.0``:
  401 with ``{"error": "Unauthorized"}``; ``serve/utils/server_utils.py:41@0.24.0``).
- A chat completion's message has ``content`` and the reasoning as ``reasoning`` in every
  release 0.24.0 … 0.33.0 (``openai/chat_completion/protocol.py`` ``ChatMessage.reasoning``,
  e.g. line 86@0.33.0, 67@0.24.0); older vLLM and other servers call it
  ``reasoning_content``, which is read when ``reasoning`` is absent. ``return_token_ids``
  adds the generated ids to the choice (``chat_completion/serving.py:1015@0.24.0``,
  ``:1067@0.33.0``); ``usage.completion_tokens`` counts them.
- ``tool_choice: "auto"`` without a tool parser is a 400 ``"auto" tool choice requires
  --enable-auto-tool-choice and --tool-call-parser to be set``
  (``serve/render/serving.py:361@0.24.0``, ``vllm/renderers/online_renderer.py:279@0.33.0``).
- DeepSeek-V4's thinking: without ``thinking``/``enable_thinking`` in ``chat_template_kwargs``
  the tokenizer turns thinking off in 0.24.0 and on from 0.28.0
  (``vllm/tokenizers/deepseek_v4.py:33-38@0.24.0``, ``:28-33@0.33.0``); the probe says
  ``thinking: false`` so that a handful of tokens reach ``content`` in every release.
- Markup: DeepSeek-V4 writes tool calls as ``<｜DSML｜tool_calls>`` … (``vllm/parser/deepseek_v4.py:41-51``),
  V3/V3.1 as ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>`` … (``vllm/tool_parsers/deepseekv3_tool_parser.py:43-47``),
  reasoning between ``<think>`` and ``</think>``; the special tokens are ``<｜…｜>``
  (``vllm/tokenizers/deepseek_v4_encoding.py:21-28``). The parsers are ``deepseek_v4`` for
  ``--tool-call-parser`` and ``--reasoning-parser`` in every release (``vllm/tool_parsers/__init__.py``,
  ``vllm/reasoning/__init__.py``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

# What is quoted is cut (``clip``) only once masked: a secret cut in half matches no form of it
# (``check`` masks every answer as it arrives, commands/check.py ``_masking``).
from ..credentials import clip
from ..records import Record

OK, NOTE, WARN, FAIL, UNREACHABLE = "ok", "note", "warn", "fail", "unreachable"
HEALTHY, PROBLEM, NOT_REACHABLE = "healthy", "problem", "not-reachable"

# The transport failures that mean "nothing (or nothing in time) answered": not reachable.
UNREACHABLE_KINDS = frozenset({"refused", "timeout", "dns", "connection"})

MAX_TOKENS = 16
TOOL_MAX_TOKENS = 96
COUNT_TO = 20
COUNT_MIN = 4  # numbers an answer cut at MAX_TOKENS holds at least (16 tokens; a short preamble allowed)
PROMPT = "Count from 1 to 20, separated by single spaces. Reply with the numbers only."
TOOL_PROMPT = "What is the weather in Paris right now? Use the get_weather tool."
TOOL_NAME = "get_weather"

REF_MARKUP = "vLLM #40801, #54686"
REF_REASONING = "vLLM #48645"
REF_THINKING = "vLLM #46256, #48645"
REF_SPECIAL = "vLLM #55486"
REF_REPEATED = "vLLM #52938"

# Tool-call markup a tool parser should have taken out of `content`.
MARKUP = ("｜DSML｜", "<|DSML|", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
          "<｜tool▁calls▁end｜>", "<｜tool▁call▁end｜>")
THINK = ("<think>", "</think>")
_SPECIAL_TOKEN = r"<[｜|][^<>｜|\s]{1,48}[｜|]>"
_FUNCTION_CALLS = r"</?(?:[｜|]DSML[｜|])?function_calls>"


class BaseUrl(Record):
    scheme: str
    host: str  # as written (an IPv6 address without brackets)
    port: int
    path: str  # "" or "/prefix", without a trailing slash
    username: str | None = None
    password: str | None = None
    stripped_v1: bool = False

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host.lower(), self.port)

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, path: str) -> str:
        """The URL of ``path`` (``/health``) under this base, without credentials."""
        return f"{self.scheme}://{self.netloc}{self.path}{path}"

    @property
    def shown(self) -> str:
        """The base URL for messages: credentials as ``***``."""
        cred = "***@" if self.username is not None or self.password is not None else ""
        return f"{self.scheme}://{cred}{self.netloc}{self.path}"

    def basic_auth(self) -> str | None:
        """``Basic …`` for credentials in the URL (as curl and httpx send them), else None."""
        if self.username is None and self.password is None:
            return None
        pair = f"{self.username or ''}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


def parse_base_url(text: str) -> BaseUrl:
    """The server's base URL; ValueError (one line, the URL not repeated) when it is not one.

    ``host:port`` means ``http://host:port``; a trailing ``/v1`` (an OpenAI client's base URL)
    is taken off, since ``/health`` lives at the root."""
    if not text or not text.isprintable() or any(ch.isspace() for ch in text):
        raise ValueError("a URL has no blanks or control characters")
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:  # a port that is not a number, or out of range; a bad IPv6 literal
        raise ValueError(f"not a URL ({str(exc).split(':')[0]})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError("expected an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError("the URL has no host")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise ValueError("a server's base URL has no query (?) or fragment (#)")
    if port == 0:
        raise ValueError("port 0 is not a port a server listens on")
    path = parts.path.rstrip("/")
    stripped = False
    if path.endswith("/v1"):
        path, stripped = path[:-3], True
    return BaseUrl(scheme=scheme, host=parts.hostname,
                   port=port if port is not None else (443 if scheme == "https" else 80), path=path,
                   username=unquote(parts.username) if parts.username is not None else None,
                   password=unquote(parts.password) if parts.password is not None else None, stripped_v1=stripped)


class Exchange(Record):
    """What one request got: an HTTP status and body, or no answer (``error``, ``kind``)."""

    status: int | None
    body: bytes = b""
    elapsed: float = 0.0
    error: str | None = None
    kind: str | None = None  # refused, timeout, dns, connection, tls, redirect, too-large, other
    truncated: bool = False


class Finding(Record):
    step: str  # health, models, chat, tools, request
    level: str  # OK, NOTE, WARN, FAIL, UNREACHABLE
    code: str
    text: str
    reference: str | None = None


def _probe(model: str, prompt: str, max_tokens: int) -> dict:
    """A greedy chat completion of a handful of tokens, thinking off."""
    return {"model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0,
            "max_tokens": max_tokens, "stream": False, "chat_template_kwargs": {"thinking": False}}


def chat_request(model: str) -> dict:
    """The deterministic probe, its token ids back."""
    return {**_probe(model, PROMPT, MAX_TOKENS), "return_token_ids": True}


def tool_request(model: str) -> dict:
    tool = {"name": TOOL_NAME, "description": "Get the current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    return {**_probe(model, TOOL_PROMPT, TOOL_MAX_TOKENS), "tools": [{"type": "function", "function": tool}],
            "tool_choice": "auto"}


# --- reading answers -------------------------------------------------------------------------

# No answer of vLLM's is nested more than a few levels (a chat completion: 6); anything deeper than
# this is not read at all, so no reader here — json's own, ours, the JSON writer — ever meets a
# nesting its recursion cannot hold (a RecursionError would end the whole check).
MAX_JSON_DEPTH = 64
TOO_DEEP = f"the answer's JSON is nested more than {MAX_JSON_DEPTH} levels deep: not read"
_BRACKET = r"[\[\]{}]"
_JSON_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'


def nested_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """More than ``limit`` arrays/objects open at once somewhere in ``text`` (brackets inside
    strings not counted). Linear; a text with at most ``limit`` brackets is not scanned."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for m in re.finditer(_BRACKET, re.sub(_JSON_STRING, '""', text)):
        if m.group(0) in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def parse_json(text: str) -> tuple[object, str | None]:
    """(the value, None), or (None, why not): not JSON, or nested too deeply to read. Never raises."""
    if nested_too_deep(text):
        return None, TOO_DEEP
    try:
        return json.loads(text), None
    except RecursionError:  # not reached below MAX_JSON_DEPTH; kept so that nothing can raise
        return None, TOO_DEEP
    except ValueError:
        return None, "not JSON"


def json_body(ex: Exchange):
    """The body as JSON, or None (not JSON, cut at the size limit, or nested too deeply)."""
    if not ex.body or ex.truncated:
        return None
    return parse_json(ex.body.decode("utf-8", "replace"))[0]


def too_deep(ex: Exchange) -> bool:
    """The body is JSON nested deeper than MAX_JSON_DEPTH (so ``json_body`` gave None)."""
    return bool(ex.body) and not ex.truncated and nested_too_deep(ex.body.decode("utf-8", "replace"))


def error_message(ex: Exchange) -> str:
    """The server's own error text: vLLM's ``{"error": {"message": …}}``, ``{"error": "…"}``,
    older ``{"message": …}``, else the start of the body."""
    doc = json_body(ex)
    if isinstance(doc, dict):
        err = doc.get("error")
        for said in (err.get("message") if isinstance(err, dict) else err, doc.get("message"), doc.get("detail")):
            if isinstance(said, str):
                return clip(said, 300)
    text = ex.body[:300].decode("utf-8", "replace").strip()
    return clip(text, 300) if text else "(empty body)"


def transport_finding(step: str, what: str, ex: Exchange) -> Finding:
    """A request that got no usable HTTP answer."""
    level = UNREACHABLE if ex.kind in UNREACHABLE_KINDS else FAIL
    return Finding(step, level, ex.kind or "no-answer", f"{what}: {ex.error}")


def markup_in(text: str) -> str | None:
    """The first tool-call markup in ``text`` (what a tool parser should have taken out)."""
    m = re.search(_FUNCTION_CALLS, text)
    return next((mark for mark in MARKUP if mark in text), m.group(0) if m else None)


def think_in(text: str) -> str | None:
    return next((mark for mark in THINK if mark in text), None)


def only_special_tokens(text: str) -> bool:
    """``text`` is nothing but special tokens such as ``<｜begin▁of▁sentence｜>`` (and blanks)."""
    if not re.search(_SPECIAL_TOKEN, text):
        return False
    return not re.sub(_SPECIAL_TOKEN, "", text).strip()


def repeated_unit(text: str, ids: Sequence[int] | None = None) -> str | None:
    """What repeats when the output is one token (or one short piece of text) over and over."""
    if ids is not None and len(ids) >= 4 and len(set(ids)) == 1:
        return f"token id {ids[0]} ×{len(ids)}"
    s = text.strip()
    if len(s) < 8:
        return None
    # a piece of up to 16 characters, 3.5 times or more
    return next((repr(s[:p]) for p in range(1, min(16, int(len(s) / 3.5)) + 1)
                 if all(s[i] == s[i - p] for i in range(p, len(s)))), None)


_COUNT_SEP = r"[\s,;.、\-–]*"  # what may stand between the numbers of a count


def counts(content: str, finish_reason: str | None = None) -> bool:
    """``content`` holds the count PROMPT asks for: the numbers 1, 2, 3 … in order with only
    separators between them, and no other number right after them; words and other text around
    allowed (a preamble may name numbers: "1 to 20: 1, 2, …"). A finished answer
    (``finish_reason`` stop) holds all COUNT_TO; one cut at ``max_tokens`` at least COUNT_MIN,
    its last number possibly cut too (``1`` of ``10``)."""
    numbers = list(re.finditer(r"\d+", content))

    def joined(a: int, b: int) -> bool:  # numbers[a] and numbers[b] with only separators between
        return re.fullmatch(_COUNT_SEP, content[numbers[a].end():numbers[b].start()]) is not None

    best, last = 0, -1
    for i, m in enumerate(numbers):
        n = 0
        while m.group() == "1" and i + n < len(numbers) and numbers[i + n].group() == str(n + 1) \
                and (n == 0 or joined(i + n - 1, i + n)):
            n += 1
        if n > best:
            best, last = n, i + n - 1
    stopped = finish_reason == "stop"
    if last + 1 < len(numbers) and joined(last, last + 1):  # the count goes on wrong, unless cut there
        following = numbers[last + 1]
        cut = not stopped and last + 2 == len(numbers) and str(best + 1).startswith(following.group()) \
            and not content[following.end():].strip()
        if not cut:
            return False
    return best >= (COUNT_TO if stopped else COUNT_MIN)


def _message(doc) -> tuple[dict | None, dict | None, str | None]:
    """(choice, message, what is wrong) of a chat completion document."""
    if not isinstance(doc, dict):
        return None, None, "the answer is not a JSON object"
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, None, "the answer has no choices"
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return choices[0], None, "the answer's choice has no message"
    return choices[0], message, None


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class ChatSummary(Record):
    content: str | None
    reasoning: str | None
    reasoning_field: str | None
    finish_reason: str | None
    completion_tokens: int | None
    elapsed: float
    tokens_per_second: float | None
    tool_calls: tuple = ()

    def data(self) -> dict:
        return {
            "content": clip(self.content, 2000) if self.content is not None else None,
            "reasoning": clip(self.reasoning, 2000) if self.reasoning is not None else None,
            "reasoning_field": self.reasoning_field,
            "finish_reason": self.finish_reason,
            "completion_tokens": self.completion_tokens,
            "elapsed_s": round(self.elapsed, 3),
            "tokens_per_second": round(self.tokens_per_second, 1) if self.tokens_per_second is not None else None,
            "tool_calls": list(self.tool_calls),
        }


def summarize(doc, elapsed: float) -> ChatSummary | None:
    choice, message, wrong = _message(doc)
    if wrong or choice is None or message is None:
        return None
    reasoning_field = "reasoning" if _text(message.get("reasoning")) is not None else (
        "reasoning_content" if _text(message.get("reasoning_content")) is not None else None)
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    tokens = _int(usage.get("completion_tokens"))
    rate = tokens / elapsed if tokens and elapsed > 0 else None
    calls = []
    raw_calls = message.get("tool_calls")
    for call in raw_calls[:16] if isinstance(raw_calls, list) else ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            calls.append({"name": _text(fn.get("name")), "arguments": _text(fn.get("arguments"))})
    return ChatSummary(content=_text(message.get("content")),
                       reasoning=_text(message.get(reasoning_field)) if reasoning_field else None,
                       reasoning_field=reasoning_field, finish_reason=_text(choice.get("finish_reason")),
                       completion_tokens=tokens, elapsed=elapsed, tokens_per_second=rate, tool_calls=tuple(calls))


def _ids(doc) -> list[int] | None:
    try:
        ids = doc["choices"][0].get("token_ids")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return ids if isinstance(ids, list) and all(_int(i) is not None for i in ids) else None


# --- the steps -------------------------------------------------------------------------------

def judge_health(ex: Exchange) -> list[Finding]:
    """``GET /health``. 200: up; 503: not ready (or the engine is dead); 404: no /health here
    (not vLLM), said and the models step decides; anything else: a problem."""
    if ex.status is None:
        return [transport_finding("health", "/health", ex)]
    ms = f"{ex.elapsed * 1000:.0f} ms"
    if ex.status == 200:
        return [Finding("health", OK, "healthy", f"/health: 200 in {ms}")]
    if ex.status == 503:
        return [Finding("health", UNREACHABLE, "not-ready",
                        "/health: 503: the server is not ready (still loading), or its engine is dead")]
    if ex.status in (404, 405):
        return [Finding("health", NOTE, "no-health", f"/health: {ex.status}: this server has no /health (not vLLM?)")]
    if ex.status in (401, 403):
        return [Finding("health", NOTE, "health-guarded",
                        f"/health: {ex.status}: guarded by something in front of the server (vLLM never guards it)")]
    return [Finding("health", FAIL, "health-status", f"/health: HTTP {ex.status}: {error_message(ex)}")]


def _unauthorized(step: str, path: str, ex: Exchange, key_from: str | None, key_set: bool) -> Finding:
    """``key_from``: the key's variable as it may be shown (``$VLLM_API_KEY``), None when none was given."""
    if key_from is None:
        fix = "the server wants an API key: give the name of the environment variable that holds it, " \
              "--api-key-env VLLM_API_KEY"
    elif not key_set:
        fix = f"the server wants an API key, and {key_from} is not set"
    else:
        fix = f"the server refused the API key from {key_from}"
    return Finding(step, FAIL, "unauthorized", f"{path}: HTTP {ex.status}: {fix}")


def judge_models(ex: Exchange, wanted: str | None, *, key_from: str | None = None,
                 key_set: bool = False) -> tuple[list[Finding], dict | None]:
    """``GET /v1/models``: (findings, the model card to probe, or None)."""
    if ex.status is None:
        return [transport_finding("models", "/v1/models", ex)], None
    if ex.status in (401, 403):
        return [_unauthorized("models", "/v1/models", ex, key_from, key_set)], None
    if ex.status == 503:
        return [Finding("models", UNREACHABLE, "not-ready", "/v1/models: 503: the server is not ready")], None
    if ex.status != 200:
        return [Finding("models", FAIL, "models-status", f"/v1/models: HTTP {ex.status}: {error_message(ex)}")], None
    doc = json_body(ex)
    if ex.truncated:
        return [Finding("models", FAIL, "bad-response", "/v1/models: the answer is larger than the size limit")], None
    if doc is None and too_deep(ex):
        return [Finding("models", FAIL, "bad-response", f"/v1/models: {TOO_DEEP}")], None
    data = doc.get("data") if isinstance(doc, dict) else None
    cards = [c for c in data if isinstance(c, dict) and isinstance(c.get("id"), str)] if isinstance(data, list) else []
    if doc is None or not isinstance(data, list):
        return [Finding("models", FAIL, "bad-response",
                        "/v1/models: not an OpenAI model list (no JSON \"data\" list): is this an OpenAI-compatible "
                        "server?")], None
    if not cards:
        return [Finding("models", FAIL, "no-model", "/v1/models: the server lists no model")], None
    card = cards[0] if wanted is None else next((c for c in cards if c["id"] == wanted), None)
    if card is None:
        shown = ", ".join(clip(c["id"], 80) for c in cards[:8]) + (" …" if len(cards) > 8 else "")
        return [Finding("models", FAIL, "model-not-served",
                        f"/v1/models: {wanted!r} is not served here; served: {shown}")], None
    extra = f" (max_model_len {card['max_model_len']})" if _int(card.get("max_model_len")) else ""
    more = f"; also served: {len(cards) - 1} more" if len(cards) > 1 else ""
    return [Finding("models", OK, "model", f"/v1/models: {card['id']}{extra}{more}")], card


def _status_findings(step: str, what: str, ex: Exchange, key_from, key_set) -> list[Finding] | None:
    if ex.status is None:
        return [transport_finding(step, what, ex)]
    if ex.status in (401, 403):
        return [_unauthorized(step, what, ex, key_from, key_set)]
    if ex.status == 503:
        return [Finding(step, UNREACHABLE, "not-ready", f"{what}: 503: the server is not ready")]
    if ex.truncated:
        return [Finding(step, FAIL, "bad-response", f"{what}: the answer is larger than the size limit")]
    return None


def _content_findings(step: str, what: str, summary: ChatSummary) -> list[Finding]:
    out = []
    content = summary.content or ""
    mark = markup_in(content)
    if mark:
        out.append(Finding(step, FAIL, "markup-in-content",
                           f"{what}: tool-call markup ({mark!r}) in `content`: no tool parser took the model's "
                           "tool call out of the answer (none, or not DeepSeek-V4's). Fix for DeepSeek-V4: "
                           "--enable-auto-tool-choice --tool-call-parser deepseek_v4",
                           REF_MARKUP))
    think = think_in(content)
    if think:
        out.append(Finding(step, FAIL, "reasoning-in-content",
                           f"{what}: {think!r} in `content`: the model's reasoning is leaking into the answer. Fix: "
                           "--reasoning-parser deepseek_v4"))
    return out


def _completion(step: str, what: str, ex: Exchange) -> tuple[object, ChatSummary | None, list[Finding]]:
    """An answer's body and its chat-completion summary, or the finding where there is no summary
    (a status other than 200, a body that is not a chat completion or is nested too deep)."""
    if ex.status != 200:
        return None, None, [Finding(step, FAIL, f"{step}-status", f"{what}: HTTP {ex.status}: {error_message(ex)}")]
    doc = json_body(ex)
    summary = summarize(doc, ex.elapsed)
    if summary is not None:
        return doc, summary, []
    _, _, wrong = _message(doc)
    wrong = TOO_DEEP if doc is None and too_deep(ex) else wrong
    return doc, None, [Finding(step, FAIL, "bad-response", f"{what}: {wrong or 'not a chat completion'}")]


def judge_chat(ex: Exchange, *, key_from: str | None = None, key_set: bool = False
               ) -> tuple[list[Finding], ChatSummary | None]:
    """The deterministic chat completion: empty or degenerate output, markup or reasoning in
    ``content``, the whole answer in the reasoning field; tokens per second."""
    what = "chat"
    bad = _status_findings("chat", what, ex, key_from, key_set)
    if bad:
        return bad, None
    doc, summary, wrong = _completion("chat", what, ex)
    if summary is None:
        return wrong, None
    out = _content_findings("chat", what, summary)
    content = summary.content or ""
    reasoning = summary.reasoning or ""
    tokens = summary.completion_tokens
    ids = _ids(doc)
    field = summary.reasoning_field or "reasoning"
    if not content.strip():
        if reasoning.strip() and summary.finish_reason != "length":
            out.append(Finding("chat", FAIL, "answer-in-reasoning",
                               f"{what}: `content` is empty and the whole answer is in `{field}` "
                               f"({clip(reasoning, 60)!r}): the reasoning parser never saw the end of the "
                               "reasoning (`</think>`)", REF_REASONING))
        elif reasoning.strip():
            out.append(Finding("chat", WARN, "thinking-ignored",
                               f"{what}: all {tokens if tokens is not None else 'the'} tokens went to `{field}` "
                               "although the request turned thinking off (chat_template_kwargs thinking=false): "
                               "the chat template or tokenizer ignores it, or the reasoning parser routes the "
                               "answer into the reasoning", REF_THINKING))
        elif summary.tool_calls:
            pass
        elif (tokens or 0) > 0 or (ids or []):
            n = tokens if tokens else len(ids or [])
            same = repeated_unit("", ids)
            out.append(Finding("chat", FAIL, "special-tokens-only",
                               f"{what}: {n} tokens generated and none of them is text"
                               f"{' (' + same + ')' if same else ''}: only special tokens such as BOS, which the "
                               "server does not print", REF_SPECIAL))
        else:
            out.append(Finding("chat", FAIL, "empty-output", f"{what}: the answer is empty (no tokens generated)"))
    elif only_special_tokens(content):
        out.append(Finding("chat", FAIL, "special-tokens-only",
                           f"{what}: the answer is nothing but special tokens ({clip(content, 60)!r})", REF_SPECIAL))
    else:
        unit = repeated_unit(content, ids)
        if unit:
            out.append(Finding("chat", FAIL, "repeated-token",
                               f"{what}: degenerate output, one token repeated ({unit}): {clip(content, 60)!r}",
                               REF_REPEATED))
        elif not out and not counts(content, summary.finish_reason):
            out.append(Finding("chat", FAIL, "wrong-answer",
                               f"{what}: asked to count from 1 to {COUNT_TO}, the model answered "
                               f"{clip(content, 80)!r}: not the count, so its output is wrong (weights, "
                               "quantization, kernels or the chat template)"))
    if not any(f.level == FAIL for f in out):
        rate = ""
        if tokens:
            per_s = f": {summary.tokens_per_second:.1f} tokens/s" if summary.tokens_per_second else ""
            rate = f" ({tokens} tokens in {ex.elapsed:.2f} s{per_s}, prefill and round trip included)"
        if content.strip():
            shown = repr(clip(content.strip(), 80))
        elif reasoning.strip():
            shown = f"(reasoning only) {clip(reasoning.strip(), 80)!r}"
        else:
            shown = f"(tool calls only: {len(summary.tool_calls)})"
        out.insert(0, Finding("chat", OK, "chat", f"{what}: {shown}{rate}"))
    return out, summary


def judge_tools(ex: Exchange, *, key_from: str | None = None, key_set: bool = False
                ) -> tuple[list[Finding], ChatSummary | None]:
    """The tool-call request. A 400 that says tool choice needs a parser: no tool parser here,
    said, not a failure. Markup in ``content``: the parser is missing or the wrong one."""
    what = "tool call"
    bad = _status_findings("tools", what, ex, key_from, key_set)
    if bad:
        return bad, None
    if ex.status == 400:
        message = error_message(ex)
        low = message.lower()
        if "tool" in low and ("parser" in low or "auto-tool-choice" in low or "tool choice" in low
                              or "tool_choice" in low):
            return [Finding("tools", NOTE, "no-tool-parser",
                            f"{what}: the server has no tool parser ({message!r}): tool calls not checked. "
                            "For DeepSeek-V4: --enable-auto-tool-choice --tool-call-parser deepseek_v4")], None
    doc, summary, wrong = _completion("tools", what, ex)
    if summary is None:
        return wrong, None
    out = _content_findings("tools", what, summary)
    if summary.tool_calls:
        call = summary.tool_calls[0]
        args = call.get("arguments")
        parsed, why = parse_json(args) if isinstance(args, str) else (None, None)
        if why == TOO_DEEP:
            out.append(Finding("tools", FAIL, "tool-arguments",
                               f"{what}: {call.get('name')!r} called with arguments nested more than "
                               f"{MAX_JSON_DEPTH} levels deep: not read"))
        elif not isinstance(parsed, dict):
            out.append(Finding("tools", FAIL, "tool-arguments",
                               f"{what}: {call.get('name')!r} called with arguments that are not a JSON object: "
                               f"{clip(str(args), 80)!r}"))
        elif call.get("name") != TOOL_NAME:
            out.append(Finding("tools", WARN, "tool-name",
                               f"{what}: the model called {call.get('name')!r}, not the one tool offered "
                               f"({TOOL_NAME!r})"))
        elif not any(f.level == FAIL for f in out):
            out.insert(0, Finding("tools", OK, "tool-call",
                                  f"{what}: {TOOL_NAME}({clip(json.dumps(parsed, ensure_ascii=False), 80)})"))
    elif not out:
        content = (summary.content or "").strip()
        out.append(Finding("tools", NOTE, "no-tool-call",
                           f"{what}: the model answered without calling the tool ({clip(content, 60)!r})"))
    return out, summary


def verdict(findings: Sequence[Finding]) -> str:
    """PROBLEM when something was found wrong, else NOT_REACHABLE when a request got no answer
    (not reachable, not ready, nothing in time), else HEALTHY."""
    if any(f.level == FAIL for f in findings):
        return PROBLEM
    if any(f.level == UNREACHABLE for f in findings):
        return NOT_REACHABLE
    return HEALTHY
