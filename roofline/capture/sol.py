"""`roofline sol PROBLEM.py` and `roofline.sol(path)`: the speed of light of kernel-benchmark problems (the plain
convention: `Model`, `get_inputs`, `get_init_inputs`; measuring/problem.py), and with `time=True` the reference
(and a candidate's `ModelNew`) timed by the untrusted timer (measuring/untrusted.py) and judged against it
(analysis/sol.py). A folder of problems is one run: one result per problem, a problem that fails to load,
build or run is one error in the run, never its end.

    run = roofline.sol("suites/sol/matmul.py", gpu="h200")      # analytic: no data, any GPU's spec
    run.results[0].sol.fused_s, run.document()
    run = roofline.sol("suites/sol", time=True)                  # every problem, timed here
    run = roofline.sol("p.py", time=True, candidate="new.py")    # speedup, % of the fused bound, verdict
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.analysis.sol import SpeedOfLight, Verdict, judge, speed_of_light
from roofline.core import validate
from roofline.core.document import Document
from roofline.core.dtypes import get_dtype
from roofline.core.errors import RooflineError, UsageError
from roofline.core.model import RooflinePoint, choose_memory
from roofline.core.progress import QUIET, Reporter
from roofline.core.record import Record, Timing, placed_record, with_time
from roofline.measuring import solexec
from roofline.measuring.problem import (
    DTYPES,
    Problem,
    ProblemError,
    build_model,
    contained,
    load_problem,
    make_inputs,
)
from roofline.measuring.target import Target, resolve_target
from roofline.measuring.untrusted import Timed, TimerSettings, time_candidate, time_reference

# The seed of the weights, the same for the reference and the candidate (their outputs must agree).
INIT_SEED = 0
# The environment variable the problems of suites/sol read their sizes from (`scale=`, `--scale`).
SCALE_VAR = "SOL_SCALE"
TIMING_METHODS = {"cupti": "untrusted-cupti", "cpu": "untrusted-cpu"}
# A problem of a folder gets this long in its worker: the reference's and the candidate's answers (each up to
# TimerSettings.timeout_s) and a minute for the analysis and the process's start.
PROBLEM_EXTRA_S = 60.0


@dataclass
class ProblemResult:
    """One problem: its bounds, and when timed the reference's (and the candidate's) timing and verdict."""

    path: Path
    candidate_path: Path | None = None
    sol: SpeedOfLight | None = None
    dtype: str = ""  # the dtype its FLOPs are computed in ("fp32")
    inputs: list[list[int]] = field(default_factory=list)  # the forward's tensor arguments' shapes
    reference: Timed | None = None
    candidate: Timed | None = None
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # "reference", "candidate"
    error: str | None = None  # did not load, build or profile
    notes: list[str] = field(default_factory=list)
    row: solexec.Row | None = None  # a SOL-ExecBench workload (measuring/solexec.py): its definition.json is `path`

    @property
    def name(self) -> str:
        return self.row.label if self.row else self.path.stem

    def load(self) -> Problem:
        return self.row.load() if self.row else load_problem(self.path)

    @property
    def ok(self) -> bool:
        return self.error is None and all(v.ok for v in self.verdicts.values())


@dataclass
class SolRun:
    """Every problem of one `sol` call, against one target."""

    results: list[ProblemResult]
    target: Target
    timed: bool
    scale: int | None = None
    dtype: str | None = None

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def failed(self) -> list[ProblemResult]:
        return [r for r in self.results if r.error]

    def records(self) -> list[Record]:
        return [rec for r in self.results for rec in problem_records(r, self.target)]

    def document(self) -> Document:
        """The results document: one record per problem (and candidate), the run's failures under extra['sol']."""
        from roofline.measuring.correctness import TOLERANCES

        tolerances = {k: {"rtol": v[0], "atol": v[1]} for k, v in TOLERANCES.items() if k in DTYPES.values()}
        extra = {"problems": len(self.results), "timed": self.timed, "scale": self.scale, "dtype": self.dtype,
                 "failed": [{"problem": r.name, "path": str(r.path), "error": r.error} for r in self.failed],
                 "tolerances": tolerances, "atol_scaled": True}
        return self.target.document(self.records(), extra={"sol": extra})


@contextlib.contextmanager
def scaled(scale: int | None) -> Iterator[dict[str, str]]:
    """SOL_SCALE set while the problem files load (their sizes are module constants); yields what a child
    process needs in its environment."""
    if scale is None:
        yield {}
        return
    before = os.environ.get(SCALE_VAR)
    os.environ[SCALE_VAR] = str(scale)
    try:
        yield {SCALE_VAR: str(scale)}
    finally:
        if before is None:
            os.environ.pop(SCALE_VAR, None)
        else:
            os.environ[SCALE_VAR] = before


@contextlib.contextmanager
def exact_precision() -> Iterator[None]:
    """fp32 as fp32 (no TF32 in matmuls or convolutions) and no per-process autotuning, while the problem runs:
    the precision a problem asks for is the one its reference computes in, and the roof it is placed on."""
    import torch

    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = saved


def problem_files(path: str | Path) -> list[Path]:
    """A problem file, or a folder's (its *.py, not those starting with '_', in name order)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.glob("*.py") if not f.name.startswith("_"))
        if not files:
            raise UsageError(f"{p}: no problem files (*.py) in this folder")
        return files
    if not p.is_file():
        raise UsageError(f"{p}: no such problem file or folder")
    return [p]


def _candidate_for(problem: Path, candidate: str | Path | None, many: bool) -> Path | None:
    """The candidate of `problem`: the file given, or in a folder given the file of the problem's name."""
    if candidate is None:
        return None
    c = Path(candidate)
    if c.is_dir():
        return c / problem.name if (c / problem.name).is_file() else None
    if many:
        raise UsageError(f"--candidate {c}: a folder of problems takes a folder of candidates (one file per problem, "
                         "named as the problem)")
    if not c.is_file():
        raise UsageError(f"{c}: no such candidate file")
    return c


def _unnamed(message: str, problem: Path) -> str:
    """`message` without the problem's name in front ("relu.py: ..." or "relu: ...")."""
    for name in (problem.name, problem.stem):
        if message.startswith(f"{name}: "):
            return message[len(name) + 2:]
    return message


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _view_bytes(t: Any) -> float:
    """Bytes of the distinct elements a tensor covers (an expanded dimension adds none)."""
    if t.numel() == 0:
        return 0.0
    distinct = 1
    for n, s in zip(t.shape, t.stride(), strict=True):
        distinct *= n if s else 1
    return float(distinct * t.element_size())


def analyse(problem: Problem, target: Target, dtype: str | None = None) -> tuple[SpeedOfLight, str, list[list[int]]]:
    """The problem's speed of light on `target`'s roof: its Model run once without data (FakeTensorMode) inside
    an analytic profile. Returns the bounds, the dtype its FLOPs are in, and its inputs' shapes."""
    import torch

    from roofline.capture.fake import fake_mode
    from roofline.capture.profile import Profile

    with fake_mode():
        model = build_model(problem, INIT_SEED, "cpu", dtype)
        inputs = make_inputs(problem, INIT_SEED, "cpu", dtype)
    prof = Profile(problem.name, time=False)
    prof.target = dataclasses.replace(target, time_device=None, messages=[])
    try:
        with exact_precision(), torch.no_grad(), prof:
            out = model(*inputs)
    except RooflineError:
        raise
    except Exception as exc:
        text = str(exc).strip().splitlines()
        raise ProblemError(f"{problem.name}: Model raised {type(exc).__name__} without data (analytic run): "
                           f"{text[0] if text else ''}") from exc
    if not prof.calls:  # a 0 us bound would pass any candidate
        raise ProblemError(f"{problem.name}: Model ran no torch operator without data: nothing to bound")
    calls = [(p.traffic.reads, p.traffic.writes, p.has_formula) for p in prof.calls]
    outputs = [(t.untyped_storage()._cdata, _view_bytes(t)) for t in _tensors(out)]
    c = target.ceilings
    roof = f"{c.device_name} ({c.source})"
    sol = speed_of_light(prof.records, calls, outputs, c.dram_bytes_per_s, roof)
    # On a CPU the ops sit on the cache level that holds them (choose_memory); the fused kernel goes there too.
    sol = dataclasses.replace(sol, dram_bytes_per_s=choose_memory(c, sol.fused_bytes).bytes_per_s)
    timed = [r for r in prof.records if r.flops is not None]
    main = max(timed, key=lambda r: (r.roofline_time_s or 0.0) * (r.count or 1), default=None)
    shapes = [list(t.shape) for t in inputs if isinstance(t, torch.Tensor)]
    return sol, (main.dtype if main is not None else dtype or "fp32"), shapes


def _time(result: ProblemResult, problem: Problem, target: Target, dtype: str | None, settings: TimerSettings,
          env: dict[str, str], progress: Reporter) -> None:
    """Time the reference here and the candidate (when there is one) in a child process; judge both."""
    import torch

    device = target.time_device
    assert device is not None and result.sol is not None
    hard = target.ceilings.kind == "gpu" and target.ceilings.source == "datasheet" and settings.flush
    l2 = float((target.spec.get("l2_cache_kib") or 0) * 1024) if target.spec is not None else 0.0
    with exact_precision(), torch.no_grad():
        model = build_model(problem, INIT_SEED, device, dtype)

        def inputs_for(seed: int) -> list[Any]:
            return make_inputs(problem, seed, device, dtype)

        def reference(seed: int) -> Any:
            return model(*inputs_for(seed))

        one, two = (_tensors(inputs_for(s)) for s in (1, 2))
        if one and all(torch.equal(a, b) for a, b in zip(one, two, strict=True)):
            result.notes.append("get_inputs() makes the same inputs under every seed: fresh inputs cannot tell a "
                                "cached output from a computed one")
        progress.status(f"{result.name}: timing the reference")
        result.reference = time_reference(model, inputs_for, device, reference, settings)
        ref = result.reference
        result.verdicts["reference"] = judge(ref.median_s, result.sol, hard=hard, wrong=ref.wrong,
                                             refused=ref.refused, failed=ref.failed, l2_bytes=l2)
        if result.candidate_path is None:
            return
        progress.status(f"{result.name}: timing the candidate {result.candidate_path.name} (a child process)")
        with tempfile.TemporaryDirectory(prefix="roofline-solexec-") as tmp:  # a workload: two plain files for it
            files = solexec.child_files(result.row, tmp) if result.row else (problem.path, result.candidate_path)
            result.candidate = cand = time_candidate(*files, device, dtype, reference, settings, INIT_SEED, env)
    result.verdicts["candidate"] = judge(cand.median_s, result.sol, hard=hard, reference_s=ref.median_s,
                                         wrong=cand.wrong, refused=cand.refused, failed=cand.failed, l2_bytes=l2)


def sol(path: str | Path, *, gpu: str | None = None, dtype: str | None = None, time: bool = False,
        candidate: str | Path | None = None, device: str | None = None, scale: int | None = None,
        settings: TimerSettings | None = None, progress: Reporter = QUIET) -> SolRun:
    """The speed of light of a problem file, or of every problem of a folder (module docstring).

    `gpu`: the spec to place it on (analytic on any machine); `time`: time the reference here (and
    `candidate`, a file, or for a folder a folder of files named as the problems); `scale`: SOL_SCALE for the
    problems that read it. A single problem that fails is a ProblemError; in a folder it is one error in the run."""
    validate.path_arg("sol", "path", path)  # the names: `--dtype` on the command line, `dtype` from Python
    if candidate is not None:
        validate.path_arg("sol", "candidate", candidate)
    validate.boolean("sol", "time", time)
    if dtype is not None:
        validate.choice("sol", "dtype", dtype, tuple(DTYPES))
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, int) or scale < 1):
        raise UsageError(f"sol: {validate.arg_name('scale')} must be a positive whole number, got {scale!r}")
    if settings is not None:  # where the tolerances enter: an infinite one passes an output of zeros
        if not isinstance(settings, TimerSettings):
            raise UsageError(f"sol: settings must be a TimerSettings, got {type(settings).__name__}")
        settings.check()
    if candidate is not None and not time:
        on_cli = validate.arg_name("time") == "--time"
        raise UsageError("--candidate is timed: add --time" if on_cli else "candidate= is timed: pass time=True")
    pairs: list[tuple[Path, Path | None, solexec.Row | None]]
    if solexec.is_problem(path):  # SOL-ExecBench's definition.json and workload.jsonl: one row per workload
        rows = solexec.rows(path, candidate)
        many, pairs = len(rows) > 1, [(r.path, r.candidate, r) for r in rows]
    else:
        files = problem_files(path)
        many = Path(path).is_dir()
        pairs = [(f, _candidate_for(f, candidate, many), None) for f in files]
    if candidate is not None and not any(c for _, c, _ in pairs):
        raise UsageError(f"--candidate {candidate}: no candidate named {', '.join(f.name for f, _, _ in pairs[:3])}"
                         f"{', ...' if len(pairs) > 3 else ''} in this folder")
    target = resolve_target(gpu=gpu, device=device, time=time)
    if time and target.time_device is None:
        raise UsageError(f"--time: the {target.ceilings.device_name} roof cannot be timed on this machine (leave out "
                         "--gpu to time here, or --time for the speed of light alone)")
    run = SolRun([], target, time, scale, dtype)
    with scaled(scale) as env:
        if time and many:  # each problem in a worker process: a crash, an OOM or a hang is that problem's line
            run.results = _in_workers(pairs, target, dtype, settings or TimerSettings(), env, progress)
            return run
        for i, (f, cand, row) in enumerate(pairs):
            result = ProblemResult(f, cand, row=row)
            progress.status(f"{i + 1}/{len(pairs)} {result.name}")
            run.results.append(result)
            try:
                _one(result, target, dtype, time, settings or TimerSettings(), env, progress)
            except RooflineError as exc:
                if not many:
                    raise
                result.error = _unnamed(str(exc), f)  # the report names the problem
            except Exception as exc:  # a problem's own failure is one line of the run
                if not many:
                    raise ProblemError(f"{f.name}: {type(exc).__name__}: {exc}") from exc
                result.error = _first(exc)
            if many:
                progress.notice(problem_line(i, len(pairs), result))
    return run


def problem_line(i: int, total: int, result: ProblemResult) -> str:
    """A folder run's line for its i-th problem once done, on a terminal and in a log alike (a notice: kept, not
    redrawn): '3/10 relu.py: ok', '4/10 conv.py: failed: CUDA out of memory ...', '5/10 gemm.py: candidate
    slower'."""
    if result.error:
        said = f"failed: {result.error}"
    else:
        said = ", ".join(f"{who} {v.status}" for who, v in result.verdicts.items() if not v.ok) or "ok"
    return f"{i + 1}/{total} {result.row.label if result.row else result.path.name}: {said}"


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _in_workers(pairs: list[tuple[Path, Path | None, solexec.Row | None]], target: Target, dtype: str | None,
                settings: TimerSettings, env: dict[str, str], progress: Reporter) -> list[ProblemResult]:
    """Each problem in a worker process (measuring/workers.py), one line of progress per problem; a problem whose
    worker crashed, ran out of memory or hung is its own `failed` result, and the others go on."""
    from roofline.measuring.workers import Pool

    pool = Pool(_work, 2 * settings.timeout_s + PROBLEM_EXTRA_S)
    results = []
    try:
        for i, (f, cand, row) in enumerate(pairs):
            progress.status(f"{i + 1}/{len(pairs)} {row.label if row else f.stem}")
            out = pool.run((f, cand, row, target, dtype, settings, env), progress)
            result = out.value if out.failed is None else ProblemResult(f, cand, error=out.failed, row=row)
            progress.notice(problem_line(i, len(pairs), result))
            results.append(result)
    finally:
        pool.close()
    return results


def _work(task: tuple[Any, ...], progress: Reporter) -> tuple[ProblemResult, bool]:
    """One problem in a worker: its result, and whether the process can take the next (its CUDA context works)."""
    f, cand, row, target, dtype, settings, env = task
    os.environ.update(env)  # SOL_SCALE: the problem's sizes are module constants
    result = ProblemResult(f, cand, row=row)
    try:
        _one(result, target, dtype, True, settings, env, progress)
    except RooflineError as exc:
        result.error = _unnamed(str(exc), f)
    except Exception as exc:  # a problem's own failure is one line of the run
        result.error = _first(exc)
    return result, _device_works()


def _device_works() -> bool:
    """False when this process's CUDA context no longer runs work (an illegal access, a device-side assert)."""
    import torch

    if not torch.cuda.is_initialized():
        return True
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
    except Exception:  # any error here: the context is unusable
        return False
    return True


def _one(result: ProblemResult, target: Target, dtype: str | None, time: bool, settings: TimerSettings,
         env: dict[str, str], progress: Reporter) -> None:
    """Load, bound and (with `time`) time one problem into `result`."""
    f = result.path
    with contained(f.name):  # sys.exit() or os._exit() in the problem's code: its failure, not ours
        problem = result.load()
        result.sol, result.dtype, result.inputs = analyse(problem, target, dtype)
        result.notes += result.sol.notes()
        if time:
            _time(result, problem, target, dtype, settings, env, progress)


# -- records
def _timed_block(t: Timed) -> dict[str, Any]:
    return {"method": TIMING_METHODS.get(t.method, t.method), "measured_s": t.median_s, "span_s": t.span_s,
            "reps": t.reps, "checked": t.checked, "kernels": t.kernels, "wrong": t.wrong, "refused": t.refused,
            "failed": t.failed, "notes": t.notes}


def problem_records(r: ProblemResult, target: Target) -> list[Record]:
    """One record per problem (the reference) and one per candidate: the problem placed as one kernel (its FLOPs
    over the fused bytes, roofline_time_s the fused speed of light), timed when its verdict stands."""
    if r.sol is None:
        return []
    s = r.sol
    try:
        dt = get_dtype(r.dtype)
    except UsageError:
        dt = get_dtype("fp32")
    where = {"axes": r.row.workload.axes, "workload": r.row.workload.uuid} if r.row else {}
    base = placed_record(op=r.name, variant=None, params={"inputs": r.inputs, **where}, dtype=dt, flops=s.flops,
                         bytes_read=s.read_bytes, bytes_written=s.written_bytes, ceilings=target.ceilings,
                         uses_tensor_cores=dt.tensor_field is not None and r.dtype not in ("fp32", "fp64"),
                         notes=list(r.notes))
    if s.flops and s.fused_compute_s:  # one peak for the mix of pipes: the FLOPs over their time at peak
        a = RooflinePoint(s.flops, s.fused_bytes, s.flops / s.fused_compute_s, base.peak_bytes_per_s)
        base = dataclasses.replace(base, peak_flops_per_s=a.peak_flops_per_s, ridge_point=a.ridge_point,
                                   bound=a.bound, attainable_flops_per_s=a.attainable_flops_per_s,
                                   roofline_time_s=a.roofline_time_s, compute_pipe_label="the ops' pipes")
    block = {"problem": r.name, "path": str(r.path), **s.to_dict()}
    roles = [("reference", r.reference)] + ([("candidate", r.candidate)] if r.candidate_path else [])
    out = []
    for role, timed in roles:
        rec = dataclasses.replace(base, variant=role, extra={"sol": {**block, "role": role}})
        v = r.verdicts.get(role)
        if v is not None:
            rec.extra["sol"]["verdict"] = v.to_dict()
        if timed is not None:
            rec.extra["sol"]["timing"] = _timed_block(timed)
            if role == "candidate":
                rec.extra["sol"]["candidate"] = str(r.candidate_path)
        if timed is not None and v is not None and v.ok and v.time_s:
            rec = with_time(rec, v.time_s)
            rec = dataclasses.replace(rec, time_samples_s=list(timed.samples_s), kernels=timed.kernels or None,
                                      timing=Timing(method=TIMING_METHODS.get(timed.method, timed.method),
                                                    warmup_calls=timed.warmup_calls, reps=timed.reps,
                                                    l2_flush=timed.method == "cupti",
                                                    notes=[*timed.notes, *v.notes]))
        out.append(rec)
    return out
