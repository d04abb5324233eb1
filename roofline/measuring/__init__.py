"""Timing real kernels: the CUDA and CPU timers, clocks (NVML and the in-kernel trace), kernel builders, the
runner, and which device a command times on. Everything that imports torch lives here."""
