"""The operator efficiency database: what catalog operators really took on one device (`roofline calibrate
--ops`), the data the predictor (`roofline.analysis.predict`) learns from.

One JSON file per device, like a spec file: the device it was measured on (kind, spec id, name, driver,
torch), when, the sweep's suite, and one point per timed operator shape (raw samples kept, statistics
derived by the predictor). Reading it never imports torch. A file that is not such a database (corrupt,
truncated, a point missing a field) is one `UsageError` naming the file (exit 2).

Where it lives: `--db FILE`, or by default `<cache>/ops/<device id>.json` (`default_path`), else the database the
package ships for that GPU (roofline/_opdata, one per GPU the project measured, each labelled with its held-out
accuracy in held_out.toml: `shipped`). A default file holding another device's points is refused; a database named
with `--db` may come from another device, and is then applied as a transfer (`transferred` says so, and every
prediction's source repeats it).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from roofline.ceilings.store import cache_dir
from roofline.core.errors import RooflineError, UsageError
from roofline.core.files import atomic_write, data_dir, locked, read_text, refuse_existing

FORMAT = "roofline-ops-db"
VERSION = 1
# The fields every point has; `time_s` and `roofline_time_s` must be positive numbers.
POINT_FIELDS = ("family", "op", "dtype", "params", "flops", "bytes", "roofline_time_s", "time_s")
DEVICE_FIELDS = ("kind", "id", "name")
# Raw samples kept per point: the timer takes up to ~2000 of a microsecond kernel; a sweep of a thousand
# points keeping all of them would be a 40 MB file. This many, evenly strided through the run, keep its spread.
KEPT_SAMPLES = 32
# How a point's L2 was before each sample: flushed (the op alone, as `analyze` and `run` time it) or warm (what
# the previous call left there: an op inside a model reads what the op before it wrote, when it fits).
FLUSHED, WARM = "flushed", "warm"
L2_STATES = (FLUSHED, WARM)
# The databases the package ships: roofline/_opdata in a wheel and in a checkout, one `<spec id>.json.gz` per GPU,
# and their labels.
SHIPPED = ("_opdata", "roofline/_opdata")
LABELS = "held_out.toml"


def l2_state(warm_l2: bool) -> str:
    """The L2 state of a `--warm-l2` flag."""
    return WARM if warm_l2 else FLUSHED


@dataclass(frozen=True)
class Point:
    """One operator shape timed on the database's device: the analytic record's numbers and the median."""

    family: str  # the prediction family (analysis.predict.FAMILIES), e.g. "gemm", "attention"
    op: str
    dtype: str
    params: dict[str, Any]
    flops: float
    bytes: float
    roofline_time_s: float
    time_s: float  # median of the samples
    variant: str | None = None
    samples_s: tuple[float, ...] = ()
    launch_gap_s: float | None = None  # GPU idle per call, launched eagerly back to back (cupti timer)
    kernels: int | None = None  # kernels per call, where the timer saw them
    method: str | None = None
    level: int = 0  # the sweep's refinement level (0: the coarse grid)
    l2: str = FLUSHED  # one of L2_STATES: timed after an L2 flush (alone, cold) or with a warm L2

    @property
    def warm(self) -> bool:
        return self.l2 == WARM

    @property
    def efficiency(self) -> float:
        """Roofline time over measured time (1: at the roof)."""
        return self.roofline_time_s / self.time_s

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0

    def key(self) -> str:
        return point_key(self.op, self.variant, self.dtype, self.params, self.l2)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"family": self.family, "op": self.op, "variant": self.variant, "dtype": self.dtype,
                               "params": self.params, "flops": self.flops, "bytes": self.bytes,
                               "roofline_time_s": self.roofline_time_s, "time_s": self.time_s,
                               "samples_s": list(self.samples_s), "level": self.level}
        for name in ("launch_gap_s", "kernels", "method"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.warm:  # left out when flushed: a database of flushed points reads as before
            out["l2"] = self.l2
        return out


@dataclass
class OpDB:
    """A device's measured points, with where and when they were measured; `path` and `transferred` say
    where it was read from and whether it is another device's."""

    device: dict[str, Any]
    points: list[Point] = field(default_factory=list)
    created: str = ""
    updated: str = ""
    suite: str | None = None
    path: Path | None = None
    transferred: str | None = None  # set on load: "measured on <name>, applied to <id>"
    # points of its sweep file the last sweep did not reach (a budget or Ctrl-C cut it): a database of the coarse
    # grid alone predicts badly (an H100's level 0, 549 points, put the steps +16% to +263%: docs/measurements.md)
    unswept: int = 0
    # the raw readings of the sweep's L2 write-back measurement (measuring/l2_drain.py; derived by
    # analysis/l2_drain.py): {"op": ..., "op_bytes": ..., "samples": [{"written_bytes": W, "times_s": [...]}]}
    l2_drain: dict[str, Any] | None = None
    # set on load for a database the package ships: its accuracy on the held-out zoo (held_out.toml)
    held_out: str | None = None
    # what `write` needs to merge with another writer of the same file (never written): the file as this process
    # last read or wrote it (`_stamp`: unchanged, nothing to merge), the keys of points dropped on purpose (a
    # sweep's retimed points: another writer's copy of them is not taken back) and how many points merging took in
    stamp: tuple[int, int, int] | None = field(default=None, compare=False, repr=False)
    dropped: set[str] = field(default_factory=set, compare=False, repr=False)
    merged: int = field(default=0, compare=False, repr=False)

    @property
    def device_id(self) -> str:
        return str(self.device["id"])

    def keys(self) -> set[str]:
        return {p.key() for p in self.points}

    def families(self, l2: str = FLUSHED) -> dict[tuple[str, str], list[Point]]:
        """Points per (family, dtype), in the order they were measured, as an op sees the L2 in state `l2`:
        flushed, the flushed points; warm, each shape's warm point where it has one, else its flushed point (a
        family never timed warm, a shape too large for the L2: its warm time is its flushed one)."""
        flushed = [p for p in self.points if not p.warm]
        chosen = flushed
        if l2 == WARM:
            twins = {point_key(p.op, p.variant, p.dtype, p.params): p for p in self.points if p.warm}
            chosen = [twins.pop(p.key(), p) for p in flushed] + list(twins.values())
        out: dict[tuple[str, str], list[Point]] = {}
        for p in chosen:
            out.setdefault((p.family, p.dtype), []).append(p)
        return out

    def launch_gap_s(self) -> float | None:
        """The measured GPU idle time per kernel of an eager program: the median over the points that
        measured one (each point's per-call gap over its kernels per call); None when none did."""
        gaps = sorted(p.launch_gap_s / max(1, p.kernels or 1) for p in self.points if p.launch_gap_s is not None)
        if not gaps:
            return None
        mid = len(gaps) // 2
        return gaps[mid] if len(gaps) % 2 else (gaps[mid - 1] + gaps[mid]) / 2

    def to_dict(self) -> dict[str, Any]:
        out = {"format": FORMAT, "version": VERSION, "device": self.device, "created": self.created,
               "updated": self.updated, "suite": self.suite}
        if self.unswept:  # left out when the sweep finished: a whole database reads as before
            out["unswept"] = self.unswept
        if self.l2_drain is not None:  # left out when not measured (a CPU's, an older sweep's)
            out["l2_drain"] = self.l2_drain
        return {**out, "points": [p.to_dict() for p in self.points]}


def point_key(op: str, variant: str | None, dtype: str, params: Mapping[str, Any], l2: str = FLUSHED) -> str:
    """What makes a point the same point when a sweep resumes: operator, variant, dtype, every parameter, and
    the L2's state when warm (a flushed point's key is what it was before points had one)."""
    key = [op, variant, dtype, dict(params)] + ([l2] if l2 != FLUSHED else [])
    return json.dumps(key, sort_keys=True, default=str)


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_path(device_id: str) -> Path:
    """Where `calibrate ops` stores a device's database without `--db`, and predictions look for it."""
    return cache_dir() / "ops" / f"{device_id}.json"


def kept_samples(samples: Sequence[float], n: int = KEPT_SAMPLES) -> tuple[float, ...]:
    """At most `n` samples, evenly strided through the run (first and last included)."""
    if len(samples) <= n:
        return tuple(float(s) for s in samples)
    step = (len(samples) - 1) / (n - 1)
    return tuple(float(samples[round(i * step)]) for i in range(n))


def _positive(where: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}: {name} must be a positive number, got {value!r}")
    return float(value)


def point_from(data: Any, where: str) -> Point:
    """A point from its JSON object; a missing or bad field raises ValueError naming it."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where} is not an object")
    missing = [f for f in POINT_FIELDS if f not in data]
    if missing:
        raise ValueError(f"{where} has no {missing[0]!r}")
    for name in ("family", "op", "dtype"):
        if not isinstance(data[name], str) or not data[name]:
            raise ValueError(f"{where}: {name} must be a name")
    if not isinstance(data["params"], Mapping):
        raise ValueError(f"{where}: params must be an object")
    samples = data.get("samples_s") or []
    if not isinstance(samples, list):
        raise ValueError(f"{where}: samples_s must be a list")
    gap = data.get("launch_gap_s")
    if gap is not None and (not isinstance(gap, (int, float)) or gap < 0):
        raise ValueError(f"{where}: launch_gap_s must be a non-negative number")
    l2 = data.get("l2", FLUSHED)
    if l2 not in L2_STATES:
        raise ValueError(f"{where}: l2 must be one of {', '.join(L2_STATES)}, got {l2!r}")
    flops = data["flops"]
    if isinstance(flops, bool) or not isinstance(flops, (int, float)) or flops < 0:
        raise ValueError(f"{where}: flops must be a non-negative number")
    return Point(family=data["family"], op=data["op"], dtype=data["dtype"], params=dict(data["params"]),
                 flops=float(flops), bytes=_positive(where, "bytes", data["bytes"]),
                 roofline_time_s=_positive(where, "roofline_time_s", data["roofline_time_s"]),
                 time_s=_positive(where, "time_s", data["time_s"]), variant=data.get("variant"),
                 samples_s=tuple(_positive(where, "a sample", s) for s in samples),
                 launch_gap_s=None if gap is None else float(gap), kernels=data.get("kernels"),
                 method=data.get("method"), level=int(data.get("level", 0)), l2=l2)


def parse(text: str, where: str) -> OpDB:
    """A database from its JSON text; anything else is one UsageError naming `where`."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not an operator database (corrupt or truncated JSON: {exc.msg} at line "
                         f"{exc.lineno})") from None
    try:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError(f"not an operator database (no \"format\": \"{FORMAT}\")")
        if doc.get("version") != VERSION:
            raise ValueError(f"version {doc.get('version')!r}; this roofline reads version {VERSION}")
        device = doc.get("device")
        if not isinstance(device, dict) or any(not isinstance(device.get(f), str) for f in DEVICE_FIELDS):
            raise ValueError(f"device must be an object with {', '.join(DEVICE_FIELDS)}")
        points = doc.get("points")
        if not isinstance(points, list):
            raise ValueError("points must be a list")
        parsed = [point_from(p, f"point {i + 1}") for i, p in enumerate(points)]
        unswept = doc.get("unswept", 0)
        if isinstance(unswept, bool) or not isinstance(unswept, int) or unswept < 0:
            raise ValueError("unswept must be a whole number of points, 0 or more")
        drain = doc.get("l2_drain")
        drain = None if drain is None else l2_drain_from(drain)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return OpDB(device=device, points=parsed, created=str(doc.get("created") or ""),
                updated=str(doc.get("updated") or ""), suite=doc.get("suite"), unswept=unswept, l2_drain=drain)


def l2_drain_from(data: Any) -> dict[str, Any]:
    """The L2 write-back readings, checked: an object with a positive `op_bytes` and `samples`, each a
    `written_bytes` of 0 or more and a non-empty list of positive `times_s`, one of them with nothing written
    (the clean start every other is compared with). A bad one raises ValueError."""
    if not isinstance(data, Mapping) or not isinstance(data.get("samples"), list):
        raise ValueError("l2_drain must be an object with a list of samples")
    _positive("l2_drain", "op_bytes", data.get("op_bytes"))
    for i, s in enumerate(data["samples"]):
        where = f"l2_drain sample {i + 1}"
        if not isinstance(s, Mapping) or not isinstance(s.get("times_s"), list) or not s["times_s"]:
            raise ValueError(f"{where}: needs written_bytes and a non-empty list times_s")
        w = s.get("written_bytes")
        if isinstance(w, bool) or not isinstance(w, int) or w < 0:
            raise ValueError(f"{where}: written_bytes must be a whole number, 0 or more")
        for t in s["times_s"]:
            _positive(where, "a time", t)
    if not any(s["written_bytes"] == 0 for s in data["samples"]):
        raise ValueError("l2_drain: no sample with nothing written before (the clean start)")
    return dict(data)


def read(path: str | Path) -> OpDB:
    """The database in `path` (validated); a missing or unreadable file is one UsageError."""
    p = Path(path)
    try:
        text = read_text(p, "operator database", missing="no such operator database (make one with `roofline "
                         f"calibrate ops --db {p}`)")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: cannot read: {exc}") from None
    stamp = _stamp(p)
    db = parse(text, str(p))
    db.path, db.stamp = p, stamp
    return db


def load_for(device_id: str, path: str | Path | None = None) -> OpDB | None:
    """The database predictions on `device_id` use: `path` when given (another device's is a transfer, said in
    `transferred`), else the default file of that device, None when there is none. A default file that holds
    another device's points is refused: it must be named to be applied to this one."""
    if path is not None:
        db = read(path)
        if db.device_id != device_id:
            db.transferred = f"measured on {db.device.get('name') or db.device_id}, applied to {device_id}"
        return db
    p = default_path(device_id)
    if not p.exists():
        return shipped(device_id)
    db = read(p)
    if db.device_id != device_id:
        raise UsageError(f"{p}: measured on {db.device.get('name') or db.device_id}, not {device_id}; name it "
                         "with --db to apply it to this device")
    return db


def open_for_sweep(device: dict[str, Any], path: str | Path, suite: str | None) -> OpDB:
    """The database a sweep adds to: the file's (resumed) when it exists and was measured on this device, a new
    one otherwise. Another device's file is refused: a sweep never mixes two devices' points."""
    p = Path(path)
    if p.suffix == ".gz":  # read decompressed (read_text); a sweep writes plain JSON
        raise UsageError(f"{p}: a sweep writes its database as plain JSON: name a .json file (gunzip a stored one "
                         "to add to it)")
    _writable(p)  # before the sweep: else a 10-minute budget ends in "cannot write"
    if not p.exists():
        stamp = now()
        return OpDB(device=dict(device), created=stamp, updated=stamp, suite=suite, path=p)
    db = read(p)
    if not same_device(db.device, device):
        raise UsageError(f"{p}: measured on {db.device.get('name') or db.device_id}, not this "
                         f"{device.get('name') or device['id']}: a sweep adds only to its own device's database "
                         "(choose another --db)")
    return db


def same_device(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two databases' `device` are one device: its id, kind and name (one CPU's points are not another's,
    though both are "cpu")."""
    return a.get("id") == b.get("id") and a.get("kind") == b.get("kind") and a.get("name") == b.get("name")


def _writable(p: Path) -> None:
    """RooflineError (exit 1, as an -o that cannot be written) unless the sweep can write `p`: its folder made."""
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    refuse_existing(p, force=True)  # the file may be there (a resumed sweep); a folder in its place, or one
    # that cannot be written, is refused as for any output file


def write(db: OpDB) -> Path:
    """Write the database to its path, atomically (a sweep cut short leaves the last complete file) and merged,
    under the folder's lock from the read to the rename, with what another writer put in the file since this one
    last read or wrote it (`merge`: two sweeps into one file keep both sweeps' points). Another device's database
    put there meanwhile is refused in one line, as when a sweep opens one."""
    assert db.path is not None
    with locked(db.path, make_parents=True):
        stamp = _stamp(db.path)
        if stamp is not None and stamp != db.stamp:  # another writer's since this one's last read or write
            there = read(db.path)
            if not same_device(there.device, db.device):
                raise RooflineError(f"{db.path}: {there.device.get('name') or there.device_id}'s database was "
                                    "written there during this sweep: not merged (choose another --db)")
            merge(db, there)
        db.updated = now()
        atomic_write(db.path, json.dumps(db.to_dict(), indent=1, default=str) + "\n")
        db.stamp = _stamp(db.path)
    return db.path


def merge(db: OpDB, there: OpDB) -> int:
    """Take into `db` the points of `there` (its file as another writer left it) that `db` lacks, by point key: a
    point both hold stays `db`'s (this writer's measurement), one `db` dropped on purpose stays dropped. `db` keeps
    the earlier creation date and, where it has none, `there`'s L2 write-back readings. Returns how many points it
    took (also added to `db.merged`)."""
    have = db.keys() | db.dropped
    new = [pt for pt in there.points if pt.key() not in have]
    db.points.extend(new)
    db.merged += len(new)
    if db.l2_drain is None:
        db.l2_drain = there.l2_drain
    if there.created and (not db.created or there.created < db.created):
        db.created = there.created
    return len(new)


def _stamp(p: Path) -> tuple[int, int, int] | None:
    """What tells one version of a file from another: a write renames a new file into place (a new inode), and its
    size and modification time; None when there is none."""
    try:
        st = os.stat(p)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def shipped_labels() -> dict[str, str]:
    """The held-out accuracy of each shipped database, by spec id (held_out.toml, validated)."""
    from roofline.core.tomlfile import read_toml

    path = data_dir(*SHIPPED) / LABELS
    data = read_toml(path, "the shipped databases' labels")
    out = {}
    for spec, entry in data.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("held_out"), str) or not entry["held_out"]:
            raise RooflineError(f"{path}: [{spec}] needs held_out, a phrase")
        out[spec] = str(entry["held_out"])
    return out


def ships(device_id: str) -> bool:
    """Whether the package ships a database for `device_id`."""
    return (data_dir(*SHIPPED) / f"{device_id}.json.gz").exists()


def shipped(device_id: str) -> OpDB | None:
    """The database the package ships for `device_id` (None when it ships none), labelled with its held-out
    accuracy; one whose points are another device's, or without a label, is a packaging error."""
    path = data_dir(*SHIPPED) / f"{device_id}.json.gz"
    if not path.exists():
        return None
    db = read(path)
    labels = shipped_labels()
    if db.device_id != device_id or device_id not in labels:
        raise RooflineError(f"{path}: the shipped database of {device_id} holds {db.device_id}'s points or has no "
                            f"label in {LABELS}")
    db.held_out = labels[device_id]
    return db
