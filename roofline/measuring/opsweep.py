"""`roofline calibrate ops`: time catalog operators over a grid of shapes and dtypes on this device and
store each one's efficiency in the operator database (`roofline.ceilings.opdb`), for the predictor.

The plan comes from a sweep file (suites/sweeps/ops.toml: which operators, their fixed parameters, and per
device kind the values of each swept parameter, and the dtypes). Its points run coarse first: each swept
axis's values get a level (0: its ends, 1: adds the middle, 2: the quarters, ... bisecting), a point's level is
its axes' highest, and the sweep runs every family's level-0 points, then level 1, ..., families
interleaved, so a budget cut at any time leaves every family covered at the resolution reached.

Each point is timed with the project's timers (`time_cuda`, `time_cpu`) in a short window (SWEEP_REP_S) without
clock sampling, on a GPU by its kernels' device timestamps (SWEEP_CUDA_METHOD, as a profile times a model's ops),
after an L2 flush, and on a GPU a family marked `warm_l2` once more with a warm L2 (its own
points, where the footprint fits in the L2: what a model's ops meet, analysis/predict.py); points already in
the database are skipped (a sweep resumes), and the file is rewritten every SAVE_EVERY_S and at the end, so a
run cut short (Ctrl-C, SIGTERM) keeps what it measured; each write merges what another sweep into the same file
wrote meanwhile (`opdb.write`), whose points this one then skips.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.ceilings import opdb
from roofline.core.dtypes import get_dtype
from roofline.core.errors import RooflineError, UsageError
from roofline.core.files import PACKAGE_ROOT, data_dir
from roofline.core.format import duration
from roofline.core.progress import QUIET, Reporter
from roofline.core.record import analytic_record
from roofline.measuring.target import Target

SWEEPS = ("_sweepdata", "suites/sweeps")  # the sweep files: in a wheel, in a checkout (core.files.data_dir)
DEFAULT_SWEEP = "ops.toml"


def default_suite(package_root: Path = PACKAGE_ROOT) -> Path:
    """The default sweep file, from an installed package or from the source tree."""
    return data_dir(*SWEEPS, package_root=package_root) / DEFAULT_SWEEP
# The timer's windows per point: a fifth of `roofline run`'s (measuring/timing.py): a sweep of ~1500 points
# must fit 8 minutes; the medians of 10+ samples of these windows are what the predictor needs (its interval
# comes from the spread across points, not within one).
SWEEP_WARMUP_S = 0.004
SWEEP_REP_S = 0.005
# A point whose roofline time exceeds this is skipped: it would take seconds and teach nothing that the largest
# kept points do not (efficiency is flat at large sizes; the predictor clamps beyond the measured box).
MAX_POINT_ROOF_S = {"gpu": 0.02, "cpu": 0.05}
# A point that allocates more than this is skipped: a 64 GiB KV cache takes longer to fill with random values than
# to time, and its efficiency is that of the largest kept points (memory-bound kernels are flat past ~1 GiB).
MAX_POINT_BYTES = 8 * 2**30
SAVE_EVERY_S = 15.0
# A GPU point is timed by its kernels' own device timestamps (CUPTI), whatever its length: a profile's kernel
# times are CUPTI's, and the event timer `roofline analyze` uses for operators over timing_cupti.SHORT_OP_S frames
# an operator ~1-1.6 us longer (docs/timing.md), which the predictor would carry into every model op predicted
# from such points (a 20 us op: 5-8% slow).
SWEEP_CUDA_METHOD = "cupti"
# A warm point is timed only when its footprint fits in this share of the L2: a larger one's own traffic evicts
# what its previous call left, so it runs as its flushed twin does (the predictor falls back on that twin).
WARM_MAX_L2_SHARE = 1.0
# Keep this share of free memory for the flush buffer's neighbours and library workspaces (runner.py's 0.9).
MEMORY_HEADROOM = 0.8


@dataclass(frozen=True)
class PlannedPoint:
    op: str
    dtype: str
    params: dict[str, Any]
    level: int
    family: str
    l2: str = opdb.FLUSHED  # opdb.L2_STATES: a family with `warm_l2 = true` is also timed with a warm L2

    def shape(self) -> str:
        """Its parameters as `a=1 b=2`, and whether it is timed with a warm L2, for progress and errors."""
        return " ".join(f"{a}={v}" for a, v in self.params.items()) + (" (warm L2)" if self.l2 == opdb.WARM else "")

    def key(self) -> str:
        from roofline.ops import make

        o = make(self.op, **self.params)  # the operator's resolved parameters, as its point stores them
        return opdb.point_key(o.name, o.variant_name(), self.dtype, o.params(), self.l2)


@dataclass
class SweepResult:
    measured: int = 0
    skipped_known: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # why -> count
    left: int = 0  # planned points the budget left unmeasured
    seconds: float = 0.0
    retimed: int = 0  # stored GPU points of another timer, dropped to be timed again (`timed_by_another`)


def axis_levels(n: int) -> list[int]:
    """The level of each of `n` sorted axis values: 0 for the ends, then bisection levels."""
    levels = [-1] * n
    if n == 1:
        return [0]
    level = 0
    while -1 in levels:
        parts = 2 ** level
        for j in range(parts + 1):
            i = round(j * (n - 1) / parts)
            if levels[i] < 0:
                levels[i] = level
        level += 1
    return levels


def _values(name: str, where: str, v: Any) -> list[Any]:
    vals = v if isinstance(v, list) else [v]
    if not vals:
        raise UsageError(f"{where}: {name} has no values")
    return vals


def plan(sweep: Mapping[str, Any], kind: str, where: str = "sweep") -> list[PlannedPoint]:
    """Every point of the sweep file for a `kind` ("gpu" or "cpu") device, coarse first (module docstring)."""
    from roofline.analysis.families import FAMILIES, FAMILY_OF_OP, op_family
    from roofline.ops.base import get_operator

    head = sweep.get("sweep", {})
    default_dtypes = head.get(f"{kind}_dtypes") or head.get("dtypes") or []
    families = sweep.get("family")
    if not isinstance(families, list) or not families:
        raise UsageError(f"{where}: no [[family]] entries")
    streams: list[list[PlannedPoint]] = []
    for n, fam in enumerate(families, 1):
        at = f"{where}: family {n}"
        if not isinstance(fam, Mapping) or "op" not in fam:
            raise UsageError(f"{at} has no op")
        name = get_operator(str(fam["op"])).name
        if name not in FAMILY_OF_OP:
            raise UsageError(f"{at}: {name} has no prediction family")
        axes = fam.get(kind)
        if axes is None:
            continue  # this family is not swept on this kind of device
        if not isinstance(axes, Mapping) or not axes:
            raise UsageError(f"{at}: `{kind}` must be a table of parameter values")
        names = list(axes)
        values = [sorted(_values(a, at, axes[a])) for a in names]
        levels = [axis_levels(len(v)) for v in values]
        fixed = dict(fam.get("fixed", {}))
        same = dict(fam.get("same", {}))
        if any(b not in names for b in same.values()):
            raise UsageError(f"{at}: `same` names a parameter that is not swept")
        if "warm_l2" in fam:
            raise UsageError(f"{at}: warm_l2 is the prediction family's (analysis/families.py), not the sweep's")
        warm = FAMILIES[op_family(name, fixed) or FAMILY_OF_OP[name]].warm_l2
        # a CPU is timed without a flush anyway (measuring/timing_cpu.py): its points are warm already
        states = (opdb.FLUSHED, opdb.WARM) if warm and kind == "gpu" else (opdb.FLUSHED,)
        for dtype, l2 in itertools.product(fam.get(f"{kind}_dtypes") or fam.get("dtypes") or default_dtypes, states):
            get_dtype(dtype)
            pts = []
            for idx in itertools.product(*(range(len(v)) for v in values)):
                params = {**fixed, **{a: values[i][j] for i, (a, j) in enumerate(zip(names, idx, strict=True))}}
                params.update({a: params[b] for a, b in same.items()})
                pts.append(PlannedPoint(name, dtype, params, max(levels[i][j] for i, j in enumerate(idx)),
                                        op_family(name, params) or FAMILY_OF_OP[name], l2))
            streams.append(sorted(pts, key=lambda p: p.level))
    out: list[PlannedPoint] = []
    top = max((p.level for s in streams for p in s), default=-1)
    for level in range(top + 1):
        per = [[p for p in s if p.level == level] for s in streams]
        for group in itertools.zip_longest(*per):
            out.extend(p for p in group if p is not None)
    return out


def load_plan(path: str | Path, kind: str) -> tuple[str, list[PlannedPoint]]:
    from roofline.core.tomlfile import read_toml

    data = read_toml(path, "sweep file", UsageError)
    return str(data.get("sweep", {}).get("name") or Path(path).stem), plan(data, kind, str(path))


def device_identity(target: Target) -> dict[str, Any]:
    """The database's `device`: kind, spec id, name, driver, torch (and CUDA)."""
    from roofline.ceilings.store import torch_version

    info = target.device_info
    if target.is_cpu:
        return {"kind": "cpu", "id": "cpu", "name": str(info.get("name", target.ceilings.device_name)),
                "cores": info.get("cores"), "torch": torch_version()}
    import torch

    return {"kind": "gpu", "id": target.ceilings.device_id, "name": str(info.get("name", target.ceilings.device_name)),
            "driver": info.get("driver_version"), "torch": torch_version(), "cuda": torch.version.cuda}


def _time_point(p: PlannedPoint, target: Target) -> tuple[opdb.Point | None, str | None]:
    """The point timed, or (None, why it was skipped)."""
    from roofline.measuring.kernels import build, footprint_bytes
    from roofline.measuring.runner import available_bytes
    from roofline.measuring.timing import FLUSH_L2_MULTIPLE
    from roofline.ops import make

    try:
        op = make(p.op, **p.params)
        dtype = get_dtype(p.dtype)
        record = analytic_record(op, dtype, target.ceilings)
    except RooflineError:
        return None, "not a valid shape"
    kind = "cpu" if target.is_cpu else "gpu"
    if not record.roofline_time_s or record.roofline_time_s > MAX_POINT_ROOF_S[kind]:
        return None, "too large for a sweep"
    device = target.time_device
    assert device is not None
    l2 = target.l2_bytes or 0
    need = footprint_bytes(op, dtype)
    if need > MAX_POINT_BYTES:
        return None, "too large for a sweep"
    warm = p.l2 == opdb.WARM
    if warm and need > WARM_MAX_L2_SHARE * l2:
        return None, "larger than the L2 (warm as flushed)"
    if need + (0 if warm else FLUSH_L2_MULTIPLE * l2) > available_bytes(device) * MEMORY_HEADROOM:
        return None, "does not fit in memory"
    try:
        built = build(op, dtype, device)
        if device.startswith("cuda"):
            from roofline.measuring.timing_cuda import TimingOptions, time_cuda

            m = time_cuda(built.fn, TimingOptions(method=SWEEP_CUDA_METHOD, compute_bound=record.bound == "compute",
                                                  graph_safe=built.graph_safe, warm_l2=warm, sample_clocks=False,
                                                  warmup_s=SWEEP_WARMUP_S, rep_s=SWEEP_REP_S), device, l2 or None)
        else:
            from roofline.measuring.timing_cpu import time_cpu

            m = time_cpu(built.fn, warmup_s=SWEEP_WARMUP_S, rep_s=SWEEP_REP_S)
    except (RooflineError, RuntimeError, ValueError, NotImplementedError) as exc:  # an unsupported kernel here
        if device.startswith("cuda") and not gpu_still_works(device):
            first = str(exc).splitlines()[0] if str(exc) else "no message"
            raise RooflineError(f"the GPU stopped running kernels at {p.op} {p.dtype} {p.shape()} "
                                f"({type(exc).__name__}: {first})") from None
        return None, f"failed ({type(exc).__name__})"
    median = m.median_s
    if median <= 0:
        return None, "no time measured"
    assert record.flops is not None and record.bytes is not None and record.roofline_time_s is not None
    return opdb.Point(family=p.family, op=op.name, dtype=p.dtype, params=op.params(), flops=record.flops,
                      bytes=record.bytes, roofline_time_s=record.roofline_time_s, time_s=median,
                      variant=op.variant_name(), samples_s=opdb.kept_samples(m.times_s),
                      launch_gap_s=m.launch_gap_s, kernels=len(m.kernel_medians_s) or None, method=m.method,
                      level=p.level, l2=p.l2), None


def timed_by_another(db: opdb.OpDB) -> list[opdb.Point]:
    """A GPU database's points not timed by SWEEP_CUDA_METHOD (events around graph replays, which a database swept
    by an earlier version holds for operators over 20 us; or a point whose timestamps could not be split, timed by
    events)."""
    return [pt for pt in db.points if not (pt.method or "").startswith(SWEEP_CUDA_METHOD)]


def gpu_still_works(device: str) -> bool:
    """Whether the CUDA context still runs a kernel after a point failed: an error such as an illegal address (or
    a failed CUDA-graph capture of autograd) poisons it for the process, and every later point would fail. The
    sweep then stops and keeps what it measured."""
    import torch

    try:
        torch.ones(1, device=device).add_(1)
        torch.cuda.synchronize(device)
        return True
    except RuntimeError:
        return False


def sweep(points: list[PlannedPoint], target: Target, db: opdb.OpDB, budget_s: float,
          progress: Reporter = QUIET, clock: Any = time.monotonic) -> SweepResult:
    """Time the points the database lacks, in order, until the budget is spent; the database is written every
    SAVE_EVERY_S and at the end (also when interrupted)."""
    result = SweepResult()
    if not target.is_cpu and (stale := timed_by_another(db)):
        # a database swept before every GPU point was timed by its kernels' timestamps: those points are timed
        # again (a point's efficiency must be in a profile's framing); dropped now, so a cut run leaves none
        gone = {id(pt) for pt in stale}
        db.points[:] = [pt for pt in db.points if id(pt) not in gone]
        db.dropped.update(pt.key() for pt in stale)  # another sweep's copy of them is not merged back (opdb.merge)
        result.retimed = len(stale)
        progress.notice(f"{len(stale)} stored points timed by device events (an older sweep's) are timed again "
                        "by their kernels' timestamps")
    if not target.is_cpu and db.l2_drain is None and target.l2_bytes and target.time_device:
        _measure_drain(db, target, progress)
    known = db.keys()
    start = last_save = clock()
    todo = []
    for p in points:
        try:
            k = p.key()
        except RooflineError:
            result.skipped["not a valid shape"] = result.skipped.get("not a valid shape", 0) + 1
            continue
        if k in known:
            result.skipped_known += 1
        else:
            todo.append((k, p))
    level = -1
    done = 0  # points of `todo` timed or skipped so far: the rest are the database's `unswept`
    try:
        for i, (k, p) in enumerate(todo):
            spent = clock() - start
            if spent >= budget_s:
                result.left = len(todo) - i
                break
            if k in known:  # another sweep into the same file measured it meanwhile (merged by opdb.write)
                result.skipped_known += 1
                done += 1
                continue
            if p.level != level:  # a line that stays, also where stderr is no terminal (logs)
                level = p.level
                progress.notice(f"level {level}: {len(todo) - i} points to go, {result.measured} measured, "
                                f"{duration(spent)} of {duration(budget_s)}")
            progress.status(f"[{i + 1}/{len(todo)}] level {p.level} {p.op} {p.dtype} {p.shape()} "
                            f"({duration(spent)} of {duration(budget_s)})")
            try:
                point, why = _time_point(p, target)
            except RooflineError as exc:  # the device stopped working (gpu_still_works): keep what was measured
                raise RooflineError(f"{exc}; the {result.measured} points measured before it are kept in "
                                    f"{db.path}") from None
            if point is None:
                assert why is not None
                result.skipped[why] = result.skipped.get(why, 0) + 1
            else:
                db.points.append(point)
                known.add(k)
                result.measured += 1
            done += 1
            if clock() - last_save > SAVE_EVERY_S:
                db.unswept = len(todo) - done
                opdb.write(db)
                known |= db.keys()
                last_save = clock()
    finally:
        db.unswept = len(todo) - done
        opdb.write(db)
        result.seconds = clock() - start
    return result


def _measure_drain(db: opdb.OpDB, target: Target, progress: Reporter) -> None:
    """The database's L2 write-back readings (measuring/l2_drain.py), once; a run whose kernels cannot be told
    apart leaves them out, said (the predictions then charge no write-back)."""
    from roofline.measuring.l2_drain import measure_l2_drain
    from roofline.measuring.timing_cupti import LayoutError

    progress.status("the L2's write-back: an add after a clean L2 and after writes elsewhere")
    try:
        db.l2_drain = measure_l2_drain(str(target.time_device), target.l2_bytes or 0)
    except LayoutError as exc:
        progress.notice(f"the L2's write-back was not measured ({exc}): predictions charge none")


DEFAULT_BUDGET_S = 600.0


def calibrate_ops(suite: str | Path | None = None, device: str | None = None, db_path: str | Path | None = None,
                  budget_s: float = DEFAULT_BUDGET_S, progress: Reporter = QUIET) -> tuple[opdb.OpDB, SweepResult]:
    """The whole use case: resolve this device, plan the sweep, resume or start its database, sweep it."""
    from roofline.measuring.target import resolve_target

    target = resolve_target(device=device, progress=progress.status)
    if target.time_device is None:
        raise RooflineError("calibrate ops needs a device to time on")
    identity = device_identity(target)
    name, points = load_plan(suite or default_suite(), identity["kind"])
    path = Path(db_path) if db_path is not None else opdb.default_path(identity["id"])
    db = opdb.open_for_sweep(identity, path, name)
    had = len(db.points)
    try:
        return db, sweep(points, target, db, budget_s, progress)
    except KeyboardInterrupt as exc:  # sweep() wrote the database before this: the caller says what it kept
        raise SweepInterrupted(db, len(db.points) - had - db.merged) from exc  # not another sweep's points


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM (roofline.core.process.Terminated) during a sweep, the database written: it and the
    points this run measured into it."""

    def __init__(self, db: opdb.OpDB, measured: int) -> None:
        super().__init__()
        self.db, self.measured = db, measured
