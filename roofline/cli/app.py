"""The `roofline` command line: a thin typer app; every command hands off to the library.

One module per command group (`roofline.cli.specs`, `.analyze`, `.run`, `.check`, `.plot`, `.calibrate`,
`.occupancy`, `.compare`, `.profile`, `.report`); this one assembles them and turns errors into exit codes.
Bad input is one line on stderr and a non-zero exit (2 for usage errors), never a traceback. torch and
matplotlib are imported only by the commands that time or draw.
"""

from __future__ import annotations

import sys

import typer

from roofline.cli.analyze import analyze_app
from roofline.cli.calibrate import calibrate_cmd
from roofline.cli.check import baseline_app, check_cmd
from roofline.cli.collectives import collectives_cmd
from roofline.cli.compare import compare_app
from roofline.cli.import_ncu import import_ncu_cmd
from roofline.cli.occupancy import occupancy_cmd
from roofline.cli.plot import plot_cmd
from roofline.cli.profile import profile_cmd
from roofline.cli.report import report_cmd
from roofline.cli.run import run_cmd
from roofline.cli.specs import device_cmd, ops_app, specs_app
from roofline.core.errors import RooflineError

app = typer.Typer(rich_markup_mode="rich", no_args_is_help=True, add_completion=False,
                  help="How fast each deep-learning operator could run on a GPU, how fast it does, and why.")


def _version(value: bool) -> None:
    if value:
        from roofline._version import __version__

        sys.stdout.write(f"roofline {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """How fast each deep-learning operator could run on a GPU, how fast it does, and why."""
# `roofline --help` lists the commands in this order, then the groups in theirs.
app.command("device")(device_cmd)
app.command("calibrate")(calibrate_cmd)
app.command("run")(run_cmd)
app.command("profile")(profile_cmd)
app.command("check")(check_cmd)
app.command("plot")(plot_cmd)
app.command("report")(report_cmd)
app.command("import-ncu")(import_ncu_cmd)
app.command("occupancy")(occupancy_cmd)
app.command("collectives")(collectives_cmd)
app.add_typer(specs_app, name="specs")
app.add_typer(ops_app, name="ops")
app.add_typer(analyze_app, name="analyze")
app.add_typer(baseline_app, name="baseline")
app.add_typer(compare_app, name="compare")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status. Domain and usage errors are one line on stderr."""
    try:
        rv = app(args=argv, prog_name="roofline", standalone_mode=False)
    except RooflineError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except (typer.Exit, typer.Abort) as exc:
        return int(getattr(exc, "exit_code", 130))
    except Exception as exc:
        # click's exceptions (typer may vendor its own click): usage errors are one line, exit 2.
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.stdout.write(exc.format_message() + "\n")  # type: ignore[attr-defined]
            return 0
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            msg = " ".join(exc.format_message().split())
            sys.stderr.write(f"error: {msg}\n")
            return int(exc.exit_code)
        raise
    return rv if isinstance(rv, int) else 0


def run() -> None:
    """The console-script entry point (`roofline`, `python -m roofline`)."""
    exit_now(main())


def exit_now(code: int) -> None:
    """Exit with `code`. After GPU work the interpreter's own teardown is skipped: finalising ~1200 torch
    modules and destroying the CUDA context with its cached allocations costs about 0.6 s on the H200, a
    tenth of a 16-kernel `run`, and the driver reclaims all of it at process exit anyway (clang skips freeing
    its memory at exit for the same reason). The atexit handlers still run and both streams are flushed
    first; results files are closed before a command returns."""
    import atexit
    import os

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe (`roofline run ... | head`) or stream
                pass
        os._exit(code)
    sys.exit(code)
