"""Is this machine busy? Other processes' share of the CPUs we run on, the hypervisor's steal time and the
load average, read from /proc (Linux; elsewhere only the load average). A CPU timing or calibration taken
on a busy machine is slow for reasons that are not the kernel's: the record and the stored roof say so.

Importing this module never imports torch.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

# Other processes used more than this share of our CPUs while we timed: torch splits a product evenly over
# its threads, so one thread that shares its core delays the whole call, and a tenth of the machine spent
# elsewhere already shows in a CPU time (an idle machine's daemons take 0-2%).
OTHERS_BUSY_SHARE = 0.10
# The hypervisor gave more than this share of our virtual CPUs' time to other guests (steal time).
STEAL_BUSY_SHARE = 0.05
# A 1-minute load average above this many runnable threads per CPU, read before the work starts (so it
# counts other processes and earlier runs, not this one): every thread, ours included, waited for a core.
# Judged only when the window is too short for the shares above to be read as they are.
LOAD_PER_CPU_BUSY = 1.0
# /proc/stat counts in ticks of 10 ms per CPU: under this window a share is too coarse to read as it is
# (2 CPUs x 0.5 s = 100 ticks, one tick 1%), and what is judged is its floor: the others' CPU time less
# ROUNDING_TICKS per CPU (each counter rounded at both ends of the window), beside the load average. A 16 us
# gemv took 8 ms a call while one other process spun on one of 2 CPUs (torch's two threads wait for each other
# at every product), 0.1 s in all: the others' 51-106 ms of its 0.2 CPU-s were judged "too short to tell";
# on the quiet machine the same windows read -13 to +38 ms.
MIN_WINDOW_S = 0.5
ROUNDING_TICKS = 2
_TICK_S = 1 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


@dataclass(frozen=True)
class CpuTimes:
    """One reading of the CPU accounting, in seconds: the CPUs this process may run on, summed."""

    wall_s: float  # a monotonic clock
    total_s: float | None  # every state's time on our CPUs (None: no /proc/stat)
    busy_s: float  # time not idle, not waiting for I/O and not stolen, every process's
    steal_s: float
    own_s: float  # this process's CPU time, all its threads
    cpus: int
    load1: float | None  # the 1-minute load average, for the whole machine
    machine_cpus: int


def _proc_stat_times(cpus: set[int]) -> tuple[float, float, float] | None:
    """(total, busy, steal) seconds of the CPUs in `cpus`, from /proc/stat's per-CPU lines."""
    try:
        with open("/proc/stat") as fh:
            lines = fh.readlines()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = busy = steal = 0.0
    seen = 0
    for line in lines:
        name, *fields = line.split()
        if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus):
            continue
        # user nice system idle iowait irq softirq steal [guest guest_nice: already inside user and nice]
        v = [float(x) for x in fields[:8]] + [0.0] * (8 - len(fields[:8]))
        total += sum(v)
        busy += v[0] + v[1] + v[2] + v[5] + v[6]
        steal += v[7]
        seen += 1
    if not seen:
        return None
    return total / tick, busy / tick, steal / tick


def read_cpu_times() -> CpuTimes:
    """The CPU accounting now (cheap: one read of /proc/stat, one getrusage)."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    stat = _proc_stat_times(cpus)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        load1: float | None = os.getloadavg()[0]
    except OSError:
        load1 = None
    total, busy, steal = stat if stat else (None, 0.0, 0.0)
    return CpuTimes(wall_s=time.monotonic(), total_s=total, busy_s=busy, steal_s=steal,
                    own_s=usage.ru_utime + usage.ru_stime, cpus=len(cpus), load1=load1,
                    machine_cpus=os.cpu_count() or len(cpus))


@dataclass(frozen=True)
class Load:
    """How busy the machine was over a window: other processes' and the hypervisor's share of our CPUs
    (None when /proc/stat is unreadable; their floors in a window under MIN_WINDOW_S) and the load average at
    its start."""

    wall_s: float
    cpus: int
    others_share: float | None
    steal_share: float | None
    load1: float | None
    machine_cpus: int

    @property
    def reasons(self) -> list[str]:
        """What made the machine busy, one phrase each; empty when it was quiet."""
        out = []
        short = self.wall_s < MIN_WINDOW_S  # the shares are floors (ROUNDING_TICKS)
        at_least = "at least " if short else ""
        if self.others_share is not None and self.others_share > OTHERS_BUSY_SHARE:
            out.append(f"other processes used {at_least}{self.others_share:.0%} of {self.cpus} CPUs")
        if self.steal_share is not None and self.steal_share > STEAL_BUSY_SHARE:
            out.append(f"the hypervisor took {at_least}{self.steal_share:.0%} (steal)")
        if ((self.others_share is None or short) and self.load1 is not None
                and self.load1 > LOAD_PER_CPU_BUSY * self.machine_cpus):
            out.append(f"load average {self.load1:.1f} on {self.machine_cpus} CPUs")
        return out

    @property
    def busy(self) -> bool:
        return bool(self.reasons)

    def to_dict(self) -> dict[str, float | int | None]:
        return {"wall_s": self.wall_s, "cpus": self.cpus, "others_share": self.others_share,
                "steal_share": self.steal_share, "load1": self.load1, "machine_cpus": self.machine_cpus}


def load_between(start: CpuTimes, end: CpuTimes) -> Load:
    """The machine's load over the window from `start` to `end`."""
    wall = end.wall_s - start.wall_s
    others = steal = None
    if start.total_s is not None and end.total_s is not None:
        elapsed = end.total_s - start.total_s
        if elapsed > 0:
            theirs = (end.busy_s - start.busy_s) - (end.own_s - start.own_s)
            stolen = end.steal_s - start.steal_s
            if wall < MIN_WINDOW_S:  # the floors: what is left beyond the counters' rounding
                slack = ROUNDING_TICKS * _TICK_S * start.cpus
                theirs, stolen = theirs - slack, stolen - slack
            others = min(1.0, max(0.0, theirs / elapsed))
            steal = min(1.0, max(0.0, stolen / elapsed))
    return Load(wall_s=wall, cpus=start.cpus, others_share=others, steal_share=steal, load1=start.load1,
                machine_cpus=start.machine_cpus)
