"""roofline: how fast each deep-learning operator could run on a GPU, how fast it does, and why.

The public API (docs/api.md) is loaded on first use (`roofline.measure` pulls in torch and the timers), so
importing the math (`roofline.core`, `roofline.ops`) stays light:

- `measure(fn, flops=..., bytes=...)`: time your own zero-argument callable and place it on the roofline;
- `analyze(op, **params)`: a catalog operator, as `roofline analyze OP` places it;
- `profile(...)`, `region(name)`, `Profile`: every aten op of a model (docs/profile.md);
- `occupancy(gpu, threads, registers, shared_memory)`: resident blocks and warps per SM;
- `Record`, `Document`, `read_document(path)`: the results (schema v1) these return and read;
- `RooflineError`: the one exception type the API raises for a problem the caller can fix."""

from __future__ import annotations

from typing import Any

from roofline._version import __version__

# Public name -> the module that defines it.
_API = {"measure": "roofline.measuring.runner", "analyze": "roofline.api", "profile": "roofline.capture.profile",
        "region": "roofline.capture.profile", "Profile": "roofline.capture.profile",
        "occupancy": "roofline.analysis.occupancy", "Record": "roofline.core.record",
        "Document": "roofline.core.document", "read_document": "roofline.core.document",
        "RooflineError": "roofline.core.errors", "sol": "roofline.capture.sol"}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
