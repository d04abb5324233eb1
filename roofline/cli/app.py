"""The `roofline` command line: a thin typer app; every command hands off to the library.

One module per command group (`roofline.cli.specs`, `.analyze`, `.run`, `.check`, `.plot`, `.calibrate`,
`.occupancy`, `.compare`, `.profile`, `.report`); this one assembles them and turns errors into exit codes.
Bad input is one line on stderr and a non-zero exit (2 for usage errors), never a traceback. torch and
matplotlib are imported only by the commands that time or draw.
"""

from __future__ import annotations

import errno
import importlib
import sys
from typing import Any

from roofline.core.errors import Interrupted, RooflineError
from roofline.core.process import Stop, stop_on_sigterm
from roofline.core.progress import Notices, reporting
from roofline.core.validate import command_line

# A shell's status for a process a signal ended: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
SIGNAL_STATUS = 128
HELP = "How fast each deep-learning operator could run on a GPU, how fast it does, and why."
# The commands, in the order `roofline --help` lists them: (name, module, attribute, whether it is a group).
# A group's attribute is its typer app, or a function of the sub-command the command line names (analyze); a
# group whose app has a callback (calibrate) runs it alone too, with the callback's docstring as its help.
COMMANDS: list[tuple[str, str, str, bool]] = [
    ("device", "roofline.cli.specs", "device_cmd", False),
    ("calibrate", "roofline.cli.calibrate", "calibrate_app", True),
    ("run", "roofline.cli.run", "run_cmd", False),
    ("profile", "roofline.cli.profile", "profile_cmd", False),
    ("trace", "roofline.cli.trace", "trace_cmd", False),
    ("sol", "roofline.cli.sol", "sol_cmd", False),
    ("check", "roofline.cli.check", "check_cmd", False),
    ("plot", "roofline.cli.plot", "plot_cmd", False),
    ("report", "roofline.cli.report", "report_cmd", False),
    ("import-ncu", "roofline.cli.import_ncu", "import_ncu_cmd", False),
    ("occupancy", "roofline.cli.occupancy", "occupancy_cmd", False),
    ("collectives", "roofline.cli.collectives", "collectives_cmd", False),
    ("specs", "roofline.cli.specs", "specs_app", True),
    ("ops", "roofline.cli.specs", "ops_app", True),
    ("analyze", "roofline.cli.analyze", "analyze_group", True),
    ("baseline", "roofline.cli.check", "baseline_app", True),
    ("history", "roofline.cli.history", "history_app", True),
    ("compare", "roofline.cli.compare", "compare_app", True),
]


def _version(value: bool) -> None:
    if value:
        import typer

        from roofline._version import __version__

        sys.stdout.write(f"roofline {__version__}\n")
        raise typer.Exit(0)


def build_app(argv: list[str] | None = None) -> Any:
    """The typer app. Given the command line, only the command it names is built (and, for `analyze OP`, that
    operator's command alone): importing every command module and building ~80 commands is ~0.2 s of each
    start. `--help`, no command or an unknown one: every command, so help and errors list them all."""
    import typer

    from roofline.cli.common import flags_without_type, help_paragraphs, short_help

    flags_without_type()
    args = list(argv or [])
    names = {c[0] for c in COMMANDS}
    only = args[0] if args and args[0] in names else None
    sub = args[1] if only and len(args) > 1 and not args[1].startswith("-") else None
    app = typer.Typer(rich_markup_mode="rich", no_args_is_help=True, add_completion=False, help=HELP,
                      cls=_commands_class())

    @app.callback()
    def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                           help="Print the version and exit.")) -> None:
        """How fast each deep-learning operator could run on a GPU, how fast it does, and why."""

    for name, module, attr, group in COMMANDS:
        if only is not None and name != only:
            continue
        obj = getattr(importlib.import_module(module), attr)
        if group:
            sub_app = obj(sub) if callable(obj) and not isinstance(obj, typer.Typer) else obj
            for info in sub_app.registered_commands:  # each sub-command's help as its own command's
                doc = info.help or (info.callback.__doc__ if info.callback else None)
                info.help, info.short_help = help_paragraphs(doc), info.short_help or short_help(doc)
            own = sub_app.registered_callback.callback.__doc__ if sub_app.registered_callback else None
            if own:  # a group that runs alone too (calibrate): its callback's docstring is its help
                app.add_typer(sub_app, name=name, help=help_paragraphs(own), short_help=short_help(own))
            else:
                app.add_typer(sub_app, name=name)
        else:
            app.command(name, help=help_paragraphs(obj.__doc__), short_help=short_help(obj.__doc__))(obj)
    return app


def _commands_class() -> Any:
    """The app's group class: its commands in the order of `COMMANDS` (typer puts the groups after the plain
    commands), and a Ctrl-C inside any command becomes an `Interrupted`, which `main` reports in one line (typer
    turns a KeyboardInterrupt into a silent exit 130, and the command's own word on what it kept into nothing)."""
    from typer.core import TyperGroup

    order = {name: i for i, (name, *_) in enumerate(COMMANDS)}

    class Commands(TyperGroup):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.commands = dict(sorted(self.commands.items(), key=lambda item: order.get(item[0], len(order))))

        def invoke(self, ctx: Any) -> Any:
            try:
                return super().invoke(ctx)
            except KeyboardInterrupt:
                raise Interrupted() from None

    return Commands


def __getattr__(name: str) -> Any:
    """`app`: the whole typer app, every command built (tests and tools that inspect the CLI)."""
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None, answered: dict[str, bool] | None = None) -> int:
    """Run the CLI; returns the exit status. Domain and usage errors are one line on stderr. `answered["fast"]`
    (when given) says whether `roofline.cli.fast` ran the command (no typer app was built)."""
    if argv is None:
        argv = sys.argv[1:]
    with stop_on_sigterm() as stop:  # SIGTERM ends a command as Ctrl-C does, with its own status
        return _main(argv, answered, stop)


def _main(argv: list[str], answered: dict[str, bool] | None, stop: Stop) -> int:
    """`main` inside `stop_on_sigterm`: `stop` says whether SIGTERM stopped the command."""
    try:
        from roofline.cli.fast import fast_path

        # arguments named by their flags (`--m must be >= 1`); a note from code outside any status line (a
        # corrupted calibration cache read by `compare`) one `note:` line, not a warning with its source line
        with command_line(), reporting(Notices(_note)):
            rv = fast_path(argv)
            if answered is not None:
                answered["fast"] = rv is not None
            if rv is None:
                rv = build_app(argv)(args=argv, prog_name="roofline", standalone_mode=False)
    except Interrupted as exc:
        return interrupted(exc, stop.signal)
    except KeyboardInterrupt:  # the fast path (inside a typer command it is an Interrupted: `_commands_class`)
        return interrupted(Interrupted(), stop.signal)
    except RooflineError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.errno != errno.ENOSPC:  # a full disk or device under stdout: one line, not a traceback
            raise
        sys.stderr.write(f"error: could not write the output: {exc.strerror}\n")
        return 1
    except Exception as exc:
        if stop.signal is not None and type(exc).__name__ == "Abort":  # SIGTERM while click parsed the arguments
            return interrupted(Interrupted(), stop.signal)
        code = typer_exit(exc, argv)
        if code is None:
            raise
        return code
    return rv if isinstance(rv, int) else 0


def _note(text: str) -> None:
    """A note from code on the command line: `cli.common.note`, its text never read as markup."""
    from rich.markup import escape

    from roofline.cli.common import note

    note(escape(text))


def typer_exit(exc: Exception, argv: list[str]) -> int | None:
    """The exit status of an exception typer or click raised (typer may vendor its own click, so they are known
    by name): `typer.Exit` and `Abort` their own, a usage error one line on stderr and 2, `roofline analyze`
    alone its group's help on stdout and 0; None for any other exception."""
    if type(exc).__name__ in ("Exit", "Abort"):  # typer.Exit, typer.Abort
        return int(getattr(exc, "exit_code", Interrupted.exit_code))
    if type(exc).__name__ == "NoArgsIsHelpError":  # `roofline analyze`: the group's help
        try:
            sys.stdout.write(exc.format_message() + "\n")  # type: ignore[attr-defined]
            sys.stdout.flush()
        except BrokenPipeError:  # `roofline analyze | head`, as the commands' own output above
            pass
        return 0
    if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
        msg = " ".join(exc.format_message().split())
        if type(exc).__name__ == "NoSuchOption" and argv[:1] == ["profile"] and "--" not in argv:
            msg += " (the script's own options go after --: roofline profile SCRIPT -- --preset tiny)"
        sys.stderr.write(f"error: {msg}\n")
        return int(exc.exit_code)
    return None


def interrupted(exc: Interrupted, signum: int | None = None) -> int:
    """Ctrl-C or SIGTERM (`signum`): one line on stderr, with what the command kept when it says (`calibrate ops`:
    the points it measured), and exit status 130, or 128 + the signal's number (143) as a shell reports a process
    that SIGTERM ended."""
    said = str(exc)
    below = "\n" if sys.stderr.isatty() and signum is None else ""  # below the ^C a terminal echoed; else none
    sys.stderr.write(f"{below}interrupted{': ' + said if said else ''}\n")
    return SIGNAL_STATUS + signum if signum is not None else exc.exit_code


def run() -> None:
    """The console-script entry point (`roofline`, `python -m roofline`)."""
    answered: dict[str, bool] = {}
    code = main(answered=answered)
    exit_now(code, quick=answered.get("fast", False))


def exit_now(code: int, quick: bool = False) -> None:
    """Exit with `code`. After GPU work the interpreter's own teardown is skipped: finalising ~1200 torch
    modules and destroying the CUDA context with its cached allocations costs about 0.6 s on the H200, a
    tenth of a 16-kernel `run`, and the driver reclaims all of it at process exit anyway (clang skips freeing
    its memory at exit for the same reason). `quick` (a command `roofline.cli.fast` ran) skips it too: ~20 ms
    of a ~0.2 s analytic answer. The atexit handlers still run and both streams are flushed first; results
    files are closed before a command returns."""
    import atexit
    import os

    torch = sys.modules.get("torch")
    if quick or (torch is not None and torch.cuda.is_initialized()):
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe (`roofline run ... | head`) or stream
                pass
        os._exit(code)
    sys.exit(code)
