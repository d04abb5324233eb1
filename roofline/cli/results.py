"""Writing and printing a results document (built by `Target.document`) as the user asked."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from roofline.cli.common import out

if TYPE_CHECKING:
    from roofline.core.document import Document


def save_and_print(doc: Document, output: Path | None, force: bool, json_: bool) -> None:
    """Write the document to `output` (when given) and print it as JSON (when asked)."""
    from roofline.core.document import dumps, write_document
    from roofline.core.files import refuse_existing

    if output is not None:  # refused here as the command line spells it (write_document says force=True)
        write_document(doc, refuse_existing(output, force), force=force)
    if json_:
        out(dumps(doc))
