"""Nsight Compute run: find `ncu`, cut the metric list to what the chip offers, run ncu on one of the target
programs (`ncu.target`), and read its output; for `analyze/run --counters`, the counters of each operator.

`--counters` runs the same operators once more in one child process (`ncu --profile-from-start off --metrics
... --csv --page raw python -m roofline.ncu.target_ops PLAN.json`), which profiles each operator's kernels for
ONE call, between marker kernels; its CSV is split at the markers and each call's kernels summed into
`record.counters` (`core.counters`). ncu replays each kernel once per metric pass, so this costs seconds per
operator: the progress line says so. The metric list (`ncu.read_csv.COUNTER_METRICS`) is intersected with what
the chip offers (`ncu --query-metrics`, cached per ncu version and GPU) so an unknown name never kills the run.
`ncu.profile` runs `ncu.target_profile` through the same `run_program`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from roofline.core.counters import combined, with_counters
from roofline.core.errors import RooflineError, UsageError
from roofline.core.progress import QUIET, Reporter
from roofline.core.record import Record
from roofline.ncu import target_ops
from roofline.ncu.read_csv import COUNTER_METRICS, NcuKernel, counters_from_kernel, parse_raw_csv, split_groups
from roofline.ncu.target import Program

NO_NCU = ("--counters needs Nsight Compute's `ncu` on PATH (it is in the CUDA toolkit, or "
          "https://developer.nvidia.com/nsight-compute)")
NOT_CUDA = "--counters needs the operators timed on an NVIDIA GPU (Nsight Compute profiles CUDA kernels)"
SLOW = "Nsight Compute replays each kernel per metric pass: seconds per operator"
# ncu's own start-up and the child's torch import and warm-up take tens of seconds on a suite; a hung
# profile (a driver without profiling permission that waits) is stopped after this long.
TIMEOUT_S = 1800.0


def find_ncu() -> str:
    """The `ncu` on PATH, or a UsageError (exit 2) before any work."""
    path = shutil.which("ncu")
    if path is None:
        raise UsageError(NO_NCU)
    return path


def require_cuda(time_device: str | None) -> None:
    """A UsageError (exit 2) before the timing starts unless the work is timed on a CUDA device: the only
    kernels Nsight Compute profiles."""
    if not (time_device or "").startswith("cuda"):
        raise UsageError(NOT_CUDA)


def base_name(metric: str) -> str:
    """'dram__bytes_read.sum' -> 'dram__bytes_read' (the name `--query-metrics` lists)."""
    return metric.split(".", 1)[0]


def parse_query_metrics(text: str) -> set[str]:
    """The metric base names in the table `ncu --query-metrics` prints (first column; headers, rules and
    wrapped description lines skipped). A name may carry a 'Section.Config.' prefix: the part after the last
    dot is the metric."""
    names = set()
    for line in text.splitlines():
        first = line.split(" ", 1)[0].strip()
        if "__" in first:
            names.add(first.rsplit(".", 1)[-1] if "." in first else first)
    return names


def usable_metrics(available: set[str] | None) -> list[str]:
    """COUNTER_METRICS that the chip offers (all of them when the query gave nothing to go on)."""
    if not available:
        return list(COUNTER_METRICS)
    return [m for m in COUNTER_METRICS if base_name(m) in available]


def _cache_path(ncu: str, gpu_name: str) -> Path:
    from roofline.ceilings.store import cache_dir

    version = subprocess.run([ncu, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    key = "".join(c if c.isalnum() else "_" for c in f"{version.splitlines()[-1] if version else ''}_{gpu_name}")
    return cache_dir() / "ncu_metrics" / f"{key[-120:]}.txt"


def available_metrics(ncu: str, gpu_name: str, chip: str | None = None) -> set[str]:
    """The metric names this GPU offers, from `ncu --query-metrics [--chip CHIP]`, cached on disk."""
    from roofline.core.files import atomic_write

    path = _cache_path(ncu, gpu_name)
    if path.is_file():
        return parse_query_metrics(path.read_text())
    cmd = [ncu, "--query-metrics", *(["--chip", chip] if chip else [])]
    got = subprocess.run(cmd, capture_output=True, text=True, check=False)
    names = parse_query_metrics(got.stdout) if got.returncode == 0 else set()
    if names:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, got.stdout)
    return names


# How ncu runs a target program, beside the profiled range and the metric list:
# - the GPU's clocks as they are (`--clock-control none`), as roofline times kernels; ncu's default locks
#   them to base, which would give another time and clock than the record's;
# - values in base units (`--print-units base`): by default the CSV scales them ("176.86 Mbyte") and keeps
#   six digits, which loses bytes; in base units a byte count is exact;
# - caches flushed before each replay pass (ncu's default `--cache-control all`), as roofline flushes the L2
#   before each sample: DRAM bytes are those of a cold call.
NCU_OPTIONS = ("--clock-control", "none", "--print-units", "base")


def ncu_command(ncu: str, metrics: Sequence[str], program: Program, plan: Path) -> list[str]:
    """ncu on a target program: only its profiled range, the common options and the program's own, the metric
    list, raw CSV on stdout."""
    return [ncu, "--profile-from-start", "off", *NCU_OPTIONS, *program.ncu_options, "--metrics", ",".join(metrics),
            "--csv", "--page", "raw", sys.executable, "-m", program.module, str(plan)]


def release_gpu_memory() -> None:
    """Give this process's cached GPU memory back to the driver before ncu's child starts: the child then has
    the GPU's memory as a plain ncu run would (the timing pass's cached blocks, up to tens of GB on a suite,
    would shrink what a large operator can allocate, and put its data at other pages, which moves the L2 and
    DRAM-write counters: docs/counters.md "What repeats")."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return
    import gc

    gc.collect()
    torch.cuda.empty_cache()


def run_ncu(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run an ncu command line with this process's imports visible to the child (PYTHONPATH), its output
    captured, after this process's cached GPU memory is released; one RooflineError line past TIMEOUT_S."""
    from roofline.core.process import child_env

    release_gpu_memory()
    try:
        return subprocess.run(list(command), capture_output=True, text=True, check=False, timeout=TIMEOUT_S,
                              env=child_env())
    except subprocess.TimeoutExpired:
        raise RooflineError(f"ncu did not finish in {TIMEOUT_S:.0f} s") from None


def run_program(program: Program, write_plan: Callable[[Path], None], what: str, ncu: str, gpu_name: str,
                reporter: Reporter = QUIET) -> subprocess.CompletedProcess[str]:
    """One ncu run of `program` with the metrics this GPU offers: its plan written by `write_plan` into a
    temporary directory (gone after the run); `what` says on the progress line what is profiled."""
    reporter.status(f"ncu: querying the metrics this GPU offers ({SLOW})")
    metrics = usable_metrics(available_metrics(ncu, gpu_name))
    with tempfile.TemporaryDirectory(prefix="roofline-ncu-") as tmp:
        plan = Path(tmp) / "plan.json"
        write_plan(plan)
        reporter.status(f"ncu: {what}, {len(metrics)} metrics ({SLOW})")
        return run_ncu(ncu_command(ncu, metrics, program, plan))


def run_counters(ops: Sequence[tuple[Any, Any]], ncu: str, gpu_name: str, reporter: Reporter = QUIET) -> list[Any]:
    """One Counters per (operator, dtype), in order, from one ncu run of them all (`ncu.target_ops`)."""
    got = run_program(target_ops.PROGRAM, lambda plan: target_ops.write_plan(ops, plan),
                      f"profiling {len(ops)} operator(s) once each", ncu, gpu_name, reporter)
    return counters_from_output(got.stdout, got.stderr, got.returncode, len(ops), ncu)


def kernels_from_output(stdout: str, stderr: str, returncode: int) -> list[NcuKernel]:
    """The kernels in ncu's CSV output; a failed run, or output with no CSV, is one RooflineError line (with
    ncu's last error line)."""
    last = next((ln for ln in reversed(stderr.splitlines() + stdout.splitlines()) if "ERR" in ln or "rror" in ln),
                "")
    if returncode != 0:
        raise RooflineError(f"ncu failed (exit status {returncode}){': ' + last.strip() if last else ''}")
    try:
        return parse_raw_csv(stdout.splitlines(), "ncu output")
    except RooflineError as exc:
        raise RooflineError(f"{exc}{'; ' + last.strip() if last else ''}") from None


def counters_from_output(stdout: str, stderr: str, returncode: int, expected: int, source: str) -> list[Any]:
    """The Counters of each call in ncu's CSV output; a failed or short run is one RooflineError line."""
    kernels = kernels_from_output(stdout, stderr, returncode)
    groups = split_groups(kernels, target_ops.MARKER)
    if len(groups) != expected:
        raise RooflineError(f"ncu profiled {len(groups)} calls for {expected} operators (kernels: {len(kernels)})")
    return [combined([counters_from_kernel(k) for k in g], source=f"ncu ({source})") if g else None
            for g in groups]


def attach_counters(records: Sequence[Record], ops: Sequence[tuple[Any, Any]], reporter: Reporter = QUIET,
                    ncu: str | None = None, gpu_name: str = "") -> list[Record]:
    """The records with the counters of their operators (one ncu run), derived against each record's model."""
    found = run_counters(ops, ncu or find_ncu(), gpu_name, reporter)
    return [with_counters(r, c) if c is not None else r for r, c in zip(records, found, strict=True)]
