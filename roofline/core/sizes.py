"""Byte sizes as people write them: 49152, 48KB, 48KiB, 256MiB, 4GiB (KB = KiB = 1024 bytes). The one parser
of sizes: occupancy's shared memory, `collectives --sizes`, and every size parameter of an operator
(`analyze all_reduce --bytes 256MiB`)."""

from __future__ import annotations

import re

from roofline.core.errors import UsageError

_BYTES_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")
# KB means 1024 bytes, as CUDA's documentation and occupancy calculator write it ("48 KB" = 49152 bytes,
# "228 KB" = 233472 = cudaDeviceProp.sharedMemPerMultiprocessor on H100); KiB is the same unit. There is no
# 1000-based unit here: shared memory is never sized in powers of ten.
_BYTE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2}
# Message sizes (`roofline collectives --sizes`) go up to GiB. Shared memory never does, but occupancy reads
# them too: '1GB' is a size, which the GPU's limit then refuses, naming it.
SIZE_UNITS = {**_BYTE_UNITS, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}


def parse_bytes(text: str | int, units: dict[str, int] = _BYTE_UNITS) -> int:
    """'49152', '49152B', '48KB', '48K', '48KiB' -> 49152 (KB = KiB = 1024 bytes, as CUDA writes it); `units`
    (lower-case suffix -> bytes) defaults to B, K and M (SIZE_UNITS adds G)."""
    if isinstance(text, bool):
        raise UsageError(f"not a byte count: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise UsageError(f"a byte count must be >= 0, got {text}")
        return text
    m = _BYTES_RE.match(str(text))
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in units:
        more = "MB/MiB, GB/GiB" if "gib" in units else "MB/MiB"
        raise UsageError(f"cannot read {text!r} as a size: give bytes (49152), KB or KiB (48KB = 48KiB = 49152 "
                         f"bytes, as CUDA counts), or {more}")
    value = float(m.group(1)) * units[unit]
    if value != int(value):
        raise UsageError(f"{text!r} is not a whole number of bytes ({value:g})")
    return int(value)
