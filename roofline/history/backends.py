"""The two databases a history store lives in, behind one small interface: SQLite (one file; Python's standard
library) and PostgreSQL (a server named by URL, for a team; psycopg 3, the `[history]` extra).

The store's SQL is written once, with `?` placeholders and a few type words (`schema.ddl`); each backend turns
them into its own. Every write is one transaction: SQLite's `BEGIN IMMEDIATE` takes the file's write lock before
anything is read, so two writers take turns (the second waits up to BUSY_TIMEOUT_S); PostgreSQL's transactions
and unique keys do the same on the server. A driver's error becomes one line (`failure`), never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError, UsageError

# The URL schemes of a PostgreSQL store (libpq takes both).
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# How long a writer waits for another writer's transaction before giving up in one line: an add is a few
# milliseconds, so a minute is many writers queued, or one stuck.
BUSY_TIMEOUT_S = 60
# How long connecting to a PostgreSQL server may take before the command says it cannot reach it.
CONNECT_TIMEOUT_S = 10
# Serialises schema migrations of one PostgreSQL database (pg_advisory_xact_lock's key; any fixed number).
MIGRATION_LOCK = 5_050_050
# A value of the URL shown in messages in place of its password.
HIDDEN = "***"

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Location:
    """Where a store is: `kind` 'sqlite' (target: a path) or 'postgresql' (target: the URL); `shown`: the
    target as messages show it (a URL without its password)."""

    kind: str
    target: str
    shown: str


def hide_password(url: str) -> str:
    """The URL with its password replaced ('postgresql://me:***@db/x'), also one given as `password=` in the
    query."""
    url = re.sub(r"^([a-z]+://[^:/@?]+):[^@/?]*@", rf"\1:{HIDDEN}@", url)
    return re.sub(r"([?&]password=)[^&]*", rf"\1{HIDDEN}", url)


def locate(name: str | os.PathLike[str]) -> Location:
    """The store a `--history` value names: a `postgresql://` URL, else a path (`~` expanded)."""
    text = os.fspath(name)
    if not text.strip():
        raise UsageError("--history is empty: give a path or a postgresql:// URL")
    if text.startswith(POSTGRES_SCHEMES):
        return Location("postgresql", text, hide_password(text))
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text):
        raise UsageError(f"--history {hide_password(text)}: a path or a postgresql:// URL (no other database is "
                         "supported)")
    path = Path(text).expanduser()
    return Location("sqlite", str(path), str(path))


class Database:
    """One open connection to a store's database. `query`, `execute`, `executemany` and `insert` take the store's
    SQL (`?` placeholders); writes go inside `transaction()`."""

    kind = ""

    def __init__(self, location: Location) -> None:
        self.location = location
        self.shown = location.shown

    def sql(self, text: str) -> str:
        return text

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        raise NotImplementedError

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        """Run an INSERT of one row into a table with an `id` column; the new row's id."""
        raise NotImplementedError

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """A write transaction: committed when the block ends, rolled back on any error (then re-raised)."""
        raise NotImplementedError

    def lock_schema(self) -> None:
        """Inside a transaction: wait until no other process migrates this store's schema."""

    def tables(self) -> set[str]:
        raise NotImplementedError

    def is_duplicate(self, exc: BaseException) -> bool:
        """Whether `exc` is a unique key's refusal (the same document added twice, concurrently)."""
        raise NotImplementedError

    def is_driver_error(self, exc: BaseException) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class Sqlite(Database):
    kind = "sqlite"

    def __init__(self, location: Location) -> None:
        super().__init__(location)
        # autocommit (isolation_level None): transactions are ours (`transaction`), never the module's implicit
        # ones, which would begin a deferred transaction that takes the write lock late and can deadlock.
        self.conn = sqlite3.connect(location.target, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        self.conn.execute("PRAGMA foreign_keys = ON")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(sql, tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, [tuple(r) for r in rows])

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        rowid = self.conn.execute(sql, tuple(params)).lastrowid
        assert rowid is not None
        return int(rowid)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")  # the write lock first: no other writer between our read and write
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def tables(self) -> set[str]:
        return {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def is_duplicate(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    def is_driver_error(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.Error)

    def close(self) -> None:
        self.conn.close()


class Postgres(Database):
    kind = "postgresql"

    def __init__(self, location: Location) -> None:
        super().__init__(location)
        try:
            import psycopg
        except ImportError:
            raise UsageError(f"--history {self.shown}: a PostgreSQL store needs psycopg (pip install "
                             "'roofline[history]')") from None
        self._psycopg = psycopg
        self._sql: dict[str, str] = {}
        try:
            self.conn = psycopg.connect(location.target, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.ProgrammingError as exc:  # a URL libpq cannot parse
            raise UsageError(f"--history {self.shown}: not a PostgreSQL URL ({_first_line(exc)})") from None
        except psycopg.Error as exc:
            raise RooflineError(f"cannot reach the history store {self.shown}: {_first_line(exc)}") from None

    def sql(self, text: str) -> str:
        out = self._sql.get(text)
        if out is None:
            out = self._sql[text] = text.replace("?", "%s")
        return out

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self.conn.cursor() as cur:
            cur.execute(self.sql(sql), tuple(params))
            return cur.fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(self.sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(self.sql(sql), [tuple(r) for r in rows])

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        rows = self.query(sql + " RETURNING id", params)
        return int(rows[0][0])

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self.conn.transaction():
            yield

    def lock_schema(self) -> None:
        self.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))

    def tables(self) -> set[str]:
        rows = self.query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
        return {r[0] for r in rows}

    def is_duplicate(self, exc: BaseException) -> bool:
        return isinstance(exc, self._psycopg.errors.UniqueViolation)

    def is_driver_error(self, exc: BaseException) -> bool:
        return isinstance(exc, self._psycopg.Error)

    def close(self) -> None:
        self.conn.close()


def _first_line(exc: BaseException) -> str:
    """A driver's message in one line (libpq's span several: 'connection failed: ...\\n\\tIs the server ...')."""
    return " ".join(str(exc).split()) or type(exc).__name__


def failure(db: Database, exc: BaseException, doing: str) -> RooflineError:
    """A driver's error while `doing` ('read', 'add DOC to') as one line naming the store."""
    return RooflineError(f"cannot {doing} the history store {db.shown}: {_first_line(exc)}")


def connect(location: Location, create: bool) -> Database:
    """An open connection to the store at `location`. A SQLite store that is not there is made only when
    `create` (its folders too); otherwise it is a one-line UsageError, as a missing input file is."""
    if location.kind == "postgresql":
        return Postgres(location)
    path = Path(location.target)
    if path.is_dir():
        raise UsageError(f"--history {path}: a folder, not a history store")
    if not path.exists():
        if not create:
            raise UsageError(f"{path}: no history store there (`roofline history add DOC` makes one)")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RooflineError(f"cannot make the history store {path}: {exc.strerror or exc}") from None
    try:
        return Sqlite(location)
    except sqlite3.Error as exc:
        raise RooflineError(f"cannot open the history store {path}: {_first_line(exc)}") from None
