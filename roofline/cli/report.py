"""`roofline report`: one self-contained HTML page (chart, records, profile, machine) of results documents."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer

from roofline.cli.common import check_labels, check_outputs, note
from roofline.core.errors import UsageError

HTML_SUFFIXES = (".html", ".htm")


def check_html_path(path: Path) -> None:
    """A usage error unless the page's path ends in .html or .htm (a browser opens it by its suffix)."""
    if path.suffix.lower() not in HTML_SUFFIXES:
        raise UsageError(f"{path}: an HTML report's file name ends in .html (or .htm)")


def report_cmd(
    results: Annotated[list[Path], typer.Argument(help="One or more results documents (overlaid on one chart).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The page to write: report.html.")],
    label: Annotated[Optional[list[str]], typer.Option("--label", help="Name per results file (legend).")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="Page and chart title.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the page if it exists.")] = False,
) -> None:
    """Write one HTML page that opens offline: the interactive roofline chart, a sortable table of the
    records, a profile's what-if and roll-ups, and the machine, clocks and tool version of each document."""
    check_html_path(output)
    check_labels(label, results)
    check_outputs(force, files=(output,))
    from roofline.report.chart.model import load_documents
    from roofline.report.html import report_html, write_report

    docs = load_documents(results)
    # The command as the page shows it (--force left out: it says nothing about the page).
    words = ["roofline", "report", *map(str, results), *(w for x in label or [] for w in ("--label", x)),
             *(["--title", title] if title else []), "-o", str(output)]
    command = shlex.join(words)
    page = report_html(docs, paths=results, labels=label, title=title, command=command)
    written = write_report(page, output, force=force)
    note(f"report written to {written} ({len(page.encode()) / 1024:.0f} KiB)")
