"""HTTP requests for ``dsv4-launch check``: bounded in time and in size, no secret leaked.

httpx where it is importable (vLLM installs it), else the standard library's ``http.client``
(used directly so that no redirect is followed behind our back and every socket read has the
time that is left); both alike, as docs/commands.md ("Client", "The API key") says: each request
in a daemon thread waited for at most ``timeout`` (every connect/read/write bounded by the time
left), the raw body cut at ``max_bytes`` and one ``Content-Encoding`` layer decoded incrementally
under the same cut (``truncated``), redirects only to the same scheme, host and port (POST: only
307/308; at most ``MAX_REDIRECTS``), no proxy variables or ``.netrc``. Every failure becomes an
``Exchange`` with a ``kind`` and one line: no exception of ours escapes (Ctrl-C excepted), and no
header is ever part of a message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager
from urllib.parse import urljoin, urlsplit

from ..core.check.judge import BaseUrl, Exchange
from ..core.credentials import clip

MAX_BODY = 1 << 20  # 1 MiB: a model list or a 16-token completion is a few kB
MAX_REDIRECTS = 3
CHUNK = 64 * 1024


def default_client() -> str:
    """``httpx`` when it imports here (tried for real: an installed but broken httpx counts as
    absent), else ``stdlib``."""
    try:
        _httpx()
    except Exception:  # ImportError, or anything a broken install raises on import
        return "stdlib"
    return "httpx"


def _httpx():
    """The httpx module (imported by name: it is optional, and has no stubs here)."""
    import importlib

    return importlib.import_module("httpx")


class _Failed(Exception):
    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind
        self.text = text


class _Body:
    """An answer's body, fed raw as read: at most ``max_bytes`` read and ``max_bytes`` decoded
    (zlib's ``max_length``: nothing is inflated beyond the cap). Raises _Failed for an encoding
    that is not one layer of gzip or deflate, or a body that does not decode."""

    def __init__(self, encoding: str | None, max_bytes: int) -> None:
        import zlib

        layers = [e.strip().lower() for e in (encoding or "").split(",") if e.strip().lower() not in ("", "identity")]
        if len(layers) > 1:
            raise _Failed("bad-answer", f"the answer has {len(layers)} layers of Content-Encoding "
                          f"({clip(encoding or '', 60)}): not decoded (at most one is read, a bound on memory)")
        if layers and layers[0] not in ("gzip", "x-gzip", "deflate"):
            raise _Failed("bad-answer", f"the answer's Content-Encoding {clip(layers[0], 40)!r} is not one this "
                          "check reads (gzip, deflate; it asks for identity)")
        self.zlib = zlib
        self.max = max_bytes
        # gzip; deflate as zlib data (RFC 9110), or raw deflate as some servers send it (tried below)
        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS if layers[0] != "deflate" else zlib.MAX_WBITS) \
            if layers else None
        self.raw_deflate = bool(layers) and layers[0] == "deflate"
        self.read = 0
        self.chunks: list[bytes] = []
        self.size = 0
        self.full = False

    def feed(self, raw: bytes) -> None:
        self.read += len(raw)
        if self.read > self.max:  # read raw at most max_bytes (+ one chunk)
            self.full = True
        if self.inflate is None:
            self._keep(raw)
            return
        data = raw
        while data and not self.full and not self.inflate.eof:
            try:
                out = self.inflate.decompress(data, self.max + 1 - self.size)
            except self.zlib.error:
                if self.raw_deflate and not self.size and self.read == len(raw):  # not zlib data: raw deflate
                    self.raw_deflate, self.inflate = False, self.zlib.decompressobj(-self.zlib.MAX_WBITS)
                    continue
                raise _Failed("bad-answer", "the answer's compressed body does not decode") from None
            self.raw_deflate = False
            self._keep(out)
            data = self.inflate.unconsumed_tail

    def _keep(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > self.max:
            self.full = True

    def result(self) -> tuple[bytes, bool]:
        """(the body, at most max_bytes, and whether it was cut)."""
        return b"".join(self.chunks)[:self.max], self.full


def request(method: str, base: BaseUrl, path: str, *, headers: Mapping[str, str], body: bytes | None = None,
            timeout: float, client: str, max_bytes: int = MAX_BODY, clock=time.monotonic) -> Exchange:
    """One request to ``base`` + ``path``, answered within ``timeout`` seconds or not at all."""
    if client == "httpx":  # imported before the clock starts: its import is not the server's time
        try:
            _httpx()
        except Exception as exc:
            return Exchange(None, error=f"httpx does not import here ({type(exc).__name__})", kind="other")
    start = clock()
    if timeout <= 0:
        return Exchange(None, elapsed=0.0, error="no time left", kind="timeout")
    deadline = start + timeout
    box: list[Exchange] = []

    def work() -> None:
        try:
            box.append(_follow(method, base, path, dict(headers), body, deadline, client, max_bytes, clock, start))
        except BaseException as exc:  # never let a worker die silently
            box.append(Exchange(None, elapsed=clock() - start, error=f"internal error: {type(exc).__name__}",
                                kind="other"))

    worker = threading.Thread(target=work, name="dsv4-launch-check-request", daemon=True)
    worker.start()
    worker.join(timeout)
    if box and box[0].kind != "timeout":
        return box[0]
    # Whichever noticed first (the socket's own timeout or this wait), one message.
    return Exchange(None, elapsed=clock() - start, error=f"no answer within {timeout:.1f} s", kind="timeout")


def _follow(method, base, path, headers, body, deadline, client, max_bytes, clock, start) -> Exchange:
    """The request and the redirects it follows, over one client made for ``base``'s scheme and
    host: a redirect is followed only to the same scheme, host and port."""
    url, hops = base.url(path), 0

    def failed(kind: str, error: str) -> Exchange:
        return Exchange(None, elapsed=clock() - start, error=error, kind=kind)

    try:
        with (_httpx_client if client == "httpx" else _stdlib_client)(base, deadline, max_bytes, clock) as once:
            while True:
                status, data, truncated, location = once(method, url, headers, body)
                if status not in (301, 302, 303, 307, 308) or not location:
                    return Exchange(status, data, elapsed=clock() - start, truncated=truncated)
                target = urljoin(url, location)
                if _origin(target) != base.origin:
                    return failed("redirect", f"HTTP {status}: redirected to another host ({_shown(target)}): not "
                                  "followed, so the API key is not sent there; give that URL if it is the server")
                if method != "GET" and status not in (307, 308):
                    return failed("redirect", f"HTTP {status} for {method}: redirected to {_shown(target)}, which "
                                  "would turn the request into a GET; give the server's own URL")
                if hops == MAX_REDIRECTS:
                    return failed("redirect", f"more than {MAX_REDIRECTS} redirects")
                url, hops = target, hops + 1
    except _Failed as exc:
        return failed(exc.kind, exc.text)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    return parts.scheme, (parts.hostname or "").lower(), port


def _shown(url: str) -> str:
    """A URL for a message: credentials masked, at most 200 characters."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        url = url.replace(parts.netloc, "***@" + parts.netloc.rpartition("@")[2], 1)
    return clip(url, 200)


def _left(deadline, clock) -> float:
    left = deadline - clock()
    if left <= 0:
        raise _Failed("timeout", "no answer in time")
    return left


def _classify(exc: BaseException, what: str) -> _Failed:
    """One kind and one line for a transport failure (the exception's chain is searched, as
    httpx wraps the socket's own error)."""
    import socket
    import ssl

    seen: BaseException | None = exc
    chain: list[BaseException] = []
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for e in chain:
        if isinstance(e, ConnectionRefusedError):
            return _Failed("refused", f"connection refused ({what}): nothing listens there (yet)")
        if isinstance(e, socket.gaierror):
            return _Failed("dns", f"cannot resolve the host ({what})")
        if isinstance(e, (TimeoutError, socket.timeout)) or "Timeout" in type(e).__name__:
            return _Failed("timeout", f"no answer in time ({what})")
        if isinstance(e, (ssl.SSLError, ssl.CertificateError)):
            return _Failed("tls", f"TLS failed ({what}): {clip(str(e), 160)}")
    if any(type(e).__name__ == "ConnectError" for e in chain):
        return _Failed("refused", f"cannot connect ({what}): {clip(str(exc), 160)}")
    for e in chain:
        if isinstance(e, (ConnectionError, EOFError)) or type(e).__name__ in (
                "RemoteDisconnected", "RemoteProtocolError", "ReadError", "WriteError", "IncompleteRead"):
            return _Failed("connection", f"the connection closed without an answer ({what})")
    for e in chain:
        if isinstance(e, OSError):
            return _Failed("connection", f"{what}: {e.strerror or type(e).__name__}")
    return _Failed("other", f"{what}: {type(exc).__name__}: {clip(str(exc), 160)}")


@contextmanager
def _stdlib_client(base: BaseUrl, deadline, max_bytes: int, clock):
    """``once(method, url, headers, body)`` over ``http.client``: TLS or plain, chosen once."""
    import http.client
    import ssl

    tls = {"context": ssl.create_default_context()} if base.scheme == "https" else {}
    connection = http.client.HTTPSConnection if tls else http.client.HTTPConnection

    def once(method, url, headers, body):
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn = None
        try:
            conn = connection(parts.hostname or "", parts.port, timeout=_left(deadline, clock), **tls)
            conn.request(method, target, body=body, headers=headers)
            if conn.sock is not None:
                conn.sock.settimeout(_left(deadline, clock))
            resp = conn.getresponse()
            answer = _Body(resp.getheader("Content-Encoding"), max_bytes)
            while not answer.full:
                if conn.sock is not None:
                    conn.sock.settimeout(_left(deadline, clock))
                elif resp.fp is None:
                    break
                chunk = resp.read(CHUNK)
                if not chunk:
                    break
                answer.feed(chunk)
            return (resp.status, *answer.result(), resp.getheader("Location"))
        except (http.client.HTTPException, OSError, ValueError) as exc:
            raise _classify(exc, f"{method} {parts.path or '/'}") from None
        finally:
            if conn is not None:
                try:
                    conn.close()
                except OSError:
                    pass

    yield once


@contextmanager
def _httpx_client(base: BaseUrl, deadline, max_bytes: int, clock):
    """``once(method, url, headers, body)`` over one httpx client: no redirects or proxy
    variables of its own; the system's CA store (and SSL_CERT_FILE/SSL_CERT_DIR), as http.client
    and curl use it — not httpx's default, certifi's bundle, which lacks a company's own CA."""
    import ssl

    httpx = _httpx()

    def once(method, url, headers, body):
        try:
            timeout = httpx.Timeout(_left(deadline, clock))
            with session.stream(method, url, headers=headers, content=body, timeout=timeout) as resp:
                answer = _Body(resp.headers.get("content-encoding"), max_bytes)
                for chunk in resp.iter_raw(CHUNK):  # as sent: httpx decodes nothing, _Body does, bounded
                    _left(deadline, clock)
                    answer.feed(chunk)
                    if answer.full:
                        break
                return (resp.status_code, *answer.result(), resp.headers.get("location"))
        except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
            raise _classify(exc, f"{method} {urlsplit(url).path or '/'}") from None

    with httpx.Client(follow_redirects=False, trust_env=False, verify=ssl.create_default_context()) as session:
        yield once
