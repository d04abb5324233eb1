"""`roofline history add|show|detect|plot`: the runs of a suite over commits, their series and change points;
and `--history STORE` for the commands that make results (`HistoryOption`, `add_to_history`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from roofline.cli.common import note, out

if TYPE_CHECKING:
    from roofline.core.document import Document
    from roofline.history.series import Series
    from roofline.history.store import Filter

history_app = typer.Typer(no_args_is_help=True, help="The history behind the gate: runs over commits, each record's "
                          "series, its change points.")

STORE_HELP = ("The history store: a path (SQLite) or a postgresql:// URL (default: $ROOFLINE_HISTORY, else "
              "history.sqlite in roofline's cache folder).")
# `--history STORE` on run, profile, trace and check: add the results to this store as one run.
HistoryOption = Annotated[Optional[str], typer.Option("--history", metavar="STORE", help="Add the results to this "
                                                      "history store as one run (a path, SQLite; or a postgresql:// "
                                                      "URL); the commit and branch from CI's variables.")]
Store = Annotated[Optional[str], typer.Option("--history", metavar="STORE", help=STORE_HELP)]
Pattern = Annotated[Optional[str], typer.Argument(help="Only the series whose name holds this (any case), or whose "
                                                  "key is it; default: every series.")]
Branch = Annotated[Optional[str], typer.Option("--branch", help="Only the runs of this branch.")]
Machine = Annotated[Optional[str], typer.Option("--machine", help="Only the runs of this machine.")]
Last = Annotated[Optional[int], typer.Option("--last", min=1, help="Only the last N runs (of the branch and "
                                             "machine asked); detect and plot's changes: the last 100 unless given.")]
Metric = Annotated[str, typer.Option("--metric", help="time (each run's median) or fraction (the fraction of the "
                                     "roofline at the SM clock the run measured: a lower clock alone is no change).")]
FailOn = Annotated[str, typer.Option("--fail-on", help="A change worse than this fails (exit 1): median:PCT%.")]


def add_to_history(doc: Document, history: str | None, where: str) -> None:
    """For run, profile, trace and check: with --history, add `doc` (the results just made) to the store, and say
    so on stderr. Without it, nothing."""
    if history is None:
        return
    from roofline.history.store import open_store, record_history

    with open_store(history, create=True) as store:
        added = record_history(doc, store, where=where)
        note(_added_text(added, store.shown))


def _added_text(added: object, shown: str) -> str:
    from roofline.history.store import Added

    assert isinstance(added, Added)
    if added.existed:
        return f"already in the history store {shown} as run {added.run}: not added again"
    left = f" ({len(added.untimed)} untimed records left out)" if added.untimed else ""
    return f"added run {added.run} ({added.points} records) to the history store {shown}{left}"


@history_app.command("add")
def add_cmd(
    doc: Annotated[Path, typer.Argument(help="A results document (run, profile, trace).")],
    commit: Annotated[Optional[str], typer.Option("--commit", help="The commit it measured (default: CI's "
                                                  "$GITHUB_SHA, $CI_COMMIT_SHA, ...).")] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="Its branch (default: CI's $GITHUB_REF_NAME, "
                                                  "$CI_COMMIT_REF_NAME, ...).")] = None,
    machine: Annotated[Optional[str], typer.Option("--machine", help="The machine it ran on (default: this "
                                                   "host's name).")] = None,
    history: Store = None,
) -> None:
    """Add a results document to the history store as one run (made when missing). The document is read as
    `check` reads it (a time that is no measurement is refused); one already there is not added twice."""
    from roofline.ci.inputs import load_for_check
    from roofline.history.store import open_store, record_history

    document = load_for_check(doc, as_results=True)
    with open_store(history, create=True) as store:
        added = record_history(document, store, commit=commit, branch=branch, machine=machine, where=str(doc))
        out(_added_text(added, store.shown))


def _read(history: str | None, pattern: str | None, only: Filter) -> list[Series]:
    from roofline.history.store import open_store

    with open_store(history) as store:
        return store.matching(pattern, only)


def _filter(branch: str | None, machine: str | None, last: int | None) -> Filter:
    from roofline.history.store import Filter, label

    return Filter(label("--branch", branch), label("--machine", machine), last)


@history_app.command("show")
def show_cmd(pattern: Pattern = None, history: Store = None, branch: Branch = None, machine: Machine = None,
             last: Last = None, metric: Metric = "time",
             json_out: Annotated[bool, typer.Option("--json", help="Every point as JSON on stdout.")] = False) -> None:
    """Each series: its latest runs as a sparkline, the last value, the runs' spread and range (80 columns); with
    --json, every point (commit, branch, machine, median, quartiles, roofline time, SM clock, power cap)."""
    from roofline.history.detect import check_metric
    from roofline.report.history import series_json, show_text

    check_metric(metric)
    series = _read(history, pattern, _filter(branch, machine, last))
    out(series_json(series, metric) if json_out else show_text(series, metric))


@history_app.command("detect")
def detect_cmd(pattern: Pattern = None, history: Store = None, branch: Branch = None, machine: Machine = None,
               last: Last = None, metric: Metric = "time", fail_on: FailOn = "median:5%",
               json_out: Annotated[bool, typer.Option("--json", help="The changes as JSON on stdout.")] = False
               ) -> None:
    """The change points of each series: the commit each began at, its size, direction and confidence, and what
    else changed there (SM clock, power cap, driver, machine). Exit 1 when a change is worse than --fail-on; 2
    when no series has enough runs to judge."""
    from roofline.core.errors import UsageError
    from roofline.history.detect import DETECT_RUNS, gate_threshold, judge
    from roofline.report.history import detect_json, detect_text

    threshold = gate_threshold(fail_on)
    judged = judge(_read(history, pattern, _filter(branch, machine, last)), metric, fail_on, last or DETECT_RUNS)
    out(detect_json(judged, threshold) if json_out else detect_text(judged, threshold))
    if all(j.skipped for j in judged):
        raise UsageError("no series has enough runs to judge: nothing was compared")
    if any(j.failed for j in judged):
        raise typer.Exit(1)


@history_app.command("plot")
def plot_cmd(
    output: Annotated[Path, typer.Option("-o", "--output", help="The file: .png, .svg or .pdf (a chart, up to 12 "
                                         "series) or .html (one page, every series).")],
    pattern: Pattern = None, history: Store = None, branch: Branch = None, machine: Machine = None,
    last: Last = None, metric: Metric = "time", fail_on: FailOn = "median:5%",
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
) -> None:
    """Draw the series over the runs: run medians, each run's quartiles (the noise band), the roofline time at the
    run's clock and the change points, as a chart or one self-contained HTML page."""
    from roofline.core.errors import UsageError
    from roofline.history.detect import DETECT_RUNS, judge
    from roofline.report.history import MAX_PANELS, WRITERS, writer

    path, write = writer(output, force)
    series = _read(history, pattern, _filter(branch, machine, last))
    if write is not WRITERS[".html"] and len(series) > MAX_PANELS:
        raise UsageError(f"{len(series)} series: a chart draws {MAX_PANELS} at most; name the ones to draw (a "
                         "pattern) or write .html")
    if not series:
        raise UsageError("no runs to draw (--branch, --machine)")
    out(f"{write(path, series, judge(series, metric, fail_on, last or DETECT_RUNS), metric, force)} written")
