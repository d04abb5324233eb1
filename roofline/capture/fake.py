"""The fake-tensor side of analytic profiles: the one FakeTensorMode they run under, the mode already active (a
program that entered one itself), and the errors of a program that needs tensor values."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_FAKE: Any = None  # the shared FakeTensorMode of fake_mode()


@contextlib.contextmanager
def fake_mode() -> Iterator[Any]:
    """The FakeTensorMode analytic profiles run under (one per process, so a model built under it can be
    profiled later), with modules converted by replacing their tensors (`modules_convert_by_replacing`):
    `with fake_mode(): model = Model(cfg).to(torch.bfloat16)` allocates nothing."""
    global _FAKE
    if _FAKE is None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        _FAKE = FakeTensorMode(allow_non_fake_inputs=True)
    with _FAKE, modules_convert_by_replacing():
        yield _FAKE


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
def modules_convert_by_replacing() -> Iterator[None]:
    """Under fake mode, `module.to(...)`, `.cuda()`, `.half()` give a module with fake tensors new ones (torch's
    overwrite-on-conversion, as its docs ask: move a model before making its optimizer). torch itself could not:
    a fake parameter's `.data =` kept its old device (torch 2.11: a model moved to the GPU met its GPU inputs as
    a CPU tensor, "found two different devices cpu, cuda:0") and its swap failed (torch 2.13:
    "Couldn't swap Linear.weight")."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    original = torch.nn.Module._apply
    if getattr(original, "converts_by_replacing", False):  # already inside one
        yield
        return

    def _apply(module: Any, fn: Any, recurse: bool = True) -> Any:
        if recurse:  # each child by this rule: a module of real tensors may hold one of fake ones
            for child in module.children():
                child._apply(fn)
        own = [t for t in (*module._parameters.values(), *module._buffers.values()) if t is not None]
        if not any(isinstance(t, FakeTensor) for t in own):
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
    torch.nn.Module._apply = _apply  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module._apply = original  # type: ignore[method-assign]
