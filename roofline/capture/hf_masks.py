"""Hugging Face's attention masks known without data: while an analytic profile runs, the mask builders of
transformers' `masking_utils` are wrapped, so a mask they build too large to be a constant (build.py: a boolean
one past MASK_NUMEL scores, an additive one past CONSTANT_NUMEL) still says what it keeps.

`create_causal_mask`, `create_sliding_window_causal_mask`, `create_chunked_causal_mask` (and the models' own
calls) build a 4-D mask through `sdpa_mask` (SDPA) or `eager_mask` (eager attention: sdpa_mask's boolean mask
cast to 0 / the dtype's minimum) from a mask function: `causal_mask_function`, `sliding_window_overlay(W)`
and'ed with it, `chunked_overlay`, `padding_mask_function` of the 2-D attention mask. When the mask they return
has no data, the wrapper calls the same `sdpa_mask` again for real, outside the fake mode and unrecorded, block
of query rows by block (at most masks.READ_CHUNK scores at once), with the same lengths, offsets, mask function
and attention mask: the mask function itself is evaluated, so any of them (and their and/or combinations) is
read as it is, and the pattern (causal, sliding window W, causal + padding, ...) is named from each row's
first and last kept key and kept count (masks.row_stats, masks.classify). The pattern is remembered for the
returned tensor (masks.remember), where the SDPA mask reader (formulas_models.py) finds it.

It needs the mask function's tensors with data: a 2-D attention mask the program made from constants (build.py)
is read for its value; one that is fake (computed from fake tensors: a tokenizer's output, faked) is read as if
no token were padding, and the pattern's source says so (NO_PADDING); a chunked or packed-sequence function
holding another fake tensor leaves the mask unknown (every score counted, as before). The reading costs O(queries x
keys) comparisons on the CPU, once per mask built (layers share one): about 1 s at 16k x 16k.

Wrapped when the profile starts if transformers is imported then (masking_utils is imported with it), else as
soon as the profiled program imports masking_utils (an import hook: `roofline profile SCRIPT` runs a script that
imports transformers itself; importing it is not the profiler's business); undone when the profile ends.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import inspect
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import torch

from roofline.capture import build
from roofline.capture.fake import with_data
from roofline.capture.masks import READ_CHUNK, MaskPattern, forget, has_data, pattern_of, remember, row_stats

SOURCE = "from the mask function transformers built it with"
# Said of a mask whose 2-D padding mask has no data (computed from fake tensors): read as if no token were padding.
NO_PADDING = ", assuming no padding (its attention mask has no data)"
# The builders wrapped, by the name masking_utils gives them (module global and AttentionMaskInterface entry).
BUILDERS = {"sdpa_mask": "sdpa", "eager_mask": "eager"}
# How deep the functions a mask function combines are searched for captured tensors (and_masks of and_masks).
CLOSURE_DEPTH = 8


def _real(t: Any) -> Any:
    """An argument with data: a constant's value (build.py) for a fake tensor, None when it has none; anything
    else (an int, None, a tensor with data) as it is."""
    if not isinstance(t, torch.Tensor) or has_data(t):
        return t
    return t.constant if build.is_constant(t) else None


class _NoData(Exception):
    """A tensor the mask function holds has no data (fake, not a constant)."""


@contextlib.contextmanager
def _closures_real(fn: Any, stand_ins: dict[int, torch.Tensor] | None = None) -> Iterator[None]:
    """The constants (build.py) a mask function and the functions it combines (and_masks, or_masks) captured,
    swapped for their values while the block runs (a tensor in `stand_ins`, by id, for its stand-in); _NoData
    when one has none."""
    swapped: list[tuple[Any, Any]] = []
    stand_ins = stand_ins or {}

    def walk(obj: Any, depth: int) -> None:
        if isinstance(obj, (tuple, list)):
            for x in obj:
                walk(x, depth)
            return
        if depth > CLOSURE_DEPTH or not callable(obj):
            return
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(v, torch.Tensor) and not has_data(v):
                real = stand_ins.get(id(v)) if id(v) in stand_ins else _real(v)
                if real is None:
                    raise _NoData
                swapped.append((cell, v))
                cell.cell_contents = real
            else:
                walk(v, depth + 1)

    try:
        walk(fn, 0)
        yield
    finally:
        for cell, v in reversed(swapped):
            cell.cell_contents = v


def evaluate(sdpa_mask: Callable[..., Any], bound: dict[str, Any]) -> MaskPattern | None:
    """The pattern of the mask `sdpa_mask(**bound)` builds, evaluated for real by blocks of query rows; None when
    its inputs have no data or the builder fails on them."""
    attention_mask = bound.get("attention_mask")
    real_mask = _real(attention_mask)
    stand_ins, source = {}, SOURCE
    if attention_mask is not None and real_mask is None:
        if attention_mask.dim() != 2:
            return None
        # a 2-D padding mask computed from fake tensors (a tokenizer's, faked): no token is padding, said so
        with with_data():
            real_mask = torch.ones(tuple(attention_mask.shape), dtype=torch.bool)
        stand_ins, source = {id(attention_mask): real_mask}, SOURCE + NO_PADDING
    args = {k: v for k, v in bound.items() if k not in ("dtype", "allow_is_causal_skip",
                                                        "allow_is_bidirectional_skip", "device")}
    parts = []
    try:
        with with_data(), torch.no_grad(), _closures_real(bound.get("mask_function"), stand_ins):
            # lengths and offsets: ints, or (a static cache's) tensors holding one
            q_length, kv_length, q_offset = (int(_real(bound.get(k, 0))) for k in ("q_length", "kv_length",
                                                                                    "q_offset"))
            if "kv_offset" in args:
                args["kv_offset"] = int(_real(args["kv_offset"]))
            rows = max(1, READ_CHUNK // max(1, kv_length * int(bound["batch_size"])))
            for start in range(0, q_length, rows):
                block = sdpa_mask(**{**args, "q_length": min(rows, q_length - start),
                                     "q_offset": q_offset + start, "attention_mask": real_mask,
                                     "allow_is_causal_skip": False, "allow_is_bidirectional_skip": False,
                                     "device": "cpu"})
                if not isinstance(block, torch.Tensor) or block.dim() != 4:
                    return None
                parts.append(row_stats(block))
            first, last, count = (torch.cat([p[i] for p in parts], dim=1) for i in range(3))
            return pattern_of(first, last, count, kv_length, source)
    except (_NoData, RuntimeError, ValueError, TypeError, IndexError, NotImplementedError):
        return None  # a mask function holding a fake tensor, or one the builder cannot evaluate


# The last mask read (eager_mask builds its mask with sdpa_mask, read then): its arguments' key and pattern.
_LAST: dict[str, Any] = {}


class _Wrapped:
    """One builder, wrapped: the mask it returns without data remembered with the pattern `evaluate` finds."""

    def __init__(self, name: str, original: Callable[..., Any], sdpa_mask: Callable[..., Any],
                 pause: Callable[[], contextlib.AbstractContextManager[None]]) -> None:
        self.name, self.original, self.sdpa_mask, self.pause = name, original, sdpa_mask, pause
        self.signature = inspect.signature(original)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.original(*args, **kwargs)
        if not isinstance(out, torch.Tensor) or has_data(out) or build.is_constant(out):
            return out  # no mask (is_causal instead), or one whose values are read
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:
            return out
        given = {k: v for k, v in bound.arguments.items() if k != "kwargs"}
        for k in ("q_offset", "kv_offset"):
            given.setdefault(k, 0)
        given.update(bound.arguments.get("kwargs") or {})
        key = tuple(id(v) if isinstance(v, torch.Tensor) or callable(v) else v for k, v in sorted(given.items())
                    if k not in ("dtype", "allow_is_causal_skip", "allow_is_bidirectional_skip"))
        if _LAST.get("key") == key:  # eager_mask's own sdpa_mask call just read it
            pattern = _LAST["pattern"]
        else:
            with self.pause():
                pattern = evaluate(self.sdpa_mask, given)
            _LAST.update(key=key, pattern=pattern)
        if pattern is not None:
            remember(out, pattern)
        return out


MODULE = "transformers.masking_utils"
# masking_utils' gate before it reads a tensor's values (`is_tracing(tensor)`: true for any fake tensor), wrapped
# so a fake tensor holding a constant's value (build.py) reads as the real run's tensor would.
GATE = "is_tracing"


def _gate(original: Callable[..., bool]) -> Callable[..., bool]:
    """`is_tracing` that lets masking_utils read a constant's value (build.py), as the real run reads the real
    tensor: the packed-sequence check of position ids made from an arange (`find_packed_sequence_indices`), a
    static cache's offset, an all-ones attention mask made from constants. Without it an analytic profile takes
    every branch a traced program takes (a 4-D mask built, SDPA given it, GQA's keys repeated by a copy) where
    the real run takes none, and counts work the real run does not do. The program's own tracing (compile, jit,
    stream capture) still counts."""

    def is_tracing(tensor: Any = None) -> bool:
        if isinstance(tensor, torch.Tensor) and not has_data(tensor) and build.is_constant(tensor):
            return bool(original())
        return bool(original(tensor))

    is_tracing.__wrapped__ = original  # type: ignore[attr-defined]
    return is_tracing


def _wrap(mu: Any, pause: Callable[[], contextlib.AbstractContextManager[None]]) -> Callable[[], None] | None:
    """Wrap masking_utils' builders (module docstring); the function that undoes it, None when there is none."""
    interface = getattr(getattr(mu, "AttentionMaskInterface", None), "_global_mapping", {})
    saved = {name: getattr(mu, name) for name in BUILDERS if callable(getattr(mu, name, None))}
    entries = {key: interface[key] for name, key in BUILDERS.items() if interface.get(key) is saved.get(name)}
    sdpa_mask = saved.get("sdpa_mask")
    if sdpa_mask is None:
        return None
    wrapped = {name: _Wrapped(name, f, sdpa_mask, pause) for name, f in saved.items()}
    for name, w in wrapped.items():
        setattr(mu, name, w)  # eager_mask calls the module's sdpa_mask: its mask is known too
    for name, key in BUILDERS.items():
        if key in entries:
            interface[key] = wrapped[name]
    gate = getattr(mu, GATE, None)
    if callable(gate):
        setattr(mu, GATE, _gate(gate))

    def undo() -> None:
        for name, f in saved.items():
            setattr(mu, name, f)
        interface.update(entries)
        if callable(gate):
            setattr(mu, GATE, gate)
    return undo


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs `then(module)` right after `name` is imported for the first time (a script that imports
    transformers inside the profile: `roofline profile SCRIPT`), before any other module binds its names."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name, self.then = name, then
        self.inner: importlib.abc.Loader | None = None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        self.inner, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec) if self.inner is not None else None

    def exec_module(self, module: Any) -> None:
        assert self.inner is not None
        self.inner.exec_module(module)
        self.then(module)


@contextlib.contextmanager
def builders_known(pause: Callable[[], contextlib.AbstractContextManager[None]]) -> Iterator[None]:
    """Wrap masking_utils' builders while the block runs (module docstring), or, when transformers is not
    imported yet, as soon as the block imports masking_utils; `pause` keeps the reading's own ops out of the
    trace."""
    undo: list[Callable[[], None]] = []
    hook: _AfterImport | None = None
    if "transformers" in sys.modules:
        mu: ModuleType | None
        try:
            import transformers.masking_utils as mu
        except ImportError:
            mu = None
        if mu is not None and (u := _wrap(mu, pause)) is not None:
            undo.append(u)
    else:
        def then(module: Any) -> None:
            if (u := _wrap(module, pause)) is not None:
                undo.append(u)
        hook = _AfterImport(MODULE, then)
        sys.meta_path.insert(0, hook)
    try:
        yield
    finally:
        if hook is not None and hook in sys.meta_path:
            sys.meta_path.remove(hook)
        for u in reversed(undo):
            u()
        _LAST.clear()
        forget()
