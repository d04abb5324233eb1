"""Device names as the tool writes them: 'cpu', 'cuda', 'cuda:N'."""

from __future__ import annotations


def cuda_index(device: str | None) -> int:
    """The GPU index a device name points at: N of 'cuda:N', 0 for 'cuda' (and for none or the CPU)."""
    return int(device.split(":")[1]) if device and ":" in device else 0
