"""The fake-tensor side of analytic profiles: the one FakeTensorMode they run under, the mode already active (a
program that entered one itself), and the errors of a program that needs tensor values."""

from __future__ import annotations

from typing import Any

_FAKE: Any = None  # the shared FakeTensorMode of fake_mode()


def fake_mode() -> Any:
    """The FakeTensorMode analytic profiles run under (one per process, so a model built under it can be
    profiled later): `with fake_mode(): model = Model(cfg)` allocates nothing."""
    global _FAKE
    if _FAKE is None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        _FAKE = FakeTensorMode(allow_non_fake_inputs=True)
    return _FAKE


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
