"""`roofline check` (a run against a baseline, the CI gate) and `roofline baseline update`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from roofline.cli.common import check_choice, out
from roofline.cli.history import HistoryOption, add_to_history

if TYPE_CHECKING:
    from roofline.ci.judge import Report

baseline_app = typer.Typer(no_args_is_help=True, help="Baselines for `roofline check` (written only when asked).")


def check_cmd(
    results: Annotated[Path, typer.Argument(help="Results document of this run.")],
    baseline: Annotated[Path | None, typer.Option("--baseline", help="Baseline results document (never "
                                                  "modified).")] = None,
    fail_on: Annotated[str, typer.Option("--fail-on", help="Rules, e.g. median:5% or median:5%,p90:10%.")]
    = "median:5%",
    metric: Annotated[str, typer.Option("--metric", help="time (same device), fraction (fraction of the "
                                        "roofline, for comparing across devices) or energy (J per call of records "
                                        "measured with --energy).")] = "time",
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="A baseline record missing from the "
                                                "results (dropped from the suite on purpose) does not fail the "
                                                "check; by default it does, as a record that crashed would.")]
    = False,
    allow_unjudged: Annotated[bool, typer.Option("--allow-unjudged", help="A record of the suite with too few "
                                                 "samples to judge (fewer than 5 a side, or timed on one side "
                                                 "only) does not fail the check; by default it does.")] = False,
    fail_on_missing: Annotated[bool, typer.Option("--fail-on-missing", hidden=True,
                                                  help="The default now (kept for old scripts).")] = False,
    busy: Annotated[str, typer.Option("--busy", help="fail or ok: whether a record that is worse and was timed on a "
                                      "busy machine (either side; its notes say so) fails the check "
                                      "(worse_busy_machine).")] = "fail",
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Append a markdown report (e.g. "
                                                     "$GITHUB_STEP_SUMMARY).")] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write a JUnit XML report.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON.")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Write the report as one HTML page (verdicts, "
                                                 "chart, records; a CI artifact, replaced like --junit).")] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Every column of the table (the reason of each verdict), "
                                       "at full width.")] = False,
    against_prediction: Annotated[bool, typer.Option("--against-prediction", help="Judge the run against its "
                                                     "predicted times instead of a baseline: fail a record slower "
                                                     "than the top of its interval by more than --fail-on's median "
                                                     "threshold (docs/prediction.md).")] = False,
    db: Annotated[Path | None, typer.Option("--db", help="--against-prediction: the operator database (default: "
                                            "the run's GPU's).")] = None,
    history: HistoryOption = None,
) -> None:
    """Compare a run with a baseline; exit 1 only on a regression that is past the threshold AND past the
    between-run noise (when the documents hold several runs) AND significant on the raw samples
    (Mann-Whitney U) (worse_busy_machine when either side was timed on a busy machine: it fails unless --busy
    ok), on a baseline record missing from the results (unless --allow-missing), or on a record with too few
    samples to judge (unless --allow-unjudged); 2 on bad input (an unreadable, truncated or empty document,
    times that are no measurement), when fewer than half the records both documents hold were compared, and when
    a report file (--junit, --markdown, --json, --html) cannot be written.
    Thresholds are --fail-on's, or a baseline record's own (its suite entry's), never the results'."""
    from roofline.ci.judge import METRICS, run_check
    from roofline.ci.verdicts import BUSY_CHOICES
    from roofline.core.errors import UsageError
    from roofline.report.check import render_table
    from roofline.report.text import show

    reports = {"--markdown": markdown, "--junit": junit, "--json": json_path, "--html": html}
    if against_prediction or baseline is None:
        _against_prediction(results, baseline, db, fail_on, against_prediction, metric,
                            [flag for flag, path in reports.items() if path is not None])
    assert baseline is not None
    if db is not None:
        raise UsageError("--db is an option of --against-prediction (a baseline check judges no prediction)")
    check_choice("--metric", metric, METRICS)
    check_choice("--busy", busy, BUSY_CHOICES)
    _check_report_paths(reports, results, baseline)
    report = run_check(results, baseline, fail_on, metric=metric,
                       allow_missing=allow_missing and not fail_on_missing, busy=busy, allow_unjudged=allow_unjudged)
    show(render_table(report, wide=wide), wide=wide)
    _write_reports(report, reports, results, baseline, fail_on, metric)
    if history is not None and not report.refused:  # the run judged, whatever its verdict: one run of the series
        from roofline.core.document import read_document

        add_to_history(read_document(results), history, where=str(results))
    if report.refused:  # the table and reports say what was not compared; the error line says why it counts
        raise UsageError(report.refused)
    raise typer.Exit(report.exit_code)


def _check_report_paths(reports: dict[str, Path | None], results: Path, baseline: Path) -> None:
    """Each report path given, refused before the check (a UsageError, exit status 2) when it is a document the
    check reads or cannot be written (`_writable`)."""
    from roofline.core.errors import UsageError

    for flag, path in reports.items():
        read = [what for what, doc in (("results", results), ("baseline", baseline))
                if path is not None and path.resolve() == doc.resolve()]
        if read:  # --json base.json (analyze's --json prints; this one writes) replaced the baseline
            raise UsageError(f"{flag} {path} is the {read[0]} document: a check's report never replaces the "
                             "documents it reads; give the report another path")
    if reports["--html"] is not None:
        from roofline.cli.report import check_html_path

        check_html_path(reports["--html"])
    for path in reports.values():
        if path is not None:
            _writable(path)  # a path typo is said before the check, and never as a regression's exit 1


def _write_reports(report: Report, reports: dict[str, Path | None], results: Path, baseline: Path, fail_on: str,
                   metric: str) -> None:
    """Write the reports asked for; a failure of the check's own I/O after the check (a full disk) is a
    UsageError, exit status 2: never the regression's 1 (docs/guide.md#exit-status)."""
    from roofline.core.errors import RooflineError, UsageError
    from roofline.report.check import write_outputs

    try:
        write_outputs(report, markdown=reports["--markdown"], junit=reports["--junit"], json_path=reports["--json"])
        if reports["--html"] is not None:
            _write_html(report, results, baseline, reports["--html"], fail_on, metric)
    except RooflineError as exc:
        if exc.exit_code != RooflineError.exit_code:  # a usage error already, or an interruption (130, 143)
            raise
        raise UsageError(f"{exc} (the check's reports were not all written)") from None


def _writable(path: Path) -> None:
    """A report's path that can be written: a regular file or nothing there, in a folder that is writable or can
    be made (the reports make their folders); else a UsageError (exit status 2: docs/guide.md keeps 1 for a
    regression, so that in CI a path typo never reads as a slowdown)."""
    from roofline.core.errors import RooflineError, UsageError
    from roofline.core.files import refuse_existing

    folder = path.absolute().parent
    while not folder.exists() and folder != folder.parent:  # the folders the report makes: the first that exists
        folder = folder.parent
    try:
        if folder == path.absolute().parent:
            refuse_existing(path, force=True)  # a folder, a link, a FIFO or a device there; an unwritable folder
        elif not folder.is_dir():
            raise RooflineError(f"cannot write {path}: {folder} is a file, not a folder")
        elif not os.access(folder, os.W_OK | os.X_OK):
            raise RooflineError(f"cannot write {path}: the folder {folder} is not writable")
    except RooflineError as exc:
        raise UsageError(str(exc)) from None


def _against_prediction(results: Path, baseline: Path | None, db: Path | None, fail_on: str, asked: bool,
                        metric: str, reports: list[str]) -> None:
    """`--against-prediction`: the run's records against their predicted intervals (ci/predicted.py)."""
    from roofline.ci.predicted import check_against_prediction, exit_code
    from roofline.ci.rules import parse_fail_on
    from roofline.core.document import read_document
    from roofline.core.errors import UsageError
    from roofline.report.predict import verdict_table
    from roofline.report.text import show

    if not asked:
        raise UsageError("--baseline is required (or --against-prediction, to judge the run against its predicted "
                         "times)")
    if baseline is not None:
        raise UsageError("--against-prediction judges the run alone: leave out --baseline")
    if metric != "time":
        raise UsageError(f"--against-prediction judges time (predicted times): --metric {metric} needs a --baseline")
    if reports:  # a CI step asking for a report it never gets would pass on a missing artifact
        raise UsageError(f"{', '.join(reports)}: --against-prediction writes no report files yet (its table only)")
    rules = {r.statistic: r.threshold for r in parse_fail_on(fail_on).rules}
    if set(rules) != {"median"}:  # p90:10% fell back to 5% in silence
        raise UsageError(f"--against-prediction uses --fail-on's median threshold alone (e.g. median:5%), got "
                         f"'{fail_on}'")
    margin = rules["median"]
    verdicts = check_against_prediction(read_document(results).records, db, margin, str(results))
    show(verdict_table(verdicts, margin))
    raise typer.Exit(exit_code(verdicts))


def _write_html(report: Report, results: Path, baseline: Path, path: Path, fail_on: str, metric: str) -> None:
    """The check's HTML page, replaced atomically like the JUnit and JSON reports (CI writes it every run)."""
    import shlex

    from roofline.core.document import read_document
    from roofline.core.files import atomic_write
    from roofline.report.html import check_report_html

    command = shlex.join(["roofline", "check", str(results), "--baseline", str(baseline), "--fail-on", fail_on,
                          "--metric", metric])
    page = check_report_html(report, read_document(results), read_document(baseline), paths=[baseline, results],
                             command=command)
    atomic_write(path, page, make_parents=True)


@baseline_app.command("update")
def baseline_update_cmd(
    results: Annotated[list[Path], typer.Argument(help="Results document(s) to make the baseline: several (A/A "
                                                  "runs of one suite on this machine, or `run --repeat`) are "
                                                  "merged, and each record learns its between-run noise.")],
    baseline: Annotated[Path, typer.Option("--baseline", help="Baseline file to create or replace.")],
    keep_noise: Annotated[bool, typer.Option("--keep-noise", help="Pool each record's between-run noise with "
                                             "the old baseline's (A/A history across updates).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Also replace a baseline from another GPU, or an "
                                        "unreadable one.")] = False,
    allow_unjudged: Annotated[bool, typer.Option("--allow-unjudged", help="Store records of the suite with too "
                                                 "few samples for check to judge (fewer than 5); check then "
                                                 "reports them unjudged.")] = False,
) -> None:
    """Create or replace a baseline from one or more results documents (the only command that writes
    baselines). What check refuses is refused here (exit 2), and records too few samples to judge unless
    --allow-unjudged."""
    from roofline.ci.baseline import update_baseline
    from roofline.report.text import console

    width = console().width  # the noise lines are prose: wrapped to the terminal, as check's notes are
    for line in update_baseline(results, baseline, force=force, keep_noise=keep_noise,
                                allow_unjudged=allow_unjudged).lines(width):
        out(line)
