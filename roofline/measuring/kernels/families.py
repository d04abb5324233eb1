"""Import every builder module of this package (each registers its builders)."""

import importlib
import pkgutil
from pathlib import Path

for _m in pkgutil.iter_modules([str(Path(__file__).parent)]):
    if _m.name not in ("families", "common", "registry"):
        importlib.import_module(f"roofline.measuring.kernels.{_m.name}")
