"""A trace file's JSON, streamed: the top-level keys before `traceEvents`, then the events one at a time, each
decoded by the standard library's C decoder (`json.JSONDecoder.raw_decode`) from a bounded text buffer.

Why not ijson: its C backend builds every event of a buffer before yielding the first and spends most of its time
building them; with the standard library's scanner, called event by event, the whole reader took 0.61 s of CPU on
a 20 MB trace against 0.82 s with ijson's (the fastest of six runs each; scripts/trace_bench.py's trace). Stepping
over unwanted events undecoded was tried: finding an event's end by a regular expression cost more than decoding it.

Refused (UsageError, one line): a file that is not JSON or ends early, a JSON document that is not an object, an
object without `traceEvents`, an event larger than `MAX_EVENT` characters.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Iterator
from json.scanner import make_scanner
from pathlib import Path
from typing import IO, Any, cast

from roofline.core.errors import UsageError

EVENTS_KEY = "traceEvents"
GZIP_MAGIC = b"\x1f\x8b"
# Characters read per step. Larger steps decode no faster (the decoder works event by event) and the buffer is the
# stream's footprint, held about three times while a chunk is appended (the text, the new chunk, their join): 256 Ki
# characters, about 0.8 MB at the peak.
CHUNK = 1 << 18
# An event longer than this is taken for a malformed file rather than read on (the longest event of a real trace,
# a record_param_comms with its rank list or a kernel with its launch arguments, is a few kB).
MAX_EVENT = 1 << 24
_WS = " \t\r\n"
# The separator after an event and the white space around it (JSON's white space: these four characters).
_SEPARATOR = re.compile(r"[ \t\r\n]*([,\]])[ \t\r\n]*")


def _open_text(path: Path) -> IO[str]:
    """The trace's text, decompressed when it is gzipped (by its magic number, whatever its name)."""
    with open(path, "rb") as fh:
        gz = fh.read(2) == GZIP_MAGIC
    raw = cast(IO[bytes], gzip.open(path, "rb")) if gz else open(path, "rb")
    return io.TextIOWrapper(cast(Any, raw), encoding="utf-8", errors="strict")


class _Buffer:
    """The text read so far and not yet consumed, refilled a CHUNK at a time."""

    __slots__ = ("eof", "fh", "offset", "pos", "text")

    def __init__(self, fh: IO[str]) -> None:
        self.fh, self.text, self.pos, self.offset, self.eof = fh, "", 0, 0, False

    def more(self) -> bool:
        """Read a chunk more (the consumed text dropped); False at the end of the file."""
        if self.eof:
            return False
        chunk = self.fh.read(CHUNK)
        if not chunk:
            self.eof = True
            return False
        self.offset += self.pos
        self.text = self.text[self.pos:] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in _WS:
                pos += 1
            self.pos = pos
            if pos < len(text):
                return text[pos]
            if not self.more():
                return ""

    def expect(self, char: str, path: Path, what: str) -> None:
        if self.peek() != char:
            raise UsageError(f"{path}: truncated or malformed JSON (expected {what} at character "
                             f"{self.offset + self.pos})")
        self.pos += 1

    def value(self, decoder: json.JSONDecoder, path: Path) -> Any:
        """The JSON value at the cursor, decoded (reading on while it runs past the buffer)."""
        self.peek()
        while True:
            try:
                value, end = decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.text) - self.pos > MAX_EVENT or not self.more():
                    raise UsageError(f"{path}: truncated or malformed JSON ({exc.msg} at character "
                                     f"{self.offset + exc.pos})") from None
                continue
            self.pos = end
            return value


def _kind(char: str) -> str:
    return {"[": "array", '"': "string"}.get(char, "value")


def _head(buf: _Buffer, decoder: json.JSONDecoder, path: Path) -> dict[str, Any]:
    """The top-level keys before `traceEvents` and their values, the cursor left inside the events' array."""
    first = buf.peek()
    if not first:
        raise UsageError(f"{path}: an empty file, not a torch.profiler trace")
    if first != "{":
        if first in ("[", '"'):
            raise UsageError(f"{path}: not a torch.profiler trace (a JSON {_kind(first)}, not an object with "
                             f"{EVENTS_KEY})")
        buf.value(decoder, path)  # not JSON: the decoder's message; JSON of another kind: refused below
        raise UsageError(f"{path}: not a torch.profiler trace (a JSON {_kind(first)}, not an object with "
                         f"{EVENTS_KEY})")
    buf.pos += 1
    meta: dict[str, Any] = {}
    while True:
        if buf.peek() == "}":
            raise UsageError(f"{path}: not a torch.profiler trace (no {EVENTS_KEY} in its JSON)")
        key = buf.value(decoder, path)
        if not isinstance(key, str):
            raise UsageError(f"{path}: truncated or malformed JSON (a key that is not a string)")
        buf.expect(":", path, "':'")
        if key == EVENTS_KEY:
            if buf.peek() != "[":
                raise UsageError(f"{path}: not a torch.profiler trace ({EVENTS_KEY} is not a list)")
            buf.pos += 1
            return meta
        meta[key] = buf.value(decoder, path)
        if buf.peek() == ",":
            buf.pos += 1


def read_head(path: Path) -> dict[str, Any]:
    """The top-level keys before `traceEvents` (Kineto writes schemaVersion, deviceProperties, distributedInfo
    there); refuses what is not a JSON object with `traceEvents`."""
    with _open_text(path) as fh:
        return _head(_Buffer(fh), json.JSONDecoder(), path)


class Events:
    """The trace's events in order (iterate once); `meta` holds the top-level keys before them once the iteration
    has begun."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.meta: dict[str, Any] = {}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        decoder, path = json.JSONDecoder(), self.path
        scan, sep = cast(Any, make_scanner)(decoder), _SEPARATOR.match  # the C scanner raw_decode calls, frameless
        with _open_text(path) as fh:
            buf = _Buffer(fh)
            self.meta = _head(buf, decoder, path)
            if buf.peek() == "]":
                return
            while True:
                text, pos = buf.text, buf.pos
                try:  # the fast path: an event and its separator whole in the buffer
                    event, end = scan(text, pos)
                    m = sep(text, end)
                except (StopIteration, json.JSONDecodeError):
                    m = None
                if m is None:  # at the buffer's end, or malformed: read on, or say where
                    event = buf.value(decoder, path)
                    last = self._separator(buf)
                else:
                    buf.pos = m.end()
                    last = m.group(1) == "]"
                if isinstance(event, dict):
                    yield event
                if last:
                    return

    def _separator(self, buf: _Buffer) -> bool:
        """Past the ',' or ']' after an event; True at the ']'."""
        char = buf.peek()
        if char not in (",", "]") or not char:
            said = "the file ends" if not char else "expected ',' or ']'"
            raise UsageError(f"{self.path}: truncated or malformed JSON ({said} after an event, at character "
                             f"{buf.offset + buf.pos})")
        buf.pos += 1
        buf.peek()
        return char == "]"
