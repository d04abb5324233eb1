"""Which module and which phase of a step each recorded op belongs to.

Forward: the innermost module whose forward is running (module hooks, as torch's ModuleTracker names them:
"Net.layers.0.mlp.fc1"), with the tracker stepping aside while a torch.compile'd module runs (compiled.py).

Backward: the module whose forward CREATED the autograd node now running. When a module's forward returns,
every autograd node created since it began (sequence number at or above the one it started at) and not yet
claimed by an inner module is tagged with its name (`Node.metadata`); an op run by autograd is then the
current node's (`torch._C._current_autograd_node`). So a module that returns its input unchanged (Dropout(0),
Identity) claims no node, a module called twice tags each call's nodes, and nodes created outside every module
(a loss computed by the script) are the root's. torch's ModuleTracker instead marks a module as running in
backward from grad hooks on its inputs and outputs: an identity module's hooks fire around every later
backward op, which is how a ViT's `blocks.11.attn.proj_drop` came to hold two thirds of a training step.
Activation checkpointing: the forward recomputed inside backward runs module hooks again; its ops are the
recomputed module's (phase backward), and the nested backward over the recomputed graph reads its tags.
A parameter's gradient accumulation (AccumulateGrad) is the module that first used it.

Phases: `backward` (ops run by the autograd engine), `optimizer` (inside `Optimizer.step` of any torch
optimizer, foreach and fused alike: torch's global step hooks), `forward` (everything before a step's backward,
the loss included) and `other` (after backward or the optimizer, until the next top-level forward begins:
gradient clipping, a GradScaler's unscale and update, zero_grad).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils._pytree import tree_flatten
from torch.utils.module_tracker import ModuleTracker

from roofline.capture.compiled import COMPILED_PREFIX, is_compiled_module
from roofline.capture.trace import innermost_module
from roofline.core.record import PHASES

FORWARD, BACKWARD, OPTIMIZER, OTHER = PHASES
# The key of an autograd node's metadata that holds the module that created it.
NODE_MODULE = "roofline.module"


def in_backward() -> bool:
    """Whether the autograd engine is running a graph task on this thread."""
    return torch._C._current_graph_task_id() != -1


def _tensors(value: Any) -> list[torch.Tensor]:
    return [x for x in tree_flatten(value)[0] if isinstance(x, torch.Tensor)]


def tag_nodes(roots: Iterable[Any], name: str, since: int) -> int:
    """Tag with `name` every autograd node reachable from `roots` that was created at or after sequence number
    `since` (while the module ran) and is not tagged yet. The walk goes on through nodes an inner module tagged
    (a SiLU between two linears is reached through the second one's node) and stops at older nodes. Returns how
    many it tagged."""
    tagged = 0
    seen: set[Any] = set()
    todo = [n for n in roots if n is not None]
    while todo:
        node = todo.pop()
        if node in seen or node._sequence_nr() < since:
            continue
        seen.add(node)
        meta = node.metadata
        if NODE_MODULE not in meta:
            meta[NODE_MODULE] = name
            tagged += 1
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return tagged


class StepTracker(ModuleTracker):
    """The module and the phase of the op dispatched now (module docstring). `compiled` counts the compiled
    modules entered, by name, and `runs` lists each entry's (name, region) with the region `region()` names
    then; with `ranges`, each compiled run is a profiler range."""

    def __init__(self, ranges: bool = False, region: Callable[[], str | None] = lambda: None) -> None:
        super().__init__()
        self.ranges = ranges
        self.region = region
        self.on_module: Callable[[Any], None] = lambda mod: None  # told of each module the first time it runs
        self.compiled: dict[str, int] = {}
        self.runs: list[tuple[str, str | None]] = []
        self._aside: list[Any] = []  # per-run restore hooks (nested compiled modules run none: no hooks inside)
        self._starts: list[int] = []  # the autograd sequence number each running forward began at
        self._optimizer = 0  # > 0 inside Optimizer.step
        self._after_step = False  # a backward or optimizer op ran since the last top-level forward began
        self._optim_hooks: list[Any] = []

    # -- where an op runs
    def module(self) -> str:
        """The innermost module running its forward; in backward, the module that created the current node."""
        if in_backward() and not self._starts:
            node = torch._C._current_autograd_node()
            # torch's stub types Node.metadata as a method; on the C++ nodes autograd runs it is a dict attribute
            return str(node.metadata.get(NODE_MODULE, "")) if node is not None else ""  # type: ignore[attr-defined]
        return innermost_module(self.parents)

    def phase(self) -> str:
        if in_backward():
            self._after_step = True
            return BACKWARD
        if self._optimizer:
            self._after_step = True
            return OPTIMIZER
        return OTHER if self._after_step else FORWARD

    # -- module hooks (ModuleTracker's, without its grad hooks: backward is read from the nodes)
    def _get_mod_name(self, mod: Any) -> str:
        """A compiled root is named by the module it compiled ('Net', not 'OptimizedModule')."""
        if is_compiled_module(mod) and mod not in self._known_modules:
            self._known_modules[mod] = type(mod._orig_mod).__name__
        return super()._get_mod_name(mod)

    def _fw_pre_hook(self, mod: Any, input: Any) -> None:
        if mod not in self._known_modules:
            self.on_module(mod)
        name = self._get_mod_name(mod)
        if not self._starts and not in_backward():
            self._after_step = False  # a top-level forward: the next step begins
        self.parents.add(name)
        self._starts.append(torch._C._autograd._get_sequence_nr())
        if is_compiled_module(mod) and not self._aside:
            self._step_aside(mod)

    def _fw_post_hook(self, mod: Any, input: Any, output: Any) -> None:
        name = self._get_mod_name(mod)
        self.parents.discard(name)
        since = self._starts.pop() if self._starts else 0
        if torch.is_grad_enabled():
            tag_nodes((t.grad_fn for t in _tensors(output)), name, since)

    def _step_aside(self, mod: Any) -> None:
        """Entering a torch.compile(module) wrapper: the global hooks come off until it returns (compiled.py)."""
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
        # always_call: a forward that raises still leaves (non-reentrant checkpointing stops a recomputation
        # early by raising inside the module that computed the last tensor it needs)
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook, always_call=True)

    # -- optimizer hooks
    def _step_pre(self, *_: Any) -> None:
        self._optimizer += 1

    def _step_post(self, *_: Any) -> None:
        self._optimizer = max(0, self._optimizer - 1)

    def __enter__(self) -> StepTracker:
        self._hooks_on()
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self._optim_hooks = [register_optimizer_step_pre_hook(self._step_pre),
                             register_optimizer_step_post_hook(self._step_post)]
        return self

    def __exit__(self, *args: Any) -> None:
        for handle in self._optim_hooks:
            handle.remove()
        self._optim_hooks.clear()
        for handle in self._aside:  # a run that never returned (the program raised inside it)
            handle.remove()
        self._aside.clear()
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
