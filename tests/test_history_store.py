"""The history store, every test on both backends (SQLite and a real PostgreSQL server: `store_url`): what a
document becomes when added, read back exactly; a document added once; filters; the schema's version and its
refusals; documents that are no measurement refused; concurrent writers.

Expected numbers come from tests/data/results_h200.json (gemm bf16: 193 µs, samples 191.8, 192.6, 193.0, 193.4,
194.2 µs... read from the file itself) times the factors each test chooses (test_history_fixtures.scaled).
"""

from __future__ import annotations

import math
import multiprocessing
import sqlite3
from pathlib import Path

import pytest
import test_history_fixtures as fixtures
from test_history_fixtures import GEMM_S, base_dict, doc, with_record_time

from roofline.core.errors import RooflineError, UsageError
from roofline.core.stats import quantile
from roofline.history.backends import hide_password, locate
from roofline.history.schema import SCHEMA_VERSION
from roofline.history.series import roof_at_clock
from roofline.history.store import Filter, open_store, record_history

GEMM = "gemm bf16 m=4096 n=4096 k=4096"
store_url = fixtures.store_url  # every store test on SQLite and on PostgreSQL


def test_a_document_added_reads_back_exactly(store_url: str) -> None:
    added = record_history(doc(1.0, 0), store_url, commit="abc123", branch="main", machine="box")
    assert (added.points, added.existed, added.untimed) == (6, False, ())  # the file's 6 timed records
    with open_store(store_url) as store:
        [s] = store.matching(GEMM)
        [p] = s.points
        samples = base_dict()["records"][0]["time_samples_s"]
        assert p.median_s == GEMM_S and p.n == len(samples) == 5
        assert (p.q1_s, p.q3_s) == (quantile(samples, 0.25), quantile(samples, 0.75))
        assert store.samples(s, p.run.id) == samples  # float64 stored bit for bit
        assert (p.run.commit, p.run.branch, p.run.machine, p.run.device) == ("abc123", "main", "box", "NVIDIA H200")
        assert p.run.driver == "580.159.04" and p.sm_clock_mhz == 1980.0
        # the roof at the measured clock: the BF16 tensor peak is quoted at 1830 MHz (specs/h200-sxm.toml), so at
        # 1980 MHz the compute roof is 1980/1830 faster
        rec = doc(1.0, 0).records[0]
        assert p.roofline_time_s == rec.roofline_time_s
        assert p.roof_at_clock_s == pytest.approx(rec.roofline_time_s * 1830 / 1980, rel=1e-12)
        assert p.roof_at_clock_s == roof_at_clock(rec)


def test_the_same_document_is_added_once(store_url: str) -> None:
    first = record_history(doc(1.0, 0), store_url)
    again = record_history(doc(1.0, 0), store_url)
    assert not first.existed and again.existed and again.run == first.run and again.points == 0
    with open_store(store_url) as store:
        assert len(store.runs()) == 1


def test_series_are_in_the_order_runs_were_added_and_filtered(store_url: str) -> None:
    factors = [1.0, 1.1, 1.2, 1.3, 1.4]
    for i, f in enumerate(factors):
        record_history(doc(f, i), store_url, commit=f"c{i}", branch="main" if i % 2 == 0 else "dev",
                       machine="a" if i < 3 else "b")
    with open_store(store_url) as store:
        [s] = store.matching(GEMM)
        assert [p.median_s for p in s.points] == pytest.approx([GEMM_S * f for f in factors], rel=1e-12)
        assert [p.run.commit for p in store.matching(GEMM, Filter(branch="main"))[0].points] == ["c0", "c2", "c4"]
        assert [p.run.commit for p in store.matching(GEMM, Filter(machine="b"))[0].points] == ["c3", "c4"]
        assert [p.run.commit for p in store.matching(GEMM, Filter(last=2))[0].points] == ["c3", "c4"]
        assert len(store.matching(None)) == 6
        with pytest.raises(UsageError, match="no series matches 'conv'"):
            store.matching("conv")


def test_a_time_that_is_no_measurement_is_refused_and_nothing_added(store_url: str) -> None:
    record_history(doc(1.0, 0), store_url)
    for bad in (math.inf, math.nan, -1e-4):
        with pytest.raises(UsageError, match=r"gemm bf16 .*time_s must be finite numbers above 0"):
            record_history(with_record_time(doc(1.0, 1), 0, bad), store_url)
    with open_store(store_url) as store:
        assert len(store.runs()) == 1


def test_a_missing_store_is_one_line_and_not_made_by_reading(tmp_path: Path) -> None:
    path = tmp_path / "none.sqlite"
    with pytest.raises(UsageError, match="no history store there"), open_store(path):
        pass
    assert not path.exists()


def test_a_newer_schema_is_refused(store_url: str) -> None:
    record_history(doc(1.0, 0), store_url)
    with open_store(store_url) as store:
        with store.db.transaction():
            store.db.execute("UPDATE history_meta SET value = ? WHERE name = 'schema_version'",
                             (str(SCHEMA_VERSION + 1),))
    with pytest.raises(UsageError, match=f"history schema {SCHEMA_VERSION + 1} is newer"), open_store(store_url):
        pass


def test_an_older_store_is_migrated_once_and_keeps_its_runs(store_url: str) -> None:
    """A later roofline's migration (here: a column added, as schema 2 might) brings a version-1 store up, once;
    its runs are still read, and this roofline then refuses the newer store."""
    from roofline.history.backends import connect
    from roofline.history.schema import MIGRATIONS, migrate

    record_history(doc(1.0, 0), store_url)
    later = [*MIGRATIONS, ["ALTER TABLE history_runs ADD COLUMN note TEXT"]]
    db = connect(locate(store_url), create=False)
    try:
        assert migrate(db, create=False, migrations=later) == SCHEMA_VERSION
        assert migrate(db, create=False, migrations=later) == SCHEMA_VERSION + 1  # current: nothing done
        assert db.query("SELECT COUNT(*), MAX(note) FROM history_runs") == [(1, None)]
    finally:
        db.close()
    with pytest.raises(UsageError, match=f"history schema {SCHEMA_VERSION + 1} is newer"), open_store(store_url):
        pass


def test_a_database_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE history_runs (x INTEGER)")
    with pytest.raises(UsageError, match="not a roofline history store"), open_store(path):
        pass
    (tmp_path / "text.sqlite").write_text("not a database")
    with pytest.raises(RooflineError, match="file is not a database"), open_store(tmp_path / "text.sqlite"):
        pass


def test_a_postgres_url_never_shows_its_password() -> None:
    assert hide_password("postgresql://me:s3cret@db:5432/x") == "postgresql://me:***@db:5432/x"
    assert hide_password("postgresql://db/x?password=s3cret&sslmode=require") == \
        "postgresql://db/x?password=***&sslmode=require"
    loc = locate("postgresql://me:s3cret@127.0.0.1:1/x")
    assert loc.kind == "postgresql" and "s3cret" not in loc.shown
    with pytest.raises(UsageError, match="a path or a postgresql:// URL"):
        locate("mysql://db/x")


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(RooflineError, match=r"cannot reach the history store postgresql://me:\*\*\*@127.0.0.1:1/x") \
            as err:
        record_history(doc(1.0, 0), "postgresql://me:s3cret@127.0.0.1:1/x")
    assert "s3cret" not in str(err.value) and "\n" not in str(err.value)


def _add(url: str, factor: float, run: int) -> bool:
    return record_history(doc(factor, run), url).existed


def test_concurrent_writers_lose_nothing(store_url: str) -> None:
    """Eight processes at once: four distinct documents and four copies of one; every distinct one is stored,
    the copy once, and each writer is told which it was."""
    record_history(doc(9.0, 99), store_url)  # the schema made first, as a CI store is
    jobs = [(store_url, 1.0 + i / 10, i) for i in range(4)] + [(store_url, 2.0, 50)] * 4
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        existed = pool.starmap(_add, jobs)
    assert existed[:4] == [False] * 4 and sorted(existed[4:]) == [False, True, True, True]
    with open_store(store_url) as store:
        assert len(store.runs()) == 6
        assert len(store.matching(GEMM)[0].points) == 6


def test_a_document_is_the_same_run_indented_or_gzipped_and_another_with_one_sample_changed(tmp_path: Path) -> None:
    import gzip
    import json

    from roofline.core.document import read_document
    from roofline.history.series import digest

    data = fixtures.scaled(1.0, 0)
    (tmp_path / "a.json").write_text(json.dumps(data, indent=2))
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    assert digest(read_document(tmp_path / "a.json")) == digest(read_document(tmp_path / "b.json.gz"))
    data["records"][3]["time_samples_s"][2] *= 1.001
    (tmp_path / "c.json").write_text(json.dumps(data))
    assert digest(read_document(tmp_path / "c.json")) != digest(read_document(tmp_path / "a.json"))
