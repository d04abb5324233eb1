"""torch.compile'd modules inside a profile: the module tracker that steps aside while one runs.

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
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils.module_tracker import ModuleTracker

# The profiler range around a compiled module's run: the Triton kernels launched inside it take its module.
COMPILED_PREFIX = "roofline.compiled:"


def is_compiled_module(mod: Any) -> bool:
    """A torch.compile(module) wrapper (without importing Dynamo when the program never did)."""
    dynamo = sys.modules.get("torch._dynamo.eval_frame")
    return dynamo is not None and isinstance(mod, dynamo.OptimizedModule)


class CompiledAwareTracker(ModuleTracker):
    """torch's ModuleTracker, which removes its global hooks while a compiled module runs (module docstring).
    `compiled` counts the compiled modules entered, by name, and `runs` lists each entry's (name, region) with
    the region `region()` names then; with `ranges`, each run is a profiler range."""

    def __init__(self, ranges: bool = False, region: Callable[[], str | None] = lambda: None) -> None:
        super().__init__()
        self.ranges = ranges
        self.region = region
        self.compiled: dict[str, int] = {}
        self.runs: list[tuple[str, str | None]] = []
        self._aside: list[Any] = []  # per-run restore hooks (nested compiled modules run none: no hooks inside)

    def _get_mod_name(self, mod: Any) -> str:
        """A compiled root is named by the module it compiled ('Net', not 'OptimizedModule')."""
        if is_compiled_module(mod) and mod not in self._known_modules:
            self._known_modules[mod] = type(mod._orig_mod).__name__
        return super()._get_mod_name(mod)

    def _fw_pre_hook(self, mod: Any, input: Any) -> None:
        super()._fw_pre_hook(mod, input)
        if is_compiled_module(mod) and not self._aside:
            self._step_aside(mod)

    def _step_aside(self, mod: Any) -> None:
        name = self._get_mod_name(mod)
        self.compiled[name] = self.compiled.get(name, 0) + 1
        self.runs.append((name, self.region()))
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        marker = torch.profiler.record_function(COMPILED_PREFIX + name) if self.ranges else None
        if marker is not None:
            marker.__enter__()

        def restore(m: Any, args: Any, output: Any) -> None:
            handle.remove()
            self._aside.remove(handle)
            if marker is not None:
                marker.__exit__(None, None, None)
            self._hooks_on()
            self._fw_post_hook(m, args, output)

        handle = mod.register_forward_hook(restore, always_call=True)
        self._aside.append(handle)

    def _hooks_on(self) -> None:
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)

    def __exit__(self, *args: Any) -> None:
        for handle in self._aside:  # a run that never returned (the program raised inside it)
            handle.remove()
        if self._aside:
            self._aside.clear()
            self._hooks_on()
        super().__exit__(*args)
