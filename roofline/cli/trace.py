"""`roofline trace TRACE...`: the roofline of a run from its torch.profiler traces (traces/job.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from roofline.analysis.profile_view import BY
from roofline.cli.common import at_least, check_choice, check_outputs, note
from roofline.cli.history import HistoryOption, add_to_history
from roofline.cli.results import save_and_print
from roofline.core.document import Document


def trace_cmd(
    traces: Annotated[list[str], typer.Argument(help="Trace files (.json or .json.gz), a folder of them (one per "
                                                "rank), or a glob.")],
    gpu: Annotated[str | None, typer.Option("--gpu", help="Spec for the roof (default: the traces' GPU).")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Operator database for predicted times (default: the "
                                            "GPU's own).")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the results document here.")] = None,
    annotate: Annotated[Path | None, typer.Option("--annotate", help="Write the trace back with each kernel's "
                                                  "FLOPs, bytes, % of roof and predicted time (Perfetto).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output and --annotate if they exist.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print the results document.")] = False,
    rank: Annotated[int | None, typer.Option("--rank", help="The rank whose records the document holds (default: "
                                             "the lowest).")] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", parser=at_least("--jobs"), help="Processes parsing the "
                                             "traces (default: one per trace, up to the CPUs).")] = None,
    top: Annotated[int, typer.Option("--top", parser=at_least("--top"), help="Operators in the top table.")] = 20,
    by: Annotated[str, typer.Option("--by", help="Roll-up: op, module, kernel or phase.")] = "op",
    depth: Annotated[int | None, typer.Option("--depth", parser=at_least("--depth"), help="Module path components "
                                              "kept in the module roll-up.")] = None,
    no_group: Annotated[bool, typer.Option("--no-group", help="Each record, layer and fusion on a row of its own "
                                           "(default: repeated layers one row).")] = False,
    history: HistoryOption = None,
) -> None:
    """The roofline of a run you already have: torch.profiler traces (export_chrome_trace,
    tensorboard_trace_handler; one, or one per rank) read into the same records, views and results document as
    `roofline profile`, with each rank, the slowest rank of each step and each collective beside them."""
    check_choice("--by", by, BY)
    check_outputs(force, files=(output, annotate))
    from roofline.traces.job import trace  # torch: after the refusals

    started = time.perf_counter()
    result = trace(traces, gpu=gpu, db=db, rank=rank, jobs=jobs)
    sys.stderr.write(f"roofline: {len(result.ranks)} trace(s), {result.summary.calls or 0} op calls in "
                     f"{len(result.records)} records, analysed in {time.perf_counter() - started:.1f} s\n")
    doc = result.document()
    if annotate is not None:
        from roofline.traces.annotate import write_annotated

        write_annotated(result.analysis, annotate, force)
    save_and_print(doc, output, force, json_)
    add_to_history(doc, history, where=str(output or traces[0]))
    if not json_:
        _views(result.trace_summary(), doc, top, by, depth, not no_group)
    for path, what in ((output, "results"), (annotate, "annotated trace")):
        if path is not None:
            note(f"{what} written to {path}")


def _views(job: dict[str, object], doc: Document, top: int, by: str, depth: int | None, group: bool) -> None:
    from roofline.analysis.profile_view import profile_view
    from roofline.report.profile import profile_views, profile_warnings
    from roofline.report.text import console
    from roofline.report.trace import trace_views

    con = console()
    view = profile_view(doc, top=top, by=by, depth=depth, group=group)
    for part in [*profile_views(view, width=con.width, warnings=profile_warnings(doc.records)), *trace_views(job)]:
        con.print(part)
