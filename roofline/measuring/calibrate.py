"""Measured ceilings: what this machine really reaches, per memory level and per dtype.

The CPU calibration (matmul per dtype, read and copy bandwidth) is what `analyze` uses as the CPU's
roofline; the GPU calibration (`roofline.measuring.calibrate_gpu`) adds HBM read/write/copy, an L2
working-set sweep, shared memory, matmul per dtype over a sweep of shapes and the FP32 FMA peak. Results go
to the store (`roofline.ceilings.store`).

A shared machine's noise only ever slows a call down, so every CPU roof is the best rate seen: over
several sizes, several calls and several rounds (each round measures every figure once more, so that a
busy spell spoils one round, not the roof). A busy machine is named in the roof's notes, which every
record timed against it repeats, and a record that beats its roof re-measures it (`recheck_cpu_roof`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from roofline.ceilings.store import cpu_key, lookup, save
from roofline.core.device import cuda_index
from roofline.core.format import si
from roofline.core.model import Ceilings
from roofline.measuring.device import cpu_caches, cpu_description
from roofline.measuring.machine_load import CpuTimes, load_between, read_cpu_times

if TYPE_CHECKING:
    from torch import Tensor

    from roofline.core.record import Record

Progress = Callable[[str], None]

CPU_DTYPES = ("fp32", "fp64", "bf16")
# torch's name for each dtype a CPU roof is measured in (fp16 only when a record asks: see recheck_cpu_roof)
TORCH_DTYPES = {"fp32": "float32", "fp64": "float64", "bf16": "bfloat16", "fp16": "float16"}

# A size whose call is forecast (from the rate at the size before it) to take longer than this is skipped:
# a CPU without bf16 units would spend seconds per call on it, and larger products gain a few percent at most.
MAX_CALL_S = 1.0
# Rounds stop once one has raised no figure by more than this (and at least MIN_ROUNDS ran): further rounds
# would find noise, not a higher roof.
CONVERGED = 0.02
MIN_ROUNDS = 2
# A figure's kept (best) round more than this above every other round (best over the runner-up - 1) means
# the machine's speed moved while it was measured and no round confirmed the best: the user is told. A low
# round under a best that a second round confirms is not named (a first round's L3 copy read 860 MB/s on a
# busy 2-core machine, under a best-of-rounds roof that later rounds held). A spell that takes a core from one
# of torch's threads slows a product 1.5-2x; the quick plan's few-millisecond calls differ by up to ~20%
# between rounds without one (2-core CI machine), which must not cry wolf.
UNSTEADY_SPREAD = 0.25
# The roof's notes that every record timed against it repeats start with this.
CALIBRATION_WARNING = "CPU roof measured on a busy machine"
# A compute-bound record faster than its measured roof by more than this, or by more than half its own IQR
# (whichever is larger), re-measures that roof: timing noise only slows a call, so a record above the roof
# says the roof was measured low, not that the kernel beat the hardware.
RECHECK_MARGIN = 0.05
RECHECK_ROUNDS = 2
# A calibration measured on a busy machine whose figure falls short of the stored roof's by more than this
# does not replace the stored roof unless the user asks (`calibrate --replace`): load only slows a call, so
# the lower figure is the machine's load, not the CPU. Within it, the two are the same roof (round noise).
KEEP_STORED_MARGIN = 0.05


@dataclass(frozen=True)
class CpuPlan:
    """What the CPU calibration measures: square matmul sizes per dtype (each dtype's best rate over its
    sizes is kept), the buffer the bandwidth is measured on, how many timed calls of each per round (the
    best is kept), and how many rounds at most (see CONVERGED)."""

    matmul_n: Mapping[str, tuple[int, ...]]
    bandwidth_bytes: int
    reps: int
    bf16_reps: int  # CPUs without bf16 units run bf16 matmuls far slower than fp32: fewer calls
    rounds: int = 1

    def __post_init__(self) -> None:
        if set(self.matmul_n) != set(CPU_DTYPES) or not all(self.matmul_n.values()):
            raise ValueError(f"a CPU plan needs matmul sizes for each of {', '.join(CPU_DTYPES)}")
        if self.rounds < 1 or self.reps < 1 or self.bf16_reps < 1:
            raise ValueError("a CPU plan needs at least one round and one call of each")


# The full calibration (the one `analyze` runs on a machine without a stored CPU roofline): matmul sizes so
# one product takes ~0.01-0.5 s on a 2-core machine (larger products run closer to the peak: 172 GFLOP/s at
# 1024^3, 179 at 3072^3 on the CI machine), a buffer far beyond any CPU's last-level cache, and up to four
# rounds of three calls.
FULL_CPU_PLAN = CpuPlan(matmul_n={"fp32": (1024, 2048, 3072), "fp64": (1024, 1536), "bf16": (512, 1024)},
                        bandwidth_bytes=512 * 2**20, reps=3, bf16_reps=1, rounds=4)
# `calibrate --quick`: one size per dtype, a smaller buffer, two rounds of two calls, so that the whole
# calibration stays well under a second on the 2-core CI machine: a 512^3 fp32 or fp64 product takes 2-7 ms
# there, a bf16 one of 256^3 ~26 ms (that CPU has no bf16 units: 1.3 GFLOP/s). 64 MiB is twice its 32 MiB
# last-level cache, the least that evicts an LRU-like cache. Its roofs are lower than the full plan's
# (fp32 100-134 GFLOP/s there: smaller products run further from the peak), and a CPU with a larger cache
# serves part of the buffer from it: quick, not the last word.
QUICK_CPU_PLAN = CpuPlan(matmul_n={"fp32": (512,), "fp64": (512,), "bf16": (256,)},
                         bandwidth_bytes=64 * 2**20, reps=2, bf16_reps=1, rounds=2)


def _best_time(fn: Callable[[], Any], reps: int, warm: bool = True) -> float:
    """The least seconds of `reps` timed calls, after one untimed call when `warm`."""
    import time

    if warm:
        fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


class _Matmuls:
    """Square products of one dtype over its sizes, round after round; the inputs are made once."""

    def __init__(self, name: str, sizes: tuple[int, ...], reps: int) -> None:
        self.name, self.sizes, self.reps = name, sizes, reps
        self.inputs: dict[int, tuple[Any, Any]] = {}
        self.rate, self.n, self.best_s = 0.0, sizes[0], float("inf")
        self.round_rates: list[float] = []
        self.skipped: tuple[int, ...] = ()

    def round(self, say: Progress, tag: str) -> None:
        import torch

        first, best, previous = not self.round_rates, 0.0, 0.0
        for i, n in enumerate(self.sizes):
            if first and previous and 2 * n**3 / previous > MAX_CALL_S:
                self.sizes, self.skipped = self.sizes[:i], self.sizes[i:]
                break
            say(f"CPU {self.name} matmul {n}^3{tag}")
            if n not in self.inputs:
                dt = getattr(torch, TORCH_DTYPES[self.name])
                self.inputs[n] = (torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt))
            a, b = self.inputs[n]
            t = _best_time(partial(torch.mm, a, b), self.reps, warm=first)
            previous = 2 * n**3 / t
            best = max(best, previous)
            if previous > self.rate:
                self.rate, self.n, self.best_s = previous, n, t
        self.round_rates.append(best)


class _Bandwidth:
    """Copy (read + write) and read (a sum) of one large buffer, round after round."""

    def __init__(self, nbytes: int, reps: int) -> None:
        import torch

        self.nbytes, self.reps = nbytes // 4 * 4, reps
        self.x = torch.ones(self.nbytes // 4)  # the values do not matter to a copy or a sum; filling is fast
        self.y = torch.empty_like(self.x)
        self.copy_s = self.read_s = float("inf")
        self.round_rates: dict[str, list[float]] = {"dram": [], "dram_read": []}

    def round(self, say: Progress, tag: str) -> None:
        say(f"CPU memory bandwidth{tag}")
        first = not self.round_rates["dram"]
        copy_t = _best_time(lambda: self.y.copy_(self.x), self.reps, warm=first)
        read_t = _best_time(lambda: self.x.sum(), self.reps, warm=first)
        self.copy_s, self.read_s = min(self.copy_s, copy_t), min(self.read_s, read_t)
        self.round_rates["dram"].append(2 * self.nbytes / copy_t)
        self.round_rates["dram_read"].append(self.nbytes / read_t)

    @property
    def rates(self) -> dict[str, float]:
        return {"dram": 2 * self.nbytes / self.copy_s, "dram_read": self.nbytes / self.read_s}


# The cache levels whose copy bandwidth the calibration measures (L1's copies of a few KiB are timed mostly as
# torch's per-call overhead), each on a working set of this fraction of one core's cache (read + write
# buffers together), so that the copy stays in that level beside whatever else the process holds.
CACHE_LEVELS = ("l2", "l3")
CACHE_FILL = 0.5
# A level above another measured one (L3 over L2) is also copied at working sets CACHE_STEP times smaller, down
# to CACHE_STEP times the level below's size (out of that level): the size sysfs gives is not always the size a
# process gets. A 2-CPU cloud VM reports its host's 260 MiB L3; half of it, 130 MiB, copied at the DRAM rate
# (21-22 GB/s against 23 for a 512 MiB copy), while 8-64 MiB copied at 47-52 GB/s: the L3 roof was the DRAM
# rate, and every record of a few MiB was "above its roof". The roof is the best fill's rate; the level's size
# for placing records is the largest fill that reached CACHE_HELD of it, over CACHE_FILL (the whole size where
# the largest fill holds, as before).
CACHE_STEP = 4
CACHE_HELD = 0.8
# Bytes copied per timed sample inside a cache (several copies of its buffer): ~1 ms at the 100 GB/s a core's
# L2 or L3 copy reaches (75-120 GB/s on the 2-core CI machine), far above the perf_counter's resolution and
# torch's ~5 us per-call overhead; and at least CACHE_REPS samples, as a few copies are cheap.
CACHE_SAMPLE_BYTES = 2**27
CACHE_REPS = 5


def cache_fills(cache_bytes: Mapping[str, int], level: str) -> list[int]:
    """The working sets (bytes) `level` is copied at, largest first: CACHE_FILL of its size, then CACHE_STEP
    times smaller while above CACHE_STEP times the measured level below it."""
    size = int(cache_bytes[level])
    below = CACHE_LEVELS[CACHE_LEVELS.index(level) - 1] if CACHE_LEVELS.index(level) else None
    floor = CACHE_STEP * int(cache_bytes[below]) if below and cache_bytes.get(below) else size * CACHE_FILL
    fills = [int(size * CACHE_FILL)]
    while fills[-1] // CACHE_STEP >= floor:
        fills.append(fills[-1] // CACHE_STEP)
    return fills


def held_size(size: int, fill_rates: Mapping[int, float]) -> int:
    """The size of a cache level for placing records: the largest fill (working set, bytes) whose rate reached
    CACHE_HELD of the best fill's, over CACHE_FILL; `size` itself when the largest fill held."""
    best = max(fill_rates.values())
    held = max(fill for fill, rate in fill_rates.items() if rate >= CACHE_HELD * best)
    return size if held == max(fill_rates) else int(held / CACHE_FILL)


class _CacheBandwidth:
    """Copy bandwidth with working sets inside each cache level (`CACHE_LEVELS`, `cache_fills`), round after
    round: the roof of a record whose working set fits there (`core.model.choose_memory`)."""

    def __init__(self, cache_bytes: Mapping[str, int], reps: int) -> None:
        import torch

        self.reps = max(reps, CACHE_REPS)
        # The largest level first: a multi-threaded copy right after thousands of small single-threaded ones
        # ran 30x slower for tens of milliseconds (2.1 against 74-90 GB/s for L3 after L2, 2-core CI machine).
        self.sizes = {lv: int(cache_bytes[lv]) for lv in reversed(CACHE_LEVELS) if cache_bytes.get(lv)}
        # level -> fill -> two fp32 buffers of fill / 8 elements each
        self.buffers: dict[str, dict[int, tuple[Tensor, Tensor]]] = {}
        for level in self.sizes:
            self.buffers[level] = {}
            for fill in cache_fills(self.sizes, level):
                n = max(1, fill // 8)
                self.buffers[level][8 * n] = (torch.ones(n), torch.empty(n))
        self.best_s = {lv: dict.fromkeys(fills, float("inf")) for lv, fills in self.buffers.items()}
        self.round_rates: dict[str, list[float]] = {lv: [] for lv in self.sizes}

    def round(self, say: Progress, tag: str) -> None:
        for level, fills in self.buffers.items():
            say(f"CPU {level.upper()} cache bandwidth{tag}")
            rates = []
            for moved, (x, y) in fills.items():
                inner = max(1, CACHE_SAMPLE_BYTES // moved)

                def copies(x: Any = x, y: Any = y, inner: int = inner) -> None:
                    for _ in range(inner):
                        y.copy_(x)

                t = _best_time(copies, self.reps, warm=not self.round_rates[level]) / inner
                self.best_s[level][moved] = min(self.best_s[level][moved], t)
                rates.append(moved / t)
            self.round_rates[level].append(max(rates))

    def fill_rates(self, level: str) -> dict[int, float]:
        return {moved: moved / t for moved, t in self.best_s[level].items() if t < float("inf")}

    @property
    def rates(self) -> dict[str, float]:
        return {lv: max(self.fill_rates(lv).values()) for lv in self.sizes if self.fill_rates(lv)}

    def held_sizes(self) -> dict[str, int]:
        return {lv: held_size(size, self.fill_rates(lv)) for lv, size in self.sizes.items() if self.fill_rates(lv)}

    def whole_sizes(self) -> dict[str, int]:
        """The levels' whole sizes where less of them held the rate (`held_sizes`)."""
        held = self.held_sizes()
        return {lv: size for lv, size in self.sizes.items() if lv in held and held[lv] < size}

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for lv, size in self.sizes.items():
            rates = self.fill_rates(lv)
            moved = max(rates, key=rates.__getitem__)
            out[lv] = {"cache_bytes": size, "held_bytes": self.held_sizes()[lv], "copied_bytes": moved,
                       "copy_best_s": self.best_s[lv][moved],
                       "fills": {str(fill): rate for fill, rate in sorted(rates.items())}}
        return out


def _unsteady(round_rates: dict[str, list[float]]) -> list[str]:
    """The figure whose kept (best) rate no other round came within UNSTEADY_SPREAD of, the one furthest from
    its nearest round, with the rounds that were low: ['l3 reached 90 GB/s in round 2 only, 860 MB/s in
    round 1'], else []. A low round that another round's best confirms is a spell the roof outlasted (the
    first round's cold caches and page faults, or a job that came and went), not a roof that may be low."""
    unconfirmed = []
    for name, rates in round_rates.items():
        if len(rates) < 2 or min(rates) <= 0:
            continue
        best = max(rates)
        runner_up = sorted(rates)[-2]
        if best / runner_up > 1 + UNSTEADY_SPREAD:
            unconfirmed.append((round(best / runner_up, 3), name, rates))
    if not unconfirmed:
        return []
    _, name, rates = max(unconfirmed, key=lambda u: u[0])  # equal spreads: the first figure
    unit = "FLOP/s" if name.endswith("matmul") else "B/s"
    top = rates.index(max(rates))
    low = [(i + 1, r) for i, r in enumerate(rates) if i != top]
    lo, hi = si(min(r for _, r in low), unit), si(max(r for _, r in low), unit)
    numbers = [str(i) for i, _ in low]
    rounds = f" {numbers[0]}" if len(numbers) == 1 else f"s {', '.join(numbers[:-1])} and {numbers[-1]}"
    return [f"{name} reached {si(max(rates), unit)} in round {top + 1} only, "
            f"{lo if lo == hi else f'{lo} to {hi}'} in round{rounds}"]


def measure_cpu(progress: Progress | None = None, plan: CpuPlan = FULL_CPU_PLAN,
                cpu_times: Callable[[], CpuTimes] = read_cpu_times,
                cache_bytes: Mapping[str, int] | None = None) -> tuple[Ceilings, dict[str, Any]]:
    """Matmul FLOP/s per dtype, read/copy bandwidth of this CPU and copy bandwidth inside its caches
    (`cache_bytes`, default: sysfs's sizes), with torch, as `plan` says: the best of every size, call and
    round, rounds stopping early once converged (CONVERGED)."""
    import torch

    say = progress or (lambda _msg: None)
    start = cpu_times()
    matmuls = {name: _Matmuls(name, tuple(sizes), plan.bf16_reps if name == "bf16" else plan.reps)
               for name, sizes in plan.matmul_n.items()}
    bandwidth = _Bandwidth(plan.bandwidth_bytes, plan.reps)
    caches = _CacheBandwidth(cache_bytes if cache_bytes is not None else cpu_caches(), plan.reps)

    def figures() -> dict[str, float]:
        return {**{name: m.rate for name, m in matmuls.items()}, **bandwidth.rates, **caches.rates}

    rounds = 0
    for rounds in range(1, plan.rounds + 1):
        before = figures() if rounds > 1 else {}
        tag = f" (round {rounds} of up to {plan.rounds})" if plan.rounds > 1 else ""
        for m in matmuls.values():
            m.round(say, tag)
        bandwidth.round(say, tag)
        caches.round(say, tag)
        after = figures()
        if rounds >= MIN_ROUNDS and all(after[k] <= before[k] * (1 + CONVERGED) for k in after):
            break
    load = load_between(start, cpu_times())
    compute = {f"cpu_{name}": m.rate for name, m in matmuls.items()}
    compute["cpu_fp16"] = compute["cpu_bf16"]  # NB: CPU half matmuls share the bf16 path's order of rate
    round_rates = {**{f"{name} matmul": m.round_rates for name, m in matmuls.items()}, **bandwidth.round_rates,
                   **caches.round_rates}
    details: dict[str, Any] = {
        "threads": torch.get_num_threads(), "rounds": rounds,
        "matmul": {name: {"n": m.n, "best_s": m.best_s, **({"skipped_n": list(m.skipped)} if m.skipped else {})}
                   for name, m in matmuls.items()},
        "bandwidth": {"bytes": bandwidth.nbytes, "copy_best_s": bandwidth.copy_s, "read_best_s": bandwidth.read_s},
        "caches": caches.details(),
        "round_rates": round_rates, "load": load.to_dict()}
    notes = [f"measured with torch on {details['threads']} threads, best of {rounds} round(s); "
             "memory roof = copy bandwidth (read + write bytes)"
             + (f"; {', '.join(lv.upper() for lv in caches.sizes)} roofs = copies inside one core's cache"
                if caches.sizes else "")]
    why = load.reasons + _unsteady(round_rates)
    if why:
        notes.append(f"{CALIBRATION_WARNING} ({'; '.join(why)}): may be low; run `roofline calibrate` when quiet")
    info = cpu_description()
    ceilings = Ceilings(device_id="cpu", device_name=info["name"], kind="cpu", source="measured", compute=compute,
                        memory={**bandwidth.rates, **caches.rates}, notes=tuple(notes),
                        cache_bytes=caches.held_sizes(), cache_whole_bytes=caches.whole_sizes())
    return ceilings, details


def calibration_warnings(ceilings: Ceilings) -> list[str]:
    """The roof's own warnings (a busy calibration), for the records timed against it."""
    return [n for n in ceilings.notes if n.startswith(CALIBRATION_WARNING)]


def _this_cpu_key() -> dict[str, str]:
    info = cpu_description()
    return cpu_key(info["name"], info["cores"])


def cpu_ceilings(messages: list[str] | None = None, progress: Progress | None = None,
                 plan: CpuPlan = FULL_CPU_PLAN) -> Ceilings:
    """This CPU's measured roofline: from the store, or measured now (as `plan` says) and stored."""
    key = _this_cpu_key()
    found = lookup(key)
    if found:
        return found[0]
    say = progress or (lambda _msg: None)
    ceilings, details = measure_cpu(lambda msg: say(f"measuring this CPU's roofline (once, then cached): {msg}"),
                                    plan)
    stored = save(key, ceilings, details)  # None: the cache could not be written (its note says so)
    if messages is not None:
        messages.append("measured this CPU's roofline" + (f" (cached in {stored})" if stored else ""))
    return ceilings


# The roofs re-measured in this process, by (device name, pipe): once each, so that a suite of many records
# above one roof pays for one re-measurement.
_rechecked: set[tuple[str, str]] = set()


def beats_roof(record: Record) -> bool:
    """A compute-bound CPU record faster than its measured roof by more than the noise (RECHECK_MARGIN, or
    half its relative IQR when that is larger)."""
    if record.device_kind != "cpu" or record.roof_source != "measured" or record.bound != "compute":
        return False
    spread = ((record.timing.stats if record.timing else None) or {}).get("relative_iqr", 0.0) / 2
    return (record.roofline_fraction or 0.0) > 1 + max(RECHECK_MARGIN, spread)


def recheck_cpu_roof(record: Record, ceilings: Ceilings, progress: Progress | None = None,
                     plan: CpuPlan = FULL_CPU_PLAN,
                     measure: Callable[[str, tuple[int, ...], int, Progress], float] | None = None
                     ) -> tuple[Ceilings, list[str]]:
    """The roof `record` is placed on, re-measured when the record beats it (`beats_roof`): the new rate
    (the best of the old and the new) is stored and returned with a note saying which roof was used; a roof
    that holds is returned unchanged, with a note when the record still beats it. `measure(dtype, sizes,
    reps, say)` gives a matmul rate (default: `plan`'s sizes, RECHECK_ROUNDS rounds)."""
    pipe = record.compute_pipe or ""
    if not beats_roof(record) or pipe not in ceilings.compute or (ceilings.device_name, pipe) in _rechecked:
        return ceilings, []
    _rechecked.add((ceilings.device_name, pipe))
    name = pipe.removeprefix("cpu_")
    say = progress or (lambda _msg: None)
    say(f"re-measuring the CPU {name} roof: this record beat it by {(record.roofline_fraction or 1) - 1:.0%}")
    sizes = tuple(plan.matmul_n.get(name, plan.matmul_n["bf16"]))  # fp16 products: the bf16 sizes
    rate = (measure or _matmul_rate)(name, sizes, plan.bf16_reps if name in ("bf16", "fp16") else plan.reps, say)
    old = ceilings.compute[pipe]
    if rate <= old * (1 + RECHECK_MARGIN):
        return ceilings, [f"{record.roofline_fraction:.0%} of the CPU {name} roof, which re-measured at "
                          f"{si(rate, 'FLOP/s')} (stored {si(old, 'FLOP/s')}): larger products than the "
                          "calibration's run faster, or the FLOP count overstates the work"]
    raised = dataclasses.replace(ceilings, compute={**ceilings.compute, pipe: rate})
    found = lookup(_this_cpu_key())
    if found and found[0].device_name == ceilings.device_name:
        details = {**found[1], "rechecked": {**found[1].get("rechecked", {}), pipe: {"from": old, "to": rate}}}
        save(_this_cpu_key(), raised, details)
    return raised, [f"CPU {name} roof re-measured, as this record beat the stored {si(old, 'FLOP/s')}: "
                    f"placed on the new {si(rate, 'FLOP/s')} (now stored)"]


def _matmul_rate(name: str, sizes: tuple[int, ...], reps: int, say: Progress) -> float:
    """The best matmul rate of `name` over `sizes`, RECHECK_ROUNDS rounds."""
    m = _Matmuls(name, sizes, reps)
    for r in range(RECHECK_ROUNDS):
        m.round(say, f" (re-measuring, round {r + 1} of {RECHECK_ROUNDS})")
    return m.rate


def kept_stored_roof(new: Ceilings, stored: Ceilings | None) -> str | None:
    """Why a CPU calibration must not replace the stored roof, in one line; None when it may. It may not when it
    ran on a busy machine (its notes say so) and some figure is lower than the stored one by more than
    KEEP_STORED_MARGIN."""
    warnings = calibration_warnings(new)
    if stored is None or not warnings:
        return None
    drops = [(new_rate / old - 1, what, old, new_rate, unit)
             for figures, unit in ((new.compute, "FLOP/s"), (new.memory, "B/s"))
             for what, new_rate in figures.items()
             if (old := (stored.compute if unit == "FLOP/s" else stored.memory).get(what))
             and new_rate < old * (1 - KEEP_STORED_MARGIN)]
    if not drops:
        return None
    drop, what, old, new_rate, unit = min(drops)
    name = what.removeprefix("cpu_")
    why = warnings[0].removeprefix(CALIBRATION_WARNING).split("):")[0].strip(" (")
    return (f"kept the stored CPU roof ({name} {si(old, unit)}): this calibration ran on a busy machine ({why}) and "
            f"measured {si(new_rate, unit)} ({drop:.0%}); `roofline calibrate --replace` stores it anyway")


def calibrate(device: str | None = None, quick: bool = False, progress: Progress | None = None,
              replace: bool = False) -> tuple[Ceilings, dict[str, Any]]:
    """Measure this machine's ceilings (the GPU when there is one, else the CPU) and store them; `quick`
    measures fewer shapes (QUICK_CPU_PLAN on the CPU). A CPU calibration on a busy machine that measured less
    than the stored roof keeps the stored one (`kept_stored_roof`; returned, with the reason in its details'
    `kept_stored`) unless `replace`."""
    from roofline.ceilings.store import gpu_key
    from roofline.core.errors import RooflineError
    from roofline.measuring.device import detect_gpus

    gpus = detect_gpus()
    if device == "cpu" or (device is None and not gpus):
        ceilings, details = measure_cpu(progress, QUICK_CPU_PLAN if quick else FULL_CPU_PLAN)
        found = lookup(_this_cpu_key())
        kept = None if replace else kept_stored_roof(ceilings, found[0] if found else None)
        if kept and found:
            return found[0], {**found[1], "kept_stored": kept, "measured": {"compute": ceilings.compute,
                                                                             "memory": ceilings.memory}}
        return ceilings, {**details, "stored": save(_this_cpu_key(), ceilings, details) is not None}
    index = cuda_index(device)
    if index >= len(gpus):
        raise RooflineError(f"no GPU cuda:{index} on this machine")
    gpu = gpus[index]
    if gpu.spec is None:
        raise RooflineError(f"no spec file for '{gpu.nvml_name}': calibration needs one to compare against")
    from roofline.measuring.calibrate_gpu import calibrate_gpu

    ceilings, details = calibrate_gpu(gpu, quick, progress)
    return ceilings, {**details, "stored": save(gpu_key(gpu.nvml_name, gpu.driver_version), ceilings, details)
                      is not None}
