"""What the history tests share: results documents made from a real one, and the two backends every store test
runs on (SQLite in a temporary folder; PostgreSQL on a real server, each test in a schema of its own).

The documents are tests/data/results_h200.json (6 timed records on an H200: gemm bf16 193 µs, 5 samples each, SM
clock 1980 MHz, driver 580.159.04) with every time and sample multiplied by a factor per run, so a series' values
are the file's times times the factors, known exactly.

PostgreSQL: the server named by $ROOFLINE_TEST_POSTGRES, else the one scripts/postgres_server.sh starts
(postgresql://roofline@127.0.0.1:55432/postgres; .ci/run starts it). Where none answers, or psycopg is not
installed, the PostgreSQL cases skip, saying why; in CI they run.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA

from roofline.core.document import Document, validate_document

H200 = DATA / "results_h200.json"
DEFAULT_POSTGRES = "postgresql://roofline@127.0.0.1:55432/postgres"
GEMM_S = 0.000193  # the file's gemm bf16 time_s


def base_dict() -> dict[str, Any]:
    return json.loads(H200.read_text())  # type: ignore[no-any-return]


def scaled(factor: float, run: int, clock_mhz: float | None = None, driver: str | None = None) -> dict[str, Any]:
    """The file with every time and sample times `factor`, a `created` of its own (run `run`), and optionally
    another SM clock or driver."""
    d = copy.deepcopy(base_dict())
    d["created"] = f"2026-11-20T{run // 60:02d}:{run % 60:02d}:00+00:00"
    if driver is not None:
        d["device"]["driver_version"] = driver
    for r in d["records"]:
        r["time_s"] *= factor
        r["time_samples_s"] = [t * factor for t in r["time_samples_s"]]
        for k in ("achieved_flops_per_s", "achieved_bytes_per_s", "roofline_fraction"):
            if r.get(k):
                r[k] /= factor
        if clock_mhz is not None:
            r["clocks"]["sm_mhz"] = {"median": clock_mhz, "min": clock_mhz, "max": clock_mhz}
    return d


def doc(factor: float, run: int, **kw: Any) -> Document:
    return validate_document(scaled(factor, run, **kw), "test")


def write_docs(folder: Path, factors: Sequence[float], **kw: Any) -> list[Path]:
    paths = []
    for i, f in enumerate(factors):
        p = folder / f"run{i:03d}.json"
        p.write_text(json.dumps(scaled(f, i, **kw)))
        paths.append(p)
    return paths


def _postgres_url() -> tuple[str | None, str]:
    """A reachable server's URL, or None and why not."""
    try:
        import psycopg
    except ImportError:
        return None, "psycopg is not installed (pip install 'roofline[history]'; .ci/run installs it)"
    url = os.environ.get("ROOFLINE_TEST_POSTGRES") or DEFAULT_POSTGRES
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        return None, f"no PostgreSQL server at {url} ({str(exc).splitlines()[0]}): scripts/postgres_server.sh start"
    return url, ""


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new, empty store's --history value on each backend: a SQLite file, or a PostgreSQL schema of its own
    (dropped after the test)."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.sqlite")
        return
    url, why = _postgres_url()
    if url is None:
        pytest.skip(why)
    import psycopg

    schema = f"roofline_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    sep = "&" if "?" in url else "?"
    try:
        yield f"{url}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


def with_record_time(d: Document, index: int, time_s: float) -> Document:
    recs = list(d.records)
    recs[index] = dataclasses.replace(recs[index], time_s=time_s)
    return dataclasses.replace(d, records=recs)
