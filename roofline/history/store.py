"""The history store: results documents added as runs, read back as each record's series.

`open_store(name)` opens (and, for `add`, makes) the store a `--history` value names: a path (SQLite) or a
`postgresql://` URL; none: `history.sqlite` in roofline's cache folder. Adding a document is one transaction (its
run, any new series, one point per timed record): a reader sees all of it or none, and of two writers adding the
same document one adds it and the other is told it is there. Series are read in the order their runs were added
(CI adds each commit's run as it is made), optionally for one branch or machine, optionally the last N points.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.core.document import Document, now_iso
from roofline.core.errors import RooflineError, UsageError
from roofline.history.backends import Database, Location, connect, failure, locate
from roofline.history.schema import migrate
from roofline.history.series import NewPoint, Point, Run, Series, digest, new_points

# The store of a command given no --history (and no ROOFLINE_HISTORY): in roofline's cache folder, beside the
# calibration store.
DEFAULT_NAME = "history.sqlite"
# The environment variable that names the store when --history is not given (a CI job sets it once).
ENV = "ROOFLINE_HISTORY"
# Where a run's commit and branch come from when not given: the variables CI services set, first found wins
# (GitHub Actions, GitLab CI, Buildkite, Jenkins' git plugin).
CI_ENV = {"commit": ("GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT", "GIT_COMMIT"),
          "branch": ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "BUILDKITE_BRANCH", "GIT_BRANCH")}
# A commit, branch or machine name is a line of text at most this long (a SHA-256 commit is 64 characters, a git
# branch name rarely over 100).
MAX_LABEL_CHARS = 256

_RUN_COLUMNS = ("r.id, r.added, r.created, r.commit_sha, r.branch, r.machine, r.device, r.driver, r.torch, "
                "r.tool_version, r.source")
_POINT_COLUMNS = ("p.median_s, p.q1_s, p.q3_s, p.n, p.roofline_time_s, p.roof_at_clock_s, p.sm_clock_mhz, "
                  "p.power_limit_w")


def default_location() -> Path:
    from roofline.ceilings.store import cache_dir

    return cache_dir() / DEFAULT_NAME


def store_name(name: str | os.PathLike[str] | None) -> str:
    """The store a command uses: `name` (--history), else $ROOFLINE_HISTORY, else the default in the cache."""
    if name is not None and os.fspath(name) != "":
        return os.fspath(name)
    return os.environ.get(ENV) or str(default_location())


def from_ci(what: str, given: str | None) -> str | None:
    """`given` (--commit, --branch), else the first CI variable of CI_ENV[what] that is set, checked as a label."""
    if given is None:
        given = next((os.environ[v] for v in CI_ENV[what] if os.environ.get(v)), None)
    return label(f"--{what}", given)


def label(flag: str, value: str | None) -> str | None:
    """A commit, branch or machine name: one printable line of at most MAX_LABEL_CHARS, else a UsageError."""
    if value is None:
        return None
    if not value.strip() or len(value) > MAX_LABEL_CHARS or not value.isprintable():
        raise UsageError(f"{flag} {value[:40]!r}: a name of 1 to {MAX_LABEL_CHARS} printable characters")
    return value.strip()


@dataclass(frozen=True)
class Added:
    """What `Store.add` did: the run's id, its points, the records left out (untimed), and whether the document
    was there already (then nothing was added)."""

    run: int
    points: int
    untimed: tuple[str, ...]
    existed: bool


@dataclass(frozen=True)
class Filter:
    """Which runs a read sees: one branch, one machine (None: all), the last `last` of them (None: all)."""

    branch: str | None = None
    machine: str | None = None
    last: int | None = None

    def where(self) -> tuple[str, list[Any]]:
        sql, params = "", []
        for column, value in (("r.branch", self.branch), ("r.machine", self.machine)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        return sql, params


class Store:
    """An open store (`open_store`); closed by the `with` block that opened it."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def shown(self) -> str:
        return self.db.shown

    @contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            if self.db.is_driver_error(exc):
                raise failure(self.db, exc, "read") from None
            raise

    # ---------------------------------------------------------------- writing
    def add(self, doc: Document, where: str, commit: str | None = None, branch: str | None = None,
            machine: str | None = None) -> Added:
        """Add a results document (read and checked as `check` reads it) as one run; `where` names it in errors
        and is kept as its source. A document already in the store is not added again (`Added.existed`)."""
        points, untimed = new_points(doc, where)
        ident = digest(doc)
        device = doc.device
        run = (ident, now_iso(), doc.created or now_iso(), commit, branch, machine or socket.gethostname(),
               str(device.get("name") or device.get("spec_id") or "unknown"), _text(device.get("driver_version")),
               _text(device.get("torch_version")), doc.tool_version or None, where)
        try:
            with self.db.transaction():
                found = self.db.query("SELECT id FROM history_runs WHERE digest = ?", (ident,))
                if found:
                    return Added(int(found[0][0]), 0, tuple(untimed), existed=True)
                run_id = self.db.insert(
                    "INSERT INTO history_runs (digest, added, created, commit_sha, branch, machine, device, driver, "
                    "torch, tool_version, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", run)
                ids = self._series_ids(points)
                self.db.executemany(
                    "INSERT INTO history_points (series_id, run_id, median_s, q1_s, q3_s, n, samples, "
                    "roofline_time_s, roof_at_clock_s, sm_clock_mhz, power_limit_w) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(ids[p.key], run_id, p.median_s, p.q1_s, p.q3_s, p.n, p.samples, p.roofline_time_s,
                      p.roof_at_clock_s, p.sm_clock_mhz, p.power_limit_w) for p in points])
        except Exception as exc:
            if self.db.is_duplicate(exc):  # another writer added the same document between our read and insert
                found = self.db.query("SELECT id FROM history_runs WHERE digest = ?", (ident,))
                if found:
                    return Added(int(found[0][0]), 0, tuple(untimed), existed=True)
            if self.db.is_driver_error(exc):
                raise failure(self.db, exc, f"add {where} to") from None
            raise
        return Added(run_id, len(points), tuple(untimed), existed=False)

    def _series_ids(self, points: Sequence[NewPoint]) -> dict[str, int]:
        """The ids of the points' series, the new ones made (inside the add's transaction)."""
        keys = [p.key for p in points]
        ids = self._ids_of(keys)
        new = [p for p in points if p.key not in ids]
        if new:
            self.db.executemany("INSERT INTO history_series (key, gpu, op, name) VALUES (?, ?, ?, ?) "
                                "ON CONFLICT (key) DO NOTHING", [(p.key, p.gpu, p.op, p.name) for p in new])
            ids.update(self._ids_of([p.key for p in new]))
        return ids

    def _ids_of(self, keys: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        chunk = 500  # SQLite's default limit of host parameters is 999 before 3.32
        for i in range(0, len(keys), chunk):
            part = keys[i:i + chunk]
            rows = self.db.query(f"SELECT key, id FROM history_series WHERE key IN ({', '.join('?' * len(part))})",
                                 part)
            out.update((str(k), int(v)) for k, v in rows)
        return out

    # ---------------------------------------------------------------- reading
    def series(self) -> list[Series]:
        """Every series (without points), by name."""
        with self._reading():
            rows = self.db.query("SELECT s.id, s.key, s.gpu, s.op, s.name FROM history_series s "
                                 "ORDER BY s.name, s.gpu, s.id")
        return [Series(int(i), str(k), str(g), str(o), str(n)) for i, k, g, o, n in rows]

    def matching(self, pattern: str | None, only: Filter = Filter()) -> list[Series]:
        """The series whose name holds `pattern` (any case) or whose key is it (None: every series), each with its
        points of `only`'s runs; those without a point there are left out. A pattern that matches no series is a
        one-line UsageError naming how many the store holds."""
        every = self.series()
        if not every:
            raise UsageError(f"{self.shown}: no runs in this history store yet (`roofline history add DOC`)")
        chosen = every
        if pattern is not None:
            low = pattern.lower()
            chosen = [s for s in every if s.key == pattern or low in s.name.lower()]
            if not chosen:
                raise UsageError(f"no series matches {pattern!r} in {self.shown} ({len(every)} series; "
                                 "`roofline history show` lists them)")
        read = [self.points(s, only) for s in chosen]
        return [s for s in read if s.points]

    def points(self, series: Series, only: Filter = Filter()) -> Series:
        """The series with its points (of `only`'s runs), oldest first."""
        cond, params = only.where()
        sql = (f"SELECT {_RUN_COLUMNS}, {_POINT_COLUMNS} FROM history_points p JOIN history_runs r "
               f"ON r.id = p.run_id WHERE p.series_id = ?{cond} ORDER BY p.run_id DESC")
        if only.last is not None:
            sql += f" LIMIT {int(only.last)}"
        with self._reading():
            rows = self.db.query(sql, [series.id, *params])
        points = tuple(_point(row) for row in reversed(rows))
        return Series(series.id, series.key, series.gpu, series.op, series.name, points)

    def runs(self, only: Filter = Filter()) -> list[Run]:
        """The runs of `only`, oldest first."""
        cond, params = only.where()
        sql = f"SELECT {_RUN_COLUMNS} FROM history_runs r WHERE 1 = 1{cond} ORDER BY r.id DESC"
        if only.last is not None:
            sql += f" LIMIT {int(only.last)}"
        with self._reading():
            rows = self.db.query(sql, params)
        return [_run(row) for row in reversed(rows)]

    def samples(self, series: Series, run: int) -> list[float]:
        """Every sample of one point."""
        from roofline.history.series import unpack

        with self._reading():
            rows = self.db.query("SELECT samples FROM history_points WHERE series_id = ? AND run_id = ?",
                                 (series.id, run))
        return unpack(bytes(rows[0][0])) if rows and rows[0][0] is not None else []


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _run(row: Sequence[Any]) -> Run:
    return Run(int(row[0]), *(None if v is None else str(v) for v in row[1:11]))  # type: ignore[arg-type]


def _point(row: Sequence[Any]) -> Point:
    run = _run(row)
    m, q1, q3, n, roof, at_clock, clock, power = row[11:19]
    return Point(run, float(m), float(q1), float(q3), int(n), roof, at_clock, clock, power)


@contextmanager
def open_store(name: str | os.PathLike[str] | None = None, create: bool = False) -> Iterator[Store]:
    """The store `name` names (`store_name`), migrated to this roofline's schema; `create`: made when missing
    (`history add`), else a missing store is a one-line UsageError."""
    location: Location = locate(store_name(name))
    db = connect(location, create)
    try:
        try:
            migrate(db, create)
        except RooflineError:
            raise
        except Exception as exc:
            if db.is_driver_error(exc):
                raise failure(db, exc, "open") from None
            raise
        yield Store(db)
    finally:
        db.close()


def record_history(doc: Document, store: str | os.PathLike[str] | Store | None = None, *, commit: str | None = None,
                   branch: str | None = None, machine: str | None = None, where: str = "results") -> Added:
    """Add a results document to a history store: `store` an open Store, a path (SQLite, made when missing), a
    `postgresql://` URL, or None ($ROOFLINE_HISTORY, else history.sqlite in the cache folder). The commit and branch
    default to the CI's variables (CI_ENV); the machine to this host's name. `where` names the document in errors.
    Raises UsageError for a document or a name that cannot be stored, RooflineError for a store it cannot reach."""
    commit, branch = from_ci("commit", commit), from_ci("branch", branch)
    machine = label("--machine", machine)
    if isinstance(store, Store):
        return store.add(doc, where, commit, branch, machine)
    with open_store(store, create=True) as opened:
        return opened.add(doc, where, commit, branch, machine)
