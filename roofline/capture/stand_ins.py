"""What a run without data takes for the values it does not have, where the program's path depends on them
(capture/fake.py's NoData mode applies these; each is said where it is counted):

- A router's choice: `topk` and `argmax` of a tensor without values return indices that follow the assumed
  routing (`routed_indices`), the one grouped GEMMs without offsets assume (capture/formulas_models.py's
  ROUTING: balanced by default, or shares per expert). Token t's k choices are the experts of slots t, T + t,
  ..., (k - 1) T + t of a list holding each expert as many times as its share of the T x k slots gives (each
  expert at most once per token when no share exceeds 1 / k). So an eager mixture of experts (`nonzero` of a
  routing mask, one matrix product per expert) runs with the rows each expert would get, as the grouped one
  counts them. The indices are constants marked `assumed` (as is what is computed from them): their values
  steer the program, but a formula never reads them as data (a grouped GEMM's offsets computed from them are
  still "routing assumed").
- nn.TransformerEncoder's padding-free path (eval, a padding mask): torch packs the batch into a nested tensor
  (`_nested_tensor_from_mask`), which FakeTensorMode cannot hold. Without data the packed batch is a dense
  (1, tokens, width) tensor of the kept tokens, whose sequences' lengths are remembered (`packed_lengths`): the
  fused encoder layers count each sequence at its own length (formulas_models.encoder_layer), and
  `to_padded_tensor` gives back the padded shape. The lengths are read from the mask when it has values (a
  constant); a mask without values packs nothing: every token counted, as if none were padding.
- Fast paths: the analytic run's own torch function modes (capture/trace.py's WholeAttention, whole_rnn.py)
  would make `torch.overrides.has_torch_function` true for every tensor, which turns nn.MultiheadAttention's
  and nn.TransformerEncoder's fused fast paths off; while `fast_paths_kept` runs, it answers as it would
  without them, so the analytic run takes the path the real one takes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.weak import WeakIdKeyDictionary


def balanced(experts: int) -> Sequence[float]:
    return [1.0] * experts


# The shares per expert the assumed routing gives `experts` experts (set by capture/formulas_models.py to read its
# ROUTING); balanced until then.
assumed_shares: Callable[[int], Sequence[float]] = balanced
# Ops whose indices choose experts.
ROUTERS = frozenset({"aten::topk", "aten::argmax"})

# Tensors whose values are assumed (router choices and what was computed from them), and packed batches' lengths.
_ASSUMED: WeakIdKeyDictionary = WeakIdKeyDictionary()
_PACKED: WeakIdKeyDictionary = WeakIdKeyDictionary()


def slot_counts(shares: Sequence[float], slots: int) -> list[int]:
    """`slots` split by `shares` in whole numbers (largest remainders first; ties to the lower index)."""
    total = sum(shares)
    exact = [s * slots / total for s in shares]
    counts = [int(x) for x in exact]
    order = sorted(range(len(shares)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:slots - sum(counts)]:
        counts[i] += 1
    return counts


def routed_indices(shape: Sequence[int], dim: int, experts: int) -> torch.Tensor:
    """The indices a router's `topk(k, dim)` (or argmax, k = 1) of a tensor of `shape` returns under the assumed
    routing over `experts` choices (module docstring): an int64 tensor of `shape` with `dim` of size k."""
    dims = len(shape)
    dim = dim % dims if dims else 0
    k = shape[dim] if dims else 1
    tokens = max(1, (torch.Size(shape).numel() // k) if k else 0)
    shares = list(assumed_shares(experts))
    if len(shares) != experts or sum(shares) <= 0 or min(shares) < 0:
        shares = [1.0] * experts
    counts = slot_counts(shares, tokens * k)
    slots = torch.repeat_interleave(torch.arange(experts), torch.tensor(counts))
    chosen = slots.reshape(k, tokens).t()  # token t: slots t, T + t, ...
    if not dims:
        return chosen.reshape(())
    moved = [n for i, n in enumerate(shape) if i != dim]
    return chosen.reshape(*moved, k).movedim(-1, dim).contiguous()


def assume(t: Any) -> None:
    """Mark a tensor's values as assumed (a router's stand-in choice, or computed from one)."""
    if isinstance(t, torch.Tensor):
        _ASSUMED[t] = True


def is_assumed(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t in _ASSUMED


def any_assumed(leaves: Sequence[Any]) -> bool:
    return bool(_ASSUMED) and any(is_assumed(t) for t in leaves)


def pack(t: torch.Tensor, lengths: Sequence[int]) -> None:
    """Remember that `t` holds a packed batch of sequences of `lengths` tokens (module docstring)."""
    _PACKED[t] = tuple(int(n) for n in lengths)


def packed_lengths(t: Any) -> tuple[int, ...] | None:
    """The sequences' lengths of a packed batch made without data, or None."""
    return _PACKED.get(t) if isinstance(t, torch.Tensor) else None


def _ours(mode: Any) -> bool:
    return type(mode).__module__.startswith("roofline.")


@contextlib.contextmanager
def fast_paths_kept() -> Iterator[None]:
    """`torch.overrides.has_torch_function` answers as if roofline's torch function modes were off (module
    docstring); another mode on the stack (the program's own) still makes it true."""
    import torch.overrides as overrides

    original = overrides.has_torch_function

    def has_torch_function(args: Any) -> bool:
        modes = []
        while torch._C._len_torch_function_stack():
            modes.append(torch._C._pop_torch_function_stack())
        try:
            return any(not _ours(m) for m in modes) or original(args)
        finally:
            for m in reversed(modes):
                torch._C._push_on_torch_function_stack(m)

    overrides.has_torch_function = has_torch_function
    try:
        yield
    finally:
        overrides.has_torch_function = original
