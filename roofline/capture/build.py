"""A model built inside a profile: what its construction needs without data, and which of its calls are left out.

Analytic runs (no data, capture/profile.py) construct a model under FakeTensorMode. Construction code reads
values that a fake tensor does not have: timm's and torchvision's drop-path rates
(`torch.linspace(0, rate, depth).tolist()`), widths computed from a tensor, `nn.init.trunc_normal_`'s
rejection loop (`if not mask.any()`). So, while analytic:
- Small constants are real: a factory op without tensor inputs (arange, linspace, zeros, ones, full, tensor,
  randn) whose outputs have at most `CONSTANT_NUMEL` elements (`MASK_NUMEL` for booleans: a causal or
  sliding-window mask of up to 8192 x 8192 scores) returns a fake tensor that keeps its real value
  (FakeTensorMode's constants), and FakeTensorMode's constant propagation (raised to the same size while
  the profile runs) computes the ops on such constants for real: `.tolist()`, `.item()` and `if` on them
  read real values. Everything else stays fake; a constant that an op with fake inputs writes is forgotten.
- A scalar read of a value no constant holds, before the first module forward began, outside every module and
  inside a constructor or an initialiser (`in_initialiser`: `mask.any()` of a weight being initialised), reads
  as 0 (`BUILD_STAND_IN`), which ends trunc_normal_'s rejection loop at once; counted and said in the summary's
  notes. Elsewhere the read is still an error: the program needs data.
- `model.to(dtype)` on fake parameters works (`fake_swaps`).

Build calls (both modes, `build_calls`): a call made before the first module forward and outside every
region is the model's construction when it writes only parameters and buffers (initialisers, `.to(dtype)`),
when every call that reads its result is a build call (the random draw whose product becomes a weight), or
when nothing reads its result and it is a scalar read or computed on constants (a drop-path rate). They are
left out of the records, counted in the summary's `build_calls`. The program's inputs (read by the forward)
are kept. To keep the build, run it inside a `roofline.region(...)` (then only regions are kept).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:  # typing only: torch is imported when a profile is built
    from types import FrameType

    from torch._subclasses.fake_tensor import FakeTensor

# Elements a real constant may have (FakeTensorMode's own limit is 1): enough for a depth's drop-path rates, a
# relative-position index or a mask of up to 1024 x 1024 scores, small enough that the real copies cost
# little memory (at most 8 MiB each); larger factories stay fake.
CONSTANT_NUMEL = 1 << 20
# Elements a boolean constant may have: an attention mask (1 byte a score) of up to 8192 x 8192 (64 MiB), as
# Hugging Face builds its causal and sliding-window masks from aranges; read by capture/masks.py.
MASK_NUMEL = 1 << 26
# What a scalar read of an unknown value reads as during the build: 0 (False) ends rejection loops
# (`if not mask.any(): break`); FLOPs and bytes of the forward do not depend on initial values.
BUILD_STAND_IN = 0
SCALAR_READ = "aten::_local_scalar_dense"


def numel_limit(dtype: Any) -> int:
    """The most elements a constant of `dtype` keeps: MASK_NUMEL for booleans (masks), else CONSTANT_NUMEL."""
    import torch

    return MASK_NUMEL if dtype == torch.bool else CONSTANT_NUMEL


@contextlib.contextmanager
def constants_kept() -> Iterator[None]:
    """FakeTensorMode's constant propagation keeps outputs of up to `numel_limit` elements while the block runs
    (its own limit is 1 element; its other conditions are kept: no sparse, fake or meta tensor)."""
    from torch._subclasses import fake_tensor
    from torch._subclasses.fake_tensor import FakeTensorMode

    before = FakeTensorMode.may_turn_const
    sparse = getattr(fake_tensor, "is_sparse_any", lambda t: t.is_sparse)

    def may_turn_const(self: Any, t: Any) -> bool:
        return (t.numel() <= numel_limit(t.dtype) and not sparse(t) and not self.is_our_fake(t)
                and t.device.type != "meta")

    FakeTensorMode.may_turn_const = may_turn_const  # type: ignore[method-assign]
    try:
        yield
    finally:
        FakeTensorMode.may_turn_const = before  # type: ignore[method-assign]


@contextlib.contextmanager
def fake_swaps() -> Iterator[None]:
    """`Module.to(dtype)` on fake parameters works while the block runs: torch swaps a fake parameter for its
    converted copy (`torch.utils.swap_tensors`), which refuses a tensor with a weak reference (FakeTensorMode
    holds them: "Couldn't swap Linear.weight"); the parameter's data is set to the copy instead."""
    import torch.utils
    from torch._subclasses.fake_tensor import is_fake

    swap = torch.utils.swap_tensors

    def swap_or_set(t1: Any, t2: Any) -> None:
        try:
            swap(t1, t2)
        except RuntimeError:
            if not (is_fake(t1) and is_fake(t2)):
                raise
            import torch

            with torch.no_grad():
                t1.data = t2

    torch.utils.swap_tensors = swap_or_set
    try:
        yield
    finally:
        torch.utils.swap_tensors = swap


def in_initialiser() -> bool:
    """Whether the program is constructing or initialising a module now: a frame of `torch.nn.init`, of an
    `__init__`, or of a function named for initialisation (`reset_parameters`, timm's `_init_weights`) is on the
    stack."""
    import sys

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if "init" in code.co_name or code.co_name == "reset_parameters" or code.co_filename.endswith("nn/init.py"):
            return True
        frame = frame.f_back
    return False


def is_constant(t: Any) -> TypeGuard[FakeTensor]:
    """A fake tensor that keeps its real value."""
    return getattr(t, "constant", None) is not None


def _fake_outputs(out: Any) -> list[Any] | None:
    """The fake tensors of `out`, or None when any is not fake or is too large to be a constant."""
    import torch
    from torch._subclasses.fake_tensor import is_fake
    from torch.utils._pytree import tree_leaves

    leaves = [x for x in tree_leaves(out) if isinstance(x, torch.Tensor)]
    if not leaves or not all(is_fake(t) for t in leaves):
        return None
    if any(sum(math.prod(t.shape) for t in leaves) > numel_limit(t.dtype) for t in leaves):
        return None
    return leaves


def as_constant(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
    """`out` (the fake result of a factory op without tensor inputs) as constants: the op run again for real,
    its results faked keeping their values. `out` unchanged when too large, not fake, or the op cannot run for
    real here (a device this machine does not have)."""
    if _fake_outputs(out) is None:
        return out
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
    from torch.utils._pytree import tree_leaves, tree_map_only

    mode = next((t.fake_mode for t in tree_leaves(out) if isinstance(t, FakeTensor)), None)
    try:
        with unset_fake_temporarily():
            real = func(*args, **kwargs)
    except (RuntimeError, NotImplementedError, TypeError, ValueError, AssertionError):
        return out
    if mode is None:
        return out
    convert = mode.fake_tensor_converter
    return tree_map_only(torch.Tensor, lambda t: convert.from_real_tensor(mode, t, make_constant=True), real)


def has_tensor(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    import torch
    from torch.utils._pytree import tree_leaves

    return any(isinstance(x, torch.Tensor) for x in tree_leaves((args, kwargs)))


def build_calls(items: Sequence[Any], first_forward: int | None, state: set[int], constants: set[int]) -> set[int]:
    """The indices of the build's calls among `items` (ProfiledCalls in program order; module docstring):
    `first_forward` is the index of the first call inside a module (None: no module ran, no build), `state`
    the storage keys of the modules' parameters and buffers, `constants` the calls computed on constants."""
    if first_forward is None:
        return set()
    early = [p for p in items if p.call.index < first_forward and p.call.region is None]
    if not early:
        return set()
    readers: dict[int, set[int]] = {}  # call index -> the calls that read what it wrote (any later call)
    writer: dict[int, int] = {}
    for p in items:
        for key, _ in p.traffic.reads:
            src = writer.get(key)
            if src is not None and src != p.call.index:
                readers.setdefault(src, set()).add(p.call.index)
        for key, _ in p.traffic.writes:
            writer[key] = p.call.index
    build: set[int] = set()
    for p in reversed(early):
        i = p.call.index
        written = {key for key, _ in p.traffic.writes}  # outputs and inputs written in place
        read_by = readers.get(i, set())
        if written and written <= state:
            build.add(i)
        elif read_by:
            if read_by <= build:
                build.add(i)
        elif p.call.op == SCALAR_READ or i in constants:
            build.add(i)
    return build
