"""What is on this machine: NVIDIA GPUs through NVML (pynvml, no torch), and the CPU.

NVML is optional at run time: a machine without the driver (or without nvidia-ml-py) is a CPU machine.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from roofline.ceilings.specs import GPUSpec, match_nvml_name


@dataclass(frozen=True)
class LocalGPU:
    index: int
    nvml_name: str
    driver_version: str
    memory_total_bytes: int
    spec: GPUSpec | None


# The device files every NVIDIA driver creates on Linux (and a GPU container mounts): without them NVML has
# nothing to see, and importing pynvml and failing its init costs ~30 ms of every analytic command.
NVIDIA_CONTROL = "/dev/nvidiactl"


def _nvml() -> Any | None:
    if sys.platform.startswith("linux") and not os.path.exists(NVIDIA_CONTROL):
        return None
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def _str(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def detect_gpus() -> list[LocalGPU]:
    """Every NVIDIA GPU NVML sees, each matched to a spec file by its NVML name (None when unknown)."""
    if os.environ.get("ROOFLINE_NO_GPU"):  # lets tests and users force the CPU path
        return []
    nvml = _nvml()
    if nvml is None:
        return []
    gpus = []
    try:
        driver = _str(nvml.nvmlSystemGetDriverVersion())
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            name = _str(nvml.nvmlDeviceGetName(h))
            mem = int(nvml.nvmlDeviceGetMemoryInfo(h).total)
            gpus.append(LocalGPU(i, name, driver, mem, match_nvml_name(name)))
    except Exception:
        return gpus
    return gpus


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo, else platform.processor()."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform  # ~3 ms: imported where used, not by every analytic command

    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_description() -> dict[str, Any]:
    import platform

    return {"kind": "cpu", "name": cpu_name(), "cores": os.cpu_count(), "machine": platform.machine()}


CPU_CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


def parse_cache_size(text: str) -> int:
    """sysfs's cache size ('32K', '512K', '32768K', '1M') in bytes."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def cpu_caches(root: str = CPU_CACHE_DIR) -> dict[str, int]:
    """The data caches of one core, {'l1': 32768, 'l2': 524288, 'l3': 33554432}, from sysfs (the instruction
    cache left out); empty where sysfs has none (not Linux, a container hiding it)."""
    from pathlib import Path

    sizes: dict[str, int] = {}
    for index in sorted(Path(root).glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = parse_cache_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified"):
            sizes[f"l{level}"] = max(size, sizes.get(f"l{level}", 0))
    return sizes


def other_processes(index: int) -> list[int]:
    """PIDs of the processes other than this one that hold a compute context on GPU `index` (NVML), e.g. a
    training job that would share the GPU with a measurement; empty when NVML cannot tell."""
    import os

    nvml = _nvml()
    if nvml is None:
        return []
    try:
        h = nvml.nvmlDeviceGetHandleByIndex(index)
        procs = nvml.nvmlDeviceGetComputeRunningProcesses(h)
    except Exception:  # NVML raises its own error classes; unknown means "cannot tell"
        return []
    return sorted({int(p.pid) for p in procs} - {os.getpid()})
