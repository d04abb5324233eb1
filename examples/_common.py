"""What the example models share: the flags, the device and dtype, and the warm-up and profiled forward.

Each example builds its model with random weights (no downloads), runs `--warmup` plain forwards, then the
forward to profile inside `roofline.region(...)`, which marks it for `roofline profile SCRIPT.py` and does
nothing otherwise. Under the analytic run (`roofline profile SCRIPT.py --gpu b200 --no-time`) the script runs
under torch's FakeTensorMode: tensors have shapes and no storage, so a 405B model costs no memory; the
examples then model the GPU (bf16 by default), build the model without initialising it, and skip the
warm-up, which would compute nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

import roofline

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def region(name: str) -> contextlib.AbstractContextManager[Any]:
    """`roofline.region(name)`, or a no-op where this roofline has no regions."""
    mark = getattr(roofline, "region", None)
    return mark(name) if mark is not None else contextlib.nullcontext()


def require(module: str) -> Any:
    """Import `module`, or stop with the line that installs it (the model libraries are an optional extra)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise SystemExit(f"this example needs {module} ({e}); install the models extra: "
                         "make models (from a clone; it keeps your torch)") from e


def analytic() -> bool:
    """True under a FakeTensorMode or the meta device: tensors carry shapes, no data, nothing runs."""
    from torch._subclasses.fake_tensor import FakeTensor

    probe = torch.empty(0)
    return probe.is_meta or isinstance(probe, FakeTensor)


def parser(doc: str | None, presets: Mapping[str, Any], size_flag: str) -> argparse.ArgumentParser:
    """The flags every example takes, described by the first line of the script's `doc`; `size_flag` is --seq
    or --image-size (its default is the preset's)."""
    p = argparse.ArgumentParser(description=(doc or "").partition("\n")[0] or None)
    p.add_argument("--preset", choices=list(presets),
                   help="model and input sizes (default: the GPU-sized preset on CUDA and in the analytic run, "
                        "tiny on the CPU)")
    p.add_argument("--batch", type=int, help="batch size (default: the preset's)")
    p.add_argument(size_flag, type=int, help="default: the preset's")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when torch has it, else cpu")
    p.add_argument("--dtype", choices=list(DTYPES),
                   help="default: bf16 on cuda and in the analytic run, fp32 on the CPU")
    p.add_argument("--warmup", type=int, default=1, help="plain forwards before the profiled one (default 1)")
    p.add_argument("--grad-mode", choices=["inference", "no_grad"], default="inference",
                   help="torch.inference_mode() (default) or torch.no_grad() around the forwards (under "
                        "inference mode, composite ops such as linear and SDPA reach the profiler undecomposed)")
    return p


@dataclass(frozen=True)
class ImagePreset:
    """An image model's name (torchvision or timm) and its default input."""

    model: str
    batch: int
    image_size: int


def image_input(args: argparse.Namespace, where: Setup, presets: Mapping[str, ImagePreset]) -> tuple[str, int, int]:
    """The image model's name, batch and image size: the flags, else the preset's (`full` on a GPU)."""
    preset = presets[preset_name(args, where, "full")]
    name = args.model or preset.model
    batch, size = args.batch or preset.batch, args.image_size or preset.image_size
    if batch < 1 or size < 1:
        raise SystemExit("--batch and --image-size must be >= 1")
    return name, batch, size


@dataclass(frozen=True)
class Setup:
    """Where and how the example runs."""

    device: torch.device
    dtype: torch.dtype
    analytic: bool  # under FakeTensorMode: shapes only
    inference: bool = True  # torch.inference_mode(), else torch.no_grad()

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"


def setup(args: argparse.Namespace) -> Setup:
    """Device and dtype from the flags. The analytic run models a GPU: bf16 by default on any device. It stays
    on the CPU where torch has no CUDA: fake CUDA tensors there make SDPA take its unfused math path (scores
    materialised), unlike the fused attention a GPU, or the CPU, runs. Under the meta device (no fake mode)
    everything stays on the meta device."""
    fake = analytic()
    if torch.empty(0).is_meta:
        args.device = "meta"
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: this torch has no CUDA" + (" (the analytic run models the GPU's shapes "
                                                                    "on the CPU device)" if fake else ""))
    dtype = DTYPES[args.dtype] if args.dtype else (torch.bfloat16 if fake or device == "cuda" else torch.float32)
    if args.warmup < 0:
        raise SystemExit(f"--warmup must be >= 0, got {args.warmup}")
    return Setup(torch.device(device), dtype, fake, args.grad_mode == "inference")


def preset_name(args: argparse.Namespace, where: Setup, gpu_preset: str) -> str:
    """The preset asked for, else `gpu_preset` on CUDA and in the analytic run, and "tiny" on the CPU."""
    return args.preset or (gpu_preset if where.cuda or where.analytic else "tiny")


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Any:
    """Construct parameters directly in `dtype` (no float32 copy of a large model first)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def build(make: Callable[[], torch.nn.Module], where: Setup, *, in_dtype: bool = False,
          prepare: Callable[[torch.nn.Module], torch.nn.Module] | None = None) -> torch.nn.Module:
    """The module `make()` constructs, on `where.device` in `where.dtype`, `prepare`d (e.g. a memory format),
    in eval mode. `in_dtype`: constructed with `where.dtype` as the default dtype, so a large model is never
    made in float32 first; otherwise constructed in float32 and cast.

    In the analytic run it is constructed on the meta device with the fake mode suspended: construction code
    that reads a tensor's value (timm's drop-path schedule calls `.item()`) works and initialisation costs
    nothing; then every parameter and buffer becomes an uninitialised fake tensor on the device (a fake
    module cannot be cast or converted: `Module.to` cannot swap fake parameters)."""
    finish = prepare or (lambda module: module)
    place = torch.device("meta") if where.analytic else where.device
    with _suspend_fake() if where.analytic else contextlib.nullcontext(), place:
        with default_dtype(where.dtype) if in_dtype else contextlib.nullcontext():
            model = make()
        model = finish(model if in_dtype else model.to(dtype=where.dtype))
    if where.analytic:
        _materialise(model, where.device)
    return model.eval()


def _suspend_fake() -> contextlib.AbstractContextManager[Any]:
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()


def _materialise(model: torch.nn.Module, device: torch.device) -> None:
    """Replace each meta parameter and buffer by an empty tensor on `device` of the same shape, strides and
    dtype (a fake one under the fake mode), keeping tied parameters tied. Unlike `Module.to_empty` it reads
    no meta tensor under the fake mode, which a strict FakeTensorMode refuses."""
    made: dict[int, torch.Tensor] = {}

    def fresh(t: torch.Tensor) -> torch.Tensor:
        if id(t) not in made:
            empty = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=device)
            made[id(t)] = torch.nn.Parameter(empty, t.requires_grad) if isinstance(t, torch.nn.Parameter) else empty
        return made[id(t)]

    for module in model.modules():
        for table in (module._parameters, module._buffers):
            for name, t in table.items():
                if t is not None:
                    table[name] = fresh(t)


def check_fits(nbytes: int, where: Setup, hint: str) -> None:
    """Stop with one line when the model's weights (and cache) alone exceed the device's free memory; never in
    the analytic run, which allocates nothing."""
    if where.analytic:
        return
    if where.cuda:
        free = torch.cuda.mem_get_info(where.device)[0]
    else:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # not Linux: let the allocator decide
            return
    if nbytes > free:
        raise SystemExit(f"the model needs {nbytes / 1e9:.1f} GB and {where.device.type} has {free / 1e9:.1f} GB "
                         f"free; {hint}")


def parameters(model: torch.nn.Module) -> str:
    """The model's parameter count, shared (tied) parameters once: '1.24 B', '25.6 M'."""
    n = sum(p.numel() for p in model.parameters())
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return str(n)


def no_autograd(where: Setup) -> contextlib.AbstractContextManager[Any]:
    """The grad mode the forwards run in (--grad-mode)."""
    return torch.inference_mode() if where.inference else torch.no_grad()


def forward(fn: Callable[[], Any], name: str, where: Setup, warmup: int,
            between: Callable[[], Any] | None = None) -> tuple[Any, float | None]:
    """`warmup` plain calls of `fn` (each followed by `between`, which undoes what a call changed), then one
    inside `roofline.region(name)`, all in the grad mode of `where`; returns the profiled call's output and its wall
    time in seconds (None in the analytic run, where nothing runs)."""
    with no_autograd(where):
        if not where.analytic:
            for _ in range(warmup):
                fn()
                if between is not None:
                    between()
            _sync(where)
        start = time.perf_counter()
        with region(name):
            out = fn()
            _sync(where)
        elapsed = time.perf_counter() - start
    return out, None if where.analytic else elapsed


def _sync(where: Setup) -> None:
    if where.cuda and not where.analytic:
        torch.cuda.synchronize(where.device)


def report(what: str, model: torch.nn.Module, shapes: str, where: Setup, seconds: float | None) -> None:
    """One line: the model, its parameters, the shapes, where it ran and how long the profiled forward took."""
    took = "analytic (fake tensors, nothing ran)" if seconds is None else f"forward {seconds * 1e3:.1f} ms"
    dtype = str(where.dtype).removeprefix("torch.")
    print(f"{what}: {parameters(model)} parameters, {shapes}, {where.device.type} {dtype}, {took}")
