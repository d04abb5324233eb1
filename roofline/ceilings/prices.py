"""Prices per GPU-hour: the user's TOML file, validated; never part of the code or the spec files.

    [meta]
    currency = "USD"
    date = "YYYY-MM-DD"        # a date (a TOML date too): when these prices were true
    source = "..."             # optional, as is note
    [prices]
    h100 = 3.0                 # a spec id or alias = price of one GPU for one hour

examples/prices.toml is a dated, illustrative example.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.ceilings.specs import resolve
from roofline.core.errors import UsageError
from roofline.core.tomlfile import read_toml

META_REQUIRED = ("currency", "date")
META_OPTIONAL = ("source", "note")


@dataclass(frozen=True)
class Prices:
    """Price of one GPU for one hour, by spec id, in `currency`, as of `date` (the user's file)."""

    currency: str
    date: str
    source: str
    per_hour: dict[str, float]
    path: str = ""
    note: str = ""

    def price(self, gpu_id: str) -> float | None:
        return self.per_hour.get(gpu_id)


def _price_err(where: str, key: str, msg: str) -> UsageError:
    return UsageError(f"{where}: {key}: {msg}")


def parse_prices(data: dict[str, Any], where: str) -> Prices:
    """Validate a parsed prices document; every problem is a one-line UsageError naming the file and key."""
    for key in data:
        if key not in ("meta", "prices"):
            raise _price_err(where, key, "unknown top-level key (expected [meta] and [prices])")
    meta = data.get("meta")
    if not isinstance(meta, dict):
        raise _price_err(where, "meta", "missing [meta] table (currency and date are required)")
    for key in meta:
        if key not in META_REQUIRED + META_OPTIONAL:
            raise _price_err(where, f"meta.{key}", f"unknown key (known: {', '.join(META_REQUIRED + META_OPTIONAL)})")
    for key in META_REQUIRED:
        if key not in meta:
            raise _price_err(where, f"meta.{key}", "missing")
    currency = meta["currency"]
    if not isinstance(currency, str) or not currency.strip():
        raise _price_err(where, "meta.currency", "must be a non-empty string, e.g. \"USD\"")
    date = meta["date"]
    if isinstance(date, dt.date) and not isinstance(date, dt.datetime):
        date = date.isoformat()
    if not isinstance(date, str):
        raise _price_err(where, "meta.date", f"must be a date, YYYY-MM-DD, got {date!r}")
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise _price_err(where, "meta.date", f"must be a date, YYYY-MM-DD, got {date!r}") from None
    for key in META_OPTIONAL:
        if key in meta and not isinstance(meta[key], str):
            raise _price_err(where, f"meta.{key}", "must be a string")
    table = data.get("prices")
    if not isinstance(table, dict) or not table:
        raise _price_err(where, "prices", "missing or empty [prices] table (GPU id or alias = price per GPU-hour)")
    per_hour: dict[str, float] = {}
    named_by: dict[str, str] = {}
    for key, value in table.items():
        try:
            spec = resolve(key)
        except UsageError as exc:  # one line naming the closest ids, as --gpu's error does
            raise _price_err(where, f"prices.{key}", str(exc)) from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _price_err(where, f"prices.{key}", f"must be a number (price per GPU-hour), got {value!r}")
        if not math.isfinite(value) or value <= 0:
            raise _price_err(where, f"prices.{key}", f"must be a positive price per GPU-hour, got {value!r}")
        if spec.id in per_hour:
            raise _price_err(where, f"prices.{key}", f"{spec.id} is already priced by '{named_by[spec.id]}'")
        per_hour[spec.id] = float(value)
        named_by[spec.id] = key
    return Prices(currency=currency.strip(), date=date, source=str(meta.get("source", "")), per_hour=per_hour,
                  path=where, note=str(meta.get("note", "")))


def load_prices(path: str | os.PathLike[str]) -> Prices:
    """Read and validate a prices file (TOML: [meta] currency, date, source; [prices] GPU = per GPU-hour)."""
    return parse_prices(read_toml(path, "prices file", UsageError), str(Path(path)))
