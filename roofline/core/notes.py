"""A note to the user as data: a code a program tells notes apart by, and the message a person reads.

A `Note` is a `str` (its message), so a list of notes serialises to the JSON documents have always held (a list of
sentences) and reads as text everywhere; its `code` is what code compares, never the words. A note read back from
a document is a plain string again: codes live in memory, the schema keeps sentences.
"""

from __future__ import annotations

from collections.abc import Iterable


class Note(str):
    """`Note("target.analytic_only", "analytic only: ...")`: the message, with the code that names its kind."""

    code: str

    def __new__(cls, code: str, message: str) -> Note:
        if not code:
            raise ValueError("a note needs a code")
        note = super().__new__(cls, message)
        note.code = code
        return note

    @property
    def message(self) -> str:
        return str.__str__(self)

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]  # copy and pickle keep the code
        return self.code, self.message

    def __repr__(self) -> str:
        return f"Note({self.code!r}, {self.message!r})"


def code_of(note: str) -> str | None:
    """The note's code; None for a plain string (one read back from a document)."""
    return note.code if isinstance(note, Note) else None


def without(notes: Iterable[str], said: Iterable[str]) -> list[str]:
    """`notes` less those whose code is among the codes of `said` (notes a command printed already, once: the
    target's messages, kept in every record). Plain strings carry no code and always stay."""
    codes = {c for n in said if (c := code_of(n)) is not None}
    return [n for n in notes if code_of(n) not in codes]
