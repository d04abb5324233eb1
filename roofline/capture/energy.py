"""`--energy` on whole-model profiles: the step measured on the NVML energy counter (the API's `profile(step,
energy=True)`, whose step can run back to back) or modeled by the stored energy model (`roofline profile SCRIPT
--energy`, whose script runs its step once), then shared among the operators (`analysis.energy_profile`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from roofline.analysis.energy_profile import profile_energy
from roofline.core.device import cuda_index

Profile = Any  # a capture.profile.Profile (not imported: that module imports this one)


def measure_profile_energy(prof: Profile, fn: Callable[[], Any]) -> None:
    """The profile's records and summary with the step's measured energy and each op's share."""
    from roofline.measuring.energy import record_energy, stored_model

    device = prof.resolve().time_device
    assert device is not None
    s = prof.summary
    measured = record_energy(fn, device, s.model_flops, s.min_bytes)
    prof.records, energy = profile_energy(prof.records, s, stored_model(cuda_index(device)), measured, prof.tokens)
    prof.summary = replace(s, energy=energy)


def model_profile_energy(prof: Profile) -> None:
    """The profile's records and summary with the stored energy model's estimate of each op (nothing measured);
    no stored model, or not on a GPU: a UsageError (exit 2)."""
    from roofline.measuring.energy import require_counter, stored_model

    device = prof.resolve().time_device
    require_counter(device)
    prof.records, energy = profile_energy(prof.records, prof.summary, stored_model(cuda_index(device)), None,
                                          prof.tokens)
    prof.summary = replace(prof.summary, energy=energy)
