"""roofline: how fast each deep-learning operator could run on a GPU, how fast it does, and why.

The public API (docs/api.md) is this namespace, and `roofline.ops` (the operator catalog); every other module
is internal. Its names are loaded on first use (`roofline.measure` pulls in the timers, and torch when it
times), so importing the math (`roofline.core`, `roofline.ops`) stays light:

- `measure(fn, flops=..., bytes=...)`: time your own zero-argument callable and place it on the roofline;
- `analyze(op, **params)`: a catalog operator, as `roofline analyze OP` places it;
- `profile(...)`, `region(name)`, `Profile`: every aten op of a model (docs/profile.md);
- `trace(paths)`: the same from torch.profiler traces a run already wrote, one or one per rank (docs/trace.md);
- `occupancy(gpu, threads, registers, shared_memory)`: resident blocks and warps per SM;
- `advise(record, gpu)`: a record's advice against a GPU;
- `Record`, `Document`, `read_document(path)`, `write_document(doc, path)`: the results (schema v1);
- `GPUSpec`: a GPU's spec, which every function that takes a GPU takes beside its id or alias;
- `RooflineError`, and its subclass `UsageError` for a bad argument: what the API raises for a problem the
  caller can fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline._version import __version__

if TYPE_CHECKING:  # what type checkers read (roofline/py.typed); at run time each name loads on first use
    from roofline.analysis.advice import advise as advise
    from roofline.analysis.occupancy import occupancy as occupancy
    from roofline.api import analyze as analyze
    from roofline.api import measure as measure
    from roofline.capture.profile import Profile as Profile
    from roofline.capture.profile import profile as profile
    from roofline.capture.profile import region as region
    from roofline.capture.sol import sol as sol
    from roofline.ceilings.specs import GPUSpec as GPUSpec
    from roofline.core.document import Document as Document
    from roofline.core.document import read_document as read_document
    from roofline.core.document import write_document as write_document
    from roofline.core.errors import RooflineError as RooflineError
    from roofline.core.errors import UsageError as UsageError
    from roofline.core.record import Record as Record
    from roofline.traces.job import trace as trace

# Public name -> the module that defines it (the facade's two functions: roofline.api).
_API = {"measure": "roofline.api", "analyze": "roofline.api", "profile": "roofline.capture.profile",
        "region": "roofline.capture.profile", "Profile": "roofline.capture.profile",
        "occupancy": "roofline.analysis.occupancy", "advise": "roofline.analysis.advice",
        "Record": "roofline.core.record", "Document": "roofline.core.document",
        "read_document": "roofline.core.document", "write_document": "roofline.core.document",
        "GPUSpec": "roofline.ceilings.specs", "RooflineError": "roofline.core.errors",
        "UsageError": "roofline.core.errors", "sol": "roofline.capture.sol", "trace": "roofline.traces.job"}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
