"""A real HTTP server on 127.0.0.1 (port 0, in a thread) that replays DeepSeek-V4-shaped
OpenAI answers, as vLLM 0.24.0 … 0.33.0 gives them, for ``dsv4-launch check``'s tests.

What is faked: the model and vLLM's API server. What is real: the sockets, HTTP/1.1 and the
client on the other end (httpx or the standard library). The shapes follow vLLM's code:

- ``/health`` 200 when up, 503 while loading (a launcher that answers while loading:
  ``entrypoints/launchers/dp_supervisor.py:228@0.29.0``, ``entrypoints/cli/preload.py:74@0.31.0``);
- ``/v1/models``: ``ModelList`` of ``ModelCard`` (``entrypoints/serve/engine/protocol.py@0.33.0``);
- chat completions: ``ChatCompletionResponse`` with ``message.reasoning`` (the field name in
  every release 0.24.0 … 0.33.0), ``usage.completion_tokens`` and, for ``return_token_ids``,
  ``choices[0].token_ids``;
- 401 ``{"error": "Unauthorized"}`` on ``/v1`` without the key
  (``entrypoints/serve/middleware/authenticate.py:60@0.33.0``); ``/health`` is never guarded;
- 400 ``"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set``
  (``vllm/renderers/online_renderer.py:277-280@0.33.0``), in vLLM's ``ErrorResponse`` shape.

Every wait is bounded: a handler that "never answers" waits on an event that ``stop()`` sets.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "deepseek-v4-flash"
ROOT = "deepseek-ai/DeepSeek-V4-Flash"
BOS = "<｜begin▁of▁sentence｜>"
COUNT = " ".join(str(i) for i in range(1, 17))  # what greedy decoding answers to the probe's prompt
COUNT_IDS = list(range(16, 32))
DSML_CALL = ('<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
             '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
             '</｜DSML｜invoke>\n</｜DSML｜tool_calls>')
V3_CALL = ('<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n'
           '{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>')
FUNCTION_CALLS = ('<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
                  '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
                  '</｜DSML｜invoke>\n</｜DSML｜function_calls>')
NO_TOOL_PARSER = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


def error_body(message: str, code: int = 400, kind: str = "BadRequestError") -> dict:
    """vLLM's ErrorResponse (entrypoints/serve/engine/protocol.py ErrorInfo@0.33.0)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def models_body(*names: str) -> dict:
    return {"object": "list", "data": [
        {"id": n, "object": "model", "created": 1764547200, "owned_by": "vllm", "root": ROOT, "parent": None,
         "max_model_len": 65536, "permission": []} for n in (names or (MODEL,))]}


def completion(content, *, reasoning=None, tokens=16, finish="length", token_ids=None, tool_calls=None,
               reasoning_field="reasoning") -> dict:
    message = {"role": "assistant", "content": content, "refusal": None, "annotations": None, "audio": None,
               "function_call": None, reasoning_field: reasoning}
    if tool_calls:
        message["tool_calls"] = tool_calls
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish, "stop_reason": None,
              "token_ids": token_ids}
    return {"id": "chatcmpl-replay", "object": "chat.completion", "created": 1764547200, "model": MODEL,
            "choices": [choice], "service_tier": None, "system_fingerprint": None,
            "usage": {"prompt_tokens": 21, "total_tokens": 21 + tokens, "completion_tokens": tokens,
                      "prompt_tokens_details": None}}


def tool_call_completion() -> dict:
    call = {"id": "chatcmpl-tool-1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    return completion(None, tokens=24, finish="tool_calls", tool_calls=[call])


HEALTHY_CHAT = completion(COUNT, token_ids=COUNT_IDS)

# name -> what the chat request and the tool request answer (status, JSON body)
SHAPES = {
    "healthy": ((200, HEALTHY_CHAT), (200, tool_call_completion())),
    "no-tool-parser": ((200, HEALTHY_CHAT), (400, error_body(NO_TOOL_PARSER))),
    "bos-only": ((200, completion("", token_ids=[0] * 16)), (200, tool_call_completion())),
    "bos-text": ((200, completion(BOS * 16)), (200, tool_call_completion())),
    "repeated-token": ((200, completion("the" * 16, token_ids=[1175] * 16)), (200, tool_call_completion())),
    "repeated-text": ((200, completion("!" * 16)), (200, tool_call_completion())),
    "empty": ((200, completion("", tokens=0, finish="stop")), (200, tool_call_completion())),
    "dsml-in-content": ((200, HEALTHY_CHAT), (200, completion(DSML_CALL, tokens=40, finish="stop"))),
    "v3-markup-in-content": ((200, HEALTHY_CHAT), (200, completion(V3_CALL, tokens=40, finish="stop"))),
    "function-calls-in-content": ((200, HEALTHY_CHAT), (200, completion(FUNCTION_CALLS, tokens=40, finish="stop"))),
    "think-in-content": ((200, completion("<think>\nThe user wants numbers.\n</think>\n1 2 3")),
                         (200, tool_call_completion())),
    "answer-in-reasoning": ((200, completion(None, reasoning=COUNT, finish="stop", tokens=16)),
                            (200, tool_call_completion())),
    "answer-in-reasoning-content": ((200, completion(None, reasoning=COUNT, finish="stop",
                                                     reasoning_field="reasoning_content")),
                                    (200, tool_call_completion())),
    # fluent, and not what was asked (a model whose weights or kernels are wrong can sound right)
    "wrong-answer": ((200, completion("Sure! Counting is a fundamental skill that children learn early on.")),
                     (200, tool_call_completion())),
    "wrong-count": ((200, completion("1 2 3 5 8 13 21 34 55 89")), (200, tool_call_completion())),
    "thinking-ignored": ((200, completion("", reasoning="Okay, the user wants me to count", finish="length")),
                         (200, tool_call_completion())),
}


class ReplayServer:
    """``with ReplayServer("healthy") as s: s.url`` — a server on 127.0.0.1 and a free port."""

    def __init__(self, shape: str = "healthy", *, delay: float = 0.0, never_answer: bool = False,
                 loading: bool = False, api_key: str | None = None, models=None, redirect_to: str | None = None,
                 huge: bool = False, echo_auth: bool = False, control_chars: bool = False,
                 ready_after: int = 0, chat_delay: float = 0.0, tls: tuple[str, str] | None = None,
                 encode=None, no_length: bool = False) -> None:
        self.shape = shape
        self.delay = delay
        self.never_answer = never_answer
        self.loading = loading
        self.api_key = api_key
        self.models = models
        self.redirect_to = redirect_to
        self.huge = huge
        self.echo_auth = echo_auth
        self.control_chars = control_chars
        self.ready_after = ready_after  # /health says 503 (loading) to this many requests first
        self.chat_delay = chat_delay  # seconds a chat completion takes (a model's decoding time)
        # (Content-Encoding header values, a function of the body) for every answer with a body;
        # or a function of the path giving them (None: as the others)
        self.encode = encode
        self.no_length = no_length  # no Content-Length: the body ends when the connection closes
        self.requests: list[dict] = []  # every request: method, path, headers, JSON body
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        if tls is not None:  # (certificate file, key file): HTTPS on the same port
            import ssl

            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.url = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "ReplayServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)

    def framed(self, path: str, body: bytes) -> tuple[bytes, list[tuple[str, str]]]:
        """The body as sent for ``path`` (``encode``d) and its framing headers: Content-Encoding,
        and Content-Length or (``no_length``) Connection: close."""
        encode = self.encode(path) if callable(self.encode) else self.encode
        headers = []
        if encode is not None and body:
            codings, how = encode
            body = how(body)
            headers += [("Content-Encoding", c) for c in codings]
        headers.append(("Connection", "close") if self.no_length else ("Content-Length", str(len(body))))
        return body, headers

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, doc=None, *, raw: bytes | None = None, headers=()) -> None:
                body = raw if raw is not None else (json.dumps(doc).encode() if doc is not None else b"")
                body, framing = server.framed(self.path, body)
                self.close_connection = self.close_connection or server.no_length
                self.send_response(status)
                for k, v in (("Content-Type", "application/json"), *framing, *headers):
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(OSError):  # the client stopped reading (its size limit)
                    self.wfile.write(body)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    doc = json.loads(raw) if raw else None
                except ValueError:
                    doc = None
                with server._lock:
                    server.requests.append({"method": method, "path": self.path, "headers": dict(self.headers),
                                            "body": doc})
                if server.never_answer:
                    server._stop.wait(30)  # until the test stops the server (bounded anyway)
                    return
                if server.delay:
                    server._stop.wait(server.delay)
                if server.redirect_to is not None:
                    self._send(302, headers=[("Location", server.redirect_to + self.path)])
                    return
                if self.path == "/health":
                    with server._lock:
                        loading = server.loading or server.ready_after > 0
                        server.ready_after -= 1
                    self._send(503 if loading else 200)
                    return
                if server.loading:
                    self._send(503)
                    return
                if server.api_key is not None and self.path.startswith("/v1") and \
                        self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._send(401, {"error": "Unauthorized"})
                    return
                if self.path == "/v1/models" and method == "GET":
                    if server.huge:
                        self._send(200, raw=b'{"object": "list", "data": [' + b" " * (2 << 20) + b"]}")
                        return
                    names = server.models or (MODEL,)
                    self._send(200, models_body(*names))
                    return
                if self.path == "/v1/chat/completions" and method == "POST":
                    if server.chat_delay:
                        server._stop.wait(server.chat_delay)
                    chat, tools = SHAPES[server.shape]
                    status, body = tools if isinstance(doc, dict) and doc.get("tools") else chat
                    if server.echo_auth or server.control_chars:
                        body = json.loads(json.dumps(body))
                        msg = body["choices"][0]["message"]
                        extra = f" {self.headers.get('Authorization')}" if server.echo_auth else ""
                        if server.control_chars:
                            extra += "\x1b[2J\ndsv4-launch check: healthy\r\u202e"
                        msg["content"] = (msg.get("content") or "") + extra
                    self._send(status, body)
                    return
                self._send(404, {"detail": "Not Found"})

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

        return Handler


class DeadPort:
    """A port on 127.0.0.1 where nothing listens: bound (so no one else takes it) and never
    listening, so a connection is refused — as vLLM's own port while its engine loads
    (``entrypoints/launchers/launcher.py`` binds before, listens after)."""

    def __enter__(self) -> "DeadPort":
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()


def wait_until(predicate, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
