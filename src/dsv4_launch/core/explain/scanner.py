"""How a log is read for the signatures: ``Scanner`` reads a log line by line (the reader strips the journald,
kubectl and vLLM prefixes first) and keeps only a bounded window, so any log is read in linear
time and bounded memory: the signatures that match, the vLLM version, the ``non-default args``
vLLM logs at start, the GPU where the log names it, a pasted ``vllm serve`` command, and the root
cause of the last failure (what counts as one: docs/commands.md, "After a crash").

Where several processes print tracebacks, the first real error line is the cause and the later
ones (vLLM's "See root cause above" and the like) are kept apart as ``pointers``, never taken for
it. A failure is a cluster of error lines: a new run (vLLM's version line) or ``CLUSTER_GAP``
lines without one starts the next, and the last cluster with a cause gives it. Lines are kept as
read and masked when printed (``commands/explain.py``). Pure: no I/O (``adapters/log_reader.py``
reads).
"""

from __future__ import annotations

import ast
import re
import shlex
from collections import deque
from collections.abc import Iterable, Mapping
from functools import lru_cache

from ..records import Record
from ..walker import bracket_items, closing
from .masking import MASK, SECRET_VALUE_DESTS, credential_name
from .signatures import SIGNATURES, Signature

# --- reading facts from vLLM's log lines -----------------------------------------------------

_VERSION_PATTERNS = tuple(map(re.compile, (
    r"vLLM server version (\S+?),? serving model",
    r"vLLM API server version (\S+)",
    r"Initializing a V1 LLM engine \(v([^)\s]+)\) with config",
    r"█\s+version\s+(\S+)")))
_VERSION_TEXT = r"\d+\.\d+(?:\.\d+)?[\w.+\-]{0,30}"
_ARGS = re.compile(r"non-default args: (\{.*)$")
# GPUs where a log names them with their compute capability: dsv4-launch's own lines
# ("NVIDIA RTX PRO 6000 … (SM 12.0)") and torch's capability warning.
_GPU_PATTERNS = tuple(map(re.compile, (
    r"\bon ((?:NVIDIA )?[\w][\w \-]{1,80}?) \(SM (\d+)\.(\d+)\)",  # \bon: not "Editi|on (SM …)"
    r"Found GPU\d+ (.+?) which is of cuda capability (\d+)\.(\d+)",
    r"^dsv4-(?:launch|serve): [\w\-]+: (?:[\w\-]+: )?((?:NVIDIA )?[\w][\w \-]{1,80}?) \(SM (\d+)\.(\d+)\)")))
# An exception line: indented too (a quoted log, an exception group's "  | "), a wrapped
# exception's name in brackets (Ray's "RayTaskError(RuntimeError):"), after a launcher's "Error: ".
_EXCEPTION = re.compile(r"^[ \t]*(?:\|[ \t]*)?(?:Error:[ \t]+)?(?:[A-Za-z_]\w*\.)*"
                        r"([A-Z]\w*(?:Error|Exception|Exit)|Error|Exception|KeyboardInterrupt)(?:\([\w.]+\))?(?::\s?(.*))?$")
# Native errors of extensions and the CUDA runtime, wherever they stand on a line: glog's and
# TVM's "Check failed:", "CUDA error: an illegal memory access was encountered", the driver's
# CUDA_ERROR_* names, C++'s "terminate called after throwing an instance of 'c10::Error'", a
# device-side assert, a crash of the interpreter.
_NATIVE = re.compile(r"Check failed: |\bCUDA error: |terminate called after throwing|\bCUDA_ERROR_[A-Z_]{4,}|"
                     r"\bAssertion [`'].{0,2000}[`'] failed|Segmentation fault|Fatal Python error|"
                     r"illegal memory access|\bNCCL error\b|\bCUBLAS_STATUS_[A-Z_]{4,}|\bcore dumped\b")
# Texts one of which every _NATIVE match holds (a substring test before the search).
_NATIVE_HINTS = ("Check failed", "CUDA", "terminate called", "Assertion ", "Segmentation fault", "Fatal Python",
                 "illegal memory", "NCCL error", "CUBLAS_STATUS", "core dumped")
# argparse's "PROG: error: …"
_ARGPARSE_ERROR = re.compile(r"^(?:vllm(?: serve)?|serve|api_server\.py|(?:__)?main(?:__)?\.py): error: ")
# vLLM's own lines that point above them at the real cause (or introduce a traceback).
_POINTER = re.compile(r"See root cause above|See stack trace|stack trace above|Engine core initialization failed|"
                      r"EngineCore failed to start|WorkerProc failed to start|Frontend process failed during engine "
                      r"core initialization|WorkerProc hit an exception|EngineCore encountered a fatal error|"
                      r"EngineCore encountered an issue")
_POINTER_HINTS = ("See ", "stack trace", "initialization failed", "failed to start", "hit an exception",
                  "encountered a")
# The line a traceback ends with when its exception's name is not one _EXCEPTION knows: a class's
# name (a capital in it, or dotted, or C++'s "c10::Error"), then ":" or the end of the line — not
# a YAML key ("env:").
_TERMINAL = re.compile(r"^(?=[\w.:<>]*(?:[A-Z]|\.\w|::))[A-Za-z_][\w.:<>]{0,200}(?:\([\w.]+\))?(?::|$)")
# Lines of a traceback that are not its exception: the header, frames, source, carets, "...".
_FRAME = re.compile(r'^[ \t]*(?:\|[ \t]*)?(?:Traceback \(most recent call last\)|File "|[~^]+$|\.\.\.)')
# What follows an error line without being its message (torch's CUDA advice).
_NOISE = ("CUDA kernel errors might be", "For debugging consider passing", "Compile with `TORCH_USE_CUDA_DSA`",
          "Search for `cuda", "The above exception was", "During handling of the above exception", "[...",
          "Traceback (most recent")
_ENDS_SENTENCE = ".!?)]}'\"`"
_QUIET_LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "WARN"})

ARGS_TEXT_LIMIT = 200_000  # characters of a "non-default args" line that are parsed
MAX_MATCHES = 64  # distinct (signature, line text) pairs kept
CONTINUATION_LINES = 2  # lines a wrapped error message is followed over
COMMAND_LINES = 400  # lines of a pasted command that are read
CLUSTER_GAP = 100  # lines without an error line that end a failure's cluster
_ARGS_MEMO = 64  # distinct "non-default args" texts whose secrets are remembered


class LogLine(Record):
    number: int  # 1-based line number in the log
    text: str  # the message, prefixes stripped


class Match(Record):
    signature: Signature
    line: LogLine
    count: int = 1  # how many lines had the same text
    values: Mapping[str, str] | None = None  # the pattern's named groups: the log's own values
    version: str | None = None  # the release of the run the line is in (its last version line before it)


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
    root_cause: tuple[LogLine, ...] = ()  # the first real error line of the last failure, and its message's wrap
    pointers: tuple[LogLine, ...] = ()  # vLLM's last line pointing above it ("See root cause above")
    traceback_cut: int | None = None  # the log ends inside a traceback (its last line): its exception is not in it
    secrets: tuple[str, ...] = ()  # the secrets of every "non-default args" line (to mask wherever they appear)
    # The last ``vllm serve …`` command pasted into the log: its words after ``serve``, shell
    # continuations and one-option-per-line pastes joined.
    command: tuple[str, ...] = ()
    gpu_capabilities: tuple[tuple[int, int], ...] = ()  # every distinct one the log names (``gpu``: the last)

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


class _Failure:
    """One cluster of error lines: its root cause (and the lines its message wraps onto), its
    first ERROR line (when it has no cause), its last pointer, whether it ends in a traceback."""

    __slots__ = ("cause", "weak", "pointer", "open_traceback", "wrap")

    def __init__(self) -> None:
        self.cause: list[LogLine] = []
        self.weak: list[LogLine] = []
        self.pointer: LogLine | None = None
        self.open_traceback: int | None = None  # the last line of a traceback whose exception has not come
        self.wrap = 0  # lines the cause's message may still wrap onto

    def found(self) -> bool:
        return bool(self.cause or self.weak or self.pointer)


def _hits(literals: list[tuple[str, tuple[int, ...]]], text: str) -> list[int]:
    """The signatures whose literal ``text`` holds (the gate before their regular expressions)."""
    return [i for lit, indexes in literals if lit in text for i in indexes]


class Scanner:
    """Feeds on log lines, keeps a bounded window: ``feed(text, level)`` per line, ``result()``."""

    def __init__(self, signatures: Iterable[Signature] = SIGNATURES, window: int = 64) -> None:
        self.signatures = tuple(signatures)
        self._compiled = [(s, re.compile(s.pattern), re.compile(s.context) if s.context else None,
                           re.compile(s.not_context) if s.not_context else None) for s in self.signatures]
        # One fast substring test per signature gates its regular expression (a line of a long
        # log is mostly none of these).
        by_literal: dict[str, list[int]] = {}  # each text tested once, however many signatures need it
        for i, sig in enumerate(self.signatures):
            for lit in required_literals(sig.pattern):
                by_literal.setdefault(lit, []).append(i)
        self._literals = [(lit, tuple(indexes)) for lit, indexes in by_literal.items()]
        # A traceback's frame line ('File "…", line N, in f') is tested only for the signatures
        # written for frames; its caret lines for none.
        frames = {i for i, sig in enumerate(self.signatures) if '", line' in sig.pattern}
        self._frame_literals = [(lit, tuple(i for i in indexes if i in frames)) for lit, indexes in self._literals
                                if frames.intersection(indexes)]
        self._always = [i for i, s in enumerate(self.signatures) if not required_literals(s.pattern)]
        self._window: deque[str] = deque(maxlen=max(window, max((s.context_lines for s in self.signatures),
                                                                default=0) + 1))
        self._matches: dict[tuple[int, str], Match] = {}
        self._order: list[tuple[int, str]] = []
        self.count = 0
        self._after_frame = False
        self._failure = _Failure()
        self._previous: _Failure | None = None  # the last cluster before this one that found something
        self._last_error = 0  # the number of the last error line
        self._new_run = False  # a version line since the last error line: the next one starts a cluster
        self._cause_level: str | None = None
        self.version: str | None = None
        self.version_line: int | None = None
        self._args_text: tuple[str, int] | None = None  # the last "non-default args" text and its line
        self._args_secrets: dict[str, tuple[str, ...]] = {}  # secrets by args text (memo)
        self._secrets: dict[str, None] = {}
        self.gpu: LogGpu | None = None
        self._capabilities: dict[tuple[int, int], None] = {}
        self._command: list[str] | None = None  # the pasted command being read (its lines)
        self._commands: list[str] | None = None  # the last one read

    def feed(self, text: str, level: str | None = None) -> None:
        self.count += 1
        number = self.count
        source = self._after_frame and text.startswith("    ")  # a traceback's source line
        self._window.append(text)
        # a traceback's source line, or dsv4-launch's own line quoting vLLM's message: not vLLM failing
        code = source or text.startswith(("dsv4-serve: ", "dsv4-launch"))
        head = text.lstrip(" \t|")
        self._after_frame = frame = head.startswith('File "')
        hits = [] if code or head[:1] in ("^", "~") else _hits(self._frame_literals if frame else self._literals, text)
        if hits or (self._always and not code):
            self._match(number, text, hits + self._always)
        joined = self._continued(number, text)
        if joined:  # an error message a copy wrapped: matched as one line
            self._match(number - 1, joined, _hits(self._literals, joined))
        if "version" in text or "engine (v" in text:
            self._read_version(number, text)
        if "non-default args:" in text:
            found = _ARGS.search(text)
            if found:
                self._read_args(found.group(1), number)
        if "(SM " in text or "cuda capability" in text:
            self._read_gpu(number, text)
        if self._command is not None or "vllm serve " in text:
            self._read_command(text)
        self._read_error(number, text, level, code)

    # --- the root cause ----------------------------------------------------------------------

    def _read_error(self, number: int, text: str, level: str | None, code: bool) -> None:
        failure = self._failure
        if failure.wrap:
            if self._wraps(text, level):
                failure.cause.append(LogLine(number, text))
                failure.wrap = failure.wrap - 1 if not text.rstrip().endswith(tuple(_ENDS_SENTENCE)) else 0
                return
            failure.wrap = 0
        stripped = text.strip()
        if code and not self._after_frame and text.startswith(("dsv4-serve: ", "dsv4-launch")):
            return  # dsv4-launch's own line (quoting vLLM's message)
        frame = bool(stripped) and (code or _FRAME.match(text) is not None)
        quiet = level in _QUIET_LEVELS
        kind = None  # "cause", "weak", "pointer", "frame"
        if frame and not quiet:
            kind = "frame"
        elif stripped and not quiet and not code:
            if self._pointer(text):
                kind = "pointer"
            elif (_EXCEPTION.match(text) or _ARGPARSE_ERROR.match(text)
                  or (not text.startswith("    ") and any(hint in text for hint in _NATIVE_HINTS)
                      and _NATIVE.search(text))):  # not a source line quoting the message
                kind = "cause"
            elif failure.open_traceback is not None and _TERMINAL.match(text):
                kind = "cause"  # the line a traceback ends with, whatever the exception's name
            elif level in ("ERROR", "CRITICAL") and re.match(r"[A-Za-z]\S*(?: \S+){2}", text):
                kind = "weak"  # a message of vLLM's (three words or more), not a value dumped
        if kind is None:
            return
        if self._new_run or (self._last_error and number - self._last_error > CLUSTER_GAP):
            if failure.found():
                self._previous = failure
            failure = self._failure = _Failure()
            self._new_run = False
        self._last_error = number
        line = LogLine(number, text)
        if kind == "frame":
            failure.open_traceback = number
            return
        failure.open_traceback = None
        if kind == "pointer":
            failure.pointer = line
        elif kind == "cause" and not failure.cause:
            failure.cause = [line]
            self._cause_level = level
            failure.wrap = CONTINUATION_LINES if (not stripped.endswith(tuple(_ENDS_SENTENCE))
                                                  or "terminate called" in text) else 0
        elif kind == "weak" and not failure.weak:
            failure.weak = [line]

    def _continued(self, number: int, text: str) -> str | None:
        """The cause line just before joined with ``text`` when ``text`` goes on with its sentence
        (starts in lower case): a message the reporter's copy or a terminal wrapped."""
        cause = self._failure.cause
        if not cause or cause[-1].number != number - 1 or not text[:1].islower():
            return None
        return cause[-1].text.rstrip() + " " + text.strip()

    def _wraps(self, text: str, level: str | None) -> bool:
        """Whether ``text``, right after the cause, goes on with its message."""
        stripped = text.strip()
        if not stripped or level != self._cause_level or stripped.startswith(_NOISE):
            return False
        if stripped.startswith("what():"):
            return True
        return not (_FRAME.match(text) or self._pointer(text) or _EXCEPTION.match(text))

    def _pointer(self, text: str) -> bool:
        return any(hint in text for hint in _POINTER_HINTS) and _POINTER.search(text) is not None

    # --- the rest ----------------------------------------------------------------------------

    def _match(self, number: int, text: str, indexes: list[int]) -> None:
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
            if key in self._matches:  # the release of its last occurrence's run
                self._matches[key] = self._matches[key]._replace(count=self._matches[key].count + 1,
                                                                 version=self.version)
            elif len(self._order) < MAX_MATCHES:
                values = {k: v for k, v in found.groupdict().items() if v is not None} or None
                self._matches[key] = Match(sig, LogLine(number, text), values=values, version=self.version)
                self._order.append(key)

    def _read_version(self, number: int, text: str) -> None:
        for pattern in _VERSION_PATTERNS:
            found = pattern.search(text)
            if found and re.fullmatch(_VERSION_TEXT, found.group(1).rstrip(",")):
                self.version, self.version_line = found.group(1).rstrip(","), number
                self._new_run = True
                return

    def _read_args(self, text: str, number: int) -> None:
        """The last args line is read at the end; of every one, the secrets (each distinct text
        read once: a log of restarts repeats the same line)."""
        text = text[:ARGS_TEXT_LIMIT]
        self._args_text = (text, number)
        secrets = self._args_secrets.get(text)
        if secrets is None:
            secrets = args_secrets(text)
            if len(self._args_secrets) >= _ARGS_MEMO:
                self._args_secrets.clear()
            self._args_secrets[text] = secrets
        self._secrets.update(dict.fromkeys(secrets))

    def _read_command(self, text: str) -> None:
        """A pasted ``vllm serve`` command: its line, then the lines a shell continuation (``\\``)
        or a one-option-per-line paste (``--option``) adds to it."""
        stripped = text.strip()
        part = self._command
        if part is not None and len(part) < COMMAND_LINES and (part[-1].endswith("\\") or stripped.startswith("--")):
            part.append(stripped[:ARGS_TEXT_LIMIT])
            return
        self._command = None
        start = text.find("vllm serve ")
        if start >= 0:
            self._command = [text[start + len("vllm serve "):].strip()[:ARGS_TEXT_LIMIT]]
            self._commands = self._command

    def _read_gpu(self, number: int, text: str) -> None:
        for pattern in _GPU_PATTERNS:
            found = pattern.search(text)
            if found:
                self.gpu = LogGpu(found.group(1).strip(), (int(found.group(2)), int(found.group(3))), number)
                if len(self._capabilities) < 16:
                    self._capabilities[self.gpu.capability] = None
                return

    def result(self) -> Scan:
        failure, previous = self._failure, self._previous
        if not failure.found() and previous is not None:
            failure, previous = previous, None
        cause = failure.cause or failure.weak
        cut = failure.open_traceback if not failure.cause else None
        if not cause and cut is None and previous is not None:  # a pointer alone, long after the failure it
            cause = previous.cause or previous.weak  # points at (vLLM's shutdown lines between them)
        pointer = failure.pointer or (previous.pointer if previous is not None and cause else None)
        return Scan(
            lines=self.count, matches=tuple(self._matches[k] for k in self._order), version=self.version,
            version_line=self.version_line, args=parse_args_text(*self._args_text) if self._args_text else None,
            gpu=self.gpu, root_cause=tuple(cause), pointers=(pointer,) if pointer is not None else (),
            traceback_cut=cut, secrets=tuple(self._secrets),
            command=command_words(self._commands) if self._commands else (), gpu_capabilities=tuple(self._capabilities))


def command_words(lines: list[str]) -> tuple[str, ...]:
    """The words of a pasted command's lines, as a shell splits them (continuations joined)."""
    text = " ".join(line[:-1] if line.endswith("\\") else line for line in lines)
    try:
        return tuple(shlex.split(text))
    except ValueError:  # an unclosed quote (a cut paste): the words as they stand
        return tuple(text.split())


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
    respected, ``walker.bracket_items``): ([(key text, value text)], complete). Linear in ``text``."""
    if not text.startswith("{"):
        return [], False
    spans, complete = bracket_items(text)
    return [it for it in (_item(text[start:end]) for start, end in spans) if it[0]], complete


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
            if isinstance(k, str) and _credential_key(k) and not isinstance(v, bool) and v is not None:
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
    elif isinstance(value, (list, dict)):
        for v in value.values() if isinstance(value, dict) else value:
            _collect(v, secrets)


@lru_cache(maxsize=4096)
def _credential_key(key: str) -> bool:
    return credential_name(key)


_KEY_IN_REPR = re.compile(r"'([^'\\]{1,200})': ")
_STRING_IN_REPR = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NOT_SECRET = frozenset({"None", "True", "False", f"'{MASK}'", f"['{MASK}']", "[]", "''"})


_URL_USERINFO = r"(?i)\b[a-z][a-z0-9+.\-]*://([^/\s@?#'\"]+)@"  # as output/escape's, within a repr's quotes


def args_secrets(text: str) -> tuple[str, ...]:
    """The secrets of a ``non-default args`` text without reading it whole: the strings in the
    value of every key (at any depth) that names a credential (0.24–0.28 log ``--api-key`` in
    clear; 0.30+ log ``'***'``). Linear in the text."""
    found: list[str] = []
    for key in _KEY_IN_REPR.finditer(text):
        if not (key.group(1) in SECRET_VALUE_DESTS or _credential_key(key.group(1))):
            continue
        start = key.end()
        if text[start:start + 1] in ("[", "{", "("):
            end = closing(text, start)
        elif (quoted := _STRING_IN_REPR.match(text, start)) is not None:
            end = quoted.end()
        else:
            end = next((i for i in range(start, min(len(text), start + 400)) if text[i] in ",}"), len(text))
        value = text[start:end]
        if value in _NOT_SECRET:
            continue
        for item in _STRING_IN_REPR.finditer(value):
            if value[item.end():item.end() + 1] == ":":
                continue  # a dict's key, not a value
            string = item.group()
            try:
                literal = ast.literal_eval(string)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                literal = string[1:-1]
            if isinstance(literal, str) and literal and literal != MASK:
                found.append(literal)
    if "://" in text and "@" in text:  # a URL's credentials (--otlp-traces-endpoint): the password alone is quoted too
        for url in re.finditer(_URL_USERINFO, text):
            userinfo = url.group(1)
            found += [userinfo, userinfo.partition(":")[2]] if ":" in userinfo else [userinfo]
    return tuple(f for f in dict.fromkeys(found) if f and f != MASK)


def parse_args_text(text: str, line: int) -> LogArgs:
    """vLLM's ``non-default args`` dict, read item by item with ``ast`` (never evaluated):
    literals, lists, dicts and config dataclass reprs are read; anything else is listed as
    unread. Secret values are replaced by ``***`` and returned apart, to be masked anywhere."""
    items, _complete = _split_top_level(text[:ARGS_TEXT_LIMIT])
    values: dict[str, object] = {}
    unread: list[str] = []
    secrets: list[str] = []
    for key, value_text in items:
        secret = key in SECRET_VALUE_DESTS or _credential_key(key)
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
