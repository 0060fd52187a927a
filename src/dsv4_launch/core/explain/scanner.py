"""How a log is read for the signatures: ``Scanner`` reads a log line by line (the reader strips the journald,
kubectl and vLLM prefixes first) and keeps only a bounded window, so any log is read in linear
time and bounded memory: the signatures that match, the vLLM version, the ``non-default
args`` vLLM logs at start, the GPU where the log names it, and the last exception lines (the
root cause, for failures no signature knows).

Pure: no I/O; the reading is ``adapters/log_reader.py``'s, the printing ``commands/explain.py``'s.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterable, Mapping

from ..credentials import is_credential_name
from ..records import Record
from .masking import _OPEN_TAILS, MASK, SECRET_VALUE_DESTS, LineMasker
from .signatures import SIGNATURES, Signature

# --- reading facts from vLLM's log lines -----------------------------------------------------

_VERSION_PATTERNS = (
    r"vLLM server version (\S+?),? serving model",
    r"vLLM API server version (\S+)",
    r"Initializing a V1 LLM engine \(v([^)\s]+)\) with config",
    r"█\s+version\s+(\S+)",
)
_VERSION_TEXT = r"\d+\.\d+(?:\.\d+)?[\w.+\-]{0,30}"
_ARGS = r"non-default args: (\{.*)$"
# GPUs where a log names them with their compute capability: dsv4-launch's own lines
# ("NVIDIA RTX PRO 6000 … (SM 12.0)") and torch's capability warning.
_GPU_PATTERNS = (
    r"on ((?:NVIDIA )?[\w][\w \-]{1,80}?) \(SM (\d+)\.(\d+)\)",
    r"Found GPU\d+ (.+?) which is of cuda capability (\d+)\.(\d+)",
)
_EXCEPTION = r"^(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Exit)|KeyboardInterrupt)(?::\s?(.*))?$"
_ARGPARSE_ERROR = r"^(?:vllm )?serve: error: "
# vLLM's own lines that point above them at the real cause.
_POINTER = r"See root cause above|See stack trace for root cause|Engine core initialization failed|" \
    r"EngineCore failed to start|WorkerProc failed to start|Frontend process failed during engine core initialization"

ARGS_TEXT_LIMIT = 200_000  # characters of a "non-default args" line that are parsed
MAX_MATCHES = 64  # distinct (signature, line text) pairs kept
ROOT_CAUSE_LINES = 3


class LogLine(Record):
    number: int  # 1-based line number in the log
    text: str  # the message, prefixes stripped


class Match(Record):
    signature: Signature
    line: LogLine
    count: int = 1  # how many lines had the same text
    values: Mapping[str, str] | None = None  # the pattern's named groups: the log's own values


class LogGpu(Record):
    name: str
    capability: tuple[int, int]
    line: int


class LogArgs(Record):
    values: Mapping[str, object]  # dest → value, secrets masked
    unread: tuple[str, ...]  # dests whose values could not be read back
    secrets: tuple[str, ...]  # the secret strings found (to mask wherever they appear)
    line: int


class Scan(Record):
    lines: int
    matches: tuple[Match, ...]
    version: str | None = None
    version_line: int | None = None
    args: LogArgs | None = None
    gpu: LogGpu | None = None
    exceptions: tuple[LogLine, ...] = ()  # the last exception lines (root cause first-to-last)
    pointers: tuple[LogLine, ...] = ()  # vLLM's "See root cause above" lines
    errors: tuple[LogLine, ...] = ()  # the last ERROR-level lines (when no exception line is found)


def _top_level_alternatives(pattern: str) -> list[str]:
    parts, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*parts, pattern[start:]]


def required_literals(pattern: str) -> tuple[str, ...]:
    """Texts one of which every match of ``pattern`` contains (one per top-level alternative;
    empty when an alternative has none of 6 characters or more). Lets the scanner skip a line
    with fast ``in`` tests instead of a regular-expression search per signature."""
    found = tuple(required_literal(part) for part in _top_level_alternatives(pattern))
    return () if any(len(lit) < 6 for lit in found) else found


def required_literal(pattern: str) -> str:
    """The longest text every match of ``pattern`` (without top-level ``|``) must contain."""
    pieces: list[str] = []
    current: list[str] = []
    depth, i, n = 0, 0, len(pattern)

    def end() -> None:
        if current:
            pieces.append("".join(current))
            current.clear()

    while i < n:
        ch = pattern[i]
        nxt = pattern[i + 1] if i + 1 < n else ""
        if ch == "\\":
            if nxt and not nxt.isalnum():  # an escaped punctuation character is itself
                literal, i = nxt, i + 2
            else:  # \d \w \S \b …
                end()
                i += 2
                continue
        elif ch == "|" and depth == 0:
            return ""  # required_literals splits these first
        elif ch in "([":
            end()
            depth += 1
            i += 1
            continue
        elif ch in ")]":
            depth -= 1
            i += 1
            continue
        elif ch in ".^$":
            end()
            i += 1
            continue
        elif ch in "?*+{":
            if ch != "+" and current:
                current.pop()  # the character before it may be absent
            end()
            i += 1
            continue
        else:
            literal, i = ch, i + 1
        if depth == 0:
            if i < n and pattern[i] in "?*{" and not (pattern[i] == "{" and pattern[i + 1: i + 2] != "0"):
                end()  # an optional character ends the piece (and is not in it)
                continue
            current.append(literal)
        else:
            end()
    end()
    return max(pieces, key=len, default="")


class Scanner:
    """Feeds on log lines, keeps a bounded window: ``feed(text, level)`` per line, ``result()``."""

    def __init__(self, signatures: Iterable[Signature] = SIGNATURES, window: int = 64) -> None:
        self.signatures = tuple(signatures)
        self._compiled = [(s, re.compile(s.pattern), re.compile(s.context) if s.context else None,
                           re.compile(s.not_context) if s.not_context else None) for s in self.signatures]
        # One fast substring test per signature gates its regular expression (a line of a long
        # log is mostly none of these).
        self._literals = [(i, lit) for i, s in enumerate(self.signatures) for lit in required_literals(s.pattern)]
        self._always = [i for i, s in enumerate(self.signatures) if not required_literals(s.pattern)]
        self._window: deque[str] = deque(maxlen=max(window, max((s.context_lines for s in self.signatures),
                                                                default=0) + 1))
        self._matches: dict[tuple[int, str], Match] = {}
        self._order: list[tuple[int, str]] = []
        self._exceptions: deque[LogLine] = deque(maxlen=8)
        self._pointers: deque[LogLine] = deque(maxlen=2)
        self._errors: deque[LogLine] = deque(maxlen=ROOT_CAUSE_LINES)
        self.count = 0
        self._masker = LineMasker()  # the lines kept are kept as they may be shown (credentials across lines)
        self._outside = 0  # the last line known to be outside a private key's block
        self._after_frame = False
        self.version: str | None = None
        self.version_line: int | None = None
        self.args: LogArgs | None = None
        self.gpu: LogGpu | None = None
        self._version_res = [re.compile(p) for p in _VERSION_PATTERNS]
        self._gpu_res = [re.compile(p) for p in _GPU_PATTERNS]
        self._exception_re = re.compile(_EXCEPTION)
        self._argparse_re = re.compile(_ARGPARSE_ERROR)
        self._pointer_re = re.compile(_POINTER)
        self._args_re = re.compile(_ARGS)

    def feed(self, text: str, level: str | None = None) -> None:
        self.count += 1
        number = self.count
        shown = text
        source = self._after_frame and text.startswith("    ")  # a traceback's source line
        # else no state can start or go on (pydantic's location line has no blank; "- name: HF_TOKEN")
        if self._masker.open or "--" in text or text[-1:] in _OPEN_TAILS or " " not in text or "name" in text \
                or "#" in text or (text[-1:].isdigit() and text[-2:-1] in "|>-+") \
                or (text[:1] in " \t" and " " not in text.lstrip(" \t")):  # YAML's "|2", "key:  # c"; indented
            shown, orphan = self._masker.feed(text, source)
            if orphan:  # the log began inside a private key's block: what was kept of it is masked
                self._mask_kept(self._outside, number)
            if orphan or self._masker.closed:
                self._outside = number
        self._window.append(text)
        # a traceback's source line, or dsv4-launch's own line quoting vLLM's message: not vLLM failing
        code = source or text.startswith(("dsv4-serve: ", "dsv4-launch"))
        self._after_frame = text.startswith('  File "')
        hits = [] if code else [i for i, lit in self._literals if lit in text]
        if hits or (self._always and not code):
            self._match(number, text, hits + self._always, shown)
        if "version" in text or "engine (v" in text:
            self._read_version(number, text)
        if "non-default args:" in text:
            found = self._args_re.search(text)
            if found:
                self.args = parse_args_text(found.group(1), number)
        if "(SM " in text or "cuda capability" in text:
            self._read_gpu(number, text)
        line = None
        if self._exception_re.match(text) or self._argparse_re.match(text):
            line = LogLine(number, shown)
            if self._pointer_re.search(text):
                self._pointers.append(line)
            else:
                self._exceptions.append(line)
        elif level in ("ERROR", "CRITICAL"):
            line = LogLine(number, shown)
            if self._pointer_re.search(text):
                self._pointers.append(line)
            else:
                self._errors.append(line)

    def _mask_kept(self, after: int, before: int) -> None:
        """The lines kept whose numbers are between ``after`` and ``before`` (exclusive) as ``***``."""
        def masked(line: LogLine) -> LogLine:
            return line._replace(text=MASK) if after < line.number < before else line

        for key, match in self._matches.items():
            self._matches[key] = match._replace(line=masked(match.line))
        for kept in (self._exceptions, self._pointers, self._errors):
            lines = [masked(line) for line in kept]
            kept.clear()
            kept.extend(lines)

    def _match(self, number: int, text: str, indexes: list[int], shown: str | None = None) -> None:
        for index in sorted(set(indexes)):
            sig, pattern, context, not_context = self._compiled[index]
            found = pattern.search(text)
            if not found:
                continue
            if context is not None or not_context is not None:
                recent = list(self._window)[-(sig.context_lines + 1):]
                if context is not None and not any(context.search(line) for line in recent):
                    continue
                if not_context is not None and any(not_context.search(line) for line in recent):
                    continue
            key = (index, text)
            if key in self._matches:
                self._matches[key] = self._matches[key]._replace(count=self._matches[key].count + 1)
            elif len(self._order) < MAX_MATCHES:
                values = {k: v for k, v in found.groupdict().items() if v is not None} or None
                self._matches[key] = Match(sig, LogLine(number, text if shown is None else shown), values=values)
                self._order.append(key)

    def _read_version(self, number: int, text: str) -> None:
        for pattern in self._version_res:
            found = pattern.search(text)
            if found and re.fullmatch(_VERSION_TEXT, found.group(1).rstrip(",")):
                self.version, self.version_line = found.group(1).rstrip(","), number
                return

    def _read_gpu(self, number: int, text: str) -> None:
        for pattern in self._gpu_res:
            found = pattern.search(text)
            if found:
                self.gpu = LogGpu(found.group(1).strip(), (int(found.group(2)), int(found.group(3))), number)
                return

    def result(self) -> Scan:
        return Scan(
            lines=self.count, matches=tuple(self._matches[k] for k in self._order), version=self.version,
            version_line=self.version_line, args=self.args, gpu=self.gpu,
            exceptions=tuple(self._exceptions)[-ROOT_CAUSE_LINES:], pointers=tuple(self._pointers),
            errors=tuple(self._errors),
        )


def scan_lines(lines: Iterable[tuple[str, str | None]]) -> Scan:
    scanner = Scanner()
    for text, level in lines:
        scanner.feed(text, level)
    return scanner.result()


# --- "non-default args: {...}": a Python dict repr, read without evaluating anything -----------

class _Unreadable(Exception):
    pass


# <AttentionBackendEnum.FLASHMLA_SPARSE: 'vllm.v1.…FlashMLASparseBackend'>: what the command line
# takes is the member's name where the value is a class path (AttentionConfig.backend is looked up
# by name), else the value ('sparse' for SparseCacheRole.SPARSE).
_ENUM_REPR = r"<([A-Za-z_][\w.]*): ('(?:[^'\\]|\\.)*'|-?\d+)>"
_OBJECT_REPR = r"<[^<>]{0,400}>"  # <function f at 0x…>, <object …>


def _split_top_level(text: str) -> tuple[list[tuple[str, str]], bool]:
    """The ``'key': value`` items of a dict repr, split at top-level commas (quotes and brackets
    respected): ([(key text, value text)], complete). Linear in ``text``."""
    items: list[tuple[str, str]] = []
    if not text.startswith("{"):
        return items, False
    depth, quote, start, i, n = 0, None, 1, 0, len(text)
    complete = False
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                items.append(_item(text[start:i]))
                complete = True
                break
        elif ch == "," and depth == 1:
            items.append(_item(text[start:i]))
            start = i + 1
        i += 1
    return [it for it in items if it[0]], complete


def _item(text: str) -> tuple[str, str]:
    key, sep, value = text.strip().partition(": ")
    if not sep:
        return "", ""
    try:
        parsed = ast.literal_eval(key)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return "", ""
    return (parsed, value.strip()) if isinstance(parsed, str) else ("", "")


def _value(node):
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            raise _Unreadable
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if not isinstance(k, ast.Constant) or not isinstance(k.value, (str, int, float, bool)):
                raise _Unreadable
            out[k.value] = _value(v)
        return out
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, (ast.Name, ast.Attribute)):
        # A config dataclass repr (AttentionConfig(backend=None, use_fp4_indexer_cache=True, …)):
        # its fields as a dict, without the unset (None) and unreadable ones.
        out = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise _Unreadable
            try:
                value = _value(kw.value)
            except _Unreadable:
                continue
            if value is not None:
                out[kw.arg] = value
        return out
    raise _Unreadable


def _enum_text(m: re.Match) -> str:
    value = m.group(2)
    if value.startswith("'") and ("." in value or "/" in value):
        return repr(m.group(1).rsplit(".", 1)[-1])
    return value


def _read_value(text: str):
    text = re.sub(_ENUM_REPR, _enum_text, text)
    text = re.sub(_OBJECT_REPR, "...", text)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _Unreadable from None
    try:
        return _value(tree.body)
    except RecursionError:
        raise _Unreadable from None


def _mask_nested(value, secrets: list[str]):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and is_credential_name(k) and not isinstance(v, bool) and v is not None:
                _collect(v, secrets)
                out[k] = MASK
            else:
                out[k] = _mask_nested(v, secrets)
        return out
    if isinstance(value, list):
        return [_mask_nested(v, secrets) for v in value]
    return value


def _collect(value, secrets: list[str]) -> None:
    if isinstance(value, str):
        if value and value != MASK:
            secrets.append(value)
    elif isinstance(value, list):
        for v in value:
            _collect(v, secrets)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, secrets)


def parse_args_text(text: str, line: int) -> LogArgs:
    """vLLM's ``non-default args`` dict, read item by item with ``ast`` (never evaluated):
    literals, lists, dicts and config dataclass reprs are read; anything else is listed as
    unread. Secret values are replaced by ``***`` and returned apart, to be masked anywhere."""
    items, _complete = _split_top_level(text[:ARGS_TEXT_LIMIT])
    values: dict[str, object] = {}
    unread: list[str] = []
    secrets: list[str] = []
    for key, value_text in items:
        secret = key in SECRET_VALUE_DESTS or is_credential_name(key)
        try:
            value = _read_value(value_text)
        except _Unreadable:
            if secret:
                secrets.extend(re.findall(r"'((?:[^'\\]|\\.)+)'", value_text))
                values[key] = MASK
            else:
                unread.append(key)
            continue
        if secret and not isinstance(value, bool) and value is not None:
            _collect(value, secrets)
            values[key] = [MASK] if isinstance(value, list) else MASK
        else:
            values[key] = _mask_nested(value, secrets)
    return LogArgs(values=values, unread=tuple(unread), secrets=tuple(s for s in secrets if s != MASK), line=line)
