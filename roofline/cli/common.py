"""What every command of the CLI shares: printing, choice checks, the one check for files the user already has,
commands built from an operator's fields (`roofline analyze gemm --m ...`, `roofline compare gemm ...`), and
how `--help` shows a flag.

Nothing here imports torch or matplotlib, nor typer at import: `roofline analyze OP --no-time` runs without
typer (`roofline.cli.fast`), and the command modules build their typer options from `Opt` when the app is built.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from roofline.core.errors import UsageError

if TYPE_CHECKING:
    from roofline.ops.base import Operator


def flags_without_type() -> None:
    """`--help` shows no type after a flag, and a number's type without its range. typer releases built on
    click >= 8.2 print `<bool>` after every flag (`--json <bool>`, even `--help <bool>`), which reads as if the
    flag took a value; a flag takes none, so its type column is left empty. A bounded number prints
    `<int range> [x>=1]`, which widened the type column of every option to 18 of 80 columns and squeezed the
    descriptions to 20: it reads `<int>` (the bound is still enforced, and an error names it). Patched once,
    by `roofline.cli.app.build_app` before any command is built; a typer without
    `TyperOption.display_type_rich` is left as it is."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover - typer without typer.core
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_without_type", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False):
            return None
        text = shown(self, ctx)
        return text.replace(" range>", ">") if isinstance(text, str) else text

    display_type_rich.flags_without_type = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
    if hasattr(TyperOption, "_get_number_range_help_str"):
        TyperOption._get_number_range_help_str = lambda self: ""  # type: ignore[method-assign]


def help_paragraphs(doc: str | None) -> str | None:
    """A command's docstring as `--help` shows it: each paragraph one line that the terminal wraps, so that
    the docstring's own line breaks (made for the source's width) do not break a sentence in the middle."""
    if not doc:
        return doc
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def short_help(doc: str | None) -> str | None:
    """The first sentence (or clause, up to a semicolon) of a docstring, for the command list of `roofline
    --help`: 'Compare a run with a baseline.'"""
    text = help_paragraphs(doc)
    if not text:
        return text
    first = text.split("\n\n")[0]
    ends = [i for i in (first.find(". "), first.find("; ")) if i >= 0]
    return first if not ends else first[:min(ends)] + "."


@dataclass(frozen=True)
class Opt:
    """A typer option declared as plain data (typer is imported when the app is built, not before):
    `Opt(None, "--gpu", help=...)` is `typer.Option(None, "--gpu", help=...)`."""

    default: Any
    param_decls: tuple[str, ...]
    help: str = ""
    metavar: str | None = None  # what the help shows for the value (typer's default: the type, as TEXT)

    def __init__(self, default: Any, *param_decls: str, help: str = "", metavar: str | None = None) -> None:
        object.__setattr__(self, "default", default)
        object.__setattr__(self, "param_decls", param_decls)
        object.__setattr__(self, "help", help)
        object.__setattr__(self, "metavar", metavar)

    def typer(self) -> Any:
        import typer

        return typer.Option(self.default, *self.param_decls, help=self.help, metavar=self.metavar)

    def annotated(self) -> Any:
        """The option for `Annotated[type, ...]` (the parameter's own `= default` is the default)."""
        import typer

        return typer.Option(*self.param_decls, help=self.help, metavar=self.metavar)


# `--threads`, on every command that times on the CPU (calibrate, analyze, run): one declaration, one check.
THREADS = Opt(None, "--threads", help="CPU threads torch times with (torch.set_num_threads; default torch's "
              "own choice). The record's device block says how many ran.", metavar="<int>")  # taken as text


# The most threads `--threads` takes: torch.set_num_threads takes a C int (99999999999 raised "Overflow when
# unpacking long"), and the largest machines have about a thousand logical CPUs; more threads than that only time
# the scheduler.
MAX_THREADS = 4096


def whole_number(flag: str, value: str | int, least: int = 1, most: int | None = None) -> int:
    """An option's value as a whole number of at least `least` (and at most `most`, else what torch holds:
    validate.MAX_WHOLE); anything else (`0`, `1.5`, `four`, `²`) is a usage error in the project's words:
    '--threads must be a whole number of at least 1, got 0'."""
    from roofline.core.validate import BRIEF_CHARS, MAX_WHOLE, brief

    top = MAX_WHOLE if most is None else most
    if isinstance(value, int) and not isinstance(value, bool) and value > top:  # str() of 5000 digits raises
        raise UsageError(f"{flag} must be a whole number of at most {top}, got {brief(value)}")
    text = str(value).strip()
    shown = text if len(text) <= BRIEF_CHARS else brief(text)  # 400 digits named by their count
    # ASCII digits only: '²'.isdigit() is true and int('²') raises; int('٣') reads an Arabic-Indic digit
    if isinstance(value, bool) or not (text.isascii() and text.isdigit()):
        raise UsageError(f"{flag} must be a whole number of at least {least}, got {shown}")
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(top)) or int(digits) > top:  # int() of over 4300 digits raises: the length first
        raise UsageError(f"{flag} must be a whole number of at most {top}, got "
                         f"{digits if len(digits) <= BRIEF_CHARS else f'a number of {len(digits)} digits'}")
    if int(digits) < least:
        raise UsageError(f"{flag} must be a whole number of at least {least}, got {shown}")
    return int(digits)


def at_least(flag: str, least: int = 1, most: int | None = None) -> Callable[[Any], int]:
    """The `parser=` of every whole-number option with a minimum (`--repeat`, `--top`): its value checked by
    `whole_number`, so a bad one reads as `--threads`' does, not as typer's range check ('Invalid value for
    '--repeat': Input should be greater than or equal to 1')."""
    return lambda value: whole_number(flag, value, least, most)


def use_threads(threads: str | int | None) -> int | None:
    """Apply `--threads` (None: torch's default) before anything is timed and return the count; anything but
    a whole number from 1 to MAX_THREADS is a usage error (`whole_number`; the option is taken as text so that
    typer does not word it first)."""
    if threads is None:
        return None
    count = whole_number("--threads", threads, most=MAX_THREADS)
    import torch

    torch.set_num_threads(count)  # the target's device block and a calibration's details record it
    return count


# One option: (parameter name, annotation, typer.Option(...) or Opt(...)).
OptionSpec = tuple[str, Any, Any]
# The "path" that means "the terminal, not a file" (`--plot -`).
TERMINAL = "-"


def out(text: str) -> None:
    """One block of text on stdout, ending in a newline."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def note(msg: str) -> None:
    """A note to the user on stderr (stdout stays clean for --json), one line however long: the terminal wraps
    it, and a path in it stays whole for copying."""
    from roofline.report.text import console

    console(stderr=True).print(f"[yellow]note:[/yellow] {msg}", soft_wrap=True)


def check_choice(flag: str, value: str | None, choices: tuple[str, ...]) -> None:
    """A usage error unless `value` is None or one of `choices`."""
    if value is not None and value not in choices:
        raise UsageError(f"{flag} must be one of {', '.join(choices)}, got {value!r}")


def check_labels(labels: list[str] | None, results: list[Any]) -> None:
    """`--label` (`plot`, `report`): none, or one per results file; else a usage error that counts in words:
    '--label given once for 2 results files', '--label given 3 times for 2 results files'."""
    if not labels or len(labels) == len(results):
        return
    given = {1: "once", 2: "twice"}.get(len(labels), f"{len(labels)} times")
    files = "results file" if len(results) == 1 else "results files"
    raise UsageError(f"--label given {given} for {len(results)} {files}")


def check_outputs(force: bool, files: tuple[str | os.PathLike[str] | None, ...] = (),
                  charts: tuple[str | os.PathLike[str] | None, ...] = ()) -> None:
    """The CLI's one check of the files a command is about to write, made before any timing or drawing, so
    that a run of minutes never ends in "exists: not overwriting it". Each path in `files` and `charts` must
    not exist unless --force (None, empty and `-`, the terminal, are no files); a chart's path must also name
    a format (.png, .svg or .pdf)."""
    from roofline.core.files import refuse_existing
    from roofline.report.figures import figure_format

    def real(paths: tuple[str | os.PathLike[str] | None, ...]) -> list[str | os.PathLike[str]]:
        return [p for p in paths if p and str(p) != TERMINAL]

    for path in real(files) + real(charts):
        refuse_existing(path, force)
    for path in real(charts):
        figure_format(path)


# How `--help` names an integer parameter that takes a sweep (`roofline.core.sweep`).
SWEEP_METAVAR = "<int>"  # as typer shows an int (the command's help says what else it takes)


def _op_option(f: dataclasses.Field[Any], sweep: bool = False, aliases: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """The annotation and typer.Option for one operator field, from its CLI metadata (`aliases`: more flags).
    With `sweep`, an integer field is read as text (one value, a list or a range) for
    `roofline.core.sweep.expand`."""
    import typer

    meta, flag = f.metadata, f"--{f.name.replace('_', '-')}"
    kind = meta.get("kind")
    if kind == "int" and sweep:
        default = None if f.default is None else str(f.default)
        return Optional[str], typer.Option(default, flag, *aliases, help=meta.get("help", ""), metavar=SWEEP_METAVAR)
    if kind == "int":
        return Optional[int], typer.Option(f.default, flag, *aliases, help=meta.get("help", ""))
    if kind == "choice":
        return str, typer.Option(f.default, flag, help=f"{meta.get('help', '')} ({'|'.join(meta['choices'])})")
    if kind == "flag":  # off by default: the flag alone (a --no-x beside it widened every --help's option column)
        decl = f"{flag}/--no-{f.name.replace('_', '-')}" if f.default else flag
        return bool, typer.Option(f.default, decl, help=meta.get("help", ""))
    raise RuntimeError(f"field {f.name} has no CLI kind")


def op_command(cls: type[Operator], common: list[OptionSpec], body: Callable[..., None], name: str, doc: str,
               sweep: bool = False, aliases: dict[str, tuple[str, ...]] | None = None) -> Callable[..., None]:
    """A typer command with one option per field of the operator `cls` plus the `common` options; `body`
    gets the shape (field values) and the other options as keywords. With `sweep`, integer fields arrive as
    text (see `_op_option`); `aliases`: more flags of an integer field, by field name."""
    op_fields = dataclasses.fields(cls)

    def command(**kwargs: Any) -> None:
        shape = {f.name: kwargs.pop(f.name) for f in op_fields}
        body(shape, **kwargs)

    params = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=ann)
              for f in op_fields for ann, opt in [_op_option(f, sweep, (aliases or {}).get(f.name, ()))]]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY,
                                 default=opt.typer() if isinstance(opt, Opt) else opt, annotation=ann)
               for n, ann, opt in common]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__name__ = name
    command.__doc__ = doc
    return command


def int_flags(cls: type[Operator]) -> dict[str, str]:
    """The integer parameters of operator `cls` and their flags ({'m': '--m', 'head_dim': '--head-dim'})."""
    return {f.name: f"--{f.name.replace('_', '-')}" for f in dataclasses.fields(cls) if f.metadata.get("kind") == "int"}


def register_op_commands(sub_app: Any, make: Callable[[type[Operator]], Callable[..., None]],
                         help: Callable[[type[Operator]], str], only: str | None = None,
                         short: Callable[[type[Operator]], str] = lambda cls: f"{cls.summary}.") -> None:
    """One sub-command of the typer app `sub_app` per registered operator, built by `make(cls)`, with
    `help(cls)` and `short(cls)` in the command list (click's own cut at the first '. ' left chain's summary at
    "(e.g."); with `only` (an operator's name), that operator's alone (building all ~60 costs ~0.1 s)."""
    from roofline.ops.base import CATALOG, get_operator, load_catalog

    if only is not None and only in CATALOG:  # its own family's module alone
        classes = {only: get_operator(only)}
    else:
        classes = {name: cls for name, cls in load_catalog().items() if only is None or name == only}
    for name, cls in sorted(classes.items()):
        sub_app.command(name, help=help(cls), short_help=short(cls))(make(cls))
