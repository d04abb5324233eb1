"""How long a stretch of a profiled program took: CUDA events on a GPU, perf_counter on the CPU."""

from __future__ import annotations

import time
from typing import Any

import torch


def current_cuda_device() -> str | None:
    """'cuda:N' when the program set torch to a GPU other than the first (None: the default, cuda:0 or the CPU)."""
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return None
    index = torch.cuda.current_device()
    return f"cuda:{index}" if index else None


class Wall:
    """Elapsed time of a stretch of the program: CUDA events on a GPU (device time, including idle gaps),
    perf_counter on the CPU."""

    def __init__(self, device: str | None) -> None:
        self.cuda = bool(device and device.startswith("cuda"))
        self.device = device
        self._start: Any = None
        self._end: Any = None

    def start(self) -> None:
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._start.record(torch.cuda.current_stream(self.device))  # its GPU's, whichever the script sets
        else:
            self._start = time.perf_counter()

    def stop(self, sync: bool = False) -> None:
        if self.cuda:
            self._end = torch.cuda.Event(enable_timing=True)
            self._end.record(torch.cuda.current_stream(self.device))
            if sync:
                torch.cuda.synchronize(self.device)
        else:
            self._end = time.perf_counter()

    def elapsed_s(self) -> float | None:
        if self._start is None or self._end is None:
            return None
        if self.cuda:
            return float(self._start.elapsed_time(self._end)) * 1e-3
        return float(self._end - self._start)
