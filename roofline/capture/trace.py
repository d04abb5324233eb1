"""Record every operator call a PyTorch program makes: a TorchDispatchMode below autograd sees each aten op
(after composite ops such as `linear` or `matmul` decomposed into the ones that launch kernels).

Each call becomes an `OpCall`: the overload's name (`aten::mm`, `aten::add.Tensor`), the metadata of its
tensor inputs and outputs (`TensorMeta`: shape, dtype, device, storage key, offset, strides, bytes of the
view), its arguments with tensors replaced by their metadata (what the FLOP formulas read), the module it
ran in and the region it belongs to.

Rules:
- View and alias ops (the schema says every return aliases an input, without writing it: view, t, transpose,
  permute, expand, slice, select, unsqueeze, split, detach, alias, as_strided, ...), in-place views (t_,
  transpose_, unsqueeze_, as_strided_: torch's `inplace_view` tag) and allocations
  (empty*, _unsafe_view, set_, resize_) launch no kernel and move no bytes: counted in `skipped`, not
  recorded. `reshape`/`contiguous` may copy and are never skipped (they decompose before this mode anyway).
- Ops of the `prim` and `profiler` namespaces (fake tensors' metadata queries, profiler ranges) are ignored.
- Formulas see no tensor data, save what `VALUE_READERS` read for them (a grouped GEMM's offsets, the pattern of
  an attention mask): `OpCall.values`, empty without data; an analytic run's constants (capture/build.py: a
  causal or sliding-window mask built from aranges, a boolean one of up to build.MASK_NUMEL scores) are read too,
  save those whose values are assumed (a router's stand-in choice: capture/stand_ins.py).
- Storage keys: the address of the tensor's StorageImpl (`untyped_storage()._cdata`), held by a weak
  reference for the whole pass so a freed storage's address is never reused by a new one (the weak
  reference keeps the bookkeeping object, not the memory). Two views of one storage share a key.
- Module paths: the innermost module `torch.utils.module_tracker.ModuleTracker` reports, as
  `root.named_modules()` names it ("layers.0.mlp.fc1") when one root module ran; the root's own ops and ops
  outside any module get "". With several root modules the root's class name is kept as the first part.
- torch.compile'd code runs compiled (`ignore_compile_internals`): its extern kernels (mm.out, SDPA) are
  recorded like any op; its Triton kernels reach only the profiler (capture/inductor.py).
- Analytic runs (no data) record each F.scaled_dot_product_attention as one op (`WholeAttention`), the fused
  kernel a GPU would run, whatever torch decomposes it into without data.
- torch.distributed ops (namespaces `c10d`, `_c10d_functional`) carry their process group's size and backend
  (`OpCall.group`, read while the group is alive); the c10d ops' schemas do not mark the tensors they write,
  so `COLLECTIVE_WRITES` does. Waiting on a functional collective's result launches no kernel (skipped). On
  the host (`clock`) a collective's time runs to its completion, not its launch (gloo works on threads of its
  own): a c10d op's Work calls back when it is done (the program's overlap is kept); a functional collective's
  result is waited on inside the op (the wait the program does later, moved earlier).
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from roofline.capture import build, stand_ins
from roofline.capture.collective_ops import COLLECTIVES
from roofline.capture.fake import real_storage, with_data
from roofline.core.aten_names import namespace, packet

# Ops whose schema says they may alias but which copy when the layout asks for it: never skipped.
MAYBE_COPY = frozenset({"aten::contiguous", "aten::reshape", "aten::reshape_as", "aten::to", "aten::type_as"})
# Ops that return fresh tensors without launching a kernel or moving bytes (allocation or metadata only).
NO_KERNEL = frozenset({
    "aten::_unsafe_view", "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
    "aten::new_empty_strided", "aten::set_", "aten::resize_", "aten::resize_as_", "aten::_reshape_alias",
    "aten::lift_fresh", "aten::_nested_view_from_buffer", "aten::record_stream", "aten::detach_",
    # views whose schema does not say so (the RNN cells split their gates with them)
    "aten::unsafe_split", "aten::unsafe_split_with_sizes", "aten::unsafe_chunk",
    "_c10d_functional::wait_tensor", "c10d_functional::wait_tensor", "_c10d_functional::_wrap_tensor_autograd"})

# torch.distributed's op namespaces: their calls carry the process group they ran on (`Group`).
COMM_NAMESPACES = frozenset({"c10d", "_c10d_functional", "c10d_functional"})
# What c10d ops write, which their schemas leave unmarked: (arguments written and read (in place), arguments
# written only (outputs)).
COLLECTIVE_WRITES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    **{n: (frozenset({"tensors"}), frozenset()) for n in (
        "c10d::allreduce_", "c10d::allreduce_coalesced_", "c10d::broadcast_", "c10d::reduce_")},
    **{n: (frozenset({a}), frozenset({a})) for n, a in (
        ("c10d::_allgather_base_", "output_tensor"), ("c10d::allgather_", "output_tensors"),
        ("c10d::allgather_coalesced_", "output_lists"), ("c10d::allgather_into_tensor_coalesced_", "outputs"),
        ("c10d::_reduce_scatter_base_", "output_tensor"), ("c10d::reduce_scatter_", "output_tensors"),
        ("c10d::reduce_scatter_tensor_coalesced_", "outputs"), ("c10d::alltoall_base_", "output"),
        ("c10d::alltoall_", "output_tensors"), ("c10d::recv_", "tensors"), ("c10d::scatter_", "output_tensors"),
        ("c10d::gather_", "output_tensors"))},
}

# Namespaces of bookkeeping ops: fake tensors' metadata queries (prim) and profiler ranges (profiler).
IGNORED_NAMESPACES = frozenset({"prim", "profiler"})

# Tensor values some formulas need (a grouped GEMM's offsets, the pattern of an attention mask): op (overload or
# packet name) -> a reader of the call's arguments by name (the real tensors), whose result is `OpCall.values`.
# Filled by the formula families (capture/formulas_models.py); read after the op ran, outside its timing and
# with the trace paused; a reader returns {} for tensors without data (fake, meta).
VALUE_READERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
# The profiler range the readers run in (a GPU profile): their kernels (an argmax, a gather over a mask) are the
# trace's own work, not the program's, and capture/kernels.py leaves them out of the kernel time.
READ_RANGE = "roofline:read-values"

# torch dtype -> the name a record uses: the catalog's names for the float types it knows, torch's otherwise.
_DTYPE_NAMES = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
                torch.float8_e4m3fn: "fp8", torch.float8_e5m2: "fp8", torch.int8: "int8"}


def dtype_name(dtype: torch.dtype) -> str:
    """'bf16' for torch.bfloat16, 'int64' for torch.int64."""
    return _DTYPE_NAMES.get(dtype) or str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class TensorMeta:
    """What the formulas and the byte count need of one tensor argument or result (no data)."""

    shape: tuple[int, ...]
    dtype: str
    device: str
    storage: int  # key of the underlying storage (see the module docstring)
    offset: int  # storage offset, in elements
    strides: tuple[int, ...]
    itemsize: int
    storage_nbytes: int
    is_param: bool = False  # an nn.Parameter's storage (weights, for bytes_by_kind)
    is_float: bool = True

    @functools.cached_property
    def numel(self) -> int:
        return math.prod(self.shape)

    @functools.cached_property
    def nbytes(self) -> int:
        """Bytes of the distinct elements the view covers: a stride-0 (expanded) dimension adds none, and a
        view never covers more than its storage."""
        if any(s == 0 for s in self.shape):
            return 0
        distinct = math.prod(n for n, st in zip(self.shape, self.strides, strict=False) if st != 0)
        return min(distinct * self.itemsize, self.storage_nbytes) if self.storage_nbytes else distinct * self.itemsize


@dataclass(frozen=True)
class Group:
    """The process group a torch.distributed op ran on."""

    size: int
    backend: str | None  # "nccl", "gloo", "fake"; None where torch does not say
    name: str | None


def process_group(named: dict[str, Any]) -> Group | None:
    """The group of a c10d op (its `process_group` argument) or a functional collective (`group_name`, or the
    legacy ops' `group_size`); None when it cannot be resolved."""
    import torch.distributed as dist

    try:
        pg = named.get("process_group")
        if isinstance(pg, torch.ScriptObject):
            pg = torch._C._distributed_c10d.ProcessGroup.unbox(pg)
        elif isinstance(named.get("group_name"), str):
            from torch.distributed.distributed_c10d import _resolve_process_group

            pg = _resolve_process_group(named["group_name"])
        elif isinstance(named.get("group_size"), int):
            return Group(int(named["group_size"]), None, None)
        if pg is None:
            return None
        try:
            backend: str | None = str(dist.get_backend(pg))
        except (RuntimeError, ValueError):
            backend = None
        return Group(int(pg.size()), backend, getattr(pg, "group_name", None))
    except (RuntimeError, ValueError, AttributeError, KeyError, TypeError):
        return None


@dataclass
class OpCall:
    """One operator call, as recorded (before formulas and timing are applied)."""

    index: int
    op: str  # the overload's name: "aten::mm", "aten::add.Tensor"
    module: str
    region: str | None
    inputs: tuple[TensorMeta, ...]  # tensor arguments in schema order (lists flattened); None args left out
    outputs: tuple[TensorMeta, ...]
    args: dict[str, Any]  # every schema argument by name, tensors replaced by TensorMeta
    raw_args: tuple[Any, ...]  # positional arguments as passed, tensors replaced by TensorMeta (torch formulas)
    raw_kwargs: dict[str, Any]
    out_tree: Any  # the result's structure with TensorMeta (torch formulas take its shapes)
    mutated: frozenset[int]  # indices into `inputs` the op writes (in-place self, out= arguments)
    not_read: frozenset[int]  # indices into `inputs` the op only writes (out= arguments)
    tags: frozenset[str]
    packet: Any = field(default=None, repr=False)  # the OpOverloadPacket (torch's flop registry is keyed by it)
    host_time_s: float | None = None  # time of the call on the host (`clock`: the CPU's op time)
    group: Group | None = None  # the process group of a torch.distributed op
    phase: str = "forward"  # forward, backward, optimizer or other (capture/modules.py)
    values: dict[str, Any] = field(default_factory=dict)  # what VALUE_READERS read of its tensors' data


@dataclass(frozen=True)
class _OpInfo:
    """What the schema says of an op, computed once per overload."""

    name: str
    skip: bool  # a view/alias or allocation: no kernel, no bytes
    names: tuple[str, ...]  # argument names in schema order
    written: frozenset[str]  # arguments the op writes (alias annotation with '!')
    out_only: frozenset[str]  # out= arguments (written, not read)
    tags: frozenset[str]


# torch device type -> the dispatch key of its backend's kernels
_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "xpu": "XPU", "mps": "MPS", "hpu": "HPU"}


def _device_key(args: tuple[Any, ...]) -> str | None:
    """The dispatch key of the kernels the first tensor argument runs (a list's first tensor counts): its
    device's, or Meta for a fake tensor (FakeTensorMode runs meta kernels whatever device it fakes)."""
    for a in args:
        if isinstance(a, (list, tuple)):
            a = next((x for x in a if isinstance(x, torch.Tensor)), None)
        if isinstance(a, torch.Tensor):
            return "Meta" if getattr(a, "fake_mode", None) is not None else _DEVICE_KEYS.get(a.device.type)
    return None


COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd


@functools.cache
def decomposes(name: str, key: str | None) -> bool:
    """Whether the tracer runs an op's decomposition: composite (CompositeImplicitAutograd) and without a
    kernel of its own for the backend `key` of its inputs."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return has(name, "CompositeImplicitAutograd") and not (key is not None and has(name, key))


@functools.cache
def op_info(func: Any) -> _OpInfo:
    schema = func._schema
    name = func.name()
    rets = schema.returns
    aliasing = bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets)
    packet_name = packet(name)
    tags = frozenset(str(t).split(".")[-1] for t in func.tags)
    # in-place views (t_, transpose_, unsqueeze_, as_strided_: torch's `inplace_view` tag) change metadata only
    skip = (aliasing and packet_name not in MAYBE_COPY) or packet_name in NO_KERNEL or "inplace_view" in tags
    written = frozenset(a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write)
    out_only = frozenset(a.name for a in schema.arguments if getattr(a, "is_out", False))
    if name in COLLECTIVE_WRITES:
        written, out_only = written | COLLECTIVE_WRITES[name][0], out_only | COLLECTIVE_WRITES[name][1]
    return _OpInfo(name, skip, tuple(a.name for a in schema.arguments), written, out_only, tags)


# What a scalar read without data reads as, by phase: inside an optimizer step the step count (1: any count
# but 0, which would divide by zero in Adam's bias correction; FLOPs and bytes do not depend on it); after the
# backward a GradScaler's found-inf flag (0: the step is taken, as in a healthy run); during the model's build
# (before the first module forward, outside modules) build.BUILD_STAND_IN.
SCALAR_STAND_INS = {"optimizer": 1, "other": 0, "build": build.BUILD_STAND_IN}


def scalar_stand_in(dtype: torch.dtype, phase: str) -> bool | int | float:
    value = SCALAR_STAND_INS[phase]
    if dtype == torch.bool:
        return bool(value)
    return float(value) if dtype.is_floating_point else int(value)


def bind(names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by schema name (defaults the caller left out are absent)."""
    out = dict(zip(names, args, strict=False))
    out.update(kwargs)
    return out


def _tensor_leaves(value: Any, out: list[TensorMeta]) -> None:
    """Append the TensorMeta leaves of `value` in torch pytree's order (depth first; a dict's values in its
    order), without pytree's cost per node."""
    if isinstance(value, TensorMeta):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _tensor_leaves(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensor_leaves(v, out)


def innermost_module(parents: set[str]) -> str:
    """The deepest of the module names ModuleTracker lists (its ancestors are prefixes of it); "" for none."""
    return max((p for p in parents if p != "Global"), key=lambda p: (p.count("."), len(p)), default="")


def strip_root(modules: list[str]) -> tuple[dict[str, str], str | None]:
    """Module names as `root.named_modules()` gives them when every op ran under one root module:
    'Net.layers.0' -> 'layers.0', 'Net' -> ''. Returns the renaming and the root's class name (None when
    several roots ran: names are kept whole)."""
    roots = {m.split(".")[0] for m in modules if m}
    if len(roots) != 1:
        return {m: m for m in modules}, None
    root = next(iter(roots))
    return {m: m[len(root) + 1:] if m.startswith(root + ".") else ("" if m == root else m) for m in modules}, root


class Tracer(TorchDispatchMode):
    """The dispatch mode of one profiled pass: records `OpCall`s, counts skipped ops. With `ranges` each call
    runs inside a profiler range `roofline#<index>` (so the kernels it launches can be found); with `clock`
    each call is timed on the host (perf_counter around it: an op's time where ops run on the CPU)."""

    def __init__(self, module_of: Callable[[], str], region_of: Callable[[], str | None], ranges: bool = False,
                 clock: bool = False, phase_of: Callable[[], str] = lambda: "forward",
                 stand_in_scalars: bool = False) -> None:
        super().__init__()
        # Analytic runs: a scalar read (`.item()`) of a tensor without data, inside an optimizer step, after
        # the backward or during the build, reads as a stand-in value instead of failing (`scalar_stand_in`);
        # counted by phase, with a router's choices without data ("routing": capture/stand_ins.py).
        self.stand_in_scalars = stand_in_scalars
        self.stood_in: Counter[str] = Counter()
        self.first_forward: int | None = None  # the index of the first call inside a module (build.py)
        self.constant_calls: set[int] = set()  # calls whose results are constants (build.py)
        self.state: set[int] = set()  # storage keys of the modules' parameters and buffers (note_module)
        self.module_of = module_of
        self.region_of = region_of
        self.phase_of = phase_of
        self.ranges = ranges
        self.clock = clock
        # Once the program marks a region, ops outside regions are passed through unrecorded (they would be
        # dropped anyway): the run before and between regions costs only the dispatch.
        self.regions_only = False
        self.calls: list[OpCall] = []
        self._next = 0  # call indices stay unique when calls recorded before the first region are dropped
        self._paused = 0  # > 0 while a whole-op record (WholeAttention) runs its decomposition
        self.skipped: Counter[str] = Counter()
        self._weak: dict[int, Any] = {}  # storage key -> StorageWeakRef (keeps the key unique for the pass)
        self._params: set[int] = set()  # storage keys of nn.Parameters seen

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """torch.compile'd code runs compiled under this mode (by default Dynamo would run it eagerly and skip
        its frames for good): the mode sees the aten ops it still dispatches (capture/compiled.py)."""
        return True

    # -- tensor metadata
    def _storage_key(self, t: torch.Tensor) -> tuple[int, int]:
        """(key, storage bytes); tensors without a storage (some subclasses) are keyed by identity."""
        try:
            st = t.untyped_storage()
            key = real_storage(st._cdata)  # a fake standing for a real tensor (fake.py) is keyed as the real one
            if key not in self._weak:
                from torch.multiprocessing.reductions import StorageWeakRef

                self._weak[key] = StorageWeakRef(st)
            return key, st.nbytes()
        except (RuntimeError, NotImplementedError, AttributeError, TypeError):
            return id(t), t.numel() * t.element_size()

    def meta(self, t: torch.Tensor) -> TensorMeta:
        key, nbytes = self._storage_key(t)
        if isinstance(t, torch.nn.Parameter):
            self._params.add(key)
        # a nested tensor (nn.TransformerEncoder's padding-free path) has no one shape: its elements, flat
        shape = (int(t.numel()),) if t.is_nested else tuple(map(int, t.shape))
        try:
            offset, strides = t.storage_offset(), tuple(map(int, t.stride()))
        except (RuntimeError, NotImplementedError):
            offset, strides = 0, tuple(1 for _ in shape)
        dtype = t.dtype
        return TensorMeta(shape, dtype_name(dtype), t.device.type, key, int(offset), strides, t.element_size(),
                          int(nbytes), key in self._params, dtype.is_floating_point)

    def _metas(self, value: Any) -> Any:
        """`value` with every tensor replaced by its TensorMeta. Plain tuples, lists and dicts (what dispatch
        passes, nearly always) are walked here: torch's pytree costs the host several times more per op."""
        kind = type(value)
        if isinstance(value, torch.Tensor):
            return self.meta(value)
        if kind is tuple or kind is list:
            return kind(self._metas(v) for v in value)
        if kind is dict:
            return {k: self._metas(v) for k, v in value.items()}
        if isinstance(value, (tuple, list, dict)):  # named tuples, torch.return_types: pytree rebuilds them
            return tree_map(lambda x: self.meta(x) if isinstance(x, torch.Tensor) else x, value)
        return value

    # -- the mode
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func.namespace in IGNORED_NAMESPACES or not self.recording():
            return func(*args, **kwargs)
        # Composite ops reach a dispatch mode whole when autograd is off (inference_mode, no_grad on leaf
        # tensors): run their decomposition so the ops that launch kernels are the ones recorded, as
        # FlopCounterMode does. Ops that are not composite return NotImplemented. An op that is composite and
        # has a kernel of its own for the inputs' device (silu_backward on CUDA) runs that kernel, as it does
        # outside the profile (decomposed, the backward's SiLU ran as sigmoid, mul and add kernels: +3.7% of a
        # Llama training step's kernel time on the H200).
        # The decomposition is torch's C++ one, the one that runs outside the profile: `func.decompose()` would
        # prefer a Python one where torch registered it (dropout's clones its input in eval, where the C++
        # returns the input itself: 38 device copies, +9.8% of a timm ViT-B/16's inference kernel time on the
        # H200).
        if decomposes(func.name(), _device_key(args)):
            with self:  # the mode is off inside its own handler: the decomposition's ops must reach it
                return func._op_dk(COMPOSITE, *args, **kwargs)
        info = op_info(func)
        if info.skip:
            self.skipped[info.name] += 1
            if args and isinstance(args[0], torch.nn.Parameter):
                self._params.add(self._storage_key(args[0])[0])  # views of weights still count as weights
            return func(*args, **kwargs)
        index = self._next
        self._next += 1
        start = time.perf_counter() if self.clock else 0.0
        if self.ranges:
            with torch.profiler.record_function(f"roofline#{index}"):
                out = func(*args, **kwargs)
        elif self.stand_in_scalars and func is torch.ops.aten._local_scalar_dense.default:
            out = self._scalar(func, args, kwargs)
        else:
            out = func(*args, **kwargs)
            if self.stand_in_scalars and info.name in stand_ins.ROUTERS and stand_ins.is_assumed(
                    out[1] if isinstance(out, tuple) else out):  # a router's choice without data (stand_ins.py)
                self.stood_in["routing"] += 1
        comm = func.namespace in COMM_NAMESPACES
        completion = _Completion(out, info.name, start) if comm and self.clock else None
        elapsed = time.perf_counter() - start if self.clock else None
        call = self._describe(index, func, info, args, kwargs, out)
        call.host_time_s = elapsed
        if comm:
            call.group = process_group(call.args)
            if completion is not None:
                completion.attach(call)
        self.calls.append(call)
        return out

    def _scalar(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """`.item()` in an analytic run: the value when the fake tensor knows it (a constant), else, inside an
        optimizer step or after the backward, the stand-in (`scalar_stand_in`); elsewhere the error stands."""
        from torch._subclasses.fake_tensor import DataDependentOutputException

        try:
            return func(*args, **kwargs)
        except DataDependentOutputException:
            phase = self.phase_of()
            if self.first_forward is None and not self.module_of() and build.in_initialiser():
                phase = "build"
            if phase not in SCALAR_STAND_INS:
                raise
            self.stood_in[phase] += 1
            return scalar_stand_in(args[0].dtype, phase)

    def note_module(self, module: torch.nn.Module) -> None:
        """Remember the storages of a module's own parameters and buffers (the build's state: build.py)."""
        for table in (module._parameters, module._buffers):
            for t in table.values():
                if isinstance(t, torch.Tensor):
                    self.state.add(self._storage_key(t)[0])

    def recording(self) -> bool:
        """Whether an op dispatched now is recorded (not inside a whole-op record, not outside the regions)."""
        return not self._paused and not (self.regions_only and self.region_of() is None)

    @contextlib.contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Ops dispatched inside the block are not recorded (the profiler's own work: a mask's reading)."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def record_whole(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], run: Callable[[], Any]) -> Any:
        """Run `run` with the ops it dispatches unrecorded and record it as one call of `func` (an aten
        overload whose schema names the arguments)."""
        self._paused += 1
        try:
            out = run()
        finally:
            self._paused -= 1
        index = self._next
        self._next += 1
        self.calls.append(self._describe(index, func, op_info(func), args, kwargs, out))
        return out

    def keep_regions_only(self) -> None:
        """From now on record only ops inside regions; forget those recorded outside them so far."""
        self.regions_only = True
        self.calls = [c for c in self.calls if c.region is not None]
        self.skipped.clear()

    def _describe(self, index: int, func: Any, info: _OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any],
                  out: Any) -> OpCall:
        raw_args, raw_kwargs, out_tree = self._metas((args, kwargs, out))
        named = bind(info.names, raw_args, raw_kwargs)
        inputs: list[TensorMeta] = []
        mutated: set[int] = set()
        not_read: set[int] = set()
        for name in info.names:
            value = named.get(name)
            if value is None:
                continue
            first = len(inputs)
            _tensor_leaves(value, inputs)
            if name in info.written:
                mutated.update(range(first, len(inputs)))
            if name in info.out_only:
                not_read.update(range(first, len(inputs)))
        outputs: list[TensorMeta] = []
        _tensor_leaves(out_tree, outputs)
        module = self.module_of()
        if module and self.first_forward is None:
            self.first_forward = index
        if self.stand_in_scalars and outputs and all(build.is_constant(x) for x in tree_flatten(out)[0]
                                                     if isinstance(x, torch.Tensor)):
            self.constant_calls.add(index)
        return OpCall(index=index, op=info.name, module=module, region=self.region_of(),
                      inputs=tuple(inputs), outputs=tuple(outputs), args=named, raw_args=tuple(raw_args),
                      raw_kwargs=dict(raw_kwargs), out_tree=out_tree, mutated=frozenset(mutated),
                      not_read=frozenset(not_read), tags=info.tags, packet=func.overloadpacket,
                      phase=self.phase_of(), values=self._values(info, args, kwargs))

    def _values(self, info: _OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """What the op's VALUE_READERS read of its tensors (the trace paused, an analytic run's fake mode off)."""
        reader = VALUE_READERS.get(info.name) or VALUE_READERS.get(info.name.split(".")[0])
        if reader is None:
            return {}
        self._paused += 1
        try:
            with with_data():  # a constant (build.py) is read for its value: a mask built from aranges
                named = {k: v.constant if build.is_constant(v) and not stand_ins.is_assumed(v) else v
                         for k, v in bind(info.names, args, kwargs).items()}
                if not self.ranges:
                    return reader(named)
                with torch.profiler.record_function(READ_RANGE):
                    return reader(named)
        except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError):
            return {}  # values the reader cannot read: the formula counts as without data
        finally:
            self._paused -= 1


def _is_collective(op: str) -> bool:
    return packet(op) in COLLECTIVES


class _Completion:
    """A collective's host time from its launch to its completion (module docstring): a c10d op's Work calls
    back when it is done, on a thread of the backend's; a functional collective's result is waited on now."""

    def __init__(self, out: Any, op: str, start: float) -> None:
        self.start = start
        self.time_s: float | None = None
        self.call: OpCall | None = None
        leaves = tree_flatten(out)[0]
        works = [x for x in leaves if isinstance(x, torch.ScriptObject)]
        if works:
            try:
                future = torch._C._distributed_c10d.Work.unbox(works[-1]).get_future()
            except (RuntimeError, AttributeError, TypeError):
                return
            future.add_done_callback(self._done)  # called at once when the work is already done
        elif namespace(op) == "_c10d_functional" and _is_collective(op):  # not isend/irecv: no wait on a peer
            for t in leaves:
                if isinstance(t, torch.Tensor):
                    torch.ops._c10d_functional.wait_tensor(t)
            self._done()

    def _done(self, _: Any = None) -> None:
        self.time_s = time.perf_counter() - self.start
        if self.call is not None:
            self.call.host_time_s = self.time_s

    def attach(self, call: OpCall) -> None:
        """The call whose host time this is (set now when the work is already done)."""
        self.call = call
        if self.time_s is not None:
            call.host_time_s = self.time_s


class WholeAttention(TorchFunctionMode):
    """Analytic runs: record each `F.scaled_dot_product_attention` as one call of
    aten::scaled_dot_product_attention, whatever it decomposes into.

    Without data (fake tensors, the meta device) torch may not pick a fused kernel and run SDPA's math
    decomposition instead (the scores written to memory, K and V repeated for grouped-query attention); a GPU
    runs one fused kernel (flash, cuDNN, memory-efficient), which is what the analytic profile models."""

    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self.tracer = tracer

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func is not torch.nn.functional.scaled_dot_product_attention or not self.tracer.recording():
            return func(*args, **kwargs)
        def run() -> Any:
            out = func(*args, **kwargs)
            # fused kernels write (B, S, H, D) and return it as a (B, H, S, D) view, so the usual
            # transpose(1, 2).reshape afterwards copies nothing: give the output that layout too
            return out.transpose(1, 2).contiguous().transpose(1, 2) if out.dim() == 4 else out

        return self.tracer.record_whole(torch.ops.aten.scaled_dot_product_attention.default, args, kwargs, run)
