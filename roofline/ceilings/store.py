"""The calibration store: measured ceilings per device, in the user's cache directory.

One JSON file; entries keyed by device name, driver and torch version. An entry whose key no longer
matches this machine is stale and ignored. The store is a cache: a corrupted file is said once (one note, on
the command line a `note:` line: `core.progress.tell`) and re-measured; a folder that cannot be written (read
only, a path under a file) is said once too, and what was measured is used all the same, not stored.
Reading it never imports torch.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.files import atomic_write, locked
from roofline.core.model import Ceilings
from roofline.core.progress import tell

STORE_VERSION = 1


def cache_dir() -> Path:
    root = os.environ.get("ROOFLINE_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "roofline"


def store_path() -> Path:
    return cache_dir() / "calibration.json"


@functools.cache
def torch_version() -> str:
    """torch's installed version without importing it (importing torch takes seconds); read once a process
    (13 ms a read: every profile resolves its target)."""
    from importlib import metadata  # 14 ms: not on the analytic commands' path

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "none"


def gpu_key(name: str, driver: str) -> dict[str, str]:
    return {"kind": "gpu", "name": name, "driver": driver, "torch": torch_version()}


# How a CPU's ceilings are measured; part of its key, so a stored calibration of an older method is measured again
# (2: the L3 copied at several working sets, where method 1's single one could give the DRAM rate as the L3
# roof on a VM).
CPU_METHOD = "2"


def cpu_key(name: str, cores: int | None) -> dict[str, str]:
    return {"kind": "cpu", "name": name, "cores": str(cores), "torch": torch_version(), "method": CPU_METHOD}


_said: set[str] = set()  # the notes said in this process: each once (a lookup and the save after it read one file)


def _say_once(text: str) -> None:
    if text not in _said:
        _said.add(text)
        tell(text)


def _read_store(p: Path, check: Callable[[dict[str, Any]], Any], unreadable: str) -> list[dict[str, Any]]:
    """A store file's entries, each passed to `check` (which raises on a malformed one); a missing file reads as
    empty, an unreadable one is said once (`unreadable`: what happens then) and reads as empty."""
    try:
        if not p.exists():
            return []
        doc = json.loads(p.read_text())
        if not isinstance(doc, dict) or doc.get("version") != STORE_VERSION or not isinstance(doc.get("entries"), list):
            raise ValueError("unexpected layout")
        for e in doc["entries"]:
            check(e)
        return doc["entries"]
    except (ValueError, KeyError, TypeError, OSError) as exc:
        why = " ".join(str(exc).split())[:120]  # one line: a JSON error quotes no source, an OSError its path
        _say_once(f"the cache {p} is unreadable ({why}): {unreadable}")
        return []


def _write_store(p: Path, entries: Callable[[], list[dict[str, Any]]]) -> Path | None:
    """`entries()` written as the store file `p`, read and written under the folder's lock; None, said once,
    when the folder cannot be written (what was measured is used all the same: the store is a cache)."""
    try:
        with locked(p, make_parents=True):
            return atomic_write(p, json.dumps({"version": STORE_VERSION, "entries": entries()}, indent=1))
    except RooflineError as exc:  # files' errors are one line: "cannot write PATH: why"
        _say_once(f"{exc}: measured all the same, not cached (it is measured again next time; ROOFLINE_CACHE_DIR "
                  "names a writable folder)")
        return None


def read_entries() -> list[dict[str, Any]]:
    """Every entry, oldest first (`save` appends); an unreadable store warns once and reads as empty."""
    return _read_store(store_path(), ceilings_from, "ignored (a roof it held is measured again where one is needed, "
                       "and the file rewritten)")


def ceilings_from(entry: dict[str, Any]) -> Ceilings:
    """An entry's measured ceilings; a malformed or non-positive figure raises ValueError, KeyError or TypeError."""
    c = entry["ceilings"]
    compute = {str(k): float(v) for k, v in c["compute"].items()}
    memory = {str(k): float(v) for k, v in c["memory"].items()}
    if "dram" not in memory or any(v <= 0 for v in (*compute.values(), *memory.values())):
        raise ValueError("ceilings must be positive and include dram")
    return Ceilings(device_id=c["device_id"], device_name=c["device_name"], kind=c["kind"], source="measured",
                    compute=compute, memory=memory, sm_clock_mhz=c.get("sm_clock_mhz"),
                    notes=tuple(c.get("notes", ())),
                    cache_bytes={str(k): int(v) for k, v in (c.get("cache_bytes") or {}).items()},
                    cache_whole_bytes={str(k): int(v) for k, v in (c.get("cache_whole_bytes") or {}).items()})


def lookup(key: dict[str, str]) -> tuple[Ceilings, dict[str, Any]] | None:
    """The stored ceilings for exactly this key (stale entries, with another driver or torch, are ignored)."""
    for entry in read_entries():
        if entry.get("key") == key:
            return ceilings_from(entry), entry.get("details", {})
    return None


def newest_gpu_ceilings() -> dict[str, Ceilings]:
    """The newest calibration of each GPU spec id, whatever driver or torch measured it (for comparing the
    hardware, not this machine). The store has no timestamps; `save` appends, so a later entry is newer."""
    found: dict[str, Ceilings] = {}
    for entry in read_entries():
        c = entry.get("ceilings") or {}
        if c.get("kind") == "gpu" and isinstance(c.get("device_id"), str):
            found[c["device_id"]] = ceilings_from(entry)
    return found


def save(key: dict[str, str], ceilings: Ceilings, details: dict[str, Any]) -> Path | None:
    """Add or replace the entry for this key. The store is a cache: replacing is its purpose. Read and written
    under the folder's lock, so two calibrations saving at once keep both entries. None when the folder cannot
    be written (said once: `_write_store`)."""
    entry = {"key": key, "ceilings": {
        "device_id": ceilings.device_id, "device_name": ceilings.device_name, "kind": ceilings.kind,
        "compute": ceilings.compute, "memory": ceilings.memory, "sm_clock_mhz": ceilings.sm_clock_mhz,
        "notes": list(ceilings.notes), **({"cache_bytes": ceilings.cache_bytes} if ceilings.cache_bytes else {}),
        **({"cache_whole_bytes": ceilings.cache_whole_bytes} if ceilings.cache_whole_bytes else {})},
        "details": details}
    return _write_store(store_path(), lambda: [e for e in read_entries() if e.get("key") != key] + [entry])


def load_gpu_calibration(gpu: Any) -> Ceilings | None:
    """Measured ceilings for a LocalGPU, if `roofline calibrate` ran with this driver and torch."""
    found = lookup(gpu_key(gpu.nvml_name, gpu.driver_version))
    return found[0] if found else None


# The energy models (`roofline calibrate energy`), beside the ceilings: one more file in the same folder, keyed
# as the ceilings are (GPU name, driver, torch), so that a calibration of the ceilings never touches them.
def energy_store_path() -> Path:
    return cache_dir() / "energy.json"


def read_energy_entries() -> list[dict[str, Any]]:
    """Every stored energy model ({"key", "model", "details"}); an unreadable file warns once and reads empty."""
    from roofline.core.energy import EnergyModel

    return _read_store(energy_store_path(), lambda e: EnergyModel.from_dict(e["model"]),
                       "run `roofline calibrate energy` again")


def lookup_energy(key: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The stored energy model (as a dict) and its details for exactly this key."""
    for entry in read_energy_entries():
        if entry.get("key") == key:
            return entry["model"], entry.get("details", {})
    return None


def save_energy(key: dict[str, str], model: dict[str, Any], details: dict[str, Any]) -> Path:
    """Add or replace the energy model of this key (the caller decides whether to replace: `calibrate`), under the
    folder's lock as `save`."""
    with locked(energy_store_path(), make_parents=True):
        entries = [e for e in read_energy_entries() if e.get("key") != key]
        entries.append({"key": key, "model": model, "details": details})
        return atomic_write(energy_store_path(), json.dumps({"version": STORE_VERSION, "entries": entries},
                                                            indent=1))
