"""`roofline plot`: the roofline chart of one or more results documents, to a file or the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from roofline.cli.common import check_choice, check_labels, check_outputs, note, out
from roofline.core.errors import UsageError
from roofline.report.chart.model import ROOF_CHOICES

if TYPE_CHECKING:
    from roofline.core.document import Document


def plot_cmd(
    results: Annotated[list[Path], typer.Argument(help="One or more results documents.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Chart file: .png, .svg or .pdf.")]
    = None,
    terminal: Annotated[bool, typer.Option("--terminal", help="Draw the chart in the terminal.")] = False,
    label: Annotated[list[str] | None, typer.Option("--label", help="Legend label per results file.")] = None,
    roof: Annotated[str, typer.Option("--roof", help="datasheet, measured or both.")] = "both",
    title: Annotated[str | None, typer.Option("--title", help="Chart title.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the chart file if it exists.")] = False,
    energy: Annotated[bool, typer.Option("--energy", help="Draw the energy roofline instead: FLOP per joule "
                                         "against intensity, of records measured with --energy "
                                         "(docs/energy.md).")] = False,
) -> None:
    """Draw achieved performance against every ceiling (log-log roofline chart)."""
    check_choice("--roof", roof, ROOF_CHOICES)
    if output is None and not terminal:
        raise UsageError("give -o chart.png|svg|pdf or --terminal")
    check_labels(label, results)
    from roofline.report.chart.model import load_documents

    docs = load_documents(results)
    check_outputs(force, charts=(output,))
    from roofline.report.comm import is_collectives

    if any(is_collectives(d) for d in docs):  # `roofline collectives` documents: busbw against size
        _plot_collectives(docs, output, terminal, label, title, force)
        return
    if energy:
        if output is None:
            raise UsageError("--energy draws to a chart file: give -o chart.png|svg|pdf")
        from roofline.report.chart.energy_draw import save_energy_chart

        note(f"energy chart written to {save_energy_chart(docs, output, title=title, force=force)}")
        return
    if terminal:
        from roofline.report.terminal import render_terminal, terminal_width

        out(render_terminal(docs, width=terminal_width(), roof=roof, labels=label))
    if output is not None:
        from roofline.report.chart.draw import save_chart
        from roofline.report.progress import StatusLine

        with StatusLine() as line:  # a chart of a hundred points takes a few seconds to draw
            line.status(f"drawing the chart of {sum(len(d.records) for d in docs)} records")
            path = save_chart(docs, output, labels=label, roof=roof, title=title, force=force)
        note(f"chart written to {path}")


def _plot_collectives(docs: list[Document], output: Path | None, terminal: bool, label: list[str] | None,
                      title: str | None, force: bool) -> None:
    """The busbw chart of collectives documents; mixing them with roofline documents is refused."""
    from roofline.report.chart.comm_draw import render_comm_terminal, save_comm_chart
    from roofline.report.comm import is_collectives

    if not all(is_collectives(d) for d in docs):
        raise UsageError("collectives documents (busbw against size) and roofline documents cannot share a chart")
    if terminal:
        from roofline.report.terminal import terminal_width

        out(render_comm_terminal(docs, width=terminal_width(), labels=label))
    if output is not None:
        note(f"chart written to {save_comm_chart(docs, output, labels=label, title=title, force=force)}")
