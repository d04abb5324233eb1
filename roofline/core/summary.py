"""A whole-model profile's summary as typed records (`Profile.summary`, a results document's `extra["profile"]`).

Each record writes exactly the keys and order the summary's JSON has always had (`to_dict`), and reads them back
(`from_dict`); the schema only grows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class StepPrediction:
    """A whole step's predicted time (a profile summary's `prediction`): the kernels' sum and interval, the launch
    gaps of an eager program, and how many calls each source predicted. `to_dict` writes the summary's keys in
    their order; `measured_kernel_time_s` (a timed profile's kernel sum) only when there is one."""

    predicted_kernel_time_s: float
    predicted_kernel_low_s: float
    predicted_kernel_high_s: float
    predicted_launch_gaps_s: float | None
    launch_gap_per_kernel_s: float | None
    predicted_kernels: int
    predicted_step_s: float
    predicted_step_low_s: float
    predicted_step_high_s: float
    bound_time_s: float
    calls_from_db: int
    calls_on_bound: int
    calls_unpredicted: int
    prediction_source: str
    measured_kernel_time_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.measured_kernel_time_s is None:
            del out["measured_kernel_time_s"]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepPrediction:
        """The record of a stored summary's `prediction` (a RooflineError when it lacks a field)."""
        names = [f.name for f in fields(cls)]
        missing = [n for n in names[:-1] if n not in data]
        if missing:
            from roofline.core.errors import RooflineError

            raise RooflineError(f"a profile's prediction lacks {', '.join(missing)}")
        return cls(**{n: data[n] for n in names if n in data})
