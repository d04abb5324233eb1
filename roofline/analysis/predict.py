"""Predicted times from a measured operator database (`roofline.ceilings.opdb`): the bound, corrected by how
close real kernels of the same family and dtype came to the roof on that device, with an interval.

The rule (docs/prediction.md):
- A record's family (analysis/families.py, `FAMILIES`) is its catalog operator's, or for a profile's aten op
  the catalog operator its formula maps to; other memory-bound aten ops with a formula (copies, reductions,
  pointwise rules) are predicted as elementwise passes (MEMORY_PASS). No family, or none of its dtype in the
  database: the prediction is the bound (its interval the bound alone: a floor, not a spread), and `prediction_source`
  starts with "bound" and says why. Every record with a roofline time gets a prediction (`predicted`).
- Features: x = log10(roofline time), y = log10(arithmetic intensity), in decades. The log efficiency (roofline
  time / measured time) at a query is a local linear fit over its NEIGHBOURS nearest points, each weighted by
  its inverse squared distance, the slopes held back by SLOPE_RIDGE, the result kept within the points' own
  range (the exact point's when one is at the query).
- Extrapolation: a query outside the measured box of its family is clamped onto it (the efficiency of the
  nearest measured shapes), and its interval widens by EXTRAPOLATION_WIDEN per decade outside (not for a size
  below the box: the launch floor; nor, in a memory-bound family, an intensity below it).
- Shape coordinates (`Family.coordinates`): a GEMM's and a convolution's implicit-GEMM dimensions, a cat's runs, an
  elementwise pass's strided input (its contiguous run, from the strides a profile records), a norm's rows and
  kind (RMS or LayerNorm: `Family.kinds`).
- Work beyond the bound's (`Family.work`): attention's kernels score whole tiles (`padded_pairs_ratio`); points
  and queries are placed, and their efficiency taken, at the bound times that factor.
- Interval: the leave-one-out residuals of the family (each point predicted from the others, in log
  efficiency); the prediction's interval spans their INTERVAL_QUANTILES. A family with fewer than
  MIN_POINTS_FOR_SPREAD points uses FEW_POINTS_SPREAD instead.
- The L2: the sweep times each shape alone with the L2 flushed, and the memory-bound families (`warm_l2` in the
  sweep file) again with a warm L2 where they fit in it. A model's ops (a profile: `l2="warm"`) are predicted
  from the warm points where there are some (an op reading what the op before it left in the L2), its writes from
  the flushed ones (`warm_blend`; its interval spans both states'); ops timed alone (`analyze`, `run`) from the
  flushed ones. A model's memory-bound op of a family without warm points also pays the write-back of what the op
  before it wrote (`with_drain`), as the database's own measurement of it says (analysis/l2_drain.py).
Pure and torch-free; `Predictor` caches each family's fit.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from roofline.analysis.families import (
    FAMILY_OF_OP,
    MEMORY_PASS,
    RULE_FAMILY,
    Family,
    catalog_op,
    declared,
    family_of,
    memory_bound,
    query_params,
    shape_features,
    work_factor,
)
from roofline.analysis.l2_drain import drain_model
from roofline.analysis.predict_features import features
from roofline.ceilings.opdb import FLUSHED, OpDB, Point, load_for
from roofline.core.layout import dense
from roofline.core.stats import quantile, solve_linear
from roofline.core.validate import path_arg

if TYPE_CHECKING:
    from roofline.core.record import Record, RecordLike

R = TypeVar("R", bound="RecordLike")

# The points a prediction is fitted on, and how much the local fit's slopes are held back (a ridge of this
# share of the weights on each slope): both chosen by the sweep's own leave-one-out error, never by a model's ops
# (docs/prediction.md).
NEIGHBOURS = 8
SLOPE_RIDGE = 0.003
# Weight of a decade of intensity beside a decade of size in the distance: equal (both move efficiency by
# comparable amounts in a sweep: a decade of size near the launch floor, a decade of intensity near the ridge).
INTENSITY_WEIGHT = 1.0
EXACT = 1e-9  # a neighbour this close (in decades) is the query itself
# The central 95% of a family's leave-one-out residuals. A sweep point left out is predicted from shapes timed
# alike; a model's op adds what no point sees (the L2 its neighbours leave, the layout of its inputs), so a
# narrower nominal interval covers well under its share of a model's ops (docs/prediction.md, "Interval").
INTERVAL_QUANTILES = (0.025, 0.975)
MIN_POINTS_FOR_SPREAD = 5
FEW_POINTS_SPREAD = math.log(1.5)  # x or / 1.5 in time (-33% / +50%): a guess, said in the source, until more points
EXTRAPOLATION_WIDEN = 0.5  # the interval's log half-widths grow by half per decade outside the measured box
# How a prediction was made (a record's `prediction_kind`): from the device's own operator database, from another
# device's (a transfer), or the bound itself (no database, or none of the op's family and dtype).
DB, TRANSFER, BOUND = "db", "transfer", "bound"
PREDICTION_KINDS = (DB, TRANSFER, BOUND)


@dataclass(frozen=True)
class Prediction:
    """A predicted time with its interval, its family, its kind (PREDICTION_KINDS) and a sentence of where it came
    from (`source`, for people: code reads `kind` and `family`)."""

    time_s: float
    low_s: float
    high_s: float
    source: str
    family: str | None = None
    points: int = 0  # points the efficiency came from (0: the bound)
    extrapolated: float = 0.0  # decades outside the measured box
    warm: bool = False  # some of the points were timed with a warm L2
    kind: str = BOUND

    @property
    def from_db(self) -> bool:
        return self.kind != BOUND

    def fields(self) -> dict[str, Any]:
        """The record's fields."""
        return {"predicted_time_s": self.time_s, "predicted_low_s": self.low_s, "predicted_high_s": self.high_s,
                "prediction_source": self.source, "prediction_family": self.family, "prediction_kind": self.kind}

    @classmethod
    def of(cls, record: RecordLike) -> Prediction | None:
        """The prediction a record carries (None without one). A record of a document written before
        `prediction_kind` existed is a database's when its interval has a width (the bound's is a point)."""
        t = record.predicted_time_s
        if t is None:
            return None
        low, high = record.predicted_low_s, record.predicted_high_s
        low, high = t if low is None else low, t if high is None else high
        kind = getattr(record, "prediction_kind", None) or (BOUND if low == high else DB)
        return cls(t, low, high, record.prediction_source or BOUND, getattr(record, "prediction_family", None),
                   kind=kind)


def bound_reason(source: str) -> str:
    """The words after "bound" of a bound prediction's sentence ('(no operator database for h100-sxm)'), for a
    view that says "the roofline time" instead (a message reworded, no data read from it)."""
    return source.removeprefix(BOUND).strip()


# The phase of a training step's backward records (`roofline.capture`'s phases): a step with one is predicted
# from the flushed points (`Predictor.for_step`).
BACKWARD_PHASE = "backward"
Features = tuple[float, ...]


def _distance(a: Features, b: Features) -> float:
    return math.hypot(a[0] - b[0], INTENSITY_WEIGHT * (a[1] - b[1]), *(x - y for x, y in zip(a[2:], b[2:],
                                                                                          strict=True)))


def _local_log_eff(q: Features, pts: list[tuple[Features, float]]) -> tuple[float, int]:
    """Log efficiency at q from (features, log efficiency) pairs, and how many points it used: the intercept of
    a weighted least-squares plane through the NEIGHBOURS nearest (weights 1 / distance^2, a ridge of SLOPE_RIDGE
    on each slope), clamped to their range; the mean of the points at q when some are there. A zeroth-order mean
    of neighbours reads a query between a slow and a fast side at the side with more points; the plane reads it
    along the slope they share."""
    near = sorted(pts, key=lambda p: _distance(q, p[0]))[:NEIGHBOURS]
    if _distance(q, near[0][0]) < EXACT:
        same = [le for f, le in near if _distance(q, f) < EXACT]
        return sum(same) / len(same), len(same)
    weights = [1.0 / _distance(q, f) ** 2 for f, _ in near]
    rows = [[1.0, *(x - y for x, y in zip(f, q, strict=True))] for f, _ in near]
    les = [le for _, le in near]
    n, ridge = len(rows[0]), SLOPE_RIDGE * sum(weights)
    normal = [[sum(w * r[i] * r[k] for w, r in zip(weights, rows, strict=True)) + (ridge if i == k > 0 else 0.0)
               for k in range(n)] for i in range(n)]
    rhs = [sum(w * r[i] * le for w, r, le in zip(weights, rows, les, strict=True)) for i in range(n)]
    try:
        level = solve_linear(normal, rhs)[0]
    except ValueError:  # not with a ridge on every slope and positive weights; the weighted mean then
        level = sum(w * le for w, le in zip(weights, les, strict=True)) / sum(weights)
    return min(max(level, min(les)), max(les)), len(near)


class FamilyModel:
    """The fit of one (family, dtype): its points in feature space, the measured box and the residual spread.
    `shaped`: with the family's shape coordinates (`Family.coordinates`; every point must carry them)."""

    def __init__(self, family: str, dtype: str, points: list[Point], shaped: bool = False) -> None:
        if not points:
            raise ValueError("a family model needs points")
        self.family, self.dtype, self.shaped = family, dtype, shaped
        self.warm = sum(p.warm for p in points)  # points timed with a warm L2 (Predictor's l2)
        self.pts: list[tuple[Features, float]] = []
        for p in points:
            extra = shape_features(family, p.params, p.op) if shaped else ()
            if extra is None:
                raise ValueError(f"a {family} point without its shape parameters: {p.params}")
            work = work_factor(family, p.params)
            self.pts.append(((*features(p.roofline_time_s * work, p.intensity), *extra),
                             math.log(p.efficiency * work)))
        dims = len(self.pts[0][0])
        self.box = tuple((min(f[i] for f, _ in self.pts), max(f[i] for f, _ in self.pts)) for i in range(dims))
        self.spread = self._spread()

    def _spread(self) -> tuple[float, float]:
        """(low, high) log-efficiency residuals of a prediction, <= 0 <= each: leave-one-out quantiles."""
        if len(self.pts) < MIN_POINTS_FOR_SPREAD:
            return -FEW_POINTS_SPREAD, FEW_POINTS_SPREAD
        residuals = []
        for i, (f, le) in enumerate(self.pts):
            others = self.pts[:i] + self.pts[i + 1:]
            residuals.append(le - _local_log_eff(f, others)[0])
        lo, hi = (quantile(residuals, q) for q in INTERVAL_QUANTILES)
        return min(lo, 0.0), max(hi, 0.0)

    def clamp(self, q: Features) -> tuple[Features, float]:
        """The query moved onto the measured box, and how many decades it moved beyond the smaller-size edge
        (the launch floor's side: not counted, see `predict`), in a memory-bound family the lower-intensity edge,
        or along a shape coordinate no point varies."""
        c = tuple(min(max(x, lo), hi) for x, (lo, hi) in zip(q, self.box, strict=True))
        # a size below the box moved up to it: not counted; nor, in a memory-bound family, an intensity below it
        # (a copy's 0 FLOPs per byte: its bytes bind it as they bind the swept passes)
        low_intensity = max(q[1], c[1]) if memory_bound(self.family) else q[1]
        # nor a shape coordinate every point shares (an older database's elementwise points, all dense, for a
        # strided query): the sweep never varied it, so it teaches nothing either way
        shared = tuple(x if lo < hi else c_x for x, c_x, (lo, hi) in zip(q[2:], c[2:], self.box[2:], strict=True))
        counted = (max(q[0], c[0]), low_intensity, *shared)
        return c, _distance(counted, c)

    def predict(self, roofline_time_s: float, intensity: float, params: dict[str, Any] | None = None,
                op: str | None = None) -> tuple[float, float, float, int, float]:
        """(efficiency, low and high log residuals, points used, decades extrapolated). Below the smallest
        measured roofline time the *time* of the smallest shapes holds, not their efficiency: a kernel that small
        takes the launch floor (a 1e-8 s bound does not run 100x faster than a 1e-6 s one); there the interval
        does not widen (the floor is measured). Elsewhere outside the box the nearest shapes' efficiency holds."""
        extra = shape_features(self.family, params, op) if self.shaped else ()
        work = work_factor(self.family, params)  # the efficiency of the work the kernels do, then of the bound's
        q = (*features(roofline_time_s * work, intensity), *(extra or ()))
        c, outside = self.clamp(q)
        log_eff, used = _local_log_eff(c, self.pts)
        if q[0] < c[0]:  # below the box: the clamped shape's time, t_c / eff_c, is the prediction
            log_eff += math.log(10.0) * (q[0] - c[0])
        widen = 1.0 + EXTRAPOLATION_WIDEN * outside
        lo, hi = self.spread
        return math.exp(log_eff) / work, lo * widen, hi * widen, used, outside


# Relative difference of a point's stored FLOPs or bytes from today's formula beyond which it was swept with
# another formula (the models are exact integer arithmetic carried in floats).
FORMULA_TOLERANCE = 1e-9


def swept_with_todays_formulas(p: Point) -> bool:
    """Whether a point's stored FLOPs and bytes are what the catalog's formulas give its shape today: its
    efficiency (stored roofline time / time) is then comparable with a query's bound. A formula change makes
    the points it touches stale. A shape today's
    catalog cannot build (another tool's point, a synthetic one) cannot be judged and is kept."""
    from roofline.core.dtypes import get_dtype
    from roofline.core.errors import RooflineError
    from roofline.ops import make
    from roofline.ops.base import get_operator

    try:
        names = {f.name for f in dataclasses.fields(get_operator(p.op))}
        extra = {k: p.variant for k in ("variant", "algo") if k in names and p.variant is not None}
        op = make(p.op, **p.params, **extra)
        flops, nbytes = float(op.flops()), float(op.traffic(get_dtype(p.dtype)).total)
    except (RooflineError, TypeError, ValueError, KeyError):
        return True
    return all(abs(a - b) <= FORMULA_TOLERANCE * max(abs(a), abs(b), 1.0)
               for a, b in ((flops, p.flops), (nbytes, p.bytes)))


class Predictor:
    """Predictions for records placed on `device_id`'s roofs from `db` (None: the bound, said so). Points swept
    with another formula than today's are left out (`stale`, said in `name`), each family checked when first
    used (the check rebuilds every point's operator: ~0.1 ms a point, not for the families a run never asks).

    `l2`: the L2 the ops meet (opdb.L2_STATES), which chooses the points. `in_sequence`: the records are a model's
    ops in the order they ran (only a profile says so), each finding what the op before it left in the L2: a warm
    L2's predictions then blend in the flushed points' for the bytes written (`warm_blend`), a training step is
    predicted from the flushed points (`for_step`) and a memory-bound op pays the write-back of its predecessor's
    dirty lines (`with_drain`). Ops timed alone (`analyze`, `run`, the pytest fixture) are never in sequence: with
    a warm L2 they are the warm points themselves, timed again and again on a footprint that stays in the L2."""

    def __init__(self, db: OpDB | None, device_id: str, l2: str = FLUSHED, in_sequence: bool = False) -> None:
        self.db, self.device_id, self.l2, self.in_sequence = db, device_id, l2, in_sequence
        self._models: dict[tuple[str, str, bool], FamilyModel] = {}
        self._raw = db.families(l2) if db is not None else {}
        self._checked: dict[tuple[str, str], list[Point]] = {}
        self._fresh: dict[int, bool] = {}  # id(point) -> swept with today's formulas (shared with `_flushed`)
        # a warm L2's predictions blend in the flushed ones by the share of bytes written (`warm_blend`)
        self._flushed = Predictor(db, device_id) if l2 != FLUSHED and in_sequence else None
        # a model's ops (l2 warm) of families timed only after a clean flush pay what their predecessor left dirty
        self.drain = drain_model(db.l2_drain) if db is not None and l2 != FLUSHED and in_sequence else None
        self.warm_families = {p.family for p in db.points if p.warm} if db is not None else set()
        # a transfer between GPUs whose error was measured (the shipped databases' labels) says it
        label = transfer_label(db.device_id, device_id) if db is not None and db.transferred and is_shipped(db) \
            else None
        self._transfer = f"; measured {label}" if label else ""
        if self._flushed is not None:  # the two views share most points: each is checked once
            self._flushed._fresh = self._fresh

    def for_step(self, records: Iterable[RecordLike]) -> Predictor:
        """The predictor for a whole step's records: a training step's (a record of the backward phase) from the
        flushed points alone. Its forward keeps every activation for the backward and the backward reads them
        back long after they were written, so its ops do not find their inputs in the L2 as an inference
        forward's do (docs/prediction.md, "A training step")."""
        if self._flushed is not None and any(getattr(r, "phase", None) == BACKWARD_PHASE for r in records):
            return self._flushed
        return self

    def points(self, family: str, dtype: str) -> list[Point]:
        """The family's points swept with today's formulas (empty when none)."""
        key = (family, dtype)
        if key not in self._checked:
            for p in self._raw.get(key, []):
                if id(p) not in self._fresh:
                    self._fresh[id(p)] = swept_with_todays_formulas(p)
            self._checked[key] = [p for p in self._raw.get(key, []) if self._fresh[id(p)]]
        return self._checked[key]

    @property
    def stale(self) -> int:
        """Points left out as swept with older formulas (every family checked)."""
        return sum(len(pts) - len(self.points(*key)) for key, pts in self._raw.items())

    @property
    def name(self) -> str:
        """What the predictions came from, for a summary line."""
        if self.db is None:
            return f"the bound (no operator database for {self.device_id}; `roofline calibrate ops`)"
        where = self.db.path.name if self.db.path is not None else "the database"
        if self.db.held_out is not None:
            where = f"the shipped database ({shipped_label(self.db)})"
        stale = (f"; {self.stale} swept with older formulas left out: sweep again into a new --db"
                 if self.stale else "")
        cut = f"; its sweep left {self.db.unswept} unmeasured" if self.db.unswept else ""  # fits 80 columns
        return (f"{where} ({len(self.db.points)} points{stale}{cut}"
                + (f"; {self.db.transferred})" if self.db.transferred else ")"))

    def model(self, family: str, dtype: str, shaped: bool = False) -> FamilyModel | None:
        """The fit of (family, dtype), with the family's shape coordinates when `shaped` and every point has
        them (else None for `shaped`)."""
        key = (family, dtype, shaped)
        if key not in self._models and (pts := self.points(family, dtype)):
            if not shaped or all(shape_features(family, p.params, p.op) is not None for p in pts):
                self._models[key] = FamilyModel(family, dtype, pts, shaped)
        return self._models.get(key)

    def borrowed_dtype(self, family: str) -> str | None:
        """The dtype whose points a memory-bound family's record of another dtype borrows: the most measured."""
        if not memory_bound(family):
            return None
        have = {dt: n for (fam, dt) in self._raw if fam == family and (n := len(self.points(fam, dt)))}
        return max(sorted(have), key=have.__getitem__) if have else None

    def predict(self, record: RecordLike) -> Prediction | None:
        """The record's prediction; None for a record without a roofline time (no formula). A norm's or a
        softmax's strided input adds the copy torch makes of it first (`contiguous_copy`)."""
        own = self._predict(record)
        fam = declared(own.family) if own is not None else None
        if own is None or not own.from_db or fam is None or not fam.contiguous_first:
            return own
        copy = contiguous_copy(record)
        extra = self._predict(copy) if copy is not None else None
        if extra is None or not extra.from_db:
            return own
        return dataclasses.replace(own, time_s=own.time_s + extra.time_s, low_s=own.low_s + extra.low_s,
                                   high_s=own.high_s + extra.high_s,
                                   source=f"{own.source}; + a copy of its strided input, {extra.source}")

    def _predict(self, record: RecordLike) -> Prediction | None:
        """With a warm L2, a family timed warm blends its warm and flushed predictions (`warm_blend`)."""
        own = self._predict_one(record)
        if self._flushed is None or own is None or not own.from_db or not own.warm:
            return own
        cold = self._flushed._predict_one(record)
        return own if cold is None or not cold.from_db else warm_blend(own, cold, record)

    def _predict_one(self, record: RecordLike) -> Prediction | None:
        t = record.roofline_time_s
        if t is None or t <= 0:
            return None
        family = family_of(record)
        if self.db is None:
            return Prediction(t, t, t, f"{BOUND} (no operator database for {self.device_id})", family)
        if family is None:
            return Prediction(t, t, t, f"{BOUND} (no prediction family for {record.op})", None)
        dtype, borrowed = record.dtype, ""
        if (memory_bound(family) and family != MEMORY_PASS and self.borrowed_dtype(family) is None
                and self.borrowed_dtype(MEMORY_PASS) is not None):
            # a memory-bound family a database swept before it existed lacks (cat, reduction): one memory pass
            borrowed, family = f" (no {family} points: as a memory pass)", MEMORY_PASS
        forward = (declared(family) or Family(family)).forward
        if forward is not None and not any(self.points(family, dt) for (fam, dt) in self._raw if fam == family):
            family, borrowed = forward, f" (no {family} points: the forward's)"
        if not self.points(family, dtype) and (other := self.borrowed_dtype(family)) is not None:
            dtype, borrowed = other, borrowed + f" (its {record.dtype} borrows {other}'s: a memory-bound family)"
        params = query_params(family, record)
        op = catalog_op(record)
        shaped = shape_features(family, params, op) is not None
        model = (self.model(family, dtype, shaped) if shaped else None) or self.model(family, dtype)
        if model is None:
            return Prediction(t, t, t, f"{BOUND} (no {family} {record.dtype} points in the database)", family)
        eff, lo, hi, used, outside = model.predict(t, record.arithmetic_intensity or 0.0, params, op)
        time_s = t / eff
        source = f"{family} {dtype}: {used} of {len(model.pts)} points" + borrowed
        if model.warm:
            source += f" ({model.warm} timed with a warm L2)"
        if record.flops_source in RULE_FAMILY:
            source += f" ({record.flops_source[5:]}: counted by a rule, from the {family} points)"
        elif record.op not in FAMILY_OF_OP and not (record.flops_source or "").startswith("catalog:"):
            source += " (as a memory pass)"
        if math.log10(t) < model.box[0][0]:
            source += ", below the smallest measured size: their time (the launch floor)"
        if outside > 0:
            source += f", extrapolated {outside:.1f} decades"
        if len(model.pts) < MIN_POINTS_FOR_SPREAD:
            source += (f", interval -{1 - math.exp(-FEW_POINTS_SPREAD):.0%} / +{math.exp(FEW_POINTS_SPREAD) - 1:.0%}"
                       " (few points)")
        if self.db.transferred:
            source += f"; transferred ({self.db.transferred}{self._transfer})"
        if self.db.held_out is not None:
            source += f"; the shipped database ({shipped_label(self.db)})"
        return Prediction(time_s, time_s * math.exp(-hi), time_s * math.exp(-lo), source, family, used, outside,
                          bool(model.warm), TRANSFER if self.db.transferred else DB)


def is_shipped(db: OpDB) -> bool:
    """Whether `db` is a database the package ships (found by default, or named by its path), whose labels apply."""
    from roofline.ceilings.opdb import SHIPPED
    from roofline.core.files import data_dir

    return db.held_out is not None or (db.path is not None and db.path.resolve().parent == data_dir(*SHIPPED).resolve())


def transfer_label(source_id: str, target_id: str) -> str | None:
    """The measured error of `source_id`'s database applied to `target_id`'s roof, when the shipped databases' labels
    (roofline/_opdata/held_out.toml, `transfer`) have one."""
    from roofline.ceilings.opdb import LABELS, SHIPPED
    from roofline.core.files import data_dir
    from roofline.core.tomlfile import read_toml

    path = data_dir(*SHIPPED) / LABELS
    if not path.exists():
        return None
    entry = read_toml(path, "the shipped databases' labels").get(source_id)
    transfer = entry.get("transfer") if isinstance(entry, dict) else None
    label = transfer.get(target_id) if isinstance(transfer, dict) else None
    return label if isinstance(label, str) and label else None


def shipped_label(db: OpDB) -> str:
    """What a shipped database is: its GPU, when it was swept, the driver, its held-out accuracy."""
    return (f"{db.device.get('name') or db.device_id}, swept {db.created[:10]}, driver "
            f"{db.device.get('driver') or '?'}; held out: {db.held_out}")


def warm_blend(warm: Prediction, flushed: Prediction, record: RecordLike) -> Prediction:
    """A model's op: the reads of its warm prediction (its inputs, just written by the ops before it, come from the
    L2), the writes of its flushed one (its output reaches HBM when later traffic evicts it; a warm point, timed
    again and again on a footprint that fits, never writes back). Geometric in the share of bytes written, as
    efficiencies interpolate (measured against warm alone in docs/measurements.md).
    NB: a flushed point's time over a warm one is its cold reads as much as its writes (the flush leaves clean
    lines), so this charges an op whose input fits in the L2 cold reads it does not pay (ResNet-50's batch norms
    at batch 32 ran as their warm points, docs/measurements.md); a reuse-distance rule did worse over nine cases.
    The interval spans both states' (from the warm one's low to the flushed one's high): which L2 a model's op
    finds is not known, and the sweep's residuals do not say it."""
    total, written = getattr(record, "bytes", None) or 0.0, getattr(record, "bytes_written", None) or 0.0
    f = min(max(written / total, 0.0), 1.0) if total else 0.0

    def mix(a: float, b: float) -> float:
        return a ** (1 - f) * b ** f

    return dataclasses.replace(warm, time_s=mix(warm.time_s, flushed.time_s), low_s=min(warm.low_s, flushed.low_s),
                               high_s=max(warm.high_s, flushed.high_s))


@dataclass(frozen=True)
class _Copy:
    """The memory pass a record's strided first input costs when its kernel copies it to a contiguous tensor."""

    roofline_time_s: float
    dtype: str
    input_shapes: list[list[int]]
    input_strides: list[list[int]]
    output_shapes: list[list[int]]
    output_strides: list[list[int]]
    op: str = "aten::clone"
    flops_source: str = "rule:copy"
    bound: str = "memory"
    tensor_cores: bool = False
    arithmetic_intensity: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    predicted_time_s: float | None = None
    predicted_low_s: float | None = None
    predicted_high_s: float | None = None
    prediction_source: str | None = None


def contiguous_copy(record: RecordLike) -> _Copy | None:
    """The copy of the record's first input to a row-major tensor, when that input is not dense (None when it
    is, or the record lacks its strides, dtypes or memory roof)."""
    shapes, strides = getattr(record, "input_shapes", None), getattr(record, "input_strides", None)
    dtypes, peak = getattr(record, "input_dtypes", None), getattr(record, "peak_bytes_per_s", 0.0)
    if not (shapes and strides and dtypes and peak) or dense(shapes[0], strides[0]):
        return None
    from roofline.core.dtypes import get_dtype
    from roofline.core.errors import RooflineError

    try:
        itemsize = get_dtype(dtypes[0]).bytes
    except RooflineError:
        return None
    shape = list(shapes[0])
    row_major = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    return _Copy(2 * math.prod(shape) * itemsize / peak, record.dtype, [shape], [list(strides[0])], [shape],
                 [row_major])


def with_prediction(record: R, predictor: Predictor | None) -> R:
    """The record with its predicted_* fields (unchanged without a predictor or a roofline time)."""
    from roofline.core.record import evolve

    p = predictor.predict(record) if predictor is not None else None
    return record if p is None else evolve(record, **p.fields())


def from_database(record: RecordLike) -> bool:
    """Whether the record's prediction came from an operator database (not the bound, nor absent)."""
    p = Prediction.of(record)
    return p is not None and p.from_db


def bound_only_note(records: Iterable[RecordLike]) -> str | None:
    """The one line a view prints instead of a prediction column when every prediction is the bound: the
    first record's source (which says why), None when any record has a prediction from a database."""
    predictions = [p for r in records if (p := Prediction.of(r)) is not None]
    if not predictions or any(p.from_db for p in predictions):
        return None
    whys = {bound_reason(p.source) for p in predictions}
    why = whys.pop() if len(whys) == 1 else "(each record's prediction_source says why)"
    return f"predicted time: the bound for every record {why}".rstrip()


# A predicted interval wider than this (high / low) says less than the bound: it spans about the bound to a kernel
# at a tenth of it, what one guesses with no database (a 10 s sweep, 6 GEMM points: 0.0448 µs - 1.54 s at 256^3).
WIDE_INTERVAL = 10.0


def wide_interval_note(records: Iterable[RecordLike]) -> str | None:
    """The line a view prints under predictions from a database too sparse to use (intervals over WIDE_INTERVAL)."""
    preds = [p for r in records if (p := Prediction.of(r)) is not None and p.from_db]
    wide = [x for p in preds if (x := p.high_s / p.low_s if p.low_s > 0 else math.inf) > WIDE_INTERVAL]
    share = "the predicted interval spans" if len(preds) == 1 else f"{len(wide)} of {len(preds)} predictions span"
    return (f"sparse operator database: {share} more than {WIDE_INTERVAL:g}x (up to {max(wide):.3g}x): too wide to "
            "use; sweep it longer (`roofline calibrate ops --db FILE` resumes)") if wide else None


def in_interval(record: Record) -> bool | None:
    """Whether the measured time fell inside the predicted interval (None without both)."""
    if record.time_s is None or record.predicted_low_s is None or record.predicted_high_s is None:
        return None
    return record.predicted_low_s <= record.time_s <= record.predicted_high_s


def predictor_for(device_id: str, db: str | os.PathLike[str] | OpDB | None = None, l2: str = FLUSHED,
                  in_sequence: bool = False) -> Predictor:
    """The predictor for records placed on `device_id`: from `db` (a path or a loaded database; another
    device's is a transfer), else from that device's default database, else the bound (`Predictor.db` None).
    `l2`: the L2 the records' ops meet (opdb.L2_STATES): flushed for an op timed after a flush, warm for one timed
    with a warm L2 (`--warm-l2`) and for a model's ops; `in_sequence` for a model's ops in the order they ran (a
    profile's; see `Predictor`)."""
    if isinstance(db, OpDB):
        if db.device_id != device_id and db.transferred is None:
            db.transferred = f"measured on {db.device.get('name') or db.device_id}, applied to {device_id}"
        return Predictor(db, device_id, l2, in_sequence)
    if db is not None:
        path_arg("", "db", db)
    return Predictor(load_for(device_id, None if db is None else Path(db)), device_id, l2, in_sequence)


def predicted(records: Sequence[R], predictor: Predictor) -> list[R]:
    """The records with their predictions: from the database where one applies, else the bound itself
    (`predicted_time_s` = `predicted_low_s` = `predicted_high_s` = `roofline_time_s`, a point, not a spread),
    with a `prediction_source` that starts with "bound" and says why. Records without a roofline time have none.
    A training step's records are predicted from the flushed points (`Predictor.for_step`)."""
    step = predictor.for_step(records)
    return with_drain([with_prediction(r, step) for r in records], predictor)


def with_drain(records: list[R], predictor: Predictor) -> list[R]:
    """A model's memory-bound records (in the order they ran) whose family the sweep timed only after a clean flush
    (decode attention, ...: no warm points) plus the write-back of what the record before wrote (`Predictor.drain`,
    analysis/l2_drain.py), said in their source; a compute-bound kernel writes it back under its math. A family
    with warm points is left as it is: `warm_blend` already charges its share of writes at the flushed points'
    speed. Unchanged without a measured drain, or for ops timed alone (a flushed predictor)."""
    from roofline.core.record import evolve

    drain = predictor.drain
    if drain is None:
        return records
    out, written = [], 0.0
    for r in records:
        p = Prediction.of(r)
        if (p is not None and p.from_db and r.bound == "memory" and family_of(r) not in predictor.warm_families
                and (d := drain.seconds(written)) > 0):
            r = evolve(r, predicted_time_s=p.time_s + d, predicted_low_s=p.low_s + d, predicted_high_s=p.high_s + d,
                       prediction_source=f"{p.source}; + {d * 1e6:.2f} us: the write-back of the L2 lines the op "
                                         "before left dirty")
        out.append(r)
        written = getattr(r, "bytes_written", None) or 0.0
    return out
