"""What counts as text: no NUL characters (PostgreSQL cannot store them) and nothing that is not
valid Unicode (a lone surrogate from JSON's ``\\ud800`` cannot be encoded to UTF-8). Input that fails
is refused with a 4xx before it reaches the database."""

from __future__ import annotations


def text_problem(value: str) -> str | None:
    """A reason ``value`` is not storable text, or None when it is fine."""
    if "\x00" in value:
        return "contains a NUL character, which is not text"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains characters that are not valid Unicode text"
    return None
