"""Outputs between the timing harness and the parent that checks them: tensors as raw bytes over a pipe, no files.

Why not files: the harness used to torch.save every output it keeps (2 per check, 2 per kept call: up to 12
copies of the output per timed model) into a temporary folder. Where that folder's filesystem cannot take
them (full, or a file-size limit), the first write fails ("file write failed" or "basic_ios::clear") and
torch.save's clean-up then raises "[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598"
from write_end_of_file, which hides the first error: the KernelBench failures of issue 51. Over a pipe nothing
touches a disk, and the candidate's process has nothing to write that the parent reads back later.

One output is one header line (JSON: its name, the value with each tensor replaced by {"tensor": i}, and each
tensor's dtype, shape and byte count) followed by the tensors' bytes in order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

# The key that marks a tensor's place in a header's value (a dict with this key alone).
TENSOR_KEY = "tensor"


def pack(value: Any, tensors: list[Any]) -> Any:
    """`value` as JSON data, each tensor (a contiguous CPU copy appended to `tensors`) replaced by its index."""
    import torch

    if isinstance(value, torch.Tensor):
        tensors.append(value.detach().to("cpu").contiguous())
        return {TENSOR_KEY: len(tensors) - 1}
    if isinstance(value, dict):
        return {"dict": [[str(k), pack(v, tensors)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"list": [pack(v, tensors) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"an output of type {type(value).__name__} cannot be checked (tensors, numbers, strings, "
                    "and lists, tuples and dicts of them can)")


def unpack(data: Any, tensors: list[Any]) -> Any:
    if TENSOR_KEY in data:
        return tensors[int(data[TENSOR_KEY])]
    if "dict" in data:
        return {k: unpack(v, tensors) for k, v in data["dict"]}
    if "list" in data:
        return [unpack(v, tensors) for v in data["list"]]
    return data["value"]


def _bytes(t: Any) -> memoryview:
    import torch

    return memoryview(t.reshape(-1).view(torch.uint8).numpy())


def send(write: Callable[[int, Any], int], fd: int, name: str, value: Any) -> None:
    """Write one output to `fd` with `write` (os.write, bound by the caller before any candidate code ran)."""
    tensors: list[Any] = []
    header = {"output": name, "value": pack(value, tensors),
              "tensors": [{"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                           "nbytes": t.numel() * t.element_size()} for t in tensors]}
    chunks = [memoryview((json.dumps(header) + "\n").encode())] + [_bytes(t) for t in tensors if t.numel()]
    for chunk in chunks:
        while len(chunk):
            chunk = chunk[write(fd, chunk):]


def receive(header: dict[str, Any], buffered: bytes, fd: int, deadline: float) -> tuple[Any, bytes]:
    """The output a header line announced: its tensors read from `buffered` (what was read past the line) and
    then from `fd`, by `deadline` (time.monotonic(); TimeoutError after it). Returns the value and what was read
    past its bytes."""
    import select
    import time

    import torch

    tensors = []
    for meta in header["tensors"]:
        n = int(meta["nbytes"])
        raw = torch.empty(n, dtype=torch.uint8)
        view = memoryview(raw.numpy()) if n else memoryview(bytearray())  # type: ignore[arg-type]
        take = min(n, len(buffered))
        if take:
            view[:take] = buffered[:take]
        buffered = buffered[take:]
        got = take
        while got < n:
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError("the child stopped in the middle of an output")
            read = os.readv(fd, [view[got:]])
            if read == 0:
                raise EOFError("the child closed its pipe in the middle of an output")
            got += read
        dtype = getattr(torch, str(meta["dtype"]))
        tensors.append(raw.view(dtype).reshape(meta["shape"]) if n else torch.empty(meta["shape"], dtype=dtype))
    return unpack(header["value"], tensors), buffered
