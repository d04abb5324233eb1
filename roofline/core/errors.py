"""The one exception type the CLI turns into a one-line error."""


class RooflineError(Exception):
    """A problem the user can fix (bad input, bad file): shown as one line, never a traceback."""

    exit_code = 1


class UsageError(RooflineError):
    """Bad command-line input: exit status 2, like typer's own usage errors."""

    exit_code = 2
