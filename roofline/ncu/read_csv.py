"""Nsight Compute's raw CSV (`ncu --csv --page raw`) read into kernels with metrics in SI base units, and what
the package reads from a kernel: the counter metric list (`COUNTER_METRICS`, asked for by `ncu.run`), a
kernel's metrics as Counters (`counters_from_kernel`), its NVTX range, the calls between marker kernels.
`ncu.read_rep` reads a .ncu-rep into the same `NcuKernel`s.

The CSV has one header row of metric names, one row of units, then one row per profiled kernel; numbers may
carry thousands separators ("1,234") and a metric ncu could not collect reads "n/a". Lines before the header
(ncu's `==PROF==` log) are skipped.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from roofline.core.errors import RooflineError
from roofline.core.files import read_text
from roofline.core.record import Counters

DURATION = "gpu__time_duration.sum"
# The SM clock as ncu reports it: the average over SMs of cycles elapsed per second (its "SM Frequency"), and
# the busiest SM's (max), when the run asked for it. They differ where some SMs sat idle during the kernel.
SM_CLOCK = {"avg": "sm__cycles_elapsed.avg.per_second", "max": "sm__cycles_elapsed.max.per_second"}

# Unit -> factor to the SI base unit (seconds, Hz, bytes, plain counts).
_UNITS = {
    "": 1.0, "ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0,
    "second": 1.0, "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/second": 1.0, "cycle/nsecond": 1e9,
    "cycle/usecond": 1e6, "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "byte/second": 1.0, "kbyte/second": 1e3, "mbyte/second": 1e6, "gbyte/second": 1e9, "tbyte/second": 1e12,
    "cycle": 1.0, "inst": 1.0, "warp": 1.0, "%": 1.0,
    "byte/s": 1.0, "kbyte/s": 1e3, "mbyte/s": 1e6, "gbyte/s": 1e9, "tbyte/s": 1e12,
}
_TEXT_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Device",
                 "CC", "Block Size", "Grid Size", "Section Name", "Metric Name", "Demangled Name", "Function Name"}


@dataclass(frozen=True)
class NcuKernel:
    """One profiled kernel: its ID (launch order), name, NVTX range (if any) and metrics in SI units."""

    id: int
    name: str
    metrics: dict[str, float | None] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return self.metrics.get(DURATION) or 0.0


def unit_factor(unit: str) -> float:
    """The factor that turns a value in `unit` into SI base units. Units without a prefix to remove
    (sector, request, inst/cycle, ...) keep their values as printed."""
    return _UNITS.get(unit.strip().lower(), 1.0)


def parse_number(text: str) -> float | None:
    """'1,234.5' -> 1234.5; 'n/a' or '' -> None."""
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_raw_csv(lines: Iterable[str], where: str = "ncu CSV") -> list[NcuKernel]:
    """Kernels from the text of `ncu --csv --page raw`, in launch order."""
    rows = [line for line in lines if line.startswith('"')]
    if not rows:
        raise RooflineError(f"{where}: no CSV rows (expected the output of `ncu --csv --page raw`)")
    if not rows[-1].rstrip("\r\n").endswith('"'):  # every field of ncu's CSV is quoted: a cut file ends inside one
        raise RooflineError(f"{where}: truncated: its last line ends inside a field")
    reader = csv.DictReader(rows)
    if not reader.fieldnames or "ID" not in reader.fieldnames or "Kernel Name" not in reader.fieldnames:
        raise RooflineError(f"{where}: not an Nsight Compute raw CSV (no 'ID' and 'Kernel Name' columns)")
    units: dict[str, str] = {}
    kernels: list[NcuKernel] = []
    for r in reader:
        if None in r.values():
            raise RooflineError(f"{where}: truncated: a row has fewer columns than the header (line "
                                f"{reader.line_num})")
        if not r.get("ID"):
            units = {k: v for k, v in r.items() if k and v}
            continue
        try:
            kid = int(r["ID"])
        except ValueError:
            raise RooflineError(f"{where}: kernel ID {r['ID']!r} is not an integer") from None
        metrics: dict[str, float | None] = {}
        text: dict[str, str] = {}
        for k, v in r.items():
            if k is None or v is None:
                continue
            if k in _TEXT_COLUMNS or (k not in units and parse_number(v) is None and v.strip() not in ("n/a", "")):
                text[k] = v
                continue
            n = parse_number(v)
            metrics[k] = None if n is None else n * unit_factor(units.get(k, ""))
        kernels.append(NcuKernel(kid, r["Kernel Name"], metrics, text))
    return sorted(kernels, key=lambda k: k.id)


def read_raw_csv(path: str | os.PathLike[str]) -> list[NcuKernel]:
    p = Path(path)
    try:
        text = read_text(p, "CSV export of an Nsight Compute report", RooflineError, missing="no such file", newline="")
    except UnicodeDecodeError as exc:
        raise RooflineError(f"{p}: cannot read: {exc}") from None
    return parse_raw_csv(io.StringIO(text, newline=""), str(p))  # read as the file was: CSV keeps its \r\n


@dataclass(frozen=True)
class Call:
    """The kernels of one operator call between two marker kernels: summed duration, duration-weighted
    SM clocks (average and busiest SM), kernel count."""

    time_s: float
    kernels: int
    sm_clock_mhz: float
    sm_clock_max_mhz: float
    kernel_times_s: tuple[float, ...] = ()  # each kernel's duration, in launch order


def split_groups(kernels: Sequence[NcuKernel], marker: str) -> list[list[NcuKernel]]:
    """The kernels between marker kernels (names containing `marker`), one list per call; kernels before the
    first marker are not part of any call, and a call is closed by the next marker."""
    groups: list[list[NcuKernel]] = []
    group: list[NcuKernel] | None = None
    for k in kernels:
        if marker in k.name:
            if group is not None:
                groups.append(group)
            group = []
        elif group is not None:
            group.append(k)
    return groups


def split_calls(kernels: Sequence[NcuKernel], marker: str) -> list[Call]:
    """The calls between marker kernels (`split_groups`), each summed into a Call."""
    return [_call(g) for g in split_groups(kernels, marker)]


def _call(group: Sequence[NcuKernel]) -> Call:
    total = sum(k.duration_s for k in group)

    def clock(metric: str) -> float:
        cycles = sum(k.duration_s * (k.metrics.get(metric) or 0.0) for k in group)
        return cycles / total / 1e6 if total else 0.0

    return Call(total, len(group), clock(SM_CLOCK["avg"]), clock(SM_CLOCK["max"]),
                tuple(k.duration_s for k in group))


# ---------------------------------------------------------------- the counters of `--counters` and import-ncu
# The metric list `--counters` asks ncu for, each with why. Few on purpose: every metric group costs ncu a
# replay pass, and this set (bytes per level, FLOPs per pipe, time, clock) is what the hierarchical roofline
# needs. Names are Hopper's (`ncu --query-metrics --chip gh100`); `ncu.run` drops any a chip lacks.
DRAM_READ, DRAM_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
L2_BYTES, L1_BYTES = "lts__t_bytes.sum", "l1tex__t_bytes.sum"
# The L2 sectors the SMs wrote: every byte the kernel stores passes the L2 (a write-back cache) whether or not it
# reaches DRAM before the kernel ends, so unlike DRAM writes this does not depend on what else the L2 holds.
# On the H200 it equals the model's minimum writes to four digits on every elementwise kernel of kernels-h200.
STORED, SECTOR_BYTES = "lts__t_sectors_srcunit_tex_op_write.sum", 32  # an L2 sector is 32 bytes
# Tensor-pipe operations per source precision: ncu counts them as FLOPs (2 per multiply-add): on the H200 the
# bf16 GEMM 4096^3 read 137,438,953,472 = 2 x 4096^3 (tests/data/ncu_smoke_roofline.csv).
TENSOR = {"bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "fp16": "sm__ops_path_tensor_src_fp16.sum",
          "tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum", "fp8": "sm__ops_path_tensor_src_fp8.sum",
          "fp64": "sm__ops_path_tensor_src_fp64.sum", "int8": "sm__ops_path_tensor_src_int8.sum"}
# CUDA-core thread instructions -> FLOPs per instruction, as ncu's own derived metrics weight them
# (derived__smsp__..._ffma_pred_on_x2, _hfma_pred_on_x4, _hadd_pred_on_x2): an FMA is 2 FLOPs, and a half
# instruction works on a pair (HFMA2: 4, HADD2/HMUL2: 2).
_INST = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
SCALAR = {"fp32": {_INST.format("ffma"): 2, _INST.format("fadd"): 1, _INST.format("fmul"): 1},
          "fp64": {_INST.format("dfma"): 2, _INST.format("dadd"): 1, _INST.format("dmul"): 1},
          "fp16": {_INST.format("hfma"): 4, _INST.format("hadd"): 2, _INST.format("hmul"): 2}}
COUNTER_METRICS: dict[str, str] = {
    DURATION: "the kernel's duration as ncu timed it (one replay)",
    SM_CLOCK["avg"]: "the SM clock the kernel ran at (ncu's SM Frequency), to compare times across clocks",
    DRAM_READ: "bytes read from HBM: against the model's minimum, the excess traffic",
    DRAM_WRITE: "bytes written to HBM (an intermediate written and read back shows here)",
    L2_BYTES: "bytes through L2: the L2 point of the hierarchical roofline",
    L1_BYTES: "bytes through L1/TEX: far above L2 means uncoalesced access or poor reuse",
    STORED: "L2 sectors the SMs wrote (x32 bytes): every byte stored, in DRAM yet or still in the L2",
    **{m: f"{p} tensor-pipe FLOPs (2 per multiply-add)" for p, m in TENSOR.items()},
    **{m: f"{p} CUDA-core instructions (x{w} FLOPs each)" for p, ws in SCALAR.items() for m, w in ws.items()},
}
# The DRAM rate that `--set roofline` and the SpeedOfLight section report in place of the byte sums: times the
# duration it gives the bytes (to ncu's 6 printed digits) when dram__bytes_read/write.sum were not collected.
DRAM_RATE = "dram__bytes.sum.per_second"


def counters_from_kernel(kernel: NcuKernel, source: str | None = None) -> Counters:
    """One kernel's metrics as Counters (SI units; a metric not collected stays None)."""
    m = kernel.metrics
    read, written = m.get(DRAM_READ), m.get(DRAM_WRITE)
    dram = read + written if read is not None and written is not None else None
    rate, duration = m.get(DRAM_RATE), m.get(DURATION)
    if dram is None and rate is not None and duration:
        dram = rate * duration
    tensor = {p: v for p, name in TENSOR.items() if (v := m.get(name)) is not None}

    def scalar(precision: str) -> float | None:
        got = [(m.get(name), w) for name, w in SCALAR[precision].items()]
        return sum(v * w for v, w in got if v is not None) if any(v is not None for v, _ in got) else None

    fp = {p: scalar(p) for p in SCALAR}
    parts = [*tensor.values(), *(v for v in fp.values() if v is not None)]
    clock = m.get(SM_CLOCK["avg"])
    stored = m.get(STORED)
    return Counters(source=source, kernels=1, duration_s=m.get(DURATION), sm_clock_mhz=clock / 1e6 if clock else None,
                    dram_bytes_read=read, dram_bytes_written=written, dram_bytes=dram,
                    stored_bytes=stored * SECTOR_BYTES if stored is not None else None, l2_bytes=m.get(L2_BYTES),
                    l1_bytes=m.get(L1_BYTES), tensor_flops=tensor or None, fp32_flops=fp["fp32"],
                    fp64_flops=fp["fp64"], fp16_flops=fp["fp16"], flops=sum(parts) if parts else None)


def nvtx_range(kernel: NcuKernel) -> str | None:
    """The NVTX range the kernel ran in, when the report recorded NVTX (`ncu --nvtx`): from the first non-empty
    text column whose name mentions NVTX or a push/pop range. ncu's raw CSV writes the thread's open ranges
    there as `<thread id>  "<domain>:<range>:<payload, colour, message fields>" ...`, outermost first; the
    innermost range's name is returned, as `ncu.read_rep` reads it from a .ncu-rep."""
    for k, v in kernel.text.items():
        if ("nvtx" in k.lower() or "push/pop" in k.lower()) and v.strip():
            quoted = _QUOTED.findall(v)
            if not quoted:
                return v.strip()
            fields = quoted[-1].split(":")
            return fields[1] if len(fields) > 1 and fields[1] else quoted[-1]
    return None


_QUOTED = re.compile(r'"([^"]*)"')

