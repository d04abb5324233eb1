"""One record's table without rich: the bytes `roofline.report.text.record_table` prints through rich, drawn
here (importing rich is ~45 ms, a quarter of `roofline analyze OP --no-time`).

The one layout that command prints, as rich 15 lays it out: a title centred over a two-column box, the label
column at its widest label, the value column at its longest line or narrowed to the console's width, its values
wrapped where rich wraps them (`rich._wrap.divide_line`), and on a terminal rich's escape codes (an italic
title, bold labels). Where the same bytes are not certain it returns None and rich draws the table: FORCE_COLOR
or TTY_COMPATIBLE set, a dumb terminal, Windows, a non-UTF-8 stdout (rich draws ASCII boxes), a character whose
cell width is not plainly one, markup or an emoji code in the title or a label, a table narrower than its title
or wider than the console. tests/test_plain.py checks the bytes against rich's, styled and not.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING

from roofline.core.format import DEFAULT_WIDTH

if TYPE_CHECKING:
    from roofline.core.record import Record

# Characters one cell wide in any terminal and in rich's cell widths: printable ASCII and the few symbols the
# tables print (µs, ±, x, ·, ...). Anything else (wide CJK, combining marks, control codes, tabs) goes to rich.
NARROW = frozenset(chr(c) for c in range(0x20, 0x7F)) | frozenset("µ±×·°²³≈≤≥→←–—…√∞")
# A title or label rich would read as markup (`[bold]`) or an emoji code (`:fire:`): rich draws it.
_MARKUP = re.compile(r"\[|:[\w+-]+:")
# Rich's words: a run of non-spaces with the spaces around it (`rich._wrap.re_word`).
_WORD = re.compile(r"\s*\S+\s*")
# The box rich draws a table without a header in (box.SQUARE, as `get_plain_headed_box` makes HEAVY_HEAD).
TOP, BOTTOM, BAR, RULE = "┌┬┐", "└┴┘", "│", "─"
# On a terminal: the title's style (rich's theme: table.title is italic) and the label column's (bold).
_ITALIC, _BOLD = "\x1b[3m{}\x1b[0m", "\x1b[1m{}\x1b[0m"
EDGES = 3  # the table's three vertical lines (left, between, right)
PAD = 2  # a cell's padding: one space each side


def _narrow(text: str) -> bool:
    return all(ch in NARROW or ch == "\n" for ch in text)


def _divide(line: str, width: int) -> list[str]:
    """`line` in pieces of at most `width` cells, broken where rich's `divide_line` breaks it (fold=True),
    each piece with the whitespace beyond `width` stripped as `Text.rstrip_end` strips it."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(line):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # folded over lines: chop_cells, in cells of width one
            chunks = [word[i:i + width] for i in range(0, len(word), width)] or [""]
            for i, chunk in enumerate(chunks):
                if start:
                    breaks.append(start)
                if i == len(chunks) - 1:
                    offset = len(chunk)
                else:
                    start += len(chunk)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    pieces = [line[a:b] for a, b in zip([0, *breaks], [*breaks, len(line)], strict=True)]
    out = []
    for piece in pieces:
        if len(piece) > width:  # Text.rstrip_end: trailing whitespace beyond the width
            trailing = len(piece) - len(piece.rstrip())
            piece = piece[:len(piece) - min(trailing, len(piece) - width)]
        out.append(piece[:width])  # justify "left": truncated to the width
    return out


def boxed(title: str, rows: list[tuple[str, str]], width: int, styled: bool = False) -> str | None:
    """`rows` as rich draws `record_table`'s table at a console `width` columns wide (`styled`: on a terminal,
    the title in italics and the labels in bold, with rich's escape codes), or None where that is not certain
    (see the module docstring)."""
    texts = [title, *(label for label, _ in rows)]
    if any(_MARKUP.search(t) or "\n" in t or not t for t in texts) or not all(_narrow(t) for t in texts) \
            or not all(_narrow(v) for _, v in rows):
        return None
    labels = max((len(label) for label, _ in rows), default=0) + PAD
    values = max((len(line) for _, v in rows for line in v.split("\n")), default=0) + PAD
    room = width - EDGES
    if labels + values > room:  # rich narrows the one column that may wrap, the values
        values = room - labels
    if values <= PAD or labels + values > room:
        return None
    table = labels + values + EDGES
    if len(title) > table:
        return None
    italic, bold = (_ITALIC, _BOLD) if styled else ("{}", "{}")
    left = (table - len(title)) // 2
    lines = [italic.format(" " * left + title + " " * (table - len(title) - left))]
    lines.append(TOP[0] + RULE * labels + TOP[1] + RULE * values + TOP[2])
    inner = values - PAD
    for label, value in rows:
        wrapped = [piece for line in value.split("\n") for piece in _divide(line, inner)]
        for i, piece in enumerate(wrapped):
            if i == 0:  # rich's segments: the padding, the label, the padding, each in the column's style
                cell = bold.format(" ") + bold.format(label.ljust(labels - PAD)) + bold.format(" ")
            else:  # a blank line of the cell: one segment
                cell = bold.format(" " * labels)
            lines.append(f"{BAR}{cell}{BAR} {piece.ljust(inner)} {BAR}")
    lines.append(BOTTOM[0] + RULE * labels + BOTTOM[1] + RULE * values + BOTTOM[2])
    return "\n".join(lines) + "\n"


def layout() -> tuple[int, bool] | None:
    """The width rich would print stdout at and whether it would write styles (a terminal), or None where
    rich's own checks are not all repeated here. Off a terminal: COLUMNS, else 80 (`text.console`). On one:
    COLUMNS, else the first of stdin, stdout, stderr that reports a size, else 80 (rich's `Console.size`)."""
    import builtins

    env = os.environ
    if "FORCE_COLOR" in env or "TTY_COMPATIBLE" in env or hasattr(builtins, "get_ipython") \
            or sys.platform == "win32":  # rich's switches, Jupyter, the Windows console
        return None
    stream = sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        return None
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None
    columns = env.get("COLUMNS")
    if columns is not None and not (columns.isdigit() and int(columns) > 0):
        return None
    if not terminal:
        return (int(columns) if columns else DEFAULT_WIDTH), False
    if env.get("TERM", "").lower() in ("dumb", "unknown") \
            or getattr(sys.stdin, "__module__", "").startswith("idlelib"):  # rich writes no styles there
        return None
    if columns:
        return int(columns), True
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or DEFAULT_WIDTH, True
        except (AttributeError, ValueError, OSError):
            continue
    return DEFAULT_WIDTH, True


def show_record(r: Record) -> None:
    """Print one record's table on stdout: drawn here when that gives rich's bytes, else by rich."""
    from roofline.report.rows import record_rows

    how = layout()
    text = None if how is None else boxed(f"roofline: {r.op}", record_rows(r), how[0], styled=how[1])
    if text is None:
        from roofline.report.text import record_table, show

        show(record_table(r))
        return
    sys.stdout.write(text)
