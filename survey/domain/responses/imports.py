"""Responses collected elsewhere: a researcher's upload of reports gathered on paper, by telephone,
with physical coins or in another tool, into the survey whose design they were collected under.

The file is the microdata export's own shape (docs/exports.md), so an export re-imports as it is:

- CSV with a header row, or JSON (a list of objects with the same keys);
- ``submitted_on``: the day the report was collected, ``YYYY-MM-DD`` (required; not after today);
- one column per question, named by its variable name in the exports (its key, unless the key is
  reserved in R, Stata or SPSS: :mod:`survey.domain.surveys.variable_names`) or by its key; the
  value is what the export writes: an option's code in the researcher's coding (yes = 1, no = 0:
  :mod:`survey.domain.results.coding`), or the option's label as listed; a number question's number;
  a randomized number's report in the question's units. An empty cell is a question not answered;
  ``declined`` is a "prefer not to say" where the question allows one (as the respondent's page sends it).
- the export's other columns (``submission``, the row number; ``imported``) are accepted and
  ignored. Any other column is an error: a misspelt question would otherwise be dropped silently.

A split ballot's arm (:mod:`survey.domain.surveys.arms`) is the column a row answers: a report
collected under the randomized arm goes in that arm's question's column, one asked directly in the
direct arm's. A row answers at most one arm of a group, and one of them when the group is required.

Every row is checked as a web submission is (:meth:`survey.domain.responses.submissions.Field.check`,
the required questions and split ballots, not empty), and every problem of every row is collected with its row number
(1 = the first row after the header, or the list's first object) and column: if any row fails,
nothing is written and the researcher sees them all at once.

The rows are then written in one transaction: a row in ``imports`` (the upload), one submission per
row marked with it (``submissions.import_id``) and dated ``submitted_on``, their answers, and the
running tallies, added by the very declaration the web submissions and ``flask recount`` use
(:data:`survey.domain.responses.writes.TALLIES` over :func:`~survey.domain.responses.writes.stored`),
so the tallies stay equal to the stored answers and every analysis reads the imported rows as it
reads the others. As with a web submission, the answer, day and pair tallies are left to the fold: the rows are
listed for it (:mod:`survey.domain.responses.pending`), readers add the listed ones, and the
caller starts it (in the background after an upload on the site, at once in ``flask
import-responses``). Checking and writing cost about 0.2 ms a row, a cell value being checked
once per column however often it repeats: the largest upload the site takes (16 MB, 70,000 rows
of a 200-question survey) is stored within the 30 s a request may take (benchmarks/worst_case.md).

Idempotent: the upload's key is the SHA-256 of its normalized rows (each row's day and stored
values, the rows sorted), unique per survey. The same rows uploaded again, in CSV or JSON, in
another order or with other spacing, add nothing, and the answer says so. (Two uploads that happen
to hold exactly the same set of rows are therefore one upload: add a distinguishing row, or merge
the files, if that is ever really meant.)

Anonymity (SECURITY.md §2): an imported submission carries its upload's id, which groups the rows of
one upload. They are the researcher's own rows, collected and typed in by them, so the grouping tells
the researcher nothing they did not know; it is what lets the exports mark them (``imported``).
Nothing about a respondent is stored beyond what a web submission stores.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import hashlib
import io
import itertools
import json
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import SmallInteger, insert, literal, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from survey.domain.base import begin_writing
from survey.domain.errors import Conflict, DomainError
from survey.domain.models import (
    DECLINED,
    DECLINED_MARKER,
    TALLY_SHARDS,
    Answer,
    Question,
    ResponseImport,
    Submission,
    Survey,
    User,
    today,
)
from survey.domain.responses.mixing import question_kinds
from survey.domain.responses.submissions import Field, arm_problems, submission_form
from survey.domain.results.coding import stored_code
from survey.domain.surveys.variable_names import variable_names
from survey.domain.validation import parse_json

from . import writes

#: The column that dates a row.
DATE_COLUMN = "submitted_on"
#: Columns the microdata export writes that an import accepts and does not read: the row number,
#: and whether the row was imported (every row of this upload is).
IGNORED_COLUMNS = frozenset({"submission", "imported"})
#: Rows per upload at most: a larger collection is uploaded in parts (each its own upload).
MAX_ROWS = 100_000
#: Bytes per upload at most (the web's and the API's request limit for an upload; the app's own
#: limit fits a submission): 100,000 rows of a few dozen questions.
MAX_BYTES = 16 * 1024 * 1024
#: Problems listed at most (the count says how many there were in all).
MAX_LISTED = 200
#: The formats an upload comes in.
FORMATS = ("csv", "json")

_T = TypeVar("_T")
_WHOLE = re.compile(r"\s*-?[0-9]{1,9}\s*")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class RowProblem:
    """What is wrong with one cell (or a whole row when ``column`` is None; the header when ``row`` is 0)."""

    row: int
    column: str | None
    code: str
    message: str

    def __str__(self) -> str:
        where = "the header" if self.row == 0 else f"row {self.row}"
        if self.column is not None:
            where += f", column {self.column!r}"
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "column": self.column, "code": self.code, "message": self.message}


class ImportRefused(DomainError):
    """Rows that a web submission would not be allowed to send: nothing was written. ``problems``
    lists them (at most :data:`MAX_LISTED`; ``count`` in the params says how many in all)."""

    def __init__(self, problems: Sequence[RowProblem]) -> None:
        super().__init__("import.rows_invalid", count=len(problems), first=str(problems[0]))
        self.problems = list(problems[:MAX_LISTED])

    def to_json(self, detail: str | None = None, title: str | None = None) -> dict[str, Any]:
        """The problem document, with ``errors``: each problem's row, column, code and message."""
        return {**super().to_json(detail, title), "errors": [p.to_dict() for p in self.problems]}


@dataclass(frozen=True)
class ImportResult:
    """What an upload did: ``rows`` checked; ``already`` when the same rows were uploaded before (then
    nothing was added, and ``import_id`` is that earlier upload's); ``dry_run`` when only checked."""

    rows: int
    sha256: str
    already: bool = False
    dry_run: bool = False
    import_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "added": 0 if self.already or self.dry_run else self.rows,
            "already_imported": self.already,
            "dry_run": self.dry_run,
            "sha256": self.sha256,
            "import": self.import_id,
        }


# -- reading the file -------------------------------------------------------------------------------


def format_of(filename: str | None, content_type: str | None = None) -> str:
    """``csv`` or ``json`` from a file name's ending or a content type; DomainError otherwise."""
    name = (filename or "").lower()
    kind = (content_type or "").split(";")[0].strip().lower()
    if name.endswith(".json") or kind == "application/json":
        return "json"
    if name.endswith(".csv") or kind in ("text/csv", "application/csv"):
        return "csv"
    raise DomainError("import.format_unknown", formats=", ".join(FORMATS))


def read_records(data: bytes | str, file_format: str) -> list[dict[str, Any]]:
    """The rows of an upload as column → value, or DomainError when the file as a whole cannot be
    read (not UTF-8, not CSV or JSON of the expected shape, a column named twice, too many rows)."""
    if file_format == "json":
        document = parse_json(data, "the file")
        if not isinstance(document, list) or not all(isinstance(r, dict) for r in document):
            raise DomainError("import.json_not_list")
        records = document
    elif file_format == "csv":
        if isinstance(data, bytes):
            try:
                data = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                raise DomainError("json.not_utf8", subject="the file") from None
        try:
            table = list(csv.reader(io.StringIO(data, newline="")))
        except csv.Error as error:
            raise DomainError("import.csv_invalid", reason=str(error)) from None
        table = [line for line in table if any(cell.strip() for cell in line)]
        if not table:
            raise DomainError("import.empty")
        header = [cell.strip() for cell in table[0]]
        twice = sorted({c for c in header if header.count(c) > 1})
        if twice:
            raise DomainError("import.column_twice", column=twice[0])
        records = []
        for number, line in enumerate(table[1:], start=1):
            if len(line) != len(header):
                raise DomainError("import.row_length", row=number, cells=len(line), columns=len(header))
            records.append(dict(zip(header, line, strict=True)))
    else:
        raise DomainError("import.format_unknown", formats=", ".join(FORMATS))
    if not records:
        raise DomainError("import.empty")
    if len(records) > MAX_ROWS:
        raise DomainError("import.too_many_rows", most=MAX_ROWS)
    return records


# -- checking the rows ------------------------------------------------------------------------------


@dataclass
class _Column:
    """A question's column, with what checking its cells needs worked out once: an upload repeats the
    same few values down a column (70,000 rows of a 200-question survey read each question's labels
    from the ORM 24,000 times a 2,000 rows, and the import ran past the 30 s a request may take:
    benchmarks/worst_case.md)."""

    question: Question
    field: Field
    #: each cell value met so far (when hashable) → its stored value, or the error it gets
    seen: dict[Any, int | DomainError] = field(default_factory=dict)

    @functools.cached_property
    def labels(self) -> list[str]:
        return list(self.question.labels)

    @functools.cached_property
    def folded(self) -> dict[str, int]:
        """Each label as compared (stripped, casefolded) → its option's index (the first, if two fold alike)."""
        folded: dict[str, int] = {}
        for index, label in enumerate(self.labels):
            folded.setdefault(label.strip().casefold(), index)
        return folded

    def stored(self, raw: Any) -> int | DomainError:
        """:func:`_stored_value` of ``raw``, or the error it raises (returned, not raised: one error
        serves every cell of that value), worked out once per distinct value."""
        try:
            known = self.seen.get(raw)
        except TypeError:  # a list or an object in a JSON upload: worked out each time
            return _outcome(_stored_value, self, raw)
        if known is None:
            known = self.seen[raw] = _outcome(_stored_value, self, raw)
        return known


def _outcome(work: Callable[..., _T], *args: Any) -> _T | DomainError:
    try:
        return work(*args)
    except DomainError as error:
        return error


@dataclass
class CheckedRows:
    """The rows as they will be stored: each ``(day, {question id: stored value})``."""

    rows: list[tuple[dt.date, dict[int, int]]] = field(default_factory=list)
    problems: list[RowProblem] = field(default_factory=list)


def _stored_value(column: _Column, raw: Any) -> int:
    """The stored value of a cell as the export writes it, checked as a web submission's answer is;
    DomainError otherwise."""
    question, checked = column.question, column.field
    if isinstance(raw, str) and raw.strip().casefold() == DECLINED_MARKER:
        # "prefer not to say", as the respondent's page sends it: only where the question allows it
        if not checked.decline:
            raise DomainError("answer.decline_not_allowed", key=question.key)
        return DECLINED
    kind = question.kind_entry
    if kind.randomized_number:
        return checked.check(_report_code(question, raw))
    if kind.has_options and not isinstance(raw, bool):
        if isinstance(raw, int) or (isinstance(raw, str) and _WHOLE.fullmatch(raw)):
            code = int(raw)
            # in the researcher's coding; out of range, the value is checked as given (and refused)
            return checked.check(stored_code(question, code) if 0 <= code < len(column.labels) else code)
        if isinstance(raw, str):
            index = column.folded.get(raw.strip().casefold())
            if index is not None:
                return index
    return checked.check(raw)


def _report_code(question: Question, raw: Any) -> Any:
    """A randomized number's report code from its report in the question's units, as the export
    writes it (``value_of(code)``); the value itself when it is no number (the check refuses it)."""
    mechanism: Any = question.mechanism()
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        return raw
    if not math.isfinite(value):
        return raw
    code = round(((value - mechanism.middle) / mechanism.half - mechanism.origin) / mechanism.step)
    if abs(float(mechanism.value_of(code)) - value) > 1e-6 * mechanism.half * mechanism.step:
        raise DomainError("import.report_off_grid", key=question.key, value=raw)
    return code


def _day(raw: Any) -> dt.date:
    text = raw.strip() if isinstance(raw, str) else raw
    if not isinstance(text, str) or not _DAY.fullmatch(text):
        raise DomainError("import.date_invalid", value=raw)
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise DomainError("import.date_invalid", value=raw) from None
    if day > today():
        raise DomainError("import.date_in_future", value=text)
    return day


def check_rows(survey: Survey, fields: Sequence[Field], records: Sequence[Mapping[str, Any]]) -> CheckedRows:
    """Every row checked against the survey's design; every problem collected (see the module)."""
    by_id = {q.id: q for q in survey.questions}
    names = variable_names([q.key for q in survey.questions])
    columns: dict[str, _Column] = {}
    for f in fields:
        columns[names[f.key]] = columns[f.key] = _Column(by_id[f.id], f)
    result = CheckedRows()
    header = list(dict.fromkeys(itertools.chain.from_iterable(records)))
    unknown = [c for c in header if c not in columns and c != DATE_COLUMN and c not in IGNORED_COLUMNS]
    for name in unknown:
        result.problems.append(_problem(0, name, DomainError("import.unknown_column", column=name)))
    if DATE_COLUMN not in header:
        result.problems.append(_problem(0, DATE_COLUMN, DomainError("import.date_missing")))
    given_twice = [
        q.key for q in by_id.values() if q.key in header and names[q.key] != q.key and names[q.key] in header
    ]
    for key in given_twice:
        result.problems.append(_problem(0, key, DomainError("import.column_twice", column=key)))
    if result.problems:
        return result
    required = [f for f in fields if f.required and f.arm_group is None]
    with_arms = any(f.arm_group is not None for f in fields)
    for number, record in enumerate(records, start=1):
        values: dict[int, int] = {}
        answered_ids: set[int] = set()
        day: dt.date | None = None
        known = _outcome(_day, record.get(DATE_COLUMN))
        if isinstance(known, DomainError):
            result.problems.append(_problem(number, DATE_COLUMN, known))
        else:
            day = known
        for name, raw in record.items():
            if raw is None or raw == "":  # most cells of a wide survey's export: tested first
                continue
            column = columns.get(name)
            if column is None or (isinstance(raw, str) and not raw.strip()):
                continue
            answered_ids.add(column.field.id)
            value = column.stored(raw)
            if isinstance(value, DomainError):
                result.problems.append(_problem(number, name, value))
            else:
                values[column.field.id] = value
        for f in required:
            if f.id not in answered_ids:
                result.problems.append(_problem(number, names[f.key], DomainError("answer.required", key=f.key)))
        if with_arms:
            for error in arm_problems(fields, answered_ids):
                result.problems.append(_problem(number, names[error.path[-1]], error))
        if not answered_ids:
            result.problems.append(_problem(number, None, DomainError("submission.empty")))
        if day is not None:
            result.rows.append((day, values))
    return result


def _problem(row: int, column: str | None, error: DomainError) -> RowProblem:
    return RowProblem(row, column, error.code, error.message)


def rows_digest(survey: Survey, rows: Sequence[tuple[dt.date, Mapping[int, int]]]) -> str:
    """The SHA-256 of the rows as stored, normalized: the same rows in any order or format, one digest."""
    keys = {q.id: q.key for q in survey.questions}
    normal = sorted(
        json.dumps([day.isoformat(), sorted([keys[q], v] for q, v in values.items())]) for day, values in rows
    )
    return hashlib.sha256("\n".join(normal).encode()).hexdigest()


# -- writing them -----------------------------------------------------------------------------------


def import_responses(
    session: Session,
    survey: Survey,
    data: bytes | str,
    file_format: str,
    *,
    user: User | None = None,
    dry_run: bool = False,
) -> ImportResult:
    """Check the upload ``data`` (``csv`` or ``json``) against ``survey`` and, unless ``dry_run`` or
    the same rows were imported before, write them in the session's transaction (the caller commits).
    Raises :class:`ImportRefused` (every row problem) or another DomainError; writes nothing then."""
    form = submission_form(session, survey.slug)
    if form is None:
        raise Conflict("import.draft")
    checked = check_rows(survey, form.fields, read_records(data, file_format))
    if checked.problems:
        raise ImportRefused(checked.problems)
    digest = rows_digest(survey, checked.rows)
    earlier = _earlier(session, survey.id, digest)
    if earlier is not None:
        return ImportResult(len(checked.rows), digest, already=True, dry_run=dry_run, import_id=earlier)
    if dry_run:
        return ImportResult(len(checked.rows), digest, dry_run=True)
    begin_writing(session)
    upload = ResponseImport(
        survey_id=survey.id, sha256=digest, rows=len(checked.rows), imported_on=today(), user_id=user and user.id
    )
    try:
        with session.begin_nested():
            session.add(upload)
            session.flush()
    except IntegrityError:  # the same rows, uploaded at the same moment by another request
        earlier = _earlier(session, survey.id, digest)
        return ImportResult(len(checked.rows), digest, already=True, import_id=earlier)
    ids = _insert_submissions(session, survey, upload, checked.rows)
    _insert_answers(
        session,
        (
            (submission_id, q, v)
            for submission_id, (_, values) in zip(ids, checked.rows, strict=True)
            for q, v in sorted(values.items())
        ),
    )
    dialect = session.get_bind().dialect.name
    reported, submitted = writes.stored(question_kinds(survey), import_id=upload.id)
    shard = literal(random.randrange(TALLY_SHARDS), SmallInteger)
    for tally in writes.AT_ONCE:
        session.execute(writes.upsert(dialect, tally, reported, submitted, shard))
    if writes.DEFERRED:
        # listed for the fold, as a web submission is, rather than counted here: the pairs of 70,000
        # rows of a 200-question survey took over a minute of the request on SQLite
        # (benchmarks/worst_case.md); every reader adds the listed ones meanwhile, and the caller
        # starts the fold (:func:`survey.domain.responses.pending.fold_all`)
        ids = select(Submission.id).where(Submission.import_id == upload.id)
        session.execute(writes.list_pending(dialect, ids))
    return ImportResult(len(checked.rows), digest, import_id=upload.id)


def _insert_submissions(
    session: Session, survey: Survey, upload: ResponseImport, rows: Sequence[tuple[dt.date, Mapping[int, int]]]
) -> list[int]:
    """Insert one submission per row; their ids, in the rows' order.

    PostgreSQL returns them from batched multi-row inserts. SQLite would take one statement per row
    to return them in order (0.95 ms a row: 70,000 rows of an upload held the request for over a
    minute, benchmarks/worst_case.md), so there the rows go in one ``executemany`` and their ids are
    read back: SQLite gives each new row the next id, and nothing else writes meanwhile (the write
    lock is held from :func:`~survey.domain.base.begin_writing`), so ordered by id they are the rows
    in order."""
    values = [{"survey_id": survey.id, "submitted_on": day, "import_id": upload.id} for day, _ in rows]
    if session.get_bind().dialect.name != "sqlite":
        return list(
            session.scalars(insert(Submission).returning(Submission.id, sort_by_parameter_order=True), values).all()
        )
    session.connection().execute(insert(Submission.__table__), values)
    ids = list(session.scalars(select(Submission.id).where(Submission.import_id == upload.id).order_by(Submission.id)))
    if len(ids) != len(rows):  # pragma: no cover - the write lock makes this impossible
        raise RuntimeError(f"{len(rows)} submissions inserted, {len(ids)} read back")
    return ids


def _insert_answers(session: Session, rows: Iterable[tuple[int, int, int]]) -> None:
    """Insert ``(submission_id, question_id, value)`` rows in the session's transaction, through the
    driver: ``COPY`` on PostgreSQL, ``executemany`` on SQLite. SQLAlchemy's executemany works over
    each row's parameters in Python (9 of the 24 s that 70,000 rows of 13 answers took, profiled)."""
    connection = session.connection()
    driver = connection.connection.driver_connection
    table = f"{Answer.__tablename__} (submission_id, question_id, value)"
    if connection.dialect.name == "postgresql":
        with driver.cursor() as cursor, cursor.copy(f"COPY {table} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    driver.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)


def _earlier(session: Session, survey_id: int, digest: str) -> int | None:
    return session.scalar(
        select(ResponseImport.id).where(ResponseImport.survey_id == survey_id, ResponseImport.sha256 == digest)
    )
