"""The one exception type the CLI turns into a one-line error."""


class RooflineError(Exception):
    """A problem the user can fix (bad input, bad file): shown as one line, never a traceback."""

    exit_code = 1


class UsageError(RooflineError):
    """Bad command-line input: exit status 2, like typer's own usage errors."""

    exit_code = 2


class Interrupted(RooflineError):
    """Ctrl-C (a KeyboardInterrupt) stopped the command: exit status 130, 128 + SIGINT as a shell reports it.
    The message, when there is one, says what the command kept ('57 points measured kept in FILE')."""

    exit_code = 130
