"""`roofline import-ncu REPORT -o DOC.json`: an Nsight Compute report of your own application as a results
document, one record per kernel placed on a spec's roofs (`ncu.records`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from roofline.cli.common import at_least, check_choice, check_outputs, note
from roofline.cli.results import save_and_print
from roofline.core.errors import UsageError
from roofline.report.chart.model import ROOF_CHOICES

# The kernels the table shows by default: a real forward's 110 kernels filled 330 lines.
DEFAULT_TOP = 20


def _spec_id(gpu: str | None, device_name: str | None) -> str:
    """--gpu, else the spec of the GPU the report was recorded on, else this machine's GPU."""
    from roofline.ceilings.specs import match_nvml_name
    from roofline.measuring.device import detect_gpus

    if gpu:
        return gpu
    if device_name and (spec := match_nvml_name(device_name)) is not None:
        return spec.id
    local = detect_gpus()
    if local and local[0].spec is not None:
        return local[0].spec.id
    raise UsageError("the report does not name its GPU and this machine has none: pass --gpu ID (e.g. --gpu h200)")


def import_ncu_cmd(
    report: Annotated[Path, typer.Argument(help="An Nsight Compute report: .ncu-rep (needs the [ncu] extra) or "
                                           "the CSV of `ncu --csv --page raw`.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the results document here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Spec for the roofs (default: the report's GPU, else "
                                            "this machine's).")] = None,
    roof: Annotated[str | None, typer.Option("--roof", help="datasheet or measured (a calibration of this "
                                             "machine's GPU).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the results document.")] = False,
    top: Annotated[int, typer.Option("--top", parser=at_least("--top", 0), help="Show the N kernels that took "
                                     "longest (0: every one); the document holds every kernel.")] = DEFAULT_TOP,
) -> None:
    """Turn an Nsight Compute report into a results document: one record per kernel, its counter FLOPs and
    bytes placed on the roofs, timed by ncu's duration."""
    from roofline.measuring.target import resolve_target
    from roofline.ncu.records import read_report, report_device, report_records
    from roofline.report.text import kernels_table, show

    check_choice("--roof", roof, tuple(r for r in ROOF_CHOICES if r != "both"))
    check_outputs(force, files=(output,))
    kernels = read_report(report)
    target = resolve_target(gpu=_spec_id(gpu, report_device(kernels)), time=False, roof=roof)  # type: ignore[arg-type]
    records = report_records(kernels, target.ceilings, str(report))
    doc = target.document(records, source=str(report))
    save_and_print(doc, output, force, json_)
    if not json_:
        show(kernels_table(records, title=f"{report.name}: {len(records)} kernels on "
                           f"{target.ceilings.device_name}", top=top))
        if output is not None:
            note(f"results written to {output}")
