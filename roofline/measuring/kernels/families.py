"""Import every builder module of this package (each registers its builders)."""

import importlib
import pkgutil

import roofline.measuring.kernels as _pkg

for _m in pkgutil.iter_modules(_pkg.__path__):
    if _m.name not in ("families", "common"):
        importlib.import_module(f"roofline.measuring.kernels.{_m.name}")
