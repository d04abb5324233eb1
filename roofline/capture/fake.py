"""The fake-tensor side of analytic profiles: the one FakeTensorMode they run under, the mode already active (a
program that entered one itself), the errors of a program that needs tensor values, and what runs between the
program and the fake mode (`NoData`) so that a run without data leaves the program untouched and computes
nothing real.

`NoData`, a dispatch mode directly above FakeTensorMode (below the profile's trace), sees every aten op first:
- Real tensors never reach an op. Each real tensor argument is replaced by its fake (one per tensor and run;
  views of one storage share a fake storage, as FakeTensorMode converts them), so an op never writes a real
  tensor (`buf.add_(1)` writes the fake; the buffer keeps its values) and never computes on real data:
  FakeTensorMode alone runs add, mul, div and the other ops that take Python numbers for real when every
  tensor input is real. A real integer or boolean tensor within the constant limits, or one of one element,
  enters as a constant holding a copy of its values (capture/build.py's `keeps_values`): an index, a mask or
  offsets made with data before the run are read as with data.
- Constants (capture/build.py): a factory without tensor inputs becomes one within the limits; an op whose
  tensor inputs are all constants is computed for real only when it is not a contraction and its outputs are
  within the limits (its fake run first says how large they are); otherwise it runs fake.
- Values the program's path needs but no data gives (capture/stand_ins.py): a router's topk/argmax takes the
  assumed routing; nn.TransformerEncoder's nested batch is packed densely with its lengths.
- During `fake_mode()`'s build (no profile running), a scalar read inside an initialiser reads as
  build.BUILD_STAND_IN, as an analytic profile's build does (capture/trace.py counts those).

`without_data(roots)` is what an analytic profile runs under: the state its roots reach saved and put back
(capture/isolate.py), the shared fake mode (unless the program entered one), modules converted and copied as
fakes, the fused fast paths kept, and NoData.
"""

from __future__ import annotations

import contextlib
import copy
import weakref
from collections.abc import Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, is_fake, unset_fake_temporarily
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakIdKeyDictionary

from roofline.capture import build, stand_ins
from roofline.capture.isolate import isolated

_FAKE: Any = None  # the shared FakeTensorMode of fake_mode()
# The NoData modes running, innermost last: the trace asks them which real storage a fake stands for.
_RUNNING: list[NoData] = []
# Ops that make a tensor from Python data: FakeTensorMode keeps their (real, fresh) argument as a constant itself.
_LIFTS = frozenset({"aten::lift_fresh", "aten::lift_fresh_copy", "aten::lift"})
# Ops that change a tensor's metadata (shape, strides, storage) in place: never run twice, never on constants.
_METADATA_WRITES = frozenset({"aten::resize_", "aten::resize_as_", "aten::set_", "aten::as_strided_"})


def shared_mode() -> Any:
    """The process's one FakeTensorMode for analytic runs (a model built under it can be profiled later).
    Copying one of its tensors never copies the mode (`copy.deepcopy(model)` of a fake model shares it)."""
    global _FAKE
    if _FAKE is None:
        _FAKE = FakeTensorMode(allow_non_fake_inputs=True)
        # a mode copied along with a tensor copies its converter's weak storage references, each freed twice
        # later (heap corruption: "corrupted double-linked list")
        _FAKE.__deepcopy__ = lambda memo: _FAKE
    return _FAKE


@contextlib.contextmanager
def fake_mode() -> Iterator[Any]:
    """The FakeTensorMode analytic profiles run under (one per process, so a model built under it can be
    profiled later), with modules converted by replacing their tensors (`modules_convert_by_replacing`) and
    what a build without data needs (module docstring; capture/build.py): `with fake_mode(): model =
    Model(cfg).to(torch.bfloat16)` allocates nothing, and a drop-path rate's `.tolist()` or an initialiser's
    check reads a value."""
    mode = shared_mode()
    with mode, modules_convert_by_replacing(), build.constants_kept(), NoData(mode, build_stand_ins=True):
        yield mode


@contextlib.contextmanager
def without_data(roots: list[Any]) -> Iterator[None]:
    """What an analytic profile runs under (module docstring); `roots`: what the profiled step can reach (the
    profile's caller's variables: capture/isolate.py's `frame_roots`)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(isolated(roots))  # first in, last out: put back after everything else stopped
        mode = active_fake_mode()
        if mode is None:
            mode = stack.enter_context(shared_mode())
        stack.enter_context(modules_convert_by_replacing())
        stack.enter_context(stand_ins.fast_paths_kept())
        stack.enter_context(NoData(mode, build_stand_ins=False))
        yield


def active_fake_mode() -> Any:
    try:
        from torch._guards import detect_fake_mode

        return detect_fake_mode()
    except (ImportError, RuntimeError, AssertionError):
        return None


def fake_errors() -> tuple[type[BaseException], ...]:
    """Errors of a program that needs tensor values, which an analytic (fake) run does not have."""
    try:
        from torch._subclasses.fake_tensor import (
            DataDependentOutputException,
            DynamicOutputShapeException,
            UnsupportedOperatorException,
        )
    except ImportError:  # pragma: no cover - present in every torch this supports
        return ()
    return DataDependentOutputException, DynamicOutputShapeException, UnsupportedOperatorException


@contextlib.contextmanager
def with_data() -> Iterator[None]:
    """Real computation inside a run without data (a mask's or offsets' values read, a mask function evaluated):
    the fake mode off and every running NoData passing ops through untouched while the block runs."""
    running = list(_RUNNING)
    for mode in running:
        mode.suspended += 1
    try:
        with unset_fake_temporarily():
            yield
    finally:
        for mode in running:
            mode.suspended -= 1


def real_storage(key: int) -> int:
    """The key of the real storage a fake storage stands for (the trace keys a tensor by its storage), or `key`."""
    for mode in reversed(_RUNNING):
        real = mode.aliases.get(key)
        if real is not None:
            return real
    return key


class NoData(TorchDispatchMode):
    """The dispatch mode between a program run without data and FakeTensorMode (module docstring)."""

    def __init__(self, mode: Any, build_stand_ins: bool) -> None:
        super().__init__()
        self.mode = mode
        self.build_stand_ins = build_stand_ins
        self.aliases: dict[int, int] = {}  # fake storage key -> the real storage key it stands for
        self.suspended = 0  # > 0 inside `with_data()`: ops pass through
        self._fakes: WeakIdKeyDictionary = WeakIdKeyDictionary()  # real tensor -> its fake, for this run
        self._memoised: list[Any] = []  # weak references to real tensors FakeTensorMode's converter memoised
        self._held: list[StorageWeakRef] = []  # the fake storages `aliases` maps

    def __enter__(self) -> NoData:
        _RUNNING.append(self)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        _RUNNING.remove(self)
        self._forget()

    def _forget(self) -> None:
        """Drop the converter's memory of this run's real tensors: the next run fakes them afresh (a fake whose
        metadata this run changed in place is not handed to it)."""
        converter = self.mode.fake_tensor_converter
        lookup = converter.meta_converter.describer.lookup_tensor
        for ref in self._memoised:
            t = ref()
            tid = lookup.get(t) if t is not None else None
            if tid is not None:
                converter.tensor_memo.pop(tid, None)
        self._memoised.clear()
        self._fakes = WeakIdKeyDictionary()
        self.aliases.clear()
        self._held.clear()

    # -- real tensors in, fakes out
    def _fake_of(self, t: Any) -> Any:
        if (not isinstance(t, torch.Tensor) or is_fake(t) or t.device.type == "meta" or t.is_nested
                or t.layout != torch.strided or type(t) not in (torch.Tensor, torch.nn.Parameter)):
            return t  # fake, meta, or a kind FakeTensorMode converts (or refuses) itself
        fake = self._fakes.get(t)
        if fake is not None:
            return fake
        converter = self.mode.fake_tensor_converter
        if build.keeps_values(t):
            with unset_fake_temporarily():
                values = t.detach().clone()  # a copy: no op on the constant can reach the program's tensor
            fake = converter.from_real_tensor(self.mode, values, make_constant=True)
        else:
            fake = converter.from_real_tensor(self.mode, t)
            self._memoised.append(weakref.ref(t))
        self._fakes[t] = fake
        try:
            storage = fake.untyped_storage()
            self.aliases[storage._cdata] = t.untyped_storage()._cdata
            self._held.append(StorageWeakRef(storage))  # its address is never reused while the mapping stands
        except (RuntimeError, NotImplementedError):
            pass
        return fake

    def _faked(self, value: Any, tensors: list[Any]) -> Any:
        """`value` (dispatch's arguments: tuples, lists, dicts) with each real tensor replaced by its fake; the
        tensors appended to `tensors`. A walk of its own: torch's pytree costs several times more per op."""
        kind = type(value)
        if kind is tuple or kind is list:
            return kind(self._faked(v, tensors) for v in value)
        if kind is dict:
            return {k: self._faked(v, tensors) for k, v in value.items()}
        if isinstance(value, torch.Tensor):
            value = value if type(value) is FakeTensor else self._fake_of(value)
            tensors.append(value)
        return value

    # -- the mode
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        name = func.name()
        if self.suspended or func.namespace in ("prim", "profiler") or name in _LIFTS:
            return func(*args, **kwargs)
        tensors: list[Any] = []
        args, kwargs = self._faked(args, tensors), self._faked(kwargs, tensors)
        if not tensors:  # a factory: a constant when small (build.py)
            return build.as_constant(func, args, kwargs, func(*args, **kwargs))
        leaves = [x for x in tensors if hasattr(x, "fake_mode")]
        if name in _NESTED:
            return _NESTED[name](func, args, kwargs)
        if leaves and all(build.is_constant(t) for t in leaves):
            out = self._on_constants(func, args, kwargs, leaves)
        else:
            out = self._run(func, args, kwargs)
        if name in stand_ins.ROUTERS and not build.is_constant(args[0]):
            out = self._routed(name, args, kwargs, out)
        elif stand_ins.any_assumed(leaves):  # computed from a router's stand-in: assumed too
            for t in tree_leaves(out):
                stand_ins.assume(t)
        return out

    def _run(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The op run fake; during fake_mode()'s build an initialiser's scalar read without data reads as the
        stand-in (build.py)."""
        if not self.build_stand_ins or func.name() != build.SCALAR_READ:
            return func(*args, **kwargs)
        from torch._subclasses.fake_tensor import DataDependentOutputException

        try:
            return func(*args, **kwargs)
        except DataDependentOutputException:
            if not build.in_initialiser():
                raise
            return build.stand_in(args[0].dtype)

    def _on_constants(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any]) -> Any:
        """An op whose tensor inputs are all constants: computed for real (FakeTensorMode's propagation) only when
        it is not a contraction and its outputs are within the constant limits (build.py); else run fake, its
        inputs' values hidden. An op that changes metadata in place runs once, on fakes, and its written inputs
        forget their values."""
        name = func.name()
        if name in _METADATA_WRITES or ("inplace_view" in {str(t).split(".")[-1] for t in func.tags}
                                        and name != "aten::detach_"):
            with _hidden(leaves):
                out = func(*args, **kwargs)
            for t in _written(func, args, kwargs):
                self.mode.fake_tensor_converter.invalidate_constant_aliases(t.constant)
                t.constant = None
            return out
        if build.is_contraction(func) or build.is_random(func):
            with _hidden(leaves):
                return func(*args, **kwargs)
        try:
            with _hidden(leaves):
                out = func(*args, **kwargs)
        except fake_errors():  # its output's size depends on the values (nonzero, unique, item: at most its
            return func(*args, **kwargs)  # input's, so bounded), or it has no fake kernel: computed on constants
        if not build.within_limits(out):
            return out
        del out
        return func(*args, **kwargs)

    def _routed(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
        """A router's choice without data: indices following the assumed routing (stand_ins.py), a constant
        marked assumed; the op's fake result where the indices would be too large to hold or the device is not
        this machine's."""
        x, topk = args[0], name == "aten::topk"
        indices = out[1] if topk else out
        at = 2 if topk else 1  # topk(self, k, dim=-1), argmax(self, dim=None, keepdim=False)
        dim = kwargs.get("dim", args[at] if len(args) > at else (-1 if topk else None))
        if dim is None or x.dim() == 0:  # argmax over every element
            shape, dim, experts = (1,), 0, int(x.numel())
        else:
            dim %= x.dim()
            shape = (*x.shape[:dim], int(indices.shape[dim]) if topk else 1, *x.shape[dim + 1:])
            experts = int(x.shape[dim])
        if indices.numel() > build.CONSTANT_NUMEL or experts < 1:
            return out
        try:
            with unset_fake_temporarily():
                real = stand_ins.routed_indices(shape, dim, experts).reshape(indices.shape).to(indices.device)
        except (RuntimeError, ValueError):
            return out
        chosen = self.mode.fake_tensor_converter.from_real_tensor(self.mode, real, make_constant=True)
        stand_ins.assume(chosen)
        return (out[0], chosen) if name == "aten::topk" else chosen


@contextlib.contextmanager
def _hidden(leaves: list[Any]) -> Iterator[None]:
    """The constants among `leaves` show no values while the block runs (FakeTensorMode computes nothing)."""
    saved = [(t, t.constant) for t in leaves if build.is_constant(t)]
    for t, _ in saved:
        t.constant = None
    try:
        yield
    finally:
        for t, constant in saved:
            t.constant = constant


def _written(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The constants an op writes (its schema's written arguments)."""
    names = [a.name for a in func._schema.arguments]
    written = {a.name for a in func._schema.arguments if a.alias_info is not None and a.alias_info.is_write}
    bound = {**dict(zip(names, args, strict=False)), **kwargs}
    return [v for k, v in bound.items() if k in written and build.is_constant(v)]


# -- nn.TransformerEncoder's nested batch, packed densely (stand_ins.py)
def _from_mask(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`_nested_tensor_from_mask(t, mask)`: the kept tokens of `t` (B, S, E) packed as (1, kept, E), the
    sequences' lengths remembered; every token kept when the mask has no values (as if none were padding)."""
    t, mask = args[0], kwargs.get("mask", args[1] if len(args) > 1 else None)
    if t.dim() != 3:
        return func(*args, **kwargs)
    if build.is_constant(mask) and mask.constant is not None:
        with unset_fake_temporarily():
            lengths = [int(n) for n in mask.constant.reshape(t.shape[0], -1).sum(-1).tolist()]
    else:
        lengths = [int(t.shape[1])] * int(t.shape[0])
    packed = t.new_empty((1, sum(lengths), t.shape[-1]))
    stand_ins.pack(packed, lengths)
    return packed


def _encoder_layer(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The fused encoder layer on a packed batch: a packed batch of the same lengths."""
    out = func(*args, **kwargs)
    lengths = stand_ins.packed_lengths(args[0])
    if lengths is not None:
        stand_ins.pack(out, lengths)
    return out


def _to_padded(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`to_padded_tensor` of a packed batch: the padded shape asked for."""
    t = args[0]
    size = kwargs.get("output_size", args[2] if len(args) > 2 else None)
    if stand_ins.packed_lengths(t) is None or size is None:
        return func(*args, **kwargs)
    return t.new_empty(tuple(size))


_NESTED = {"aten::_nested_tensor_from_mask": _from_mask, "aten::_transformer_encoder_layer_fwd": _encoder_layer,
           "aten::to_padded_tensor": _to_padded}


def _deepcopy_fake(self: Any, memo: dict[int, Any]) -> Any:
    """`copy.deepcopy` of a fake tensor: a clone under its own mode (a copy, as the real program makes), its
    gradient and the attributes the program gave it copied, the fake mode and its constant's storage shared, not
    copied (torch's default copies the tensor's `__dict__`: the mode, whose weak storage references are then
    freed twice, and a constant, whose real storage cannot be set on a fake: "Attempted to set the storage of a
    tensor on device meta to a storage on different device cpu")."""
    if id(self) in memo:
        return memo[id(self)]
    with torch.no_grad():
        new = self.clone()
    if self.is_leaf and self.requires_grad:
        new.requires_grad_(True)
    memo[id(self)] = new
    own = set(vars(new))
    for key, value in vars(self).items():
        if key not in own:  # the program's own attributes (_is_param of a parameter, a library's marks)
            setattr(new, key, copy.deepcopy(value, memo))
    if self.is_leaf and self.grad is not None:
        new.grad = copy.deepcopy(self.grad, memo)
    return new


@contextlib.contextmanager
def modules_convert_by_replacing() -> Iterator[None]:
    """Under fake mode, `module.to(...)`, `.cuda()`, `.half()` give a module with fake tensors new ones (torch's
    overwrite-on-conversion, as its docs ask: move a model before making its optimizer), and so does a module of
    real tensors inside a run without data (its conversion is fake: the run leaves its real tensors alone);
    `copy.deepcopy` of a module (or tensor) of fake tensors copies them as fakes (`_deepcopy_fake`). torch itself
    could not: a fake parameter's `.data =` kept its old device (torch 2.11: a model moved to the GPU met its GPU
    inputs as a CPU tensor, "found two different devices cpu, cuda:0") and its swap failed (torch 2.13:
    "Couldn't swap Linear.weight")."""
    original = torch.nn.Module._apply
    if getattr(original, "converts_by_replacing", False):  # already inside one
        yield
        return

    def _apply(module: Any, fn: Any, recurse: bool = True) -> Any:
        if recurse:  # each child by this rule: a module of real tensors may hold one of fake ones
            for child in module.children():
                child._apply(fn)
        own = [t for t in (*module._parameters.values(), *module._buffers.values()) if t is not None]
        if not _RUNNING and not any(isinstance(t, FakeTensor) for t in own):
            return original(module, fn, False)
        with torch.no_grad():
            for key, param in module._parameters.items():
                if param is None or (applied := fn(param)) is param:
                    continue
                new = torch.nn.Parameter(applied, param.requires_grad)
                if param.grad is not None:
                    new.grad = fn(param.grad)
                module._parameters[key] = new
            for key, buffer in module._buffers.items():
                if buffer is not None:
                    module._buffers[key] = fn(buffer)
        return module

    _apply.converts_by_replacing = True  # type: ignore[attr-defined]
    copier = FakeTensor.__dict__.get("__deepcopy__")
    torch.nn.Module._apply = _apply  # type: ignore[method-assign]
    FakeTensor.__deepcopy__ = _deepcopy_fake  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module._apply = original  # type: ignore[method-assign]
        if copier is None:
            del FakeTensor.__deepcopy__
        else:
            FakeTensor.__deepcopy__ = copier  # type: ignore[method-assign]
