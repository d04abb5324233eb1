"""A model built inside a profile: what its construction needs without data, and which of its calls are left out.

Analytic runs (no data, capture/profile.py) and `fake_mode()`'s builds construct a model under FakeTensorMode.
Construction code reads values that a fake tensor does not have: timm's and torchvision's drop-path rates
(`torch.linspace(0, rate, depth).tolist()`), widths computed from a tensor, `nn.init.trunc_normal_`'s
rejection loop (`if not mask.any()`). So, without data (capture/fake.py's NoData mode applies these rules):
- Small constants are real: a factory op without tensor inputs (arange, linspace, zeros, ones, full, tensor)
  whose outputs have at most `CONSTANT_NUMEL` elements (`MASK_NUMEL` for booleans: a causal or sliding-window
  mask of up to 8192 x 8192 scores; `RANDOM_NUMEL` for a random draw, whose values are data, not control)
  returns a fake tensor that keeps its real value (FakeTensorMode's constants); a real integer or boolean
  tensor the program made before (an index, a mask, offsets), or a real one of one element, enters as a
  constant holding a copy of its values (`keeps_values`). `.tolist()`, `.item()` and `if` on constants read
  real values. An op whose tensor inputs are all constants is computed for real (FakeTensorMode's constant
  propagation, raised to the same sizes while the block runs) only when its work is bounded by its elements:
  not a contraction (`is_contraction`: a matrix product, convolution, attention, linear algebra) and its
  outputs within the same limits, known from its fake run first (capture/fake.py). Everything else stays fake:
  a product of two constants is fake; a constant that an op with fake inputs writes is forgotten.
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
# Elements a random draw (randn, rand, randint, randperm, ...) may have to become a constant: a draw that steers
# the program (a stochastic-depth coin, a random choice among a few) is a scalar or a handful; a larger one is
# data (an input batch, an initialisation) whose values nothing reads, so it stays fake and is never drawn.
RANDOM_NUMEL = 1 << 10
# What a scalar read of an unknown value reads as during the build: 0 (False) ends rejection loops
# (`if not mask.any(): break`); FLOPs and bytes of the forward do not depend on initial values.
BUILD_STAND_IN = 0
SCALAR_READ = "aten::_local_scalar_dense"
# Factories whose results have no values to keep (uninitialised memory).
NO_VALUES = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
                       "empty_permuted"})
# Ops whose work grows faster than their elements (each output element sums over an input dimension, or a
# factorisation): never computed on constants, whatever their size (two 2**20-element constants make a 2**30-element
# product, or one of 1024 x 1024 that costs 2**31 multiply-adds). Composite ops (matmul, linear, einsum) decompose
# into these; the names are packets (the overloads share them).
CONTRACTIONS = frozenset({
    "mm", "bmm", "addmm", "addmm_", "addbmm", "addbmm_", "baddbmm", "baddbmm_", "addmv", "addmv_", "mv", "dot",
    "vdot", "addr", "inner", "outer", "ger", "matmul", "linear", "bilinear", "einsum", "tensordot", "kron",
    "chain_matmul", "_addmm_activation", "_int_mm", "_scaled_mm", "_scaled_mm_v2", "_grouped_mm",
    "_scaled_grouped_mm", "_scaled_grouped_mm_v2", "_foreach_mm", "cholesky", "cholesky_solve",
    "cholesky_inverse", "triangular_solve", "svd", "ormqr", "lu_unpack", "inverse", "det", "logdet", "slogdet",
    "matrix_power", "matrix_exp", "pinverse"})
CONTRACTION_PREFIXES = ("conv", "_conv", "cudnn_", "mkldnn_", "miopen_", "linalg_", "_linalg_", "_cdist",
                        "_scaled_dot_product", "scaled_dot_product", "_flash_attention", "_efficient_attention",
                        "_native_multi_head_attention", "_transformer_encoder", "_weight_int", "_sparse_semi",
                        "_cslt", "_cholesky", "slow_conv", "thnn_conv")


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


def stand_in(dtype: Any) -> bool | int | float:
    """BUILD_STAND_IN as a value of `dtype` (what `.item()` returns)."""
    if dtype.is_floating_point:
        return float(BUILD_STAND_IN)
    return bool(BUILD_STAND_IN) if str(dtype) == "torch.bool" else int(BUILD_STAND_IN)


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


def is_contraction(func: Any) -> bool:
    """An op whose work grows faster than its elements (CONTRACTIONS): never computed on constants."""
    name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
    return name in CONTRACTIONS or name.startswith(CONTRACTION_PREFIXES)


def is_random(func: Any) -> bool:
    import torch

    return torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())


def keeps_values(t: Any) -> bool:
    """Whether a real tensor enters a run without data as a constant (module docstring): an integer or boolean one
    (an index, a mask, offsets, position ids) of at most `numel_limit` elements, or one of a single element (a
    scalar the program may read); never an nn.Parameter (a weight: FakeTensorMode keeps none constant)."""
    import torch

    if type(t) is torch.nn.Parameter or t.layout != torch.strided or t.is_nested:
        return False
    n = t.numel()
    return n <= 1 or (not (t.is_floating_point() or t.is_complex()) and n <= numel_limit(t.dtype))


def within_limits(out: Any) -> bool:
    """Whether every tensor of `out` is small enough to be a constant (`numel_limit` of its dtype)."""
    import torch
    from torch.utils._pytree import tree_leaves

    return all(t.numel() <= numel_limit(t.dtype) for t in tree_leaves(out) if isinstance(t, torch.Tensor))


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
    its results faked keeping their values. `out` unchanged when too large (a random draw past RANDOM_NUMEL),
    without values (empty), already constant, not fake, or the op cannot run for real here (a device this
    machine does not have)."""
    leaves = _fake_outputs(out)
    if leaves is None or func.overloadpacket.__name__ in NO_VALUES or all(is_constant(t) for t in leaves):
        return out
    if is_random(func) and sum(t.numel() for t in leaves) > RANDOM_NUMEL:
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
