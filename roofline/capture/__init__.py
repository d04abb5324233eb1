"""Whole-model profiling: every aten op a PyTorch program runs, with its FLOPs, minimum bytes and device
time, placed on the roofline (`roofline.capture.profile`). Imports torch."""

from roofline.capture.fake import fake_mode
from roofline.capture.profile import Profile, profile, region

__all__ = ["Profile", "fake_mode", "profile", "region"]
