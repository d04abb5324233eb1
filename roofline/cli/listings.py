"""`roofline specs list` and `roofline ops list`: the bodies of the two listings, without typer, so that
`roofline.cli.fast` runs them without importing it (`roofline.cli.specs` declares their typer commands)."""

from __future__ import annotations

import dataclasses
import json

from roofline.cli.common import out


def list_specs(json_: bool = False, wide: bool = False) -> None:
    """Every GPU spec file: a table (`wide`: every column at full width) or JSON."""
    from roofline.ceilings.specs import load_all

    specs = sorted(load_all().values(), key=lambda s: s.id)
    if json_:
        out(json.dumps([s.to_dict() for s in specs], indent=2))
        return
    from roofline.report.text import show, specs_table

    show(specs_table(specs, wide=wide), wide=wide)


def list_ops(json_: bool = False) -> None:
    """Every operator with its parameters, defaults and variants: a table or JSON."""
    from roofline.ops import OPERATORS

    if json_:
        catalog = {name: {"family": cls.family, "summary": cls.summary, "ignores": cls.ignores, "dtypes": cls.dtypes,
                          "params": {f.name: {"default": f.default, **dict(f.metadata.items())}
                                     for f in dataclasses.fields(cls)}}
                   for name, cls in sorted(OPERATORS.items())}
        out(json.dumps(catalog, indent=2, default=list))
        return
    from roofline.report.text import ops_table, show

    show(ops_table(OPERATORS))
