"""An analytic run leaves the program as it found it: what the profiled step can reach is saved before the run and
put back after it (`isolated`), so no fake tensor, no appended entry, no attribute the run set stays behind.

Tensors are never written by the run (capture/fake.py's NoData gives every op fakes), so what changes is Python
state: a list or cache the step appends to (a Hugging Face DynamicCache's layers, a history list), attributes
it sets (a module's buffer replaced, `self.cache = ...`), a tensor's autograd state (a backward sets `.grad`), a
constant's values (a fake model's step counter), the random generators (a constant drawn for real). Saved, by
walking from the roots (`Snapshot`: the step, the objects it closes over, their attributes, recursively):
- the contents of every list, dict (an object's `__dict__` among them), set and deque, every object's
  `__slots__`, every function's closure cells, and the module globals the program's own functions name (not
  those of library code: torch, transformers, the standard library);
- every tensor's `.grad`, `requires_grad` and Python attributes, a parameter's data (`.data =`), a constant's
  values; every torch.Generator's state;
- the random generators: torch's (the CPU's, each CUDA device's once CUDA is initialised), Python's `random`,
  NumPy's global one.
After the run each is compared by identity and what changed is put back as it was.

Not covered (docs/profile.md says so): state the step reaches only through library code (a cache in a library's
module globals, a class attribute, `functools.lru_cache`); objects outside Python (files written, a C
extension's state, an iterator or generator the step advanced); names the step binds in the frame that runs a
`with roofline.profile(...)` block (they are the block's results: fake tensors). A step that reaches more than
WALK_LIMIT objects is refused before it runs: restoring so much is not something to do silently.
"""

from __future__ import annotations

import collections
import contextlib
import random
import sys
import sysconfig
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from roofline.core.errors import RooflineError

# Objects walked at most (containers, objects with attributes, tensors): a model and its inputs reach tens of
# thousands; more means the step closes over a dataset or a whole program, which is refused.
WALK_LIMIT = 1_000_000
# Objects without state of their own to restore (immutable values, code, modules, classes).
_ATOMIC: tuple[type, ...] = (type(None), bool, int, float, complex, str, bytes, range, slice, type, types.ModuleType,
                             types.CodeType, types.BuiltinFunctionType, types.MethodWrapperType,
                             types.WrapperDescriptorType, types.GetSetDescriptorType, property, torch.dtype,
                             torch.device, torch.layout, torch.memory_format, torch.Size, type(Ellipsis),
                             type(NotImplemented))
# Modules whose objects are the machinery of the run, not the program's state.
_MACHINERY = ("roofline.", "torch._subclasses", "torch._dynamo", "torch._guards", "torch._inductor")
_MISSING = object()
_LIBRARY = tuple(str(Path(p).resolve()) for p in {sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})
_ROOFLINE = str(Path(__file__).resolve().parents[1])


def _library_code(code: types.CodeType, cache: dict[str, bool]) -> bool:
    """Whether a function's code is a library's (its globals are the library's state, not the program's)."""
    name = code.co_filename
    hit = cache.get(name)
    if hit is None:
        path = str(Path(name).resolve()) if not name.startswith("<") else name
        hit = name.startswith("<frozen") or path.startswith(_LIBRARY) or path.startswith(_ROOFLINE)
        cache[name] = hit
    return hit


def _names(code: types.CodeType) -> set[str]:
    """The global names a code object (and the code nested in it: lambdas, comprehensions) may read or bind."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _slots(cls: type) -> list[str]:
    out: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        out += [slots] if isinstance(slots, str) else [s for s in slots if s not in ("__dict__", "__weakref__")]
    return out


class _TensorState:
    """What a run may change of one tensor (module docstring)."""

    __slots__ = ("constant", "data", "dict", "grad", "own_version", "requires_grad", "t", "values", "version")

    def __init__(self, t: torch.Tensor) -> None:
        from torch._subclasses.fake_tensor import is_fake, unset_fake_temporarily

        self.t = t
        leaf = t.is_leaf
        self.grad = t.grad if leaf else None
        self.requires_grad = t.requires_grad if leaf else None
        self.data = t.data if isinstance(t, torch.nn.Parameter) else None
        fake = is_fake(t)
        self.dict = None if fake else dict(vars(t))
        # a real tensor's version counter: an in-place op on it bumps it above the fake run (autograd's
        # ADInplaceOrView), though only its fake is written; left bumped, the program's own backward would refuse
        # a tensor it saved ("modified by an inplace operation")
        self.own_version = None if fake else _version(t)
        self.constant = getattr(t, "constant", None) if fake else None
        self.values: torch.Tensor | None = None
        self.version = 0
        if self.constant is not None:
            with unset_fake_temporarily():
                self.values = self.constant.clone()
            self.version = self.constant._version

    def restore(self) -> int:
        """Put back what changed; the number of things put back."""
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        t, put = self.t, 0
        if self.requires_grad is not None:
            if t.grad is not self.grad:
                t.grad, put = self.grad, put + 1
            if t.requires_grad != self.requires_grad:
                t.requires_grad_(self.requires_grad)
                put += 1
        if self.data is not None and not _same_data(t, self.data):
            with torch.no_grad():
                t.data = self.data
            put += 1
        if self.own_version is not None and _version(t) != self.own_version:
            _set_version(t, self.own_version)
            put += 1
        if self.dict is not None and _changed_dict(vars(t), self.dict):
            _put_dict(vars(t), self.dict)
            put += 1
        if self.values is not None:
            if getattr(t, "constant", None) is not self.constant:
                t.constant = self.constant  # type: ignore[attr-defined]
                put += 1
            assert self.constant is not None
            if self.constant._version != self.version:
                with unset_fake_temporarily(), torch.no_grad():
                    self.constant.copy_(self.values)
                put += 1
        return put


def _version(t: torch.Tensor) -> int | None:
    try:
        return int(t._version)
    except RuntimeError:  # an inference tensor has none
        return None


def _set_version(t: torch.Tensor, version: int) -> None:
    setter = getattr(torch._C._autograd, "_unsafe_set_version_counter", None)
    if setter is not None:
        setter((t,), (version,))


def _same_data(t: torch.Tensor, data: torch.Tensor) -> bool:
    if type(t.data) is not type(data) or t.device != data.device or t.shape != data.shape or t.dtype != data.dtype:
        return False
    try:
        return t.untyped_storage()._cdata == data.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return True


def _changed_dict(d: dict[Any, Any], saved: dict[Any, Any]) -> bool:
    if len(d) != len(saved):
        return True
    return any(k not in saved or saved[k] is not v for k, v in dict.items(d))


def _put_dict(d: dict[Any, Any], saved: dict[Any, Any]) -> None:
    """Give `d` the items of `saved` back, through the base class's methods (a subclass may refuse its own:
    transformers' ModelOutput refuses `update`)."""
    base: Any = collections.OrderedDict if isinstance(d, collections.OrderedDict) else dict
    base.clear(d)
    for k, v in saved.items():
        base.__setitem__(d, k, v)


class Snapshot:
    """The state reachable from `roots`, saved to be put back (`restore`)."""

    def __init__(self, roots: list[Any], limit: int = WALK_LIMIT) -> None:
        self.limit = limit
        self.walked = 0
        self._seen: set[int] = set()
        self._keep: list[Any] = []  # the objects walked, alive until the restore (their ids stay theirs)
        self._lists: list[tuple[list[Any], list[Any]]] = []
        self._dicts: list[tuple[dict[Any, Any], dict[Any, Any]]] = []
        self._sets: list[tuple[set[Any], list[Any]]] = []
        self._deques: list[tuple[collections.deque[Any], list[Any]]] = []
        self._slots: list[tuple[Any, str, Any]] = []
        self._cells: list[tuple[types.CellType, Any]] = []
        self._globals: list[tuple[dict[str, Any], str, Any]] = []
        self._tensors: list[_TensorState] = []
        self._generators: list[tuple[torch.Generator, torch.Tensor]] = []
        self._library: dict[str, bool] = {}
        self.put, self.refused = 0, set[str]()  # what `restore` put back, and the types that refused it
        self._walk(roots)

    def _walk(self, roots: list[Any]) -> None:
        todo = list(roots)
        while todo:
            obj = todo.pop()
            if isinstance(obj, _ATOMIC) or id(obj) in self._seen:
                continue
            self._seen.add(id(obj))
            kind = type(obj)
            if kind.__module__.startswith(_MACHINERY):
                continue
            self._keep.append(obj)
            self.walked += 1
            if self.walked > self.limit:
                raise RooflineError(f"analytic profile: the step reaches more than {self.limit:,} objects, too many to "
                                    "save and put back after a run without data; profile a step that closes over "
                                    "the model and its inputs only")
            todo += self._children(obj)

    def _children(self, obj: Any) -> list[Any]:
        """What `obj` holds, its state saved on the way."""
        if isinstance(obj, torch.Tensor):
            self._tensors.append(_TensorState(obj))
            return [obj.grad] if obj.is_leaf and obj.grad is not None else []
        if isinstance(obj, dict):
            self._dicts.append((obj, dict(dict.items(obj))))
            return [*dict.keys(obj), *dict.values(obj)]
        if isinstance(obj, list):
            self._lists.append((obj, list.copy(obj)))
            return list(obj)
        if isinstance(obj, (tuple, frozenset)):
            return list(obj)
        if isinstance(obj, set):
            self._sets.append((obj, list(obj)))
            return list(obj)
        if isinstance(obj, collections.deque):
            self._deques.append((obj, list(obj)))
            return list(obj)
        if isinstance(obj, torch.Generator):
            self._generators.append((obj, obj.get_state()))
            return []
        if isinstance(obj, types.FunctionType):
            return self._function(obj)
        if isinstance(obj, types.MethodType):
            return [obj.__self__, obj.__func__]
        if isinstance(obj, (types.CellType)):
            return []
        return self._attributes(obj)

    def _function(self, fn: types.FunctionType) -> list[Any]:
        out: list[Any] = [fn.__defaults__, fn.__kwdefaults__, fn.__dict__]
        for cell in fn.__closure__ or ():
            value = _cell_value(cell)  # _MISSING: an empty cell (a name bound later)
            self._cells.append((cell, value))
            out.append(value)
        if not _library_code(fn.__code__, self._library):
            g = fn.__globals__
            for name in _names(fn.__code__):
                value = g.get(name, _MISSING)
                if not isinstance(value, (types.ModuleType, type)):
                    self._globals.append((g, name, value))
                    out.append(value)
        return out

    def _attributes(self, obj: Any) -> list[Any]:
        out: list[Any] = []
        try:
            out.append(vars(obj))
        except TypeError:  # no __dict__
            pass
        for name in _slots(type(obj)):
            value = getattr(obj, name, _MISSING)
            self._slots.append((obj, name, value))
            out.append(value)
        return out

    def restore(self) -> int:
        """Put back everything that changed; the number of things put back. What cannot be put back (an object
        that refuses the assignment) is said in one warning, by type."""
        self.put, self.refused = 0, set()
        for lst, items in self._lists:
            if len(lst) != len(items) or any(a is not b for a, b in zip(lst, items, strict=True)):
                self._attempt(lst, lambda lst=lst, items=items: list.__setitem__(lst, slice(None), items))
        for d, saved in self._dicts:
            if _changed_dict(d, saved):
                self._attempt(d, lambda d=d, saved=saved: _put_dict(d, saved))
        for st, elements in self._sets:
            if {id(x) for x in st} != {id(x) for x in elements}:
                self._attempt(st, lambda st=st, elements=elements: (set.clear(st), set.update(st, elements)))
        for q, elements in self._deques:
            if len(q) != len(elements) or any(a is not b for a, b in zip(q, elements, strict=True)):
                self._attempt(q, lambda q=q, elements=elements: (q.clear(), q.extend(elements)))
        for obj, name, value in self._slots:
            if getattr(obj, name, _MISSING) is not value:
                self._attempt(obj, lambda obj=obj, name=name, value=value: _put_attribute(obj, name, value))
        for cell, value in self._cells:
            if _cell_value(cell) is not value:
                self._attempt(cell, lambda cell=cell, value=value: _put_attribute(cell, "cell_contents", value))
        for g, name, value in self._globals:
            if g.get(name, _MISSING) is not value:
                self._attempt(g, lambda g=g, name=name, value=value: _put_item(g, name, value))
        for generator, state in self._generators:
            self._attempt(generator, lambda generator=generator, state=state: generator.set_state(state), count=False)
        for ts in self._tensors:
            try:
                self.put += ts.restore()
            except (RuntimeError, TypeError, AttributeError, ValueError):
                self.refused.add(type(ts.t).__name__)
        if self.refused:
            warnings.warn(f"analytic profile: some state the step changed could not be put back (objects of type "
                          f"{', '.join(sorted(self.refused))})", RuntimeWarning, stacklevel=2)
        return self.put

    def _attempt(self, obj: Any, put: Any, count: bool = True) -> None:
        try:
            put()
            self.put += count
        except (RuntimeError, TypeError, AttributeError, ValueError):
            self.refused.add(type(obj).__name__)


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _MISSING


def _put_attribute(obj: Any, name: str, value: Any) -> None:
    if value is _MISSING:
        delattr(obj, name)
    else:
        setattr(obj, name, value)


def _put_item(d: dict[str, Any], name: str, value: Any) -> None:
    if value is _MISSING:
        d.pop(name, None)
    else:
        d[name] = value


class _Generators:
    """The process's random generators (module docstring), saved and put back."""

    def __init__(self) -> None:
        self.torch = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        self.python = random.getstate()
        numpy = sys.modules.get("numpy")
        self.numpy = numpy.random.get_state() if numpy is not None else None

    def restore(self) -> None:
        torch.set_rng_state(self.torch)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        random.setstate(self.python)
        numpy = sys.modules.get("numpy")
        if numpy is not None and self.numpy is not None:
            numpy.random.set_state(self.numpy)


def frame_roots(frame: types.FrameType | None) -> list[Any]:
    """The roots of the state a profile started from `frame` can reach: the frame's variables (a module-level
    block's: its globals, modules and classes aside). The variables themselves are not put back (module
    docstring): only what they hold."""
    if frame is None:
        return []
    return [v for v in frame.f_locals.values() if not isinstance(v, (types.ModuleType, type))]


@contextlib.contextmanager
def isolated(roots: list[Any]) -> Iterator[Snapshot]:
    """Save what `roots` reach and the random generators; put back what changed when the block ends, whether it
    ended normally or raised (module docstring)."""
    generators = _Generators()
    snapshot = Snapshot(roots)
    try:
        yield snapshot
    finally:
        snapshot.restore()
        generators.restore()
