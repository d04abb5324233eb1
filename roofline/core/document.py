"""The versioned results document: build, write (never clobbering), read and validate.

Schema v1:
    {"schema_version": 1, "tool_version": str, "created": ISO-8601 UTC, "device": {...}, "records": [...]}
Field names are a public interface (CI scripts read them): add fields, never rename them.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from roofline import __version__
from roofline.core.errors import RooflineError

SCHEMA_VERSION = 1

# Every record carries these; timed records add TIMED_FIELDS.
RECORD_FIELDS = (
    "op", "params", "dtype", "flops", "bytes_read", "bytes_written", "bytes", "arithmetic_intensity", "gpu",
    "peak_flops_per_s", "peak_bytes_per_s", "ridge_point", "bound", "roofline_time_s",
)
TIMED_FIELDS = ("time_s", "time_samples_s", "achieved_flops_per_s", "achieved_bytes_per_s", "roofline_fraction")
_NUMERIC = ("flops", "bytes_read", "bytes_written", "bytes", "peak_flops_per_s", "peak_bytes_per_s",
            "ridge_point", "roofline_time_s")


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def new_document(device: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "tool_version": __version__, "created": now_iso(),
            "device": device, "records": records}


def _clean(obj: Any) -> Any:
    """JSON has no inf/nan: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(_clean(doc), indent=2, sort_keys=False) + "\n"


def write_document(doc: dict[str, Any], path: str | os.PathLike[str], force: bool = False) -> Path:
    """Write a results document; an existing file is kept unless `force` (the user asked)."""
    p = Path(path)
    if p.exists() and not force:
        raise RooflineError(f"{p} exists: not overwriting it (pass --force to replace it)")
    text = dumps(doc)
    try:
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, p)
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    return p


def validate_document(doc: Any, where: str) -> dict[str, Any]:
    """Check a parsed results document; problems are one-line RooflineErrors naming the file."""
    if not isinstance(doc, dict):
        raise RooflineError(f"{where}: not a roofline results document (expected a JSON object)")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise RooflineError(f"{where}: not a roofline results document (no integer schema_version)")
    if version > SCHEMA_VERSION:
        raise RooflineError(f"{where}: results schema {version} is newer than this roofline reads "
                            f"({SCHEMA_VERSION}); upgrade roofline")
    if version < 1:
        raise RooflineError(f"{where}: unknown results schema {version}")
    records = doc.get("records")
    if not isinstance(records, list):
        raise RooflineError(f"{where}: 'records' must be a list")
    if not isinstance(doc.get("device", {}), dict):
        raise RooflineError(f"{where}: 'device' must be an object")
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise RooflineError(f"{where}: record {i} is not an object")
        missing = [f for f in RECORD_FIELDS if f not in rec]
        if missing:
            raise RooflineError(f"{where}: record {i} lacks {', '.join(missing)}")
        for f in _NUMERIC:
            v = rec[f]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise RooflineError(f"{where}: record {i} ({rec.get('op')}): {f} must be a non-negative number")
        samples = rec.get("time_samples_s")
        if samples is not None and (not isinstance(samples, list)
                                    or not all(isinstance(s, (int, float)) and s > 0 for s in samples)):
            raise RooflineError(f"{where}: record {i} ({rec.get('op')}): time_samples_s must be positive numbers")
    return doc


def read_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise RooflineError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RooflineError(f"{p}: cannot read: {exc}") from None
    if not text.strip():
        raise RooflineError(f"{p}: empty file, not a results document")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RooflineError(f"{p}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
    return validate_document(doc, str(p))


def is_timed(record: dict[str, Any]) -> bool:
    return record.get("time_s") is not None
