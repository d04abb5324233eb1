"""Whole-model profiling: every aten op a PyTorch program runs, with its FLOPs, minimum bytes and device
time, placed on the roofline (`roofline.capture.profile`). Imports torch."""

from roofline.capture.profile import Profile, fake_mode, profile, region

__all__ = ["Profile", "fake_mode", "profile", "region"]
