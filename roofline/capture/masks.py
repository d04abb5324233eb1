"""What an attention mask tensor keeps, read from its values: the share of (query, key) scores it leaves and the
pattern it has (causal, sliding window, padding, block-diagonal), so attention called with a mask tensor is
counted as the scores it keeps, as `is_causal` is (capture/formulas.py).

A score is kept where a boolean mask is True (SDPA's convention; nn.MultiheadAttention's is the opposite,
`true_keeps=False`) or where an additive mask is above `MASKED_BIAS`. Masks broadcast as SDPA broadcasts them
(to batch, heads, queries, keys); dimensions expanded with stride 0 are read once. The reading runs on the mask's
device and brings back three numbers per query row (first and last kept key, kept count); the pattern is named
from them. Without data (fake tensors, the meta device) nothing is read: the caller says the mask is unknown,
unless the mask's builder said what it holds (`remember`: Hugging Face's mask functions, capture/hf_masks.py).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any, TypeGuard

import torch
from torch.multiprocessing.reductions import StorageWeakRef

# An additive mask value at or below this weighs its score by exp(-1e4), which is 0 in every float format:
# masked. HF's masks use the dtype's minimum, older code -10000.0 or -inf; biases (ALiBi, relative positions)
# stay above it for any practical length.
MASKED_BIAS = -1e4
# Elements of the boolean keep-tensor handled at once (bounds the reading's memory: about 2 bytes each).
READ_CHUNK = 1 << 26
# Keys read at once by `_word_stats` (a boolean per byte, 8 in an int64 word), and the multiplier whose product
# with a word holds the sum of its bytes in the top byte.
WORD = 8
BYTE_SUM = 0x0101010101010101
# Patterns remembered for masks without data (`remember`); a profile builds a few (one per mask kind a step).
KNOWN_KEPT = 64


@dataclass(frozen=True)
class MaskPattern:
    """What a mask keeps: `kept` is the share of its scores kept, over the broadcast shape (exact)."""

    kind: str  # none, causal, causal + padding, sliding window (+ padding), padding, block-diagonal, block-causal,
    # other (a row keeps keys apart, or no pattern above), mixed (slices of different kinds)
    kept: float
    align: str = "top_left"  # causal: the diagonal it follows (top_left as torch's is_causal, or bottom_right)
    window: int | None = None  # sliding window: keys each query sees (both sides counted when `two_sided`)
    two_sided: bool = False
    blocks: int | None = None  # block-diagonal / block-causal: blocks per sequence (the most any slice has)
    source: str = "from its values"  # how the pattern was read: the values, or the mask builder's function

    @property
    def label(self) -> str:
        """'causal', 'sliding window 4 (causal)', 'block-diagonal (4 blocks)', 'none (keeps every score)'."""
        if self.kind == "none":
            return "none (keeps every score)"
        if self.kind == "causal":
            return "causal" if self.align == "top_left" else "causal (bottom-right)"
        if self.kind.startswith("sliding window") and self.window is not None:
            sides = "both sides" if self.two_sided else "causal"
            return f"sliding window {self.window} ({sides})" + (" + padding" if "padding" in self.kind else "")
        if self.kind in ("block-diagonal", "block-causal") and self.blocks is not None:
            return f"{self.kind} ({self.blocks} blocks)"
        return self.kind


def has_data(t: Any) -> TypeGuard[torch.Tensor]:
    """A tensor whose values can be read (not fake, not on the meta device)."""
    from torch._subclasses.fake_tensor import is_fake

    return isinstance(t, torch.Tensor) and t.device.type != "meta" and not is_fake(t)


def keep_of(mask: torch.Tensor, true_keeps: bool = True) -> torch.Tensor:
    """The boolean keep-tensor of a mask (module docstring)."""
    if mask.dtype == torch.bool:
        return mask if true_keeps else ~mask
    if mask.is_floating_point():
        return mask > MASKED_BIAS
    return mask != 0 if true_keeps else mask == 0


def as_4d(mask: torch.Tensor) -> torch.Tensor | None:
    """The mask as SDPA broadcasts it (batch, heads, queries, keys); None beyond 4 dimensions."""
    if mask.dim() > 4:
        return None
    return mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape)) if mask.dim() < 4 else mask


def read_mask(mask: torch.Tensor, true_keeps: bool = True) -> MaskPattern | None:
    """The pattern of a (batch, heads, queries, keys)-broadcastable mask with data; None without data."""
    if not has_data(mask) or (m := as_4d(mask)) is None or m.numel() == 0:
        return None
    return pattern_of(*row_stats(m, true_keeps), m.shape[3])


def row_stats(m: torch.Tensor, true_keeps: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each query row's first and last kept key and kept count, (slices, rows) each, of a 4-D mask with data;
    an expanded dimension (stride 0) repeats the same values: read once."""
    for d in range(4):
        if m.stride(d) == 0 and m.shape[d] > 1:
            m = m.narrow(d, 0, 1)
    rows, keys = m.shape[2], m.shape[3]
    flat = m.reshape(-1, rows, keys)
    per = max(1, READ_CHUNK // max(1, rows * keys))
    parts = []
    with torch.no_grad():
        for start in range(0, flat.shape[0], per):
            keep = keep_of(flat[start:start + per], true_keeps)
            if keys % WORD == 0 and keep.is_contiguous() and sys.byteorder == "little":
                parts.append(torch.stack(_word_stats(keep)).cpu())
                continue
            keep = keep.to(torch.uint8)
            count = keep.sum(-1, dtype=torch.int64)
            first = keep.argmax(-1)  # the first maximum: the first kept key (0 when none is kept)
            last = keys - 1 - keep.flip(-1).argmax(-1)
            parts.append(torch.stack([first, last, count]).cpu())
    first, last, count = torch.cat(parts, dim=1).unbind(0)
    return first, last, count


def _word_stats(keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`row_stats` of a contiguous boolean (slices, rows, keys) tensor, keys a multiple of WORD, read 8 keys (one
    int64 word, key 8w + j in byte j) at a time: 8x fewer elements than key by key. The bytes are 0 or 1, so a
    word times 0x0101010101010101 holds their sum in its top byte; a word's first kept byte is its lowest set
    bit's (w & -w = 2^(8j)), its last the highest set bit's (2^(8j) <= w < 2^(8j+1)). An empty row reads as
    first 0, last keys - 1, count 0 (as key by key)."""
    keys = keep.shape[-1]
    w = keep.view(torch.int64)
    nz = w != 0
    kept = nz.any(-1)
    nz8 = nz.view(torch.uint8)
    fw = nz8.argmax(-1)
    lw = w.shape[-1] - 1 - nz8.flip(-1).argmax(-1)
    lo = w.gather(-1, fw[..., None])[..., 0]
    hi = w.gather(-1, lw[..., None])[..., 0]
    fbyte = torch.log2((lo & -lo).clamp(min=1).double()).div(8).round().long()
    lbyte = torch.log2(hi.clamp(min=1).double()).div(8).floor().long()
    first = torch.where(kept, fw * WORD + fbyte, 0)
    last = torch.where(kept, lw * WORD + lbyte, keys - 1)
    count = ((w * BYTE_SUM) >> 56).bitwise_and(0xFF).sum(-1)
    return first, last, count


def pattern_of(first: torch.Tensor, last: torch.Tensor, count: torch.Tensor, keys: int,
               source: str = "from its values") -> MaskPattern:
    """The pattern of a mask from its rows' statistics (`row_stats`), the share it keeps exact."""
    pattern = classify(first, last, count, keys, float(count.sum()) / (count.numel() * keys))
    return pattern if source == pattern.source else dataclasses.replace(pattern, source=source)


# Patterns of masks without data, said by their builder: storage key -> (the storage's weak reference, the
# tensor's layout, the pattern).
_KNOWN: dict[int, tuple[StorageWeakRef, tuple[Any, ...], MaskPattern]] = {}


def _layout(t: torch.Tensor) -> tuple[int, tuple[Any, ...]]:
    return t.untyped_storage()._cdata, (tuple(t.shape), tuple(t.stride()), t.storage_offset())


def remember(t: torch.Tensor, pattern: MaskPattern) -> None:
    """Say that the mask `t` (without data) holds `pattern`: `known(t)`, and of a view of the same layout, finds
    it while its storage lives."""
    key, layout = _layout(t)
    if len(_KNOWN) >= KNOWN_KEPT:
        _KNOWN.clear()
    _KNOWN[key] = (StorageWeakRef(t.untyped_storage()), layout, pattern)


def known(t: torch.Tensor) -> MaskPattern | None:
    """The pattern `remember` said for `t`'s storage and layout (a view covering the same scores), else None."""
    try:
        key, layout = _layout(t)
    except (RuntimeError, NotImplementedError, AttributeError, TypeError):
        return None
    hit = _KNOWN.get(key)
    return hit[2] if hit is not None and not hit[0].expired() and hit[1] == layout else None


def forget() -> None:
    """Drop the remembered patterns (a profile's end)."""
    _KNOWN.clear()


def classify(first: torch.Tensor, last: torch.Tensor, count: torch.Tensor, keys: int, kept: float) -> MaskPattern:
    """Name the pattern from each query row's first and last kept key and kept count ((slices, rows) each)."""
    kinds = [_slice(f, la, c, keys) for f, la, c in zip(first, last, count, strict=True)]
    names = {k[0] for k in kinds}
    windows = {k[2] for k in kinds if k[0].startswith("sliding window")}
    aligns = {k[1] for k in kinds if k[0] == "causal"}
    blocks = max((k[4] for k in kinds if k[4] is not None), default=None)
    if len(names) == 1:
        name = next(iter(names))
    elif names <= {"none", "padding"}:
        name = "padding"
    elif names <= {"causal", "causal + padding"}:
        name = "causal + padding"
    elif names <= {"sliding window", "sliding window + padding"}:
        name = "sliding window + padding"
    else:
        name = "mixed"
    if name == "causal" and len(aligns) > 1:
        name = "mixed"
    window = next(iter(windows)) if name.startswith("sliding window") and len(windows) == 1 else None
    two_sided = any(k[3] for k in kinds)
    return MaskPattern(name, kept, next(iter(aligns)) if len(aligns) == 1 else "top_left", window, two_sided,
                       blocks if name in ("block-diagonal", "block-causal") else None)


def _slice(first: torch.Tensor, last: torch.Tensor, count: torch.Tensor,
           keys: int) -> tuple[str, str, int | None, bool, int | None]:
    """One slice's (kind, align, window, two-sided, blocks) from its rows (classify)."""
    rows = count.shape[0]
    if bool((count == keys).all()):
        return "none", "top_left", None, False, None
    kept = count > 0
    if not bool(((last - first + 1 == count) | ~kept).all()):
        return "other", "top_left", None, False, None  # a row keeps keys apart: no interval
    f, la = first[kept], last[kept]
    if rows == 1 or (bool((f == f[0]).all()) and bool((la == la[0]).all())):
        return "padding", "top_left", None, False, None  # every query sees the same keys
    r = torch.arange(rows)
    offset = int(la[0]) - int(r[kept][0])  # the diagonal the first kept row ends on
    diag = r[kept] + offset
    end = int(la.max())
    if bool((la == diag.clamp(max=end)).all()):  # each row ends on the diagonal (or the last valid key)
        align = "top_left" if offset == 0 else "bottom_right" if offset == keys - rows else f"offset {offset}"
        if bool((f == 0).all()):
            if end == keys - 1 and bool((kept | (r + offset < 0)).all()):
                return "causal", align, None, False, None
            return "causal + padding", align, None, False, None  # right padding (queries past the last key)
        if bool((f == f[0]).all()):
            return "causal + padding", align, None, False, None  # left padding
        width = int((diag - f).max()) + 1
        floor = int(f.min())  # the first valid key (left padding)
        if bool((f == (diag - width + 1).clamp(min=floor)).all()):
            two_sided = align not in ("top_left", "bottom_right")  # the band reaches past the causal diagonal
            return "sliding window" + (" + padding" if floor else ""), align, width, two_sided, None
        if offset == 0 and _blocks(f, diag):
            return "block-causal", align, None, False, int(f.unique().numel())
    if rows == keys and _blocks(f, r[kept]) and _blocks(-la.flip(0), -r[kept].flip(0)):
        return "block-diagonal", "top_left", None, False, int(f.unique().numel())
    return "other", "top_left", None, False, None


def _blocks(first: torch.Tensor, diag: torch.Tensor) -> bool:
    """Rows that restart at their own diagonal and otherwise keep the previous row's first key: blocks."""
    if first.numel() < 2:
        return False
    same = first[1:] == first[:-1]
    restart = first[1:] == diag[1:]
    return bool((same | restart).all()) and bool((first <= diag).all()) and bool(first[0] == diag[0])
