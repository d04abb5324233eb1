"""`roofline analyze OP ... --no-time` without typer: the analytic answer in about half the time.

typer (0.2x) validates options through pydantic and builds its commands by introspection: ~0.2 s of a ~0.35 s
command whose own work is ~10 ms. This path reads the same declarations typer does (the operator's fields and
`roofline.cli.analyze.COMMON`) and calls the same `run_analyze`, for a command line it reads without doubt:
`analyze`, an operator's name, `--no-time`, then only known options, each once, each option's value a
separate word that does not start with `-`. Anything else (`--help`, `--m=4`, an unknown or repeated option,
a missing value, a negative number) returns None and typer runs the command, with its own help and errors.
`specs list` and `ops list` (`LISTINGS`) call the function their typer command hands off to, the same way.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


def _table(cls: type) -> dict[str, tuple[str, Any]]:
    """Each flag of `analyze OP` -> (parameter name, what the flag gives: a value type, or True/False for a
    flag's on and off forms)."""
    from roofline.cli.analyze import COMMON

    flags: dict[str, tuple[str, Any]] = {}
    for f in dataclasses.fields(cls):
        flag, kind = f"--{f.name.replace('_', '-')}", f.metadata.get("kind")
        if kind == "flag":  # as cli/common.py declares them: --no-x only beside a flag that is on by default
            flags[flag] = (f.name, True)
            if f.default:
                flags[f"--no-{f.name.replace('_', '-')}"] = (f.name, False)
        else:  # an integer (text: one value or a sweep, as typer passes it with sweep=True) or a choice
            flags[flag] = (f.name, str)
    for name, annotation, opt in COMMON:
        for decl in opt.param_decls:
            if "/" in decl:
                on, off = decl.split("/")
                flags[on], flags[off] = (name, True), (name, False)
            elif annotation is bool:
                flags[decl] = (name, True)
            else:
                flags[decl] = (name, Path if "Path" in str(annotation) else str)
    return flags


# Listings run without building the typer app (its options go through pydantic: ~0.2 s): the command line ->
# (module, function, its flags -> parameter). Only these flags, each at most once; anything else goes to typer.
LISTINGS: dict[tuple[str, str], tuple[str, str, dict[str, str]]] = {
    ("specs", "list"): ("roofline.cli.listings", "list_specs", {"--json": "json_", "--wide": "wide"}),
    ("ops", "list"): ("roofline.cli.listings", "list_ops", {"--json": "json_"}),
}


def _listing(argv: list[str]) -> int | None:
    """`specs list`, `ops list` with known flags: the function the typer command hands off to."""
    import importlib

    module, function, flags = LISTINGS[(argv[0], argv[1])]
    words = argv[2:]
    if any(w not in flags for w in words) or len(set(words)) != len(words):
        return None
    getattr(importlib.import_module(module), function)(**{flags[w]: True for w in words})
    return 0


def fast_path(argv: list[str]) -> int | None:
    """Run `analyze OP ... --no-time` (or a listing, `LISTINGS`) here and return its exit status (0), or None
    for typer to run it."""
    if len(argv) >= 2 and (argv[0], argv[1]) in LISTINGS:
        return _listing(argv)
    if len(argv) < 3 or argv[0] != "analyze" or "--no-time" not in argv[2:]:
        return None
    from roofline.ops.base import CATALOG, get_operator

    if argv[1] not in CATALOG:
        return None
    cls = get_operator(argv[1])  # its own family's module alone
    flags = _table(cls)
    given: dict[str, Any] = {}
    words = argv[2:]
    i = 0
    while i < len(words):
        entry = flags.get(words[i])
        if entry is None or entry[0] in given:
            return None
        name, gives = entry
        if isinstance(gives, bool):
            given[name] = gives
            i += 1
            continue
        if i + 1 >= len(words) or words[i + 1].startswith("-"):
            return None
        given[name] = gives(words[i + 1])
        i += 2
    from roofline.cli.analyze import COMMON, run_analyze

    shape = {}
    for f in dataclasses.fields(cls):
        default = f.default
        if f.metadata.get("kind") == "int" and default is not None:
            default = str(default)  # as typer passes a sweepable integer (`_op_option`)
        shape[f.name] = given.pop(f.name, default)
    options = {name: given.pop(name, opt.default) for name, _, opt in COMMON}
    run_analyze(cls.name, shape, **options)
    return 0
