"""roofline: how fast each deep-learning operator could run on a GPU, how fast it does, and why.

The public API is loaded on first use (`roofline.measure` pulls in torch and the timers), so importing the
math (`roofline.core`, `roofline.ops`) stays light."""

from __future__ import annotations

from typing import Any

from roofline._version import __version__

# Public name -> the module that defines it.
_API = {"measure": "roofline.measuring.runner", "profile": "roofline.capture.profile",
        "region": "roofline.capture.profile", "Profile": "roofline.capture.profile"}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")
