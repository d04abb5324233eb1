"""The results document of `analyze` and `run`, built in one place: the device and roofs it ran against, the
runtime when something was timed, and the records; written and printed as the user asked."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.cli.common import out

if TYPE_CHECKING:
    from roofline.core.document import Document
    from roofline.core.record import Record
    from roofline.measuring.target import Target


def results_document(target: Target, records: list[Record], **device_fields: Any) -> Document:
    """The document of `records` run against `target`. Its device block: the target's device, the roof's
    ceilings, `device_fields` (e.g. the suite's name), the calibrated ceilings when there are some, and the
    torch/CUDA versions and the GPU's state after the work when something was timed."""
    from roofline.core.document import Document
    from roofline.core.record import ceilings_dict

    device = {**target.device_info, "ceilings": ceilings_dict(target.ceilings), **device_fields}
    if target.measured is not None:
        device["measured_ceilings"] = ceilings_dict(target.measured)
    if target.time_device:
        device.update(runtime_info(target.time_device))
    return Document(device=device, records=list(records))


def runtime_info(device: str) -> dict[str, Any]:
    """torch and CUDA versions and, on a GPU, its clocks and state now (torch is already imported when
    something was timed)."""
    import torch

    info: dict[str, Any] = {"torch_version": torch.__version__, "time_device": device}
    if device.startswith("cuda"):
        info["cuda_version"] = torch.version.cuda
        from roofline.measuring.nvml import snapshot

        info["state_after"] = snapshot(torch.device(device).index or 0)
    return info


def save_and_print(doc: Document, output: Path | None, force: bool, json_: bool) -> None:
    """Write the document to `output` (when given) and print it as JSON (when asked)."""
    from roofline.core.document import dumps, write_document

    if output is not None:
        write_document(doc, output, force=force)
    if json_:
        out(dumps(doc))
