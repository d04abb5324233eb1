"""The versioned results document: build, write (never clobbering), read and validate.

Schema v1:
    {"schema_version": 1, "tool_version": str, "created": ISO-8601 UTC, "device": {...}, "records": [...]}
Field names are a public interface (CI scripts read them): add fields, never rename them.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline._version import __version__ as TOOL_VERSION
from roofline.core.errors import UsageError
from roofline.core.files import atomic_write, read_text, refuse_existing
from roofline.core.record import NULLABLE, NUMERIC, REQUIRED, Record

SCHEMA_VERSION = 1


def now_iso() -> str:
    """Now in UTC to the second, ISO 8601 ('YYYY-MM-DDTHH:MM:SS+00:00', as datetime's isoformat writes it; the
    time module is already loaded, datetime costs ~5 ms of the analytic path)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


@dataclass
class Document:
    """A results document: the device it ran on and its records. Top-level keys this version does not know
    are kept in `extra` and written back."""

    device: dict[str, Any]
    records: list[Record]
    schema_version: int = SCHEMA_VERSION
    tool_version: str = TOOL_VERSION
    created: str = field(default_factory=now_iso)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def timed(self) -> bool:
        return any(r.timed for r in self.records)

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version, "tool_version": self.tool_version, "created": self.created,
                "device": self.device, "records": [r.to_dict() for r in self.records], **self.extra}


def clean_json(obj: Any) -> Any:
    """JSON has no inf/nan: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    return obj


def dumps(doc: Document | dict[str, Any]) -> str:
    data = doc.to_dict() if isinstance(doc, Document) else doc
    return json.dumps(clean_json(data), indent=2, sort_keys=False) + "\n"


def write_document(doc: Document, path: str | os.PathLike[str], force: bool = False) -> Path:
    """Write a results document; an existing file is kept unless `force` (the user asked). Anything but a
    Document of Records is a UsageError (a dict was written as it was, a file no command could read), and so is
    a document that `read_document` would refuse (a field of another type, a number no measurement gives): it is
    checked as read back before anything is written."""
    from roofline.core.validate import a_noun, boolean, brief, path_arg

    path_arg("write_document", "path", path)
    boolean("write_document", "force", force)
    if not isinstance(doc, Document):
        raise UsageError(f"write_document: doc must be a roofline.Document, got {a_noun(type(doc).__name__)}")
    if not isinstance(doc.records, list):
        raise UsageError(f"write_document: doc.records must be a list of roofline.Record, got {brief(doc.records)}")
    for i, rec in enumerate(doc.records):
        if not isinstance(rec, Record):
            raise UsageError(f"write_document: record {i} is {a_noun(type(rec).__name__)}, not a roofline.Record")
    try:
        text = dumps(doc)
        validate_document(json.loads(text), "write_document")  # what read_document reads of it, or its refusal
    except (TypeError, ValueError) as exc:  # a value JSON cannot hold (a Path, a tensor), or a key that is no str
        raise UsageError(f"write_document: not a results document JSON can hold: {exc}") from None
    except RecursionError:
        raise UsageError("write_document: not a results document JSON can hold: nested too deeply") from None
    return atomic_write(refuse_existing(path, force, flag="force=True"), text, exclusive=not force)


# The largest integer a document may hold: what a double holds (every number of a record is read as one; a
# 400-digit count raised OverflowError in the views): validate.MAX_DOUBLE.
# A results document is refused, unread, past this size: the largest roofline writes (a profile of an 80-layer
# model, every sample kept) is tens of MB, and Python's JSON reader takes about 10x a file's size in memory; a
# file past 1 GiB is another file named by mistake (a checkpoint, a trace, a disk image), and reading it would
# exhaust the memory before a line could say so.
MAX_DOCUMENT_BYTES = 2**30
# A record's op as an error names it: a name longer than this is cut (an op of 1,000,000 characters is valid JSON,
# and an error is one line).
NAME_CHARS = 60


def _short(name: str) -> str:
    return name if len(name) <= NAME_CHARS else f"{name[:NAME_CHARS - 3]}... ({len(name):,} characters)"


def _finite_problem(value: Any, path: str) -> str | None:
    """The first non-finite number in `value` (nested lists and objects) as 'PATH is Infinity', or None. JSON has
    no such numbers (roofline writes them as null: `clean_json`); Python's reader takes Infinity, NaN and a
    literal past the largest double (1e999) all the same, and a sample of inf or NaN compares as no time does."""
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"{path} is {'NaN' if math.isnan(value) else 'Infinity' if value > 0 else '-Infinity'}"
    if isinstance(value, int) and not isinstance(value, bool):  # JSON's integers have no bound; a double has
        from roofline.core.validate import MAX_DOUBLE, digits

        return None if abs(value) <= MAX_DOUBLE else f"{path} is an integer of {digits(value)} digits"
    if isinstance(value, list):
        try:  # fast: a list of finite numbers sums to a finite number (a list of thousands of samples)
            if math.isfinite(sum(value)):
                return None
        except (TypeError, OverflowError, ValueError):
            pass
        for j, v in enumerate(value):
            if (found := _finite_problem(v, f"{path}[{j}]")) is not None:
                return found
    elif isinstance(value, dict):
        for k, v in value.items():
            if (found := _finite_problem(v, f"{path}.{k}" if path else str(k))) is not None:
                return found
    return None


def _positive_times(values: Any) -> bool:
    """A list of times or energies a measurement gives: numbers (not booleans) above 0."""
    return isinstance(values, list) and all(isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0
                                            for s in values)


def _field_types(cls: type[Any]) -> dict[str, Any]:
    """The type of each field of a record class (Record, Timing, Clocks, Counters) by its JSON key."""
    import dataclasses
    import typing

    if cls not in _TYPES:
        hints = typing.get_type_hints(cls)
        _TYPES[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.name not in ("extra", "keys")}
    return _TYPES[cls]


_TYPES: dict[type[Any], dict[str, Any]] = {}


def _type_problem(data: dict[str, Any], cls: type[Any], path: str = "") -> str | None:
    """The first field of `data` (a record, or its timing, clocks or counters block) whose value is not of its
    field's type, as 'params must be an object, got 'm=4'': a string where an object is read, a list where a
    name is, raised AttributeError and TypeError in every view."""
    from roofline.core.validate import brief, json_type

    types = _field_types(cls)
    nested = getattr(cls, "NESTED", {})
    for key, value in data.items():
        if key not in types:
            continue  # a key this version does not know: kept in `extra`, never read
        if (want := json_type(value, types[key])) is not None:
            return f"{path}{key} must be {want}, got {brief(value)}"
        if key in nested and isinstance(value, dict):
            if (found := _type_problem(value, nested[key], f"{path}{key}.")) is not None:
                return found
    return None


def check_record(rec: Any, i: int, where: str) -> None:
    """A record as read (a dict): one UsageError naming the record and the field when it is not a record of
    schema v1 (a field missing or of another type: `params` a string, `op` a list) or its numbers are no
    measurement (non-finite anywhere, or past what a double holds; times, samples, energies not above 0)."""
    from roofline.core.validate import brief

    if not isinstance(rec, dict):
        raise UsageError(f"{where}: record {i} is not an object")
    missing = [f for f in REQUIRED if f not in rec]
    if missing:
        raise UsageError(f"{where}: record {i} lacks {', '.join(missing)}")
    name = f"{where}: record {i} ({brief(rec['op']) if not isinstance(rec['op'], str) else _short(rec['op'])})"
    bad = _finite_problem(rec, "")
    if bad is not None:
        raise UsageError(f"{name}: {bad}: not a measurement (roofline writes no such number)")
    for f in NUMERIC:
        v = rec[f]
        if v is None and f in NULLABLE and rec.get("count") is not None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise UsageError(f"{name}: {f} must be a non-negative number")
    time_s = rec.get("time_s")
    if time_s is not None and not _positive_times([time_s]):
        raise UsageError(f"{name}: time_s must be a positive number (seconds), got {time_s!r}")
    samples = rec.get("time_samples_s")
    if samples is not None and not _positive_times(samples):
        raise UsageError(f"{name}: time_samples_s must be positive numbers")
    energy = rec.get("energy")
    if isinstance(energy, dict) and energy.get("samples_j") is not None and not _positive_times(energy["samples_j"]):
        raise UsageError(f"{name}: energy.samples_j must be positive numbers (joules per call)")
    if (wrong := _type_problem(rec, Record)) is not None:  # after the numbers: their checks word a bad time
        raise UsageError(f"{name}: {wrong}")


def validate_document(doc: Any, where: str) -> Document:
    """Check a parsed results document and type it; problems are one-line UsageErrors naming the file (a
    results document is always input the user named: exit status 2, docs/guide.md)."""
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: not a roofline results document (expected a JSON object)")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UsageError(f"{where}: not a roofline results document (no integer schema_version)")
    if version > SCHEMA_VERSION:
        raise UsageError(f"{where}: results schema {version} is newer than this roofline reads "
                            f"({SCHEMA_VERSION}); upgrade roofline")
    if version < 1:
        raise UsageError(f"{where}: unknown results schema {version}")
    records = doc.get("records")
    if not isinstance(records, list):
        raise UsageError(f"{where}: 'records' must be a list")
    device = doc.get("device", {})
    if not isinstance(device, dict):
        raise UsageError(f"{where}: 'device' must be an object")
    for i, rec in enumerate(records):
        check_record(rec, i, where)
    bad = _finite_problem({k: v for k, v in doc.items() if k != "records"}, "")
    if bad is not None:  # a profile's regions are judged too (their times and per-entry walls)
        raise UsageError(f"{where}: {bad}: not a measurement (roofline writes no such number)")
    known = ("schema_version", "tool_version", "created", "device", "records")
    return Document(device=device, records=[Record.from_dict(r) for r in records], schema_version=version,
                    tool_version=str(doc.get("tool_version", "")), created=str(doc.get("created", "")),
                    extra={k: v for k, v in doc.items() if k not in known})


def read_document(path: str | os.PathLike[str]) -> Document:
    """A results document from a file; a missing, unreadable or malformed file is one UsageError naming it."""
    from roofline.core.validate import input_file, path_arg

    p = Path(path_arg("read_document", "path", path))
    input_file(p, "results file", MAX_DOCUMENT_BYTES)  # a FIFO, /dev/zero, a disk image: refused unread
    try:
        text = read_text(p, "results file", missing="no such file")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: cannot read: {exc}") from None
    if not text.strip():
        raise UsageError(f"{p}: empty file, not a results document")
    deep = UsageError(f"{p}: not a results document: JSON nested deeper than Python reads (roofline's nest ~5 "
                      "levels)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{p}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:  # [[[[...]]]] 200,000 deep: past the interpreter's limit
        raise deep from None
    except ValueError as exc:  # an integer literal of over 4300 digits (int's limit on reading text)
        raise UsageError(f"{p}: not a results document: {str(exc).split(';')[0]}") from None
    try:
        return validate_document(doc, str(p))
    except RecursionError:  # nested just under the reader's limit: past it in the checks
        raise deep from None
