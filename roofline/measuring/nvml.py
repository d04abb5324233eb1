"""Device state around a measurement: SM and memory clocks, power, temperature and the reasons NVML
gives for a clock below its maximum, sampled from a background thread while the GPU works."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from roofline.core.stats import median

# How often the sampler reads NVML. Reads take ~0.1 ms; 5 ms gives ~20 readings per 100 ms of timing.
SAMPLE_PERIOD_S = 0.005

# nvmlClocksEventReasons bits (nvml.h) that mean the clock was held down, and their names.
THROTTLE_REASONS = {
    0x4: "power cap (software)",
    0x8: "hardware slowdown",
    0x20: "thermal (software)",
    0x40: "thermal (hardware)",
    0x80: "power brake (hardware)",
}


def spread(xs: list[float]) -> dict[str, float] | None:
    """Median, least and greatest of some readings; None when there are none."""
    return {"median": median(xs), "min": min(xs), "max": max(xs)} if xs else None


@dataclass
class ClockReport:
    """NVML's readings over a measurement, and the reasons it gave for a clock held down."""

    sm_mhz: list[float] = field(default_factory=list)
    mem_mhz: list[float] = field(default_factory=list)
    power_w: list[float] = field(default_factory=list)
    temp_c: list[float] = field(default_factory=list)
    reasons: int = 0
    max_sm_mhz: float | None = None
    max_mem_mhz: float | None = None
    power_limit_w: float | None = None

    @property
    def sm_mhz_median(self) -> float | None:
        return median(self.sm_mhz) if self.sm_mhz else None

    def reason_names(self) -> list[str]:
        return [name for bit, name in THROTTLE_REASONS.items() if self.reasons & bit]

    def to_dict(self) -> dict[str, Any]:
        """The readings as the record's clocks and the results document's device hold them."""
        return {"sm_mhz": spread(self.sm_mhz), "mem_mhz": spread(self.mem_mhz), "power_w": spread(self.power_w),
                "temperature_c": spread(self.temp_c), "max_sm_mhz": self.max_sm_mhz, "max_mem_mhz": self.max_mem_mhz,
                "power_limit_w": self.power_limit_w, "limited_by": self.reason_names(), "readings": len(self.sm_mhz)}


@cache
def _device(index: int) -> tuple[Any, Any, tuple[float, float, float]]:
    """NVML, initialised once per process, the device's handle, and what does not change during a run (max SM
    and memory clocks, enforced power limit): on the H200 each max-clock query took ~4 ms, twice per operator."""
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    return pynvml, h, (float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)),
                       float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)),
                       pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0)


class ClockSampler:
    """`with ClockSampler(index) as s: ...` then `s.report`. Without NVML it records nothing."""

    def __init__(self, index: int = 0, period_s: float = SAMPLE_PERIOD_S) -> None:
        self.index = index
        self.period_s = period_s
        self.report = ClockReport()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Any = None
        self._handle: Any = None

    def __enter__(self) -> ClockSampler:
        try:
            self._nvml, self._handle, static = _device(self.index)
        except Exception:
            self._nvml = None
            return self
        self.report.max_sm_mhz, self.report.max_mem_mhz, self.report.power_limit_w = static
        self._read()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        n, h, r = self._nvml, self._handle, self.report
        try:
            r.sm_mhz.append(float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)))
            r.mem_mhz.append(float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)))
            r.power_w.append(n.nvmlDeviceGetPowerUsage(h) / 1000.0)
            r.temp_c.append(float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)))
            r.reasons |= int(n.nvmlDeviceGetCurrentClocksThrottleReasons(h))
        except Exception:
            pass

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._read()

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._read()


def snapshot(index: int = 0) -> dict[str, Any]:
    """One reading of the device state (for the results document's `device`)."""
    with ClockSampler(index, period_s=3600) as s:
        pass
    return s.report.to_dict()
