"""Statistics derived from raw timing samples. Pure functions; the samples themselves are always kept."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# A relative IQR above this marks a measurement as noisy (torch.utils.benchmark warns at 10% too).
NOISY_IQR_FRACTION = 0.10
# Modified z-score above which a sample is called an outlier (Iglewicz & Hoaglin; hyperfine uses it).
OUTLIER_MODIFIED_Z = 3.5


def quantile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default 'linear' method)."""
    if not samples:
        raise ValueError("no samples")
    xs = sorted(samples)
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(samples: Sequence[float]) -> float:
    return quantile(samples, 0.5)


def mad(samples: Sequence[float]) -> float:
    """Median absolute deviation (unscaled)."""
    m = median(samples)
    return median([abs(x - m) for x in samples])


def outliers(samples: Sequence[float]) -> list[int]:
    """Indices of samples whose modified z-score 0.6745 (x - median) / MAD exceeds OUTLIER_MODIFIED_Z."""
    m, d = median(samples), mad(samples)
    if d == 0:
        return []
    return [i for i, x in enumerate(samples) if abs(0.6745 * (x - m) / d) > OUTLIER_MODIFIED_Z]


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    min: float
    max: float
    p10: float
    p90: float
    iqr: float
    mad: float
    outliers: int

    @property
    def relative_iqr(self) -> float:
        return self.iqr / self.median if self.median else 0.0

    @property
    def noisy(self) -> bool:
        return self.relative_iqr > NOISY_IQR_FRACTION

    def to_dict(self) -> dict[str, float]:
        return {"n": self.n, "median": self.median, "mean": self.mean, "min": self.min, "max": self.max,
                "p10": self.p10, "p90": self.p90, "iqr": self.iqr, "relative_iqr": self.relative_iqr,
                "mad": self.mad, "outliers": self.outliers}


def summarize(samples: Sequence[float]) -> Summary:
    if not samples:
        raise ValueError("no samples")
    return Summary(
        n=len(samples), median=median(samples), mean=sum(samples) / len(samples), min=min(samples),
        max=max(samples), p10=quantile(samples, 0.1), p90=quantile(samples, 0.9),
        iqr=quantile(samples, 0.75) - quantile(samples, 0.25), mad=mad(samples), outliers=len(outliers(samples)),
    )
