"""Timing collectives across processes: the per-rank loop, the launcher, and the records rank 0 builds.

One process per rank, started by torch's elastic launcher (`torch.distributed.launcher.api.elastic_launch`,
what `torchrun` runs), or the ranks of a `torchrun` job the user started (RANK and WORLD_SIZE set). NCCL on
GPUs (one GPU per local rank), gloo on CPU processes. Each rank, for every (collective, size):
- allocates its buffers (nccl-tests' sizes: S is the full buffer, rounded down to a multiple of ranks x
  element size, as nccl-tests does), runs WARMUP_CALLS calls, then estimates one call's time;
- picks `calls` per sample so that a sample lasts at least MIN_SAMPLE_S (the largest estimate over the ranks,
  so every rank runs the same number of calls), which hides the host's launch overhead at small sizes;
- takes `samples` samples: all ranks meet (barrier, then a device sync), then each times `calls` back-to-back
  calls, with a fresh pair of CUDA events on a GPU and perf_counter on the CPU (gloo calls block), and keeps
  elapsed / calls.
A sample's time is the mean over the ranks (nccl-tests' default, `-a 1`); every rank's samples are kept.
Rank 0 gathers them (gather_object) and builds one record per (collective, size).

NCCL_NVLS_ENABLE: set to 0 when absent, never unset or changed. NVLink multicast (NVLS, NVLink SHARP) is off
on the machines this was validated on; with it left to NCCL's choice a run may pick NVLS where the driver allows
it and the curves would not match a run elsewhere (set it to 1 yourself to measure NVLS).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core.errors import RooflineError, UsageError
from roofline.ops.collectives import BUSBW_FACTORS, algbw, busbw, busbw_factor, ring_bytes_per_gpu

if TYPE_CHECKING:
    from roofline.core.document import Document
    from roofline.core.record import Record
    from roofline.measuring.target import Target

BACKENDS = ("nccl", "gloo")
# The dtypes NCCL and gloo both reduce (fp8 and the block-scaled formats have no collectives of their own).
DTYPES = ("bf16", "fp16", "fp32", "fp64")
# Calls before a size is timed: the first call of a size sets up NCCL's channels and buffers for it.
WARMUP_CALLS = 5
# A sample lasts at least this long. After the barrier the ranks' hosts leave at times some 10-20 us apart, and
# a rank that starts first waits for the last inside its first call: at 5 ms that skew is under 0.5% of a
# sample (the mean over ranks halves it), as are the events' ~0.5 us resolution and a ~5 us host launch.
MIN_SAMPLE_S = 5e-3
# At most this many calls per sample (a 1 KiB NCCL all-reduce of ~10 us takes 500).
MAX_CALLS = 1000
DEFAULT_SAMPLES = 20
# The CPU processes a gloo run starts when none are given (`--nproc`).
DEFAULT_CPU_PROCS = 2
NVLS = "NCCL_NVLS_ENABLE"
# How a failing rank tells the launcher why (the launcher reads the file; one line: its kind, then the reason):
# OWN, its own error; PEER, a connection lost to a rank that died.
_ERROR_FILE = "rank{rank}.error"
OWN, PEER = "own", "peer"
# How gloo and NCCL word a connection lost to a peer (gloo raises a plain RuntimeError).
PEER_SIGNS = ("remote worker", "connection closed by peer", "connection reset by peer", "remote process exited",
              "communicator was aborted")


@dataclass(frozen=True)
class Plan:
    """What every rank runs: the collectives, the sizes (nccl-tests' S, bytes), dtype, backend, samples."""

    ops: tuple[str, ...]
    sizes: tuple[int, ...]
    dtype: str = "bf16"
    backend: str = "nccl"
    samples: int = DEFAULT_SAMPLES
    # where a failing rank writes its one-line reason (the launcher's temporary folder; None in a torchrun job)
    error_dir: str | None = None
    # TEST ONLY: this rank exits (status 3) after the first size, as a rank that dies
    fail_rank: int | None = None
    progress: bool = False


@dataclass
class RankResult:
    """One rank's measurements: per (op, size) the bytes actually used, calls per sample and the samples."""

    rank: int
    host: str
    device: str
    cases: list[dict[str, Any]] = field(default_factory=list)


def nvls_env() -> None:
    """NCCL_NVLS_ENABLE=0 unless the user set it (see the module docstring)."""
    os.environ.setdefault(NVLS, "0")


def elements(op: str, nbytes: int, ranks: int, element_bytes: int) -> int:
    """Elements of the full buffer S: rounded down to a multiple of ranks (at least `ranks`), as nccl-tests."""
    del op  # every collective is split in `ranks` chunks by one of its buffers
    count = nbytes // element_bytes
    return max(ranks, count - count % ranks)


def _buffers(op: str, count: int, ranks: int, dtype: Any, device: Any) -> Any:
    """A zero-argument callable running `op` once on fresh buffers (allocated here, outside the timed calls)."""
    import torch
    import torch.distributed as dist

    def empty(n: int) -> Any:
        return torch.ones(n, dtype=dtype, device=device)

    if op == "all_reduce":
        x = empty(count)
        return lambda: dist.all_reduce(x)
    if op == "all_gather":
        src, dst = empty(count // ranks), empty(count)
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda: gather(dst, src)
    if op == "reduce_scatter":
        src, dst = empty(count), empty(count // ranks)
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return lambda: scatter(dst, src)
    if op == "all_to_all":
        src, dst = empty(count), empty(count)
        return lambda: dist.all_to_all_single(dst, src)
    if op == "broadcast":
        x = empty(count)
        return lambda: dist.broadcast(x, 0)
    raise UsageError(f"unknown collective '{op}'")


class _Clock:
    """Times `calls` calls of a function: CUDA events on a GPU (a fresh pair per sample), perf_counter on the
    CPU, after all ranks met (barrier and, on a GPU, a device sync)."""

    def __init__(self, device: Any) -> None:
        import torch

        self.torch = torch
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def __call__(self, fn: Any, calls: int) -> float:
        import time

        import torch.distributed as dist

        dist.barrier()
        self.sync()
        if self.cuda:
            start, end = (self.torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3 / calls
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t0) / calls


def _calls_per_sample(estimate_s: float, device: Any) -> int:
    """The same number on every rank: from the slowest rank's estimate (all_reduce MAX)."""
    import math

    import torch
    import torch.distributed as dist

    t = torch.tensor([estimate_s], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    slowest = float(t.item())
    return max(1, min(MAX_CALLS, math.ceil(MIN_SAMPLE_S / max(slowest, 1e-9))))


def _say(plan: Plan, text: str) -> None:
    """Rank 0's progress (see `transient`)."""
    if plan.progress:
        transient(text)


def transient(text: str) -> None:
    """One transient line on stderr, redrawn in place ('' clears it); nothing when stderr is no terminal. The
    launcher starts it and rank 0 (whose stderr the launcher leaves on the terminal) takes it over: two
    processes share the line, so it is a bare carriage return, not a rich status line."""
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{text}")
        sys.stderr.flush()


def measure_rank(plan: Plan) -> RankResult:
    """This rank's sweep (the process group is initialised by the caller)."""
    import socket

    import torch
    import torch.distributed as dist

    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels.common import torch_dtype

    rank, ranks = dist.get_rank(), dist.get_world_size()
    if plan.backend == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    dt = get_dtype(plan.dtype)
    tdt = torch_dtype(dt)
    clock = _Clock(device)
    out = RankResult(rank, socket.gethostname(), str(device))
    total, done = len(plan.ops) * len(plan.sizes), 0
    for op in plan.ops:
        for size in plan.sizes:
            if rank == 0:
                _say(plan, f"collectives: {op} {size:,} B ({done + 1} of {total})")
            count = elements(op, size, ranks, int(dt.bytes))
            fn = _buffers(op, count, ranks, tdt, device)
            for _ in range(WARMUP_CALLS):
                fn()
            calls = _calls_per_sample(clock(fn, 1), device)
            samples = [clock(fn, calls) for _ in range(plan.samples)]
            out.cases.append({"op": op, "bytes": count * int(dt.bytes), "calls": calls, "samples_s": samples})
            del fn
            done += 1
            if plan.fail_rank == rank:
                os._exit(3)  # TEST ONLY: a rank that dies mid-sweep
    if rank == 0:
        _say(plan, "")
    return out


def run_rank(plan: Plan) -> list[RankResult] | None:
    """One rank of the job from start to end: join the group, measure, gather to rank 0 (which gets every
    rank's result; the others get None). A failure is one line in the plan's error folder, exit status 1."""
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)  # torch's renames of the collectives
    warnings.filterwarnings("ignore", category=UserWarning, module="torch.distributed")  # barrier's device
    nvls_env()
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)  # gloo ranks share the host's cores
        device = None
        if plan.backend == "nccl":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        if not dist.is_initialized():
            try:  # the device named: NCCL's barrier then knows its GPU (torch >= 2.3)
                dist.init_process_group(plan.backend, device_id=device)
            except TypeError:
                dist.init_process_group(plan.backend)
        mine = measure_rank(plan)
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, dataclasses.asdict(mine))
        rank = dist.get_rank()
        dist.destroy_process_group()
        return [RankResult(**g) for g in gathered] if rank == 0 else None
    except Exception as exc:  # the launcher names this rank and its reason in one line
        if plan.error_dir is None:
            raise
        # a lost connection is a peer's failure seen from here (the peer that died says nothing)
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        kind = PEER if any(sign in text.lower() for sign in PEER_SIGNS) else OWN
        Path(plan.error_dir, _ERROR_FILE.format(rank=os.environ.get("RANK", "?"))).write_text(f"{kind} {text}")
        sys.stderr.flush()
        os._exit(1)


def _worker(plan: Plan) -> list[dict[str, Any]] | None:
    """The elastic launcher's entry point (module level: it is pickled into each spawned process)."""
    got = run_rank(plan)
    return None if got is None else [dataclasses.asdict(r) for r in got]


def launch(plan: Plan, nproc: int) -> list[RankResult]:
    """`nproc` local ranks through torch's elastic launcher; every rank's result. A rank that fails or dies
    ends the others (the launcher stops the whole group) and is one RooflineError naming it."""
    import logging
    import multiprocessing
    import uuid

    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    nvls_env()
    # Ranks are forked from one server process that imported torch and this module once (multiprocessing's
    # forkserver): N ranks cost one import of torch instead of N (2-3 s each), and a second launch in the same
    # process (the tests) reuses the server. The server never touches CUDA, so each forked rank makes its own
    # context, as a spawned one would.
    multiprocessing.set_forkserver_preload(["torch", "torch.distributed", __name__])
    loud = [logging.getLogger(n) for n in ("torch.distributed.elastic", "torch.distributed.launcher",
                                           "torch.multiprocessing")]
    levels = [lg.level for lg in loud]
    for lg in loud:
        lg.setLevel(logging.CRITICAL)  # the agent's own warnings; what failed is said once, below
    with tempfile.TemporaryDirectory(prefix="roofline-collectives-") as tmp:
        plan = dataclasses.replace(plan, error_dir=tmp, progress=True)
        # rank 0 keeps its stderr (the progress line); every other stream goes to files in tmp
        redirects = {i: (Std.OUT if i == 0 else Std.ALL) for i in range(nproc)}
        config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id=uuid.uuid4().hex[:12],
                              rdzv_backend="c10d", rdzv_endpoint="localhost:0", max_restarts=0,
                              start_method="forkserver",
                              logs_specs=DefaultLogsSpecs(log_dir=str(Path(tmp) / "logs"), redirects=redirects))
        transient(f"collectives: starting {nproc} rank(s)")
        try:
            results = elastic_launch(config, _worker)(plan)
        except ChildFailedError as exc:
            raise RooflineError(_failure(exc, Path(tmp), nproc)) from None
        finally:
            transient("")
            for lg, level in zip(loud, levels, strict=True):
                lg.setLevel(level)
    first = results.get(0)
    if not first:
        raise RooflineError("rank 0 returned no measurements")
    return [RankResult(**r) for r in first]


def _failure(exc: Any, tmp: Path, nproc: int) -> str:
    """One line: the rank that failed with its own error, else the rank that died (the one that gave no reason
    while its peers lost their connection to it), with its exit status when the launcher saw it."""
    failures = {int(k): f for k, f in (getattr(exc, "failures", {}) or {}).items()}
    said = {}
    for p in tmp.glob("rank*.error"):
        kind, _, text = p.read_text().strip().partition(" ")
        said[int(p.stem.removeprefix("rank"))] = (kind, text)
    own = sorted((r, text) for r, (kind, text) in said.items() if kind == OWN)
    if own:
        rank, why = own[0]
        return f"rank {rank} of {nproc} failed: {why}; the other ranks were stopped, nothing written"
    silent = [r for r in range(nproc) if r not in said]
    died = [r for r in silent if r in failures] or silent
    if len(died) == 1 or (died and not said):
        rank = died[0]
        status = f" (exit status {failures[rank].exitcode})" if rank in failures else ""
        return f"rank {rank} of {nproc} died{status}; the other ranks were stopped, nothing written"
    if said:
        rank, (_, why) = sorted(said.items())[0]
        return f"rank {rank} of {nproc} lost a peer: {why}; the other ranks were stopped, nothing written"
    return f"the collectives run failed: {' '.join(str(exc).split())[:200]}"


def in_torchrun() -> bool:
    """Whether this process is a rank of a job someone else launched (torchrun sets RANK and WORLD_SIZE)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def build_records(results: list[RankResult], plan: Plan, target: Target) -> list[Record]:
    """One record per (collective, size): the model (on the spec's NVLink roof where it has one) timed with
    the per-sample mean over ranks, algbw and busbw, the link ceiling, the best busbw of the collective and its
    fitted alpha-beta model."""
    from roofline.analysis.commfit import fit_alpha_beta
    from roofline.ceilings.specs import link_bytes_per_s
    from roofline.core.dtypes import get_dtype
    from roofline.core.format import si
    from roofline.core.record import Timing, analytic_record, placed_record, with_time
    from roofline.core.stats import summarize
    from roofline.ops import make

    ranks = len(results)
    dt = get_dtype(plan.dtype)
    link = link_bytes_per_s(target.spec) if target.spec is not None else None
    records: list[Record] = []
    for i, case in enumerate(results[0].cases):
        op, nbytes = case["op"], case["bytes"]
        per_rank = [r.cases[i]["samples_s"] for r in results]
        samples = [sum(s) / ranks for s in zip(*per_rank, strict=True)]
        if ranks >= 2:
            rec = analytic_record(make(op, bytes=nbytes, ranks=ranks), dt, target.ceilings)
        else:  # one rank: no link traffic; NCCL copies the buffer in memory (or does nothing, in place)
            rec = placed_record(op=op, variant=None, params={"bytes": nbytes, "ranks": 1}, dtype=dt, flops=0.0,
                                bytes_read=nbytes, bytes_written=nbytes, ceilings=target.ceilings,
                                uses_tensor_cores=False, notes=["one rank: no link traffic, placed on memory; "
                                                                "busbw is algbw x 0 by nccl-tests' convention "
                                                                "(broadcast: x 1)"])
        stats = summarize(samples)
        t = stats.median
        timing = Timing(method="cuda-events" if plan.backend == "nccl" else "perf-counter+barrier",
                        warmup_calls=WARMUP_CALLS, reps=len(samples), stats=stats.to_dict(),
                        notes=[f"{case['calls']} calls per sample; a sample is the mean over {ranks} ranks"])
        rec = dataclasses.replace(with_time(rec, t), time_samples_s=samples, timing=timing)
        rec = dataclasses.replace(rec, collective={
            "backend": plan.backend, "ranks": ranks, "busbw_factor": busbw_factor(op, ranks),
            "algbw_bytes_per_s": algbw(nbytes, t), "busbw_bytes_per_s": busbw(op, nbytes, ranks, t),
            "link_bytes_per_s_one_way": link, "calls_per_sample": case["calls"],
            "rank_samples_s": per_rank, "hosts": sorted({r.host for r in results})})
        records.append(rec)
    return _with_fits(records, fit_alpha_beta, si)


def _with_fits(records: list[Record], fit_alpha_beta: Any, si: Any) -> list[Record]:
    """Each collective's best busbw and alpha-beta fit (over its sizes) added to its records."""
    out: list[Record] = []
    for op in dict.fromkeys(r.op for r in records):
        mine = [r for r in records if r.op == op]
        c0 = mine[0].collective or {}
        ranks = c0["ranks"]
        best = max((r.collective or {})["busbw_bytes_per_s"] for r in mine)
        fit = None
        if ranks >= 2 and len({r.params["bytes"] for r in mine}) >= 2:
            xs = [ring_bytes_per_gpu(op, r.params["bytes"], ranks) for r in mine]
            fit = fit_alpha_beta(xs, [r.time_s for r in mine])
        for j, r in enumerate(mine):
            c = {**(r.collective or {}), "best_busbw_bytes_per_s": best}
            if fit is not None:
                from roofline.ops.collectives import RING_STEPS

                knee = fit.knee_bytes
                c.update(alpha_s=fit.intercept_s / (RING_STEPS[op] * (ranks - 1)), beta_s_per_byte=fit.slope_s_per_byte,
                         fit_time_s=fit.time_s(ring_bytes_per_gpu(op, r.params["bytes"], ranks)),
                         fit_relative_error=fit.relative_errors[j],
                         fit_worst_relative_error=fit.worst_relative_error,
                         # the knee in nccl-tests' size S (x counts bytes sent per GPU = S x busbw factor)
                         knee_bytes=None if knee is None else knee / busbw_factor(op, ranks))
            out.append(dataclasses.replace(r, collective=c))
    return out


def document(results: list[RankResult], plan: Plan, target: Target) -> Document:
    """The results document rank 0 writes: the records and who took part."""
    doc = target.document(build_records(results, plan, target))
    doc.extra["collectives"] = {
        "backend": plan.backend, "world_size": len(results), "dtype": plan.dtype, "samples": plan.samples,
        "nodes": len({r.host for r in results}), NVLS: os.environ.get(NVLS),
        "ranks": [{"rank": r.rank, "host": r.host, "device": r.device} for r in results]}
    return doc


def check_plan(plan: Plan) -> None:
    """Bad input as one UsageError, before any process starts."""
    from roofline.core.dtypes import get_dtype

    for op in plan.ops:
        if op not in BUSBW_FACTORS:
            raise UsageError(f"unknown collective '{op}' (known: {', '.join(BUSBW_FACTORS)})")
    if plan.backend not in BACKENDS:
        raise UsageError(f"--backend must be one of {', '.join(BACKENDS)}, got {plan.backend!r}")
    if get_dtype(plan.dtype).name not in DTYPES:
        raise UsageError(f"--dtype {plan.dtype}: collectives run on {', '.join(DTYPES)} tensors")
    if plan.samples < 1:
        raise UsageError(f"--samples must be >= 1, got {plan.samples}")
