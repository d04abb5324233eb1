"""Writing and printing a results document (built by `Target.document`) as the user asked."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from roofline.cli.common import out

if TYPE_CHECKING:
    from roofline.core.document import Document


def save_and_print(doc: Document, output: Path | None, force: bool, json_: bool) -> None:
    """Write the document to `output` (when given) and print it as JSON (when asked). Without --force the file is
    created exclusively: of commands racing to one new name, one writes it and the others are refused in one line
    (none says "written" for a file another replaced); with it, a regular file is replaced, under its folder's lock."""
    from roofline.core.document import dumps
    from roofline.core.files import atomic_write, refuse_existing

    if output is not None:  # refused here as the command line spells it (write_document says force=True)
        atomic_write(refuse_existing(output, force), dumps(doc), exclusive=not force)
    if json_:
        out(dumps(doc))
