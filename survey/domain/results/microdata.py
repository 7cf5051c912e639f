"""The randomized microdata, read at the database's pace: one row per submission, one column per question.

The database does the work it is built for. One ``GROUP BY`` turns the survey's answers (one row per
answer) into one row per submission, a column per question, numbered 1..N in stored order, with the
researcher's codes already applied (a yes/no question's ``1 - value``,
:mod:`survey.domain.results.coding`). On PostgreSQL, that query runs inside ``COPY ... TO STDOUT
(FORMAT csv)`` and the file is the server's own CSV, handed over by psycopg's copy API a row at a
time and passed on in chunks: Python neither builds a row object nor formats a cell, so the export
costs about what the ``COPY`` costs (benchmarks/scale_exports.md), and memory does not grow with
the number of submissions. Everywhere else (SQLite, and a survey with a Laplace randomized number,
whose reports have no bounded grid to look up) the same query's rows are fetched a batch at a time
(a server-side cursor on PostgreSQL) and written by ``CsvTable`` a chunk at a time.

Both ways give the very bytes :class:`survey.domain.results.csvfile.CsvTable` writes (the tests hold
them to each other and to a row-by-row reference): every cell of a microdata row is a number or a
date, so no cell needs quoting or neutralizing; an integer is written as is, a randomized number's
report as Python's ``repr`` of the float (on PostgreSQL looked up from a table computed here, never
formatted by the server, whose float output differs); lines end in ``\\r\\n``. The header goes
through ``CsvTable`` like every other CSV line the project writes, and so do the rows fetched in
batches (:meth:`CsvTable.plain_rows`).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from survey.domain.models import DECLINED, ResponseImport, Survey
from survey.domain.results.csvfile import CsvTable
from survey.domain.surveys.variable_names import variable_names

#: The microdata columns that precede one column per question key.
MICRODATA_FIXED_COLUMNS = ("submission", "submitted_on")

#: The column that follows the questions when a survey holds imported rows
#: (:mod:`survey.domain.responses.imports`): 1 for a row imported, 0 for a web submission. A survey
#: without imports has no such column, so its file is the same as before imports existed.
IMPORTED_COLUMN = "imported"

#: Submissions per chunk of the streamed microdata: large enough to keep the overhead small, small
#: enough that memory does not depend on the number of respondents (about 60 KB for 10 questions).
MICRODATA_CHUNK_ROWS = 2000
#: Rows fetched per round trip where rows are fetched (SQLite, the labelled files).
MICRODATA_BATCH_SIZE = 5000

#: What an empty cell reads as in :func:`microdata_arrays`' query before it becomes NaN: no stored
#: code or number comes near it.
EMPTY = -(2**62)

#: A randomized number's reports are looked up in a table of its grid's codes when the grid has at
#: most this many codes (every bounded mechanism: 2,001); Laplace's codes run to ±10⁹.
LOOKUP_LIMIT = 100_000


@dataclass(frozen=True)
class _Column:
    """How one question's stored value becomes its cell."""

    question_id: int
    #: yes/no: the researcher's code is ``1 - stored`` (done by the query).
    reversed: bool = False
    #: a randomized number: its report in the question's units, from the code.
    value_of: Callable[[int], float] | None = None
    #: the grid's codes ``low .. high`` when small enough to look up (else None).
    grid: tuple[int, int] | None = None
    #: a randomized number's mechanism (its ``value_of`` takes a whole array of codes).
    mechanism: Any = None
    #: whether the question may be declined: a declined answer (stored as DECLINED) is an empty cell.
    declinable: bool = False


def _columns(survey: Survey) -> list[_Column]:
    columns = []
    for q in survey.questions:
        if q.kind_entry.randomized_number:
            mechanism = q.mechanism()
            reports = mechanism.reports
            small = reports.high - reports.low < LOOKUP_LIMIT
            columns.append(
                _Column(
                    q.id,
                    value_of=functools.lru_cache(maxsize=4096)(lambda code, m=mechanism: float(m.value_of(code))),
                    grid=(reports.low, reports.high) if small else None,
                    mechanism=mechanism,
                    declinable=q.decline,
                )
            )
        else:
            columns.append(_Column(q.id, reversed=q.kind_entry.reversed_codes, declinable=q.decline))
    return columns


def has_imports(session: Session, survey: Survey) -> bool:
    """Whether any of the survey's submissions were imported (then the CSV has :data:`IMPORTED_COLUMN`)."""
    return session.scalar(select(ResponseImport.id).where(ResponseImport.survey_id == survey.id).limit(1)) is not None


def microdata_columns(survey: Survey, imported: bool = False) -> list[str]:
    """The header: fixed columns, then one per question in survey order (the codebook's order),
    named by :func:`survey.domain.surveys.variable_names.variable_names`; then, with ``imported``,
    :data:`IMPORTED_COLUMN`."""
    names = [*MICRODATA_FIXED_COLUMNS, *variable_names([q.key for q in survey.questions]).values()]
    return [*names, IMPORTED_COLUMN] if imported else names


def microdata_table(survey: Survey, imported: bool = False) -> CsvTable:
    """The microdata's columns and their types: every cell a number but the day."""
    header = microdata_columns(survey, imported)
    return CsvTable(
        [(MICRODATA_FIXED_COLUMNS[0], "number"), (MICRODATA_FIXED_COLUMNS[1], "text")]
        + [(name, "number") for name in header[len(MICRODATA_FIXED_COLUMNS) :]]
    )


def _pivot_sql(
    survey: Survey,
    columns: list[_Column],
    dialect: str,
    lookups: bool,
    day_origin: dt.date | None = None,
    imported: bool = False,
) -> tuple[str, dict[str, Any]]:
    """The one query: a row per submission that has answers, numbered in stored order, the day as
    ``YYYY-MM-DD`` text, then a cell per question. ``lookups``: a randomized number's cell is its
    report's text, looked up in a parameter (PostgreSQL's COPY); otherwise its code, for Python.
    ``day_origin``: the day as the number of days since then, and every empty cell :data:`EMPTY`
    (so that a batch converts to a float array at C speed). ``imported``: a last cell, 1 for a row
    imported (:data:`IMPORTED_COLUMN`), 0 otherwise."""
    params: dict[str, Any] = {}
    cells = []
    for i, c in enumerate(columns):
        declined = f" AND a.value <> {DECLINED}" if c.declinable else ""
        value = f"max(a.value) FILTER (WHERE a.question_id = {int(c.question_id)}{declined})"
        if c.reversed:
            value = f"1 - {value}"
        elif lookups and c.value_of is not None:
            low, high = c.grid  # type: ignore[misc]  # lookups are only asked for when every grid is small
            params[f"grid{i}"] = [repr(c.value_of(code)) for code in range(low, high + 1)]
            value = f"(%(grid{i})s::text[])[{value} - ({int(low)}) + 1]"
        if day_origin is not None:
            value = f"coalesce({value}, {EMPTY})"
        cells.append(f"{value} AS c{i}")
    if imported:
        cells.append(f"CASE WHEN s.import_id IS NULL THEN 0 ELSE 1 END AS {IMPORTED_COLUMN}")
    day = "to_char(s.submitted_on, 'YYYY-MM-DD')" if dialect == "postgresql" else "s.submitted_on"
    if day_origin is not None:
        origin = day_origin.isoformat()
        if dialect == "postgresql":
            day = f"s.submitted_on - DATE '{origin}'"
        else:
            day = f"CAST(julianday(s.submitted_on) - julianday('{origin}') AS INTEGER)"
    sql = (
        f"SELECT row_number() OVER (ORDER BY a.submission_id) AS n, {day} AS day"
        + "".join(f", {cell}" for cell in cells)
        + " FROM answers a JOIN submissions s ON s.id = a.submission_id"
        + f" WHERE s.survey_id = {int(survey.id)}"
        + " GROUP BY a.submission_id, s.submitted_on"
        + (", s.import_id" if imported else "")
        + " ORDER BY a.submission_id"
    )
    return sql, params


def _copyable(columns: list[_Column]) -> bool:
    return all(c.value_of is None or c.grid is not None for c in columns)


def microdata_csv_lines(
    session: Session,
    survey: Survey,
    *,
    chunk_rows: int = MICRODATA_CHUNK_ROWS,
    batch_size: int = MICRODATA_BATCH_SIZE,
    imported: bool = False,
) -> Iterator[str]:
    """The microdata CSV's rows (no header) in chunks of ``chunk_rows`` rows (with ``imported``, the
    :data:`IMPORTED_COLUMN` last).

    Everything about the survey is read before the first chunk is asked for (a streamed response
    outlives the view that made it)."""
    columns = _columns(survey)
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql" and _copyable(columns):
        sql, params = _pivot_sql(survey, columns, dialect, lookups=True, imported=imported)
        return _copy_chunks(session, sql, params, chunk_rows)
    batches = microdata_batches(session, survey, batch_size=batch_size, columns=columns, imported=imported)
    return written_chunks(microdata_table(survey, imported), batches, chunk_rows)


def _copy_chunks(session: Session, sql: str, params: dict[str, Any], chunk_rows: int) -> Iterator[str]:
    """PostgreSQL writes the CSV (``COPY ... TO STDOUT``, one message per row); the lines get the
    ``\\r\\n`` the csv module ends them with (no cell holds a line break: they are numbers and dates)."""
    connection = session.connection().connection.driver_connection
    with connection.cursor() as cursor, cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT csv)", params or None) as copy:
        rows: list[bytes] = []
        for data in copy:
            rows.append(data)
            if len(rows) == chunk_rows:
                yield b"".join(rows).replace(b"\n", b"\r\n").decode("ascii")
                rows.clear()
        if rows:
            yield b"".join(rows).replace(b"\n", b"\r\n").decode("ascii")


def written_chunks(table: CsvTable, batches: Iterator[list[tuple[Any, ...]]], chunk_rows: int) -> Iterator[str]:
    """What CsvTable writes for these rows, ``chunk_rows`` rows a chunk, at the csv module's pace
    (:meth:`CsvTable.plain_rows`: the cells are numbers and ISO dates, checked a column at a time)."""
    pending: list[tuple[Any, ...]] = []
    for batch in batches:
        start = 0
        while start < len(batch):
            part = batch[start : start + chunk_rows - len(pending)]
            pending.extend(part)
            start += len(part)
            if len(pending) == chunk_rows:
                yield table.plain_rows(pending)
                pending = []
    if pending:
        yield table.plain_rows(pending)


def microdata_batches(
    session: Session,
    survey: Survey,
    *,
    batch_size: int = MICRODATA_BATCH_SIZE,
    columns: list[_Column] | None = None,
    imported: bool = False,
) -> Iterator[list[tuple[Any, ...]]]:
    """Lists of at most ``batch_size`` rows ``(row number, day "YYYY-MM-DD", *cells)``, the cells in
    the researcher's codes in question order (None where a question was not answered; a randomized
    number's report in the question's units, a float).

    On PostgreSQL from a server-side cursor, on SQLite from its own stepping cursor: the database
    hands over a batch at a time and memory stays the same whatever the number of respondents.
    Rows are numbered 1..N in stored order; the database ids are not exported."""
    columns = columns if columns is not None else _columns(survey)
    sql, _ = _pivot_sql(survey, columns, session.get_bind().dialect.name, lookups=False, imported=imported)
    mapped = [(2 + i, c.value_of) for i, c in enumerate(columns) if c.value_of is not None]
    for batch in _fetched(session, sql, batch_size):
        yield [_mapped(row, mapped) for row in batch] if mapped else batch


def microdata_arrays(
    session: Session,
    survey: Survey,
    day_origin: dt.date,
    *,
    batch_size: int = MICRODATA_BATCH_SIZE,
    imported: bool = False,
) -> Iterator[np.ndarray]:
    """The rows of :func:`microdata_batches` as float arrays (rows × columns): the row number, the
    day as days since ``day_origin``, the cells (NaN where empty; a randomized number's report
    computed for the whole column at once, the same doubles as one by one); with ``imported``, a
    last column, 1 for a row imported and 0 for a web submission."""
    columns = _columns(survey)
    dialect = session.get_bind().dialect.name
    sql, _ = _pivot_sql(survey, columns, dialect, lookups=False, day_origin=day_origin, imported=imported)
    reports = [(2 + i, c.mechanism) for i, c in enumerate(columns) if c.mechanism is not None]
    for batch in _fetched(session, sql, batch_size):
        values = np.array(batch, dtype=np.float64)
        empty = values == EMPTY
        for j, mechanism in reports:
            values[:, j] = np.where(empty[:, j], 0.0, mechanism.value_of(np.where(empty[:, j], 0, values[:, j])))
        values[empty] = np.nan
        yield values


def _fetched(session: Session, sql: str, batch_size: int) -> Iterator[list[tuple[Any, ...]]]:
    """The query's rows ``batch_size`` at a time, on the session's connection (its transaction)."""
    connection = session.connection().connection.driver_connection
    if session.get_bind().dialect.name == "postgresql":
        cursor = connection.cursor(name="microdata")  # server-side: rows stay in the server until fetched
        cursor.itersize = batch_size
    else:
        cursor = connection.cursor()
    try:
        cursor.execute(sql)
        while batch := cursor.fetchmany(batch_size):
            yield batch
    finally:
        # Also when the client goes away mid-download: release the cursor at once.
        cursor.close()


def _mapped(row: tuple[Any, ...], mapped: list[tuple[int, Callable[[int], float] | None]]) -> tuple[Any, ...]:
    cells = list(row)
    for j, value_of in mapped:
        if cells[j] is not None:
            cells[j] = value_of(cells[j])  # type: ignore[misc]
    return tuple(cells)
