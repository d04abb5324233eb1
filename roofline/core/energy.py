"""Energy on the roofline, pure arithmetic: a cumulative energy counter read at two edges, joules per call and
their static and dynamic shares, the energy model fitted from calibration kernels, and the power roof.

The model (the "roofline model of energy", Choi et al., IPDPS 2013) is linear in the rates a kernel sustains:

    P = P_static + sum over pipes of e_pipe * FLOP/s + e_read * read B/s + e_write * written B/s
        + e_mix * min(read, written) B/s + P_op,   at most P_cap

with e in joules per FLOP (per compute pipe) and per HBM byte; e_mix is what a kernel that both reads and
writes HBM draws beyond the sum of the two (the read-write turnaround); P_op, for the catalog operators the
calibration runs a kernel of (`measuring.energy_calibrate.OP_CALIBRATION`), the watts that operator's kernels
draw beyond the rest (SM work that is neither FLOPs on a counted pipe nor HBM bytes), the mean over the shapes it
is measured at. A call's modelled power never exceeds the enforced cap P_cap (the board's controller lowers the
clock instead; `EnergyModel.energy_j`). The form was chosen by
cross-validation on the H200's recorded readings (scripts/experiments/energy_model_forms.py, docs/measurements.md).

Under the board's power cap P_cap a kernel of intensity I (FLOP per byte) can sustain at most
(P_cap - P_static) / (e_pipe + e_byte / I) FLOP/s: the power roof, a third ceiling beside the compute and
memory roofs. Nothing here reads a device: `measuring.energy` does, through a seam these functions are tested
behind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.stats import solve_linear

# nvmlDeviceGetTotalEnergyConsumption is an unsigned long long of millijoules since the driver loaded: it wraps
# at 2**64 (never in practice: 5.8e8 years at 1 kW), but a reader must not turn a wrap into a negative energy.
COUNTER_MODULUS = 2**64
# A counter that went backwards by less than this part of its range was reset (driver reloaded), not wrapped:
# a wrap starts near the top of the range.
WRAP_HALF = COUNTER_MODULUS // 2
PJ = 1e-12


class EnergyError(RooflineError):
    """A window whose counter readings cannot give an energy (reset, not advancing): never reported as 0 J."""


def counter_delta(start: int, end: int, modulus: int = COUNTER_MODULUS) -> int:
    """end - start of a cumulative counter that wraps at `modulus`, across at most one wrap; a counter that went
    back from low in its range was reset, and raises EnergyError."""
    if end >= start:
        return end - start
    if start < modulus // 2:
        raise EnergyError(f"the energy counter went back from {start} to {end} mJ (reset, not wrapped): "
                          "measure again")
    return end + modulus - start


@dataclass(frozen=True)
class CounterWindow:
    """What the counter said over one window: its reading at the first and the last change seen (host seconds,
    millijoules), every change between (for the update period) and the calls run meanwhile."""

    edges: tuple[tuple[float, int], ...]  # (seconds, mJ) at each change of the counter, first to last
    modulus: int = COUNTER_MODULUS

    def __post_init__(self) -> None:
        if len(self.edges) < 2:
            raise EnergyError("an energy window needs two changes of the counter")

    @property
    def seconds(self) -> float:
        return self.edges[-1][0] - self.edges[0][0]

    @property
    def joules(self) -> float:
        return counter_delta(self.edges[0][1], self.edges[-1][1], self.modulus) / 1e3

    @property
    def power_w(self) -> float:
        if self.seconds <= 0 or self.joules <= 0:
            raise EnergyError("the energy counter did not advance over the window: no energy can be given")
        return self.joules / self.seconds

    @property
    def updates(self) -> int:
        return len(self.edges) - 1

    def update_periods_s(self) -> list[float]:
        return [b[0] - a[0] for a, b in pairwise(self.edges)]

    def steps_mj(self) -> list[int]:
        return [counter_delta(a[1], b[1], self.modulus) for a, b in pairwise(self.edges)]

    def counter_figures(self) -> dict[str, Any]:
        """The counter's update period (median spacing of its changes and their spread) and resolution (its unit,
        1 mJ, and the least step seen): what makes a window long enough."""
        periods = sorted(self.update_periods_s())
        steps = sorted(self.steps_mj())
        return {"updates": self.updates, "update_period_s": periods[len(periods) // 2],
                "update_period_min_s": periods[0], "update_period_max_s": periods[-1],
                "resolution_mj": 1, "least_step_mj": steps[0]}


def energy_fields(window: CounterWindow, per_call_s: float, flops: float | None, nbytes: float | None,
                  static_w: float | None, static_source: str | None = None) -> dict[str, Any]:
    """A record's `energy`: joules per call (the window's average power x the time one call takes back to back),
    the power, FLOP and bytes per joule, and the static share (static watts x time) beside the dynamic one;
    `samples_j`, the joules per call of each counter update (what `check --metric energy` tests: each update's
    edges wander by a few ms of its ~100 ms, so one sample spreads a few percent where the window's mean does not).
    NB: the GPU board's energy (NVML), not the host's; a call's share of the window is its time's share."""
    if per_call_s <= 0:
        raise EnergyError("an energy per call needs a positive time per call")
    power = window.power_w
    j = power * per_call_s
    out: dict[str, Any] = {"energy_j": j, "power_w": power,
                           "flops_per_j": flops / j if flops is not None else None,
                           "bytes_per_j": nbytes / j if nbytes is not None else None}
    if static_w is not None:
        static = min(static_w, power) * per_call_s
        out |= {"static_j": static, "dynamic_j": j - static, "static_w": static_w, "static_source": static_source}
    samples = [step / 1e3 / dt * per_call_s for step, dt in zip(window.steps_mj(), window.update_periods_s(),
                                                                  strict=True) if dt > 0]
    out |= {"per_call_s": per_call_s, "window_s": window.seconds, "calls": window.seconds / per_call_s,
            "samples_j": samples, "counter": window.counter_figures()}
    return out


# The pipe whose figure a pipe without its own falls back on: the same units (fp16 and bf16 share the tensor
# cores' datapath; tf32 is the tensor cores at a narrower input), plain half-precision arithmetic runs on the
# CUDA cores the FP32 FMA chains measure.
PIPE_FALLBACK = {"fp16_tensor_dense_tflops": "bf16_tensor_dense_tflops",
                 "tf32_tensor_dense_tflops": "bf16_tensor_dense_tflops",
                 "int8_tensor_dense_tops": "fp8_tensor_dense_tflops",
                 "fp16_dense_tflops": "fp32_dense_tflops", "bf16_dense_tflops": "fp32_dense_tflops",
                 "fp64_dense_tflops": "fp32_dense_tflops"}
# The share of HBM bytes that are reads where only a total is known (the power roof at an intensity): a binary
# elementwise op reads two bytes for each it writes, a GEMM reads nearly all.
DEFAULT_READ_SHARE = 2 / 3
# The fit's terms beside the pipes: watts while any kernel runs (clocks, SM front ends, the memory system
# awake), pJ per HBM byte read and written, and pJ per byte of the read-write overlap min(read, written).
ACTIVE, READ, WRITE, MIX = "active", "hbm_read", "hbm_write", "hbm_mix"
# The model forms the fit knows: the terms fitted beside the pipes'.
ENERGY_FORMS: dict[str, tuple[str, ...]] = {
    "flop+rw+mix": (READ, WRITE, MIX),
    "active+flop+rw": (ACTIVE, READ, WRITE),
    "flop+rw": (READ, WRITE),
}
# The default form: on the H200's recorded readings, fitted on the 9 calibration kernels, it
# predicts 16 of 40 suite readings within 10% against 12 of 40 for "active+flop+rw" (median |error| 15.1%
# against 14.6%), 20 of 40 against 15 leaving one suite kernel out, the power roof's clock of a long bf16 GEMM
# -1.9% against +3.8%, and its calibration columns are well conditioned (2 against 67): the HBM kernels all run
# near one bandwidth, so an `active` term cannot be told from the per-byte ones
# (scripts/experiments/energy_model_forms.py).
DEFAULT_FORM = "flop+rw+mix"


@dataclass(frozen=True)
class CalibrationPoint:
    """One calibration kernel run back to back: its rates (FLOP/s by compute pipe, HBM bytes read and written
    per second), the board's average power and the SM clock while it ran."""

    name: str
    flops_per_s: dict[str, float]
    read_bytes_per_s: float
    write_bytes_per_s: float
    power_w: float
    sm_mhz: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "flops_per_s": dict(self.flops_per_s), "read_bytes_per_s": self.read_bytes_per_s,
                "write_bytes_per_s": self.write_bytes_per_s, "power_w": self.power_w, "sm_mhz": self.sm_mhz}


@dataclass(frozen=True)
class EnergyModel:
    """The machine's energy model (`roofline calibrate energy`): pJ per FLOP per compute pipe (the ceilings'
    pipe keys), pJ per HBM byte read and written, the watts of any kernel running (`active_w`) above the static
    watts (the board ready, no kernel running), the deep-idle watts, the enforced power cap, the clocks, and
    the fit's points and relative RMS residual. `op_w`: catalog operator -> the watts its kernels draw beyond
    what its FLOPs and bytes give (SM work neither term sees: GELU's erf polynomial, a reduction's shuffles and
    exponentials), the mean over calibration shapes of its own, measured after the fit (`op_watts`); an operator
    without one gets 0."""

    pj_per_flop: dict[str, float]
    pj_per_byte_read: float
    pj_per_byte_written: float
    static_w: float
    power_cap_w: float
    active_w: float = 0.0
    pj_per_byte_mixed: float = 0.0  # per byte of min(read, written): the read-write turnaround
    idle_w: float | None = None
    sm_clock_mhz: float | None = None  # median SM clock of the calibration kernels (their energy is at it)
    max_sm_mhz: float | None = None
    residual: float | None = None
    points: tuple[CalibrationPoint, ...] = field(default_factory=tuple)
    op_w: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        figures = [*self.pj_per_flop.values(), self.pj_per_byte_read, self.pj_per_byte_written, self.active_w,
                   self.pj_per_byte_mixed]
        if any(not math.isfinite(v) or v < 0 for v in figures) or not self.static_w > 0 or \
                not self.power_cap_w > self.static_w + self.active_w:
            raise ValueError("an energy model needs non-negative figures and 0 < static + active W < power cap")
        # an operator's watts may be negative (its kernels draw less than the calibration streams' bytes did),
        # never so negative that a running kernel would draw less than the static watts
        if any(not math.isfinite(w) or abs(w) >= self.power_cap_w or self.static_w + w <= 0
               for w in self.op_w.values()):
            raise ValueError("an operator's watts must be finite, under the power cap, and leave static + them > 0")

    def to_dict(self) -> dict[str, Any]:
        return {"pj_per_flop": dict(self.pj_per_flop), "pj_per_byte_read": self.pj_per_byte_read,
                "pj_per_byte_written": self.pj_per_byte_written, "static_w": self.static_w,
                "power_cap_w": self.power_cap_w, "active_w": self.active_w,
                "pj_per_byte_mixed": self.pj_per_byte_mixed, "idle_w": self.idle_w,
                "sm_clock_mhz": self.sm_clock_mhz, "max_sm_mhz": self.max_sm_mhz, "residual": self.residual,
                "points": [p.to_dict() for p in self.points], "op_w": dict(self.op_w)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EnergyModel:
        """Read back (a malformed entry raises ValueError, KeyError or TypeError)."""
        return cls(pj_per_flop={str(k): float(v) for k, v in d["pj_per_flop"].items()},
                   pj_per_byte_read=float(d["pj_per_byte_read"]), pj_per_byte_written=float(d["pj_per_byte_written"]),
                   static_w=float(d["static_w"]), power_cap_w=float(d["power_cap_w"]),
                   active_w=float(d.get("active_w", 0.0)),
                   pj_per_byte_mixed=float(d.get("pj_per_byte_mixed", 0.0)), idle_w=d.get("idle_w"),
                   sm_clock_mhz=d.get("sm_clock_mhz"),
                   max_sm_mhz=d.get("max_sm_mhz"), residual=d.get("residual"),
                   points=tuple(CalibrationPoint(**p) for p in d.get("points", ())),
                   op_w={str(k): float(v) for k, v in d.get("op_w", {}).items()})

    def pipe_figure(self, pipe: str) -> float | None:
        """pJ per FLOP of `pipe`, or of the pipe it falls back on (PIPE_FALLBACK); None when neither is fitted."""
        v = self.pj_per_flop.get(pipe)
        if v is None and pipe in PIPE_FALLBACK:
            v = self.pj_per_flop.get(PIPE_FALLBACK[pipe])
        return v

    def j_per_flop(self, pipe: str) -> float | None:
        v = self.pipe_figure(pipe)
        return None if v is None else v * PJ

    def j_per_byte(self, read_share: float = DEFAULT_READ_SHARE) -> float:
        return (read_share * self.pj_per_byte_read + (1 - read_share) * self.pj_per_byte_written +
                min(read_share, 1 - read_share) * self.pj_per_byte_mixed) * PJ

    def power_w(self, flops_per_s: dict[str, float], read_bytes_per_s: float, write_bytes_per_s: float) -> float:
        """The board power the model gives a kernel running at these rates. NB: a pipe without a figure counts 0 W."""
        return self.static_w + self.active_w + \
            sum((self.pipe_figure(p) or 0.0) * PJ * r for p, r in flops_per_s.items()) + \
            (self.pj_per_byte_read * read_bytes_per_s + self.pj_per_byte_written * write_bytes_per_s +
             self.pj_per_byte_mixed * min(read_bytes_per_s, write_bytes_per_s)) * PJ

    def linear_j(self, pipe: str, flops: float, bytes_read: float, bytes_written: float, time_s: float,
                 op: str | None = None) -> float:
        """The linear terms' energy of one call: (static + active watts + catalog operator `op`'s own, `op_w`) x
        its time + its FLOPs' and bytes' energy, uncapped (what the fit and an operator's own watts are
        measured against)."""
        return (self.static_w + self.active_w + self.op_w.get(op or "", 0.0)) * time_s + \
            (self.pipe_figure(pipe) or 0.0) * PJ * flops + \
            (self.pj_per_byte_read * bytes_read + self.pj_per_byte_written * bytes_written +
             self.pj_per_byte_mixed * min(bytes_read, bytes_written)) * PJ

    def energy_j(self, pipe: str, flops: float, bytes_read: float, bytes_written: float, time_s: float,
                 op: str | None = None) -> float:
        """The model's energy of one call: the linear terms' (`linear_j`), at most the power cap x its time. The
        board's power controller holds the average under the enforced cap (a window of a call timed back to
        back is all at that average), so terms that add up past it say the clock fell, not that more was drawn
        (an RMS norm's linear terms can come to a tenth more than the capped watts it draws)."""
        return min(self.linear_j(pipe, flops, bytes_read, bytes_written, time_s, op), self.power_cap_w * time_s)


def op_watts(model: EnergyModel, measured_j: float, pipe: str, flops: float, bytes_read: float,
             bytes_written: float, time_s: float) -> float:
    """The watts a calibration call drew beyond the model's FLOP, byte and static terms: (measured J - the
    model's linear J without an operator term) / the call's time."""
    if not time_s > 0:
        raise ValueError("an operator's watts need a positive time per call")
    return (measured_j - model.linear_j(pipe, flops, bytes_read, bytes_written, time_s)) / time_s


def _least_squares(rows: list[list[float]], y: list[float], active: list[int]) -> list[float]:
    """Least squares over the columns in `active`, each column scaled to unit size first (rates of 1e15 FLOP/s
    beside 1e12 B/s): the normal equations of the scaled system."""
    scale = [max(abs(r[j]) for r in rows) or 1.0 for j in active]
    x = [[r[j] / s for j, s in zip(active, scale, strict=True)] for r in rows]
    ata = [[sum(row[i] * row[k] for row in x) for k in range(len(active))] for i in range(len(active))]
    aty = [sum(row[i] * yy for row, yy in zip(x, y, strict=True)) for i in range(len(active))]
    return [c / s for c, s in zip(solve_linear(ata, aty), scale, strict=True)]


def fit_energy_model(points: list[CalibrationPoint], static_w: float, power_cap_w: float,
                     idle_w: float | None = None, max_sm_mhz: float | None = None,
                     form: str = DEFAULT_FORM) -> EnergyModel:
    """The energy model of calibration points in `form` (ENERGY_FORMS): joules per FLOP of each pipe and the
    form's terms (per HBM byte read, written, of their overlap; the watts of any kernel running), by non-negative
    least squares on each point's power less the static watts. A term no point exercises is left out; a term the
    fit would make negative is set to 0 and the rest refitted (the active-set step of NNLS); terms the points
    cannot tell apart raise EnergyError.
    NB: energy per FLOP is taken as constant, at the calibration kernels' clock, voltage and temperature."""
    if form not in ENERGY_FORMS:
        raise EnergyError(f"unknown energy model form {form!r}: one of {', '.join(ENERGY_FORMS)}")
    wanted = ENERGY_FORMS[form]
    pipes = sorted({p for pt in points for p, r in pt.flops_per_s.items() if r > 0})
    columns = [ACTIVE, *pipes, READ, WRITE, MIX]
    rows = [[1.0 if ACTIVE in wanted else 0.0] + [pt.flops_per_s.get(p, 0.0) for p in pipes] +
            [pt.read_bytes_per_s if READ in wanted else 0.0, pt.write_bytes_per_s if WRITE in wanted else 0.0,
             min(pt.read_bytes_per_s, pt.write_bytes_per_s) if MIX in wanted else 0.0] for pt in points]
    y = [pt.power_w - static_w for pt in points]
    # each point weighed by 1 / its power: the fit minimises relative errors, as the model is judged (within 10%)
    weighted = [[v / pt.power_w for v in r] for r, pt in zip(rows, points, strict=True)]
    y_weighted = [v / pt.power_w for v, pt in zip(y, points, strict=True)]
    terms = [j for j in range(len(columns)) if any(r[j] > 0 for r in rows)]
    if len(points) < len(terms) or not terms:
        raise EnergyError(f"{len(points)} calibration point(s) cannot fit {len(terms) or 'no'} energy term(s)")
    coef: dict[int, float] = {}
    while terms:
        try:
            sol = _least_squares(weighted, y_weighted, terms)
        except ValueError:
            raise EnergyError("energy fit: the calibration points do not tell the terms apart") from None
        coef = dict(zip(terms, sol, strict=True))
        negative = [j for j, c in coef.items() if c < 0]
        if not negative:
            break
        terms = [j for j in terms if j != min(negative, key=lambda j: coef[j])]
    e = [max(0.0, coef.get(j, 0.0)) for j in range(len(columns))]
    predicted = [static_w + sum(c * v for c, v in zip(e, r, strict=True)) for r in rows]
    errors = [(p - pt.power_w) / pt.power_w for p, pt in zip(predicted, points, strict=True)]
    residual = math.sqrt(sum(x * x for x in errors) / len(errors))
    clocks = sorted(pt.sm_mhz for pt in points if pt.sm_mhz)
    return EnergyModel(pj_per_flop={p: e[1 + i] / PJ for i, p in enumerate(pipes)}, pj_per_byte_read=e[-3] / PJ,
                       pj_per_byte_written=e[-2] / PJ, pj_per_byte_mixed=e[-1] / PJ, static_w=static_w,
                       power_cap_w=power_cap_w, active_w=e[0],
                       idle_w=idle_w, sm_clock_mhz=clocks[len(clocks) // 2] if clocks else None,
                       max_sm_mhz=max_sm_mhz, residual=residual, points=tuple(points))


def power_roof_flops_per_s(model: EnergyModel, pipe: str, intensity: float,
                           read_share: float = DEFAULT_READ_SHARE) -> float | None:
    """The FLOP/s a kernel of `intensity` (FLOP per HBM byte, `read_share` of them reads) on `pipe` can sustain
    under the power cap: (P_cap - P_static - P_active) / (e_pipe + e_byte / I). None when the model has no
    figure for the pipe; infinite when neither term costs energy. NB: ignores the voltage falling with the
    clock (energy per FLOP at the calibration's clock), and energy in the L2 and shared memory."""
    e_flop = model.j_per_flop(pipe)
    if e_flop is None or intensity <= 0:
        return None if e_flop is None else 0.0
    per_flop = e_flop + model.j_per_byte(read_share) / intensity
    budget = model.power_cap_w - model.static_w - model.active_w
    return math.inf if per_flop <= 0 else budget / per_flop


def sustained_clock_mhz(model: EnergyModel, pipe: str, intensity: float, flops_per_cycle: float,
                        max_mhz: float | None = None, read_share: float = DEFAULT_READ_SHARE) -> float | None:
    """The SM clock the power cap lets a kernel hold: the clock at which its FLOP/s (`flops_per_cycle`, its FLOPs
    per SM clock cycle, from a run at a known clock) meet the power roof at its intensity, at most `max_mhz`.
    NB: a compute-bound kernel's FLOPs per cycle taken as the same at every clock."""
    roof = power_roof_flops_per_s(model, pipe, intensity, read_share)
    if roof is None or flops_per_cycle <= 0:
        return None
    f = roof / flops_per_cycle / 1e6
    return min(f, max_mhz) if max_mhz else f


def flops_per_j_roof(model: EnergyModel, pipe: str, intensity: float, flops_per_s: float,
                     read_share: float = DEFAULT_READ_SHARE) -> float | None:
    """The energy roofline: FLOP per joule of a kernel of `intensity` running at `flops_per_s` (its attainable
    rate), static and active watts included: their share shrinks as the rate grows, the dynamic share is fixed
    by the intensity. None without a figure for the pipe."""
    e_flop = model.j_per_flop(pipe)
    if e_flop is None or intensity <= 0 or flops_per_s <= 0:
        return None
    return 1.0 / ((model.static_w + model.active_w) / flops_per_s + e_flop + model.j_per_byte(read_share) / intensity)
