"""roofline: how fast each deep-learning operator could run on a GPU, how fast it does, and why."""

__version__ = "0.1.0"

from roofline.measuring.runner import measure

__all__ = ["__version__", "measure"]
