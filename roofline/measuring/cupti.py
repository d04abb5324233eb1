"""torch.profiler sessions (CUPTI's activity records): the one way this project starts one, so the kernel
breakdown of `analyze`/`run` and whole-model profiles configure it alike."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

# torch.profiler warns once per process that it "clears events at the end of each cycle": true of its
# scheduled mode, which this project does not use; the warning reached users' terminals on every `analyze`.
_CYCLE_WARNING = r".*Profiler clears events at the end of each cycle"  # torch prefixes it with "Warning: "


@contextlib.contextmanager
def device_profiler(cuda: bool = True, cpu: bool = False, record_shapes: bool = False) -> Iterator[Any]:
    """A torch.profiler.profile recording CUDA kernels (and CPU ops when `cpu`; their arguments' shapes when
    `record_shapes`), without its cycle warning."""
    from torch.profiler import ProfilerActivity, profile

    activities = [a for a, on in ((ProfilerActivity.CPU, cpu), (ProfilerActivity.CUDA, cuda)) if on]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_CYCLE_WARNING)
        with profile(activities=activities, record_shapes=record_shapes) as prof:
            yield prof
