"""The timing choices the command line offers (--timer, --power), apart from the timers: `roofline analyze
OP --no-time` checks and lists them without importing `roofline.measuring.timing`. Torch-free."""

# How a GPU is timed (--timer, --power); the CPU has one timer, the host clock, and the runner says so in a
# note when either is given there.
# "cupti": the operator's kernels' own device timestamps (`timing_cupti`), auto's choice for short operators.
METHODS = ("auto", "graph", "graph-loop", "events", "cupti")
POWER_MODES = ("sustained", "burst")
# What --timer's help lists: the same tuple its error lists (`roofline.cli.common.check_choice`).
TIMER_HELP = f"{', '.join(METHODS[:-1])} or {METHODS[-1]}."
# Burst is the default: isolated kernels repeat within 0.6% from run to run and match Nsight Compute, while a
# power-capped (sustained) time follows the GPU's temperature, which a regression check cannot hold still
# (docs/timing.md, "Burst or sustained").
DEFAULT_POWER = "burst"
