"""Statistics derived from raw timing samples, and the rank test that compares two sets of them.
Pure functions; the samples themselves are always kept."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # typing only: the records `busy_marked` notes
    from roofline.core.record import Record

# A relative IQR above this marks a measurement as noisy (torch.utils.benchmark warns at 10% too).
NOISY_IQR_FRACTION = 0.10
# Modified z-score above which a sample is called an outlier (Iglewicz & Hoaglin; hyperfine uses it).
OUTLIER_MODIFIED_Z = 3.5
# Exact U distribution (no ties) up to this many samples per side; beyond, the normal approximation with
# continuity correction is accurate to well under a significance level's resolution, and the exact table
# costs O(n^3).
EXACT_MAX_N = 50


def quantile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default 'linear' method)."""
    if not samples:
        raise ValueError("no samples")
    xs = sorted(samples)
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def solve_linear(a: Sequence[Sequence[float]], b: Sequence[float]) -> list[float]:
    """x of a x = b (square; Gaussian elimination with partial pivoting); a singular system raises ValueError."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12:
            raise ValueError("a singular system: its equations do not tell the unknowns apart")
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


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


# ---------------------------------------------------------------- Mann–Whitney U
@dataclass(frozen=True)
class MannWhitney:
    """U is x's statistic: pairs (xi, yj) with xi > yj, ties counting one half. p-value for `alternative`."""

    u: float
    p_value: float
    method: str  # "exact" or "normal"
    n_x: int
    n_y: int


@lru_cache(maxsize=128)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many orderings give U = 0..n1*n2 without ties: the Gaussian binomial [n1+n2 choose n1]_q's coefficients.

    Built as prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i); each partial product is itself a polynomial.
    """
    m, n = sorted((n1, n2))
    poly = [1]
    for i in range(1, m + 1):
        new = [*poly, *([0] * (n + i))]
        for k, c in enumerate(poly):
            new[k + n + i] -= c
        for k in range(i, len(new)):  # divide by (1 - q^i)
            new[k] += new[k - i]
        poly = new[: i * n + 1]
    return tuple(poly)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) of `values`, and the sizes of tie groups larger than one."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_u(x: Sequence[float], y: Sequence[float], alternative: str = "two-sided",
                   method: str = "auto") -> MannWhitney:
    """Mann–Whitney U test of x against y (no scipy). `alternative`: two-sided, greater (x stochastically
    larger) or less. `method`: auto (exact without ties up to EXACT_MAX_N per side, else normal), exact, normal.

    Normal: z = (U - n1 n2 / 2 - 0.5) / sigma with continuity correction and the tie-corrected variance
    sigma^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))), as scipy.stats.mannwhitneyu's asymptotic method.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"unknown alternative {alternative!r}")
    ranks, ties = _ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    if method == "auto":
        method = "exact" if not ties and max(n1, n2) <= EXACT_MAX_N else "normal"
    if method == "exact":
        if ties:
            raise ValueError("the exact distribution assumes no ties")
        counts, total = _u_counts(n1, n2), math.comb(n1 + n2, n1)

        def sf(u: float) -> float:  # P(U >= u)
            return sum(counts[math.ceil(u):]) / total

        if alternative == "greater":
            p = sf(u1)
        elif alternative == "less":
            p = sf(u2)
        else:
            p = 2 * sf(max(u1, u2))
    elif method == "normal":
        n = n1 + n2
        tie_term = sum(t**3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
        var = n1 * n2 / 12 * ((n + 1) - tie_term)
        if var <= 0:  # every value equal: no evidence of any difference
            return MannWhitney(u1, 1.0, "normal", n1, n2)
        u = {"greater": u1, "less": u2}.get(alternative, max(u1, u2))
        z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(var)
        p = 0.5 * math.erfc(z / math.sqrt(2)) * (2 if alternative == "two-sided" else 1)
    else:
        raise ValueError(f"unknown method {method!r}")
    return MannWhitney(u1, min(1.0, p), method, n1, n2)


# ---------------------------------------------------------------- statistics of one run
def statistic(samples: Sequence[float], name: str, higher_is_better: bool = False) -> float:
    """median, mean, min or p90 of `samples`. `min` is the best sample and `p90` the slow tail, whichever way
    the metric points (times: lower is better; fractions of the roofline: higher is)."""
    if name == "median":
        return median(samples)
    if name == "mean":
        return sum(samples) / len(samples)
    if name == "min":
        return max(samples) if higher_is_better else min(samples)
    if name == "p90":
        return quantile(samples, 0.1 if higher_is_better else 0.9)
    raise ValueError(f"unknown statistic {name!r}")


# ---------------------------------------------------------------- between runs
def of_runs(runs: Sequence[Sequence[float]], name: str = "median", higher_is_better: bool = False) -> float:
    """A statistic of several runs of the same code: the mean over the runs of each run's `statistic` (one run:
    its statistic). The one definition of a record's value wherever it holds several runs (`run --repeat`'s
    table, `check`'s baseline and current values): the run, not the sample, is the unit that repeats, and the
    median of all samples pooled lets the run with the most samples decide (a CPU record whose runs' medians
    were 0.17-28 ms read 168 µs pooled, 15.2 ms as this mean)."""
    values = run_values(runs, name, higher_is_better)
    if not values:
        raise ValueError("no runs")
    return values[0] if len(values) == 1 else sum(values) / len(values)


def run_values(runs: Sequence[Sequence[float]], name: str = "median", higher_is_better: bool = False) -> list[float]:
    """Each run's `statistic`, in run order (the between-run spread a view shows beside `of_runs`)."""
    return [statistic(run, name, higher_is_better) for run in runs]


def relative_sd(groups: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """The pooled relative standard deviation of values around their own group's mean, and its degrees of
    freedom: sqrt(sum_g sum_i (x_gi / mean_g - 1)^2 / sum_g (n_g - 1)). A group is one set of A/A runs (the
    same code); each group's own mean is taken out, so what differs between groups is not counted as noise.
    None when no group has two values."""
    ss, dof = 0.0, 0
    for values in groups:
        if len(values) < 2:
            continue
        mean = sum(values) / len(values)
        if mean == 0:
            continue
        ss += sum((x / mean - 1) ** 2 for x in values)
        dof += len(values) - 1
    return (math.sqrt(ss / dof), dof) if dof else None


def pool_sd(parts: Sequence[tuple[float, int]]) -> tuple[float, int] | None:
    """Standard deviations estimated apart, each with its degrees of freedom, pooled into one: the
    dof-weighted mean of the variances (what one estimate over all the groups together would give)."""
    dof = sum(d for _, d in parts)
    if not dof:
        return None
    return math.sqrt(sum(sd * sd * d for sd, d in parts) / dof), dof


# ---------------------------------------------------------------- Student's t
def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes 6.4)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            break
    return h


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1 and a, b > 0."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):  # the fraction converges fast here; else use the symmetry I_x(a,b) = 1 - I_1-x(b,a)
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def t_sf(t: float, dof: float) -> float:
    """P(T > t) for Student's t with `dof` degrees of freedom: I_{dof/(dof+t^2)}(dof/2, 1/2) / 2 for t >= 0."""
    tail = 0.5 * regularized_beta(dof / (dof + t * t), dof / 2, 0.5)
    return tail if t >= 0 else 1 - tail


@lru_cache(maxsize=256)
def t_quantile(p: float, dof: int) -> float:
    """The t with P(T <= t) = p for Student's t with `dof` degrees of freedom (bisection on t_sf, to 1e-12)."""
    if not 0 < p < 1 or dof < 1:
        raise ValueError(f"t_quantile needs 0 < p < 1 and dof >= 1, got p={p}, dof={dof}")
    if p < 0.5:
        return -t_quantile(1 - p, dof)
    lo, hi = 0.0, 1.0
    while t_sf(hi, dof) > 1 - p:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf(mid, dof) > 1 - p else (lo, mid)
    return (lo + hi) / 2


# ---------------------------------------------------------------- the conditions of a timing
def busy_note(reasons: Sequence[str]) -> str | None:
    """The note a time taken while other work used the machine carries among its notes: `core.record.BUSY_NOTE`
    and why (`measuring.machine_load.Load.reasons`: one phrase each), None when there is no reason (a quiet
    machine). The views, `check` and the advice find it by its prefix."""
    from roofline.core.record import BUSY_NOTE

    return f"{BUSY_NOTE} ({', '.join(reasons)}): the time may be slow" if reasons else None


def busy_marked(records: Sequence[Record], reasons: Sequence[str]) -> list[Record]:
    """`records`, each timed one noting that the machine was busy (`busy_note`) unless its notes say so already:
    for times taken over one window whose load was read once (a profile's timed run, each op on the host clock),
    where the CPU timer's samples note it record by record. Untimed records, and all on a quiet machine, as they
    were."""
    from dataclasses import replace

    note = busy_note(reasons)
    if note is None:
        return list(records)
    head = note.partition(" (")[0]  # BUSY_NOTE
    return [replace(r, notes=[*r.notes, note]) if r.time_s is not None and not any(n.startswith(head) for n in r.notes)
            else r for r in records]
