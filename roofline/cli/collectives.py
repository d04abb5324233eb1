"""`roofline collectives`: busbw of the collectives over every local GPU (NCCL) or CPU processes (gloo), one
process per rank started by torch's elastic launcher, or the ranks of a `torchrun` job (rank 0 writes)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from roofline.cli.common import check_outputs, note
from roofline.cli.results import save_and_print
from roofline.core.errors import RooflineError, UsageError
from roofline.ops.collectives import BUSBW_FACTORS

if TYPE_CHECKING:
    from roofline.core.document import Document
    from roofline.measuring.collectives import Plan
    from roofline.measuring.target import Target

# Sizes when none are given: nccl-tests' usual sweep on GPUs; on CPU processes (gloo through the host's
# memory, ~1-10 GB/s) 64 MiB already takes tens of ms a call.
GPU_SIZES = "1KiB:4GiB"
CPU_SIZES = "1KiB:64MiB"
# The most CPU processes (gloo ranks) `--nproc` starts on one machine: each imports torch (~0.3 GB, ~1 s) and gloo
# connects every pair of ranks, so 100,000 ran 92 s before "Too many open files"; a larger world is a torchrun
# job's, across machines.
MAX_CPU_RANKS = 64


def parse_sizes(text: str) -> tuple[int, ...]:
    """'1KiB:4GiB' (every power of two step from the first to the last, x2) or a list '1MiB,64MiB,1GiB'."""
    from roofline.analysis.occupancy import SIZE_UNITS, parse_bytes

    def one(part: str) -> int:
        n = parse_bytes(part.strip(), SIZE_UNITS)
        if n <= 0:
            raise UsageError(f"--sizes: a collective's size must be > 0 bytes, got {part.strip()!r}")
        return n

    if ":" in text:
        lo_text, _, hi_text = text.partition(":")
        lo, hi = one(lo_text), one(hi_text)
        if hi < lo:
            raise UsageError(f"--sizes {text}: the range ends below its start")
        steps = []
        while lo <= hi:
            steps.append(lo)
            lo *= 2
        return tuple(steps)
    sizes = tuple(one(p) for p in text.split(",") if p.strip())
    if not sizes:
        raise UsageError("--sizes: no size given")
    return sizes


def parse_ops(text: str | None) -> tuple[str, ...]:
    """'all' or a comma list of collectives."""
    if text is None or text.strip() == "all":
        return tuple(BUSBW_FACTORS)
    ops = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    for op in ops:
        if op not in BUSBW_FACTORS:
            raise UsageError(f"unknown collective '{op}' (known: {', '.join(BUSBW_FACTORS)})")
    return ops or tuple(BUSBW_FACTORS)


def _local_gpus() -> int:
    """GPUs this process may use (CUDA_VISIBLE_DEVICES respected); 0 without a GPU or a CUDA torch."""
    from roofline.measuring.device import detect_gpus

    if not detect_gpus():
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def collectives_cmd(
    ops: Annotated[str | None, typer.Option("--ops", help=f"Comma list of {', '.join(BUSBW_FACTORS)}, or all "
                                            "(the default).")] = None,
    sizes: Annotated[str | None, typer.Option("--sizes", help=f"A range LO:HI in x2 steps or a comma list, "
                                              f"KiB/MiB/GiB (default {GPU_SIZES} on GPUs, {CPU_SIZES} on "
                                              "CPU processes).")] = None,
    dtype: Annotated[str, typer.Option("--dtype", help="bf16, fp16, fp32 or fp64.")] = "bf16",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the results document here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print the results document.")] = False,
    nproc: Annotated[int | None, typer.Option("--nproc", help="Processes (ranks) on this machine (default: one "
                                              "per GPU; 2 CPU processes without a GPU).")] = None,
    backend: Annotated[str | None, typer.Option("--backend", help="nccl (GPUs, the default there) or gloo "
                                                "(CPU processes).")] = None,
    samples: Annotated[int, typer.Option("--samples", help="Timed samples per size.")] = 20,
    wide: Annotated[bool, typer.Option("--wide", help="Every column of the table.")] = False,
    inject_failure: Annotated[int | None, typer.Option("--inject-failure", hidden=True,
                                                       help="TEST ONLY: this rank dies after one size.")] = None,
) -> None:
    """Time the collectives from small to large messages: algbw, busbw (nccl-tests' conventions) against the
    link's bandwidth, and a fitted latency + bandwidth (alpha-beta) model. Inside a torchrun job every rank runs
    it and rank 0 writes the document."""
    from roofline.measuring.collectives import DEFAULT_CPU_PROCS, Plan, check_plan, in_torchrun

    chosen = parse_ops(ops)
    torchrun = in_torchrun()
    gpus = _local_gpus()
    if backend is None:
        backend = "nccl" if gpus else "gloo"
    if backend == "nccl" and not gpus:
        raise UsageError("--backend nccl: no CUDA GPU here (use --backend gloo for CPU processes)")
    plan = Plan(chosen, parse_sizes(sizes or (GPU_SIZES if backend == "nccl" else CPU_SIZES)), dtype, backend,
                samples, fail_rank=inject_failure)
    check_plan(plan)
    if torchrun:
        if nproc is not None:
            raise UsageError("--nproc: inside a torchrun job the ranks are torchrun's (--nproc-per-node)")
        _in_job(plan, output, force, json_, wide)
        return
    if nproc is None:
        nproc = gpus if backend == "nccl" else DEFAULT_CPU_PROCS
    if nproc < 1:
        raise UsageError(f"--nproc must be >= 1, got {nproc}")
    if backend == "gloo" and nproc > MAX_CPU_RANKS:
        raise UsageError(f"--nproc {nproc}: at most {MAX_CPU_RANKS} CPU processes on one machine (each imports torch "
                         "and gloo connects every pair); a larger world is a torchrun job across machines")
    if backend == "nccl" and nproc > gpus:
        raise UsageError(f"--nproc {nproc}: this machine has {gpus} GPU(s), one process each")
    check_outputs(force, files=(output,))
    from roofline.measuring.collectives import document, launch

    target = _target(backend)
    doc = document(launch(plan, nproc), plan, target)
    _finish(doc, output, force, json_, wide)


def _target(backend: str, local_rank: int = 0) -> Target:
    """The roof of the document: the spec of this rank's GPU (no CUDA context is made here), or the CPU."""
    from roofline.measuring.target import resolve_target

    if backend == "nccl":
        return resolve_target(device=f"cuda:{local_rank}", roof="datasheet")
    return resolve_target(device="cpu")


def _in_job(plan: Plan, output: Path | None, force: bool, json_: bool, wide: bool) -> None:
    """A rank of the user's torchrun job: measure, and on rank 0 write and print."""
    import os

    from roofline.measuring.collectives import document, run_rank

    if os.environ.get("RANK") == "0":
        check_outputs(force, files=(output,))
    try:
        results = run_rank(plan)
    except Exception as exc:  # torchrun stops the other ranks; this one says why in one line
        raise RooflineError(f"rank {os.environ.get('RANK')}: {' '.join(str(exc).split())[:300]}") from None
    if results is None:
        return
    doc = document(results, plan, _target(plan.backend, int(os.environ.get("LOCAL_RANK", "0"))))
    _finish(doc, output, force, json_, wide)


def _finish(doc: Document, output: Path | None, force: bool, json_: bool, wide: bool) -> None:
    from roofline.report.comm import collectives_table
    from roofline.report.text import show

    save_and_print(doc, output, force, json_)
    if not json_:
        show(collectives_table(doc, wide=wide), wide=wide)
        if output is not None:
            note(f"results written to {output}")
