"""Decide what a command runs against: which roof (spec or measured CPU) and where to time (GPU, CPU, none)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from roofline.ceilings.specs import GPUSpec, as_spec, gpu_ceilings
from roofline.core import validate
from roofline.core.document import Document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.model import Ceilings
from roofline.core.notes import Note
from roofline.core.record import Record, ceilings_dict
from roofline.measuring.device import LocalGPU, cpu_description, detect_gpus

RoofChoice = Literal["datasheet", "measured", "both"]
# The codes of what a target says (`Target.messages`): the CPU timed because torch cannot reach the GPU, the CPU's
# roofline measured now, another GPU's roof placed without timing.
CPU_FOR_GPU, CPU_ROOF, ANALYTIC_ONLY = "target.cpu_for_gpu", "target.cpu_roof", "target.analytic_only"


@dataclass
class Target:
    """The roof to compare against, the device to time on (None: analytic only) and what to tell the user."""

    ceilings: Ceilings
    time_device: str | None
    device_info: dict[str, Any]
    spec: GPUSpec | None = None
    measured: Ceilings | None = None  # calibrated ceilings of this device, when a calibration exists
    messages: list[Note] = field(default_factory=list)

    @property
    def is_cpu(self) -> bool:
        return self.ceilings.kind == "cpu"

    @property
    def l2_bytes(self) -> int | None:
        """The GPU's L2 in bytes, from its spec (None without one: a CPU, an unknown GPU)."""
        return int(self.spec["l2_cache_kib"] * 1024) if self.spec else None

    def noted(self, record: Record) -> Record:
        """The record with this target's messages last among its notes: every record made on the target keeps
        what the target had to say (a command also prints the messages once)."""
        return replace(record, notes=[*record.notes, *self.messages]) if self.messages else record

    def document(self, records: list[Record], extra: dict[str, Any] | None = None,
                 **device_fields: Any) -> Document:
        """The results document of `records` run against this target, built in one place for every command.
        Its device block: the device, the roof's ceilings, `device_fields` (e.g. the suite's name), the
        calibrated ceilings when there are some, and the torch/CUDA versions and the GPU's state after the
        work when something was timed."""
        device = {**self.device_info, "ceilings": ceilings_dict(self.ceilings), **device_fields}
        if self.measured is not None:
            device["measured_ceilings"] = ceilings_dict(self.measured)
        if self.time_device:
            device.update(runtime_info(self.time_device))
        return Document(device=device, records=list(records), extra={"command": command_line(), **(extra or {})})


def command_line() -> list[str]:
    """The command that made a document (`roofline run suites/smoke.toml -o r.json`, or the Python program's
    own argv), so a results file and its HTML report say how to make it again."""
    import sys
    from pathlib import Path

    prog = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
    name = "roofline" if prog.name == "__main__.py" and prog.parent.name == "roofline" else prog.name
    return [name, *sys.argv[1:]]


def runtime_info(device: str) -> dict[str, Any]:
    """torch and CUDA versions and, on a GPU, its clocks and state now (torch is already imported when
    something was timed)."""
    import torch

    info: dict[str, Any] = {"torch_version": torch.__version__, "time_device": device}
    if device == "cpu":  # torch splits a CPU product over its threads: the time depends on how many
        info["cpu_threads"] = torch.get_num_threads()
    if device.startswith("cuda"):
        info["cuda_version"] = torch.version.cuda
        from roofline.measuring.nvml import snapshot

        info["state_after"] = snapshot(torch.device(device).index or 0)
    return info


def local_device(device: str | None, local: list[LocalGPU]) -> tuple[str, int]:
    """(kind, index) of `device` on this machine, whose GPUs are `local`: default the GPU when there is one, else
    the CPU. A device the machine does not have is bad input (exit 2), as `--devices 7` on fewer GPUs is; named as
    given (`--device cuda:3` said `--device cuda`) and as the caller spells the option (`device` from Python)."""
    kind, index = _parse_device(device) if device is not None else (("cuda", 0) if local else ("cpu", 0))
    asked = f"{validate.arg_name('device')} {device or 'cuda'}"
    if kind == "cuda" and not local:
        raise UsageError(f"{asked}: no NVIDIA GPU found on this machine (NVML sees none)")
    if kind == "cuda" and index >= len(local):
        raise UsageError(f"{asked}: this machine has {len(local)} GPU(s)")
    return kind, index


def _parse_device(device: str) -> tuple[str, int]:
    validate.name_arg("", "device", device, example="'cpu', 'cuda' or 'cuda:1'")
    d = device.strip().lower()
    if d == "cpu":
        return "cpu", 0
    if d == "cuda":
        return "cuda", 0
    if d.startswith("cuda:") and d[5:].isdigit():
        return "cuda", int(d[5:])
    raise UsageError(f"unknown device '{device}' (use cpu, cuda or cuda:N)")


def _gpu_info(gpu: LocalGPU | None, spec: GPUSpec) -> dict[str, Any]:
    info: dict[str, Any] = {"kind": "gpu", "spec_id": spec.id, "spec_name": spec.name}
    if gpu is not None:
        info.update(name=gpu.nvml_name, index=gpu.index, driver_version=gpu.driver_version,
                    memory_total_bytes=gpu.memory_total_bytes)
    else:
        info["name"] = spec.name
    return info


def resolve_target(gpu: str | None = None, device: str | None = None, time: bool = True,
                   roof: RoofChoice | None = None, progress: Callable[[str], None] | None = None) -> Target:
    """Pick roof and timing device; `progress` hears the steps of a CPU calibration, when one runs.

    - `--gpu ID` alone on a machine whose GPU is another (or none): analytic against that spec, no timing.
    - no `--gpu`: the local GPU's spec (timed on it), else the CPU with its measured roofline.
    """
    local = detect_gpus()
    kind, index = local_device(device, local)
    messages: list[Note] = []
    if time and local and kind == "cuda" and gpu is None and not _torch_has_cuda():
        if device:  # asked for the GPU by name: say why it cannot be
            raise RooflineError(f"{validate.arg_name('device')} {device}: NVML sees {local[0].nvml_name} but "
                                f"{_torch_cuda_hint()}")
        messages.append(Note(CPU_FOR_GPU, f"timing on the CPU: NVML sees {local[0].nvml_name} but "
                                          f"{_torch_cuda_hint()}"))
        kind, index = "cpu", 0

    if kind == "cpu" and gpu is None:
        from roofline.measuring.calibrate import cpu_ceilings  # lazy: may measure, which needs torch

        said: list[str] = []
        ceilings = cpu_ceilings(said, progress)
        messages += [Note(CPU_ROOF, m) for m in said]
        return Target(ceilings, "cpu" if time else None, cpu_description(), messages=messages)

    local_gpu = local[index] if kind == "cuda" else None
    if gpu is not None:
        spec = as_spec(gpu)
        if time and (local_gpu is None or local_gpu.spec is None or local_gpu.spec.id != spec.id):
            where = f"this machine's {local_gpu.nvml_name}" if local_gpu else "this machine (no such GPU here)"
            messages.append(Note(ANALYTIC_ONLY, f"analytic only: the {spec.name} roof cannot be timed on {where}"))
            time = False
    else:
        assert local_gpu is not None
        if local_gpu.spec is None:
            raise RooflineError(f"no spec file for the local GPU '{local_gpu.nvml_name}': pass --gpu ID to use "
                                "another GPU's spec, or add one under specs/ (see specs/README.md)")
        spec = local_gpu.spec
    ceilings = gpu_ceilings(spec)
    measured = None
    if local_gpu is not None and local_gpu.spec is not None and local_gpu.spec.id == spec.id:
        from roofline.ceilings.store import load_gpu_calibration  # no torch: reads the cache file only

        measured = load_gpu_calibration(local_gpu)
    if roof == "measured":
        if measured is None:
            raise RooflineError(f"{validate.setting('roof', 'measured')}: no calibration for {spec.name} here "
                                "(run `roofline calibrate`)")
        ceilings = measured
    return Target(ceilings, f"cuda:{index}" if time else None, _gpu_info(local_gpu, spec), spec=spec,
                  measured=measured if roof != "datasheet" else None, messages=messages)


def _torch_has_cuda() -> bool:
    """Whether the torch of this environment can run CUDA kernels (imported only when a GPU is to be timed)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _torch_cuda_hint() -> str:
    """Why torch cannot time on the GPU here, and how to fix it, in one clause."""
    try:
        import torch
    except ImportError:
        return "torch is not installed in this environment"
    return (f"this environment's torch ({torch.__version__}) has no CUDA: install a CUDA build of torch here, or "
            "run roofline from the environment that has one (`make` uses the torch of the environment it runs in)")
