"""The calibration store: measured ceilings per device, in the user's cache directory.

One JSON file; entries keyed by device name, driver and torch version. An entry whose key no longer
matches this machine is stale and ignored; a corrupted file is reported (one warning) and re-measured.
Reading it never imports torch.
"""

from __future__ import annotations

import json
import os
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

from roofline.core.model import Ceilings

STORE_VERSION = 1


def cache_dir() -> Path:
    root = os.environ.get("ROOFLINE_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "roofline"


def store_path() -> Path:
    return cache_dir() / "calibration.json"


def torch_version() -> str:
    """torch's installed version without importing it (importing torch takes seconds)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "none"


def gpu_key(name: str, driver: str) -> dict[str, str]:
    return {"kind": "gpu", "name": name, "driver": driver, "torch": torch_version()}


def cpu_key(name: str, cores: int | None) -> dict[str, str]:
    return {"kind": "cpu", "name": name, "cores": str(cores), "torch": torch_version()}


def _read_entries() -> list[dict[str, Any]]:
    p = store_path()
    if not p.exists():
        return []
    try:
        doc = json.loads(p.read_text())
        if not isinstance(doc, dict) or doc.get("version") != STORE_VERSION or not isinstance(doc.get("entries"), list):
            raise ValueError("unexpected layout")
        entries = doc["entries"]
        for e in entries:
            _ceilings_from(e)  # validates
        return entries
    except (ValueError, KeyError, TypeError, OSError) as exc:
        warnings.warn(f"calibration store {p} is unreadable ({exc}); it will be measured again", stacklevel=2)
        return []


def _ceilings_from(entry: dict[str, Any]) -> Ceilings:
    c = entry["ceilings"]
    compute = {str(k): float(v) for k, v in c["compute"].items()}
    memory = {str(k): float(v) for k, v in c["memory"].items()}
    if "dram" not in memory or any(v <= 0 for v in (*compute.values(), *memory.values())):
        raise ValueError("ceilings must be positive and include dram")
    return Ceilings(device_id=c["device_id"], device_name=c["device_name"], kind=c["kind"], source="measured",
                    compute=compute, memory=memory, sm_clock_mhz=c.get("sm_clock_mhz"),
                    notes=tuple(c.get("notes", ())))


def lookup(key: dict[str, str]) -> tuple[Ceilings, dict[str, Any]] | None:
    """The stored ceilings for exactly this key (stale entries, with another driver or torch, are ignored)."""
    for entry in _read_entries():
        if entry.get("key") == key:
            return _ceilings_from(entry), entry.get("details", {})
    return None


def save(key: dict[str, str], ceilings: Ceilings, details: dict[str, Any]) -> Path:
    """Add or replace the entry for this key. The store is a cache: replacing is its purpose."""
    entries = [e for e in _read_entries() if e.get("key") != key]
    entries.append({"key": key, "ceilings": {
        "device_id": ceilings.device_id, "device_name": ceilings.device_name, "kind": ceilings.kind,
        "compute": ceilings.compute, "memory": ceilings.memory, "sm_clock_mhz": ceilings.sm_clock_mhz,
        "notes": list(ceilings.notes)}, "details": details})
    p = store_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps({"version": STORE_VERSION, "entries": entries}, indent=1))
    os.replace(tmp, p)
    return p


def load_gpu_calibration(gpu: Any) -> Ceilings | None:
    """Measured ceilings for a LocalGPU, if `roofline calibrate` ran with this driver and torch."""
    found = lookup(gpu_key(gpu.nvml_name, gpu.driver_version))
    return found[0] if found else None
