"""torch.compile'd modules inside a profile: why the module tracker (capture/modules.py) steps aside while one
runs.

What torch does (torch 2.11 to 2.13, _dynamo/convert_frame.py and utils/_python_dispatch.py):
- A compiled frame called while a TorchDispatchMode is active runs EAGER unless the mode says
  `ignore_compile_internals()`; worse, Dynamo then marks the frame's code as skipped for the rest of the
  process (the compiled model stays eager after the profile). The trace's mode (`Tracer`) therefore ignores
  compile internals: compiled code runs compiled, the mode sees only the aten ops it still dispatches (extern
  kernels: `mm.out`, SDPA, fallbacks), and Inductor's Triton kernels are seen by torch.profiler alone
  (capture/inductor.py).
- Dynamo guards a compiled module on the global module hooks being as they were when it compiled: the
  ModuleTracker's global hooks make it recompile inside the profile (compile time and autotuning profiled, the
  hooks traced into the graph; on torch 2.13 `torch.compile(module)` then fails inside Dynamo). So on entering
  a `torch.compile(module)` wrapper (an OptimizedModule, whose own call runs eagerly) the tracker removes its
  global hooks and puts them back when the wrapper returns: the compiled code runs exactly as it did in the
  warm-up. Ops inside it are attributed to the compiled module (its submodules run no hooks).

NB: `module.compile()` runs the hooks inside the compiled frame: it recompiles under the profile, with graph
breaks at the hooks (torch 2.13; the docs say to profile `torch.compile(module)`). A compiled function that
calls modules inlines them without guarding the global hooks: it runs as compiled, its ops under the module
that called it.
"""

from __future__ import annotations

import sys
from typing import Any

# The profiler range around a compiled module's run: the Triton kernels launched inside it take its module.
COMPILED_PREFIX = "roofline.compiled:"


def is_compiled_module(mod: Any) -> bool:
    """A torch.compile(module) wrapper (without importing Dynamo when the program never did)."""
    dynamo = sys.modules.get("torch._dynamo.eval_frame")
    return dynamo is not None and isinstance(mod, dynamo.OptimizedModule)
