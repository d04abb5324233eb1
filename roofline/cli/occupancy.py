"""`roofline occupancy`: the theoretical occupancy of a launch configuration, and sweeps of one of its inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, cast

import typer

from roofline.cli.common import at_least, check_choice, check_outputs, note, out
from roofline.core.errors import UsageError

if TYPE_CHECKING:
    from roofline.analysis.occupancy import SweepKind


def occupancy_cmd(
    threads: Annotated[int, typer.Option("--threads-per-block", "-T", parser=at_least("--threads-per-block"),
                                         help="Threads per block.")] = 256,
    registers: Annotated[int, typer.Option("--registers-per-thread", "-R", parser=at_least("--registers-per-thread", 0),
                                           help="Registers per thread (ptxas -v).")] = 32,
    smem: Annotated[str, typer.Option("--shared-memory-per-block", "-S", help="Shared memory per block (static + "
                                      "dynamic): bytes, 48KB or 100KiB (KB = KiB = 1024, as CUDA counts).")] = "0",
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="Spec id or alias (default: the local GPU).")] = None,
    carveout: Annotated[Optional[int], typer.Option("--carveout", parser=at_least("--carveout", 0),
                                                    help="Carve-out preference, KiB (default: none; the API then "
                                                    "counts with the largest).")] = None,
    sweep: Annotated[Optional[str], typer.Option("--sweep", help="registers, shared-memory or threads.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="With --sweep: the curve (.png/.svg/.pdf).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --plot.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Theoretical occupancy of a launch configuration, with the arithmetic shown
    (as cudaOccupancyMaxActiveBlocksPerMultiprocessor computes it)."""
    from roofline.analysis.occupancy import SWEEP_KINDS, occupancy
    from roofline.analysis.occupancy import sweep as run_sweep
    from roofline.measuring.target import resolve_target
    from roofline.report.occupancy import plot_sweep, render_occupancy, render_sweep
    from roofline.report.text import show

    check_choice("--sweep", sweep, tuple(SWEEP_KINDS))
    if plot is not None and sweep is None:
        raise UsageError("--plot draws a sweep: add --sweep registers|shared-memory|threads")
    if not json_:  # --json prints the numbers only: no chart is drawn
        check_outputs(force, charts=(plot,))
    spec = resolve_target(gpu=gpu, time=False).spec
    if spec is None:
        raise UsageError("no GPU here: pass --gpu ID")
    o = occupancy(spec, threads, registers, smem, carveout)  # the text: a size too large is named as given
    s = o.shared_memory_per_block_bytes
    # --sweep checked above: one of SWEEP_KINDS
    points = run_sweep(spec, cast("SweepKind", sweep), threads, registers, s, carveout) if sweep else []
    if json_:
        out(json.dumps({"occupancy": o.to_dict(), "sweep": [{k: v for k, v in p.to_dict().items()
                        if k not in ("working", "reasons")} for p in points]}, indent=2))
        return
    show(render_occupancy(o), *([render_sweep(points)] if points else []))
    if plot is not None:
        note(f"chart written to {plot_sweep(points, plot, mark=o)}")
