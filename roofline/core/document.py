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
    """Now in UTC to the second, ISO 8601 ('2026-12-01T03:36:51+00:00', as datetime's isoformat writes it; the
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
    Document of Records is a UsageError (a dict was written as it was, a file no command could read)."""
    from roofline.core.validate import a_noun, path_arg

    path_arg("write_document", "path", path)
    if not isinstance(doc, Document):
        raise UsageError(f"write_document: doc must be a roofline.Document, got {a_noun(type(doc).__name__)}")
    for i, rec in enumerate(doc.records):
        if not isinstance(rec, Record):
            raise UsageError(f"write_document: record {i} is {a_noun(type(rec).__name__)}, not a roofline.Record")
    return atomic_write(refuse_existing(path, force, flag="force=True"), dumps(doc), exclusive=not force)


def _finite_problem(value: Any, path: str) -> str | None:
    """The first non-finite number in `value` (nested lists and objects) as 'PATH is Infinity', or None. JSON has
    no such numbers (roofline writes them as null: `clean_json`); Python's reader takes Infinity, NaN and a
    literal past the largest double (1e999) all the same, and a sample of inf or NaN compares as no time does."""
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"{path} is {'NaN' if math.isnan(value) else 'Infinity' if value > 0 else '-Infinity'}"
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


def check_record(rec: Any, i: int, where: str) -> None:
    """A record as read (a dict): one UsageError naming the record and the field when it is not a record of
    schema v1 or its numbers are no measurement (non-finite anywhere; times, samples, energies not above 0)."""
    if not isinstance(rec, dict):
        raise UsageError(f"{where}: record {i} is not an object")
    missing = [f for f in REQUIRED if f not in rec]
    if missing:
        raise UsageError(f"{where}: record {i} lacks {', '.join(missing)}")
    name = f"{where}: record {i} ({rec.get('op')})"
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
    from roofline.core.validate import path_arg

    p = Path(path_arg("read_document", "path", path))
    try:
        text = read_text(p, "results file", missing="no such file")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: cannot read: {exc}") from None
    if not text.strip():
        raise UsageError(f"{p}: empty file, not a results document")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{p}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
    return validate_document(doc, str(p))
