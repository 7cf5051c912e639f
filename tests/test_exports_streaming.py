"""The microdata downloads at the database's pace, in bounded memory, with the bytes they always had.

The CSV is written by PostgreSQL's ``COPY`` (or, on SQLite and for a Laplace randomized number, by
the csv module from rows fetched in batches); the ``.sav`` and ``.dta`` files get their rows a batch
at a time after pyreadstat wrote their descriptions (survey/domain/results/microdata.py,
labelled_rows.py). These tests hold every path to a row-by-row reference (the export as it was
written before: one ORM row per answer, grouped in Python, every line through ``CsvTable``) and to
pyreadstat's own file of the whole table, on SQLite and PostgreSQL, and check that rows are fetched
a bounded batch at a time and that a download cut short leaves the connection usable.
"""

from __future__ import annotations

import datetime as dt
import inspect
import random
import re
from itertools import groupby
from operator import itemgetter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select, text

from survey.domain.models import Answer, Submission, Survey, User
from survey.domain.results import exports, labelled, microdata
from survey.domain.results.coding import researcher_code
from survey.domain.results.csvfile import CsvTable
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.privacy.numeric import GRID_STEPS, LAPLACE_CODE_LIMIT

ROWS = 23
QUESTIONS = [
    {
        "key": "smoked",
        "kind": "yes_no",
        "text": '=HYPERLINK("http://x","smoked")',
        "privacy": {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 0.5},
        "required": False,
    },
    {
        "key": "often",
        "kind": "choice",
        "text": "How often?",
        "options": ["never", "sometimes", "often", "always"],
        "privacy": {"design": "grr", "epsilon": 1.0},
        "required": False,
    },
    {"key": "group", "kind": "direct", "text": "Group?", "options": ["-a", "+b", "@c"], "required": False},
    {"key": "age", "kind": "number", "text": "Age?", "minimum": -5, "maximum": 120, "required": False},
    {
        "key": "drinks",
        "kind": "rr_number",
        "text": "Drinks?",
        "minimum": 0,
        "maximum": 30,
        "privacy": {"design": "hybrid", "epsilon": 1},
        "required": False,
    },
    # a reserved word: the column is renamed (in_1) in every file
    {"key": "in", "kind": "yes_no", "text": "In?", "privacy": {"design": "warner", "p": 0.75}, "required": False},
]
LAPLACE = {
    "key": "hours",
    "kind": "rr_number",
    "text": "Hours?",
    "minimum": 0,
    "maximum": 80,
    "privacy": {"design": "laplace", "epsilon": 1},
    "required": False,
}


def _value(question: dict, rng: random.Random) -> int:
    """A stored value the question could hold (a randomized number's report code)."""
    if question["kind"] == "yes_no":
        return rng.randrange(2)
    if question["kind"] in ("choice", "direct"):
        return rng.randrange(len(question["options"]))
    if question["kind"] == "number":
        return rng.randint(question["minimum"], question["maximum"])
    if question["privacy"]["design"] == "laplace":
        return rng.choice([-LAPLACE_CODE_LIMIT, -3, 0, 17, GRID_STEPS, GRID_STEPS + 901, LAPLACE_CODE_LIMIT])
    return rng.randint(0, GRID_STEPS)


def _make_survey(app, slug: str, questions: list[dict], rows: int = ROWS, seed: int = 5) -> None:
    """The survey with ``rows`` submissions over a few days, each skipping some questions (never
    all: a submission without answers is no row of the microdata), stored straight in the tables."""
    rng = random.Random(seed)
    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == "alice"))
        survey = create_survey_from_spec(
            db.session, {"title": f"Survey {slug}", "slug": slug, "questions": questions}, owner=owner
        )
        db.session.flush()
        for i in range(rows):
            submission = Submission(survey_id=survey.id, submitted_on=dt.date(2026, 11, 1) + dt.timedelta(days=i % 4))
            db.session.add(submission)
            db.session.flush()
            answered = [q for q in survey.questions if rng.random() < 0.8] or survey.questions[:1]
            spec = {q["key"]: q for q in questions}
            for q in answered:
                db.session.add(Answer(submission_id=submission.id, question_id=q.id, value=_value(spec[q.key], rng)))
        db.session.commit()


def _survey(slug: str) -> Survey:
    return db.session.scalar(select(Survey).where(Survey.slug == slug))


def _reference_rows(survey: Survey) -> list[list]:
    """The export as it was: one row per answer in submission order, grouped in Python."""
    position = {q.id: i for i, q in enumerate(survey.questions)}
    questions = {q.id: q for q in survey.questions}
    statement = (
        select(Answer.submission_id, Submission.submitted_on, Answer.question_id, Answer.value)
        .join(Submission, Submission.id == Answer.submission_id)
        .where(Submission.survey_id == survey.id)
        .order_by(Answer.submission_id)
    )
    rows = []
    for number, (_, group) in enumerate(groupby(db.session.execute(statement), key=itemgetter(0)), start=1):
        answers = list(group)
        cells: list = [None] * len(position)
        for _, _, question_id, value in answers:
            q = questions[question_id]
            if q.kind_entry.randomized_number:
                cells[position[question_id]] = float(q.mechanism().value_of(value))
            else:
                cells[position[question_id]] = researcher_code(q, value)
        rows.append([number, answers[0][1], *cells])
    return rows


def _reference_csv(survey: Survey) -> str:
    names = exports.microdata_columns(survey)
    table = CsvTable([("submission", "number"), ("submitted_on", "text")] + [(n, "number") for n in names[2:]])
    return table.header() + "".join(table.row([r[0], r[1].isoformat(), *r[2:]]) for r in _reference_rows(survey))


@pytest.fixture
def surveys(app, user):
    _make_survey(app, "bounded", QUESTIONS)
    _make_survey(app, "laplace", [*QUESTIONS, LAPLACE], seed=6)
    return app


@pytest.mark.parametrize("slug", ["bounded", "laplace"])
def test_the_csv_has_the_bytes_of_the_row_by_row_export(surveys, signed_in, slug):
    response = signed_in.get(f"/surveys/{slug}/responses.csv")
    assert response.status_code == 200 and response.is_streamed
    body = response.get_data(as_text=True)
    response.close()
    with surveys.app_context():
        expected = _reference_csv(_survey(slug))
    assert body == expected
    assert body.count("\r\n") == ROWS + 1 and "\n" not in body.replace("\r\n", "")


@pytest.mark.parametrize("chunk_rows", [1, 4, 5000])
def test_the_database_path_and_the_batched_path_write_the_same_chunks(surveys, chunk_rows):
    """On PostgreSQL the first is COPY and the second the csv module; on SQLite both are the second."""
    with surveys.app_context():
        survey = _survey("bounded")
        streamed = list(microdata.microdata_csv_lines(db.session, survey, chunk_rows=chunk_rows, batch_size=3))
        batches = microdata.microdata_batches(db.session, survey, batch_size=3)
        batched = list(microdata.written_chunks(microdata.microdata_table(survey), batches, chunk_rows))
    assert streamed == batched
    sizes = [min(chunk_rows, ROWS - i) for i in range(0, ROWS, chunk_rows)]
    assert [chunk.count("\r\n") for chunk in streamed] == sizes


def test_rows_are_fetched_a_bounded_batch_at_a_time(surveys):
    with surveys.app_context():
        survey = _survey("bounded")
        batches = microdata.microdata_batches(db.session, survey, batch_size=4)
        assert inspect.isgenerator(batches)
        first = next(batches)
        assert len(first) == 4
        if db.engine.dialect.name == "postgresql":
            # the rest is still in the server, behind a cursor of this very connection
            held = db.session.execute(text("SELECT count(*) FROM pg_cursors WHERE name = 'microdata'")).scalar()
            assert held == 1
        rest = list(batches)
        assert all(1 <= len(batch) <= 4 for batch in rest)
        assert sum(map(len, [first, *rest])) == ROWS
        assert [row[0] for batch in [first, *rest] for row in batch] == list(range(1, ROWS + 1))


def test_a_download_cut_short_leaves_the_connection_usable(surveys):
    with surveys.app_context():
        survey = _survey("bounded")
        for lines in (
            microdata.microdata_csv_lines(db.session, survey, chunk_rows=2),
            microdata.written_chunks(
                microdata.microdata_table(survey), microdata.microdata_batches(db.session, survey, batch_size=2), 2
            ),
        ):
            assert next(lines).count("\r\n") == 2
            lines.close()  # the client went away
            assert db.session.execute(text("SELECT 1")).scalar() == 1
            if db.engine.dialect.name == "postgresql":
                assert db.session.execute(text("SELECT count(*) FROM pg_cursors")).scalar() == 0


def _mask_time(data: bytes, file_format: str) -> bytes:
    """The files carry their creation time; everything else must be the same."""
    if file_format == "sav":
        return data[:92] + b"-" * 17 + data[109:]  # creation date (9 bytes) and time (8)
    return re.sub(rb"<timestamp>\x11.{17}</timestamp>", b"<timestamp/>", data, count=1, flags=re.DOTALL)


def _whole_frame(survey: Survey) -> pd.DataFrame:
    """The microdata as one DataFrame, the way the files were written before (and as the template's types)."""
    rows = _reference_rows(survey)
    names = exports.microdata_columns(survey)
    reports = set(labelled.report_columns(survey))
    frame = pd.DataFrame(
        {
            "submission": np.array([r[0] for r in rows], dtype=np.int32),
            "submitted_on": [r[1] for r in rows],
        }
    )
    for j, name in enumerate(names[2:], start=2):
        frame[name] = pd.array([r[j] for r in rows], dtype="Float64" if name in reports else "Int32")
    return frame


@pytest.mark.parametrize("file_format", ["sav", "dta"])
@pytest.mark.parametrize("slug", ["bounded", "laplace"])
def test_the_labelled_files_written_in_batches_are_pyreadstats_file_of_the_whole_table(
    surveys, tmp_path: Path, file_format, slug
):
    with surveys.app_context():
        survey = _survey(slug)
        batched, whole = tmp_path / f"batched.{file_format}", tmp_path / f"whole.{file_format}"
        labelled.write_labelled(db.session, survey, file_format, batched, batch_size=3)
        labelled.write_frame(_whole_frame(survey), survey, file_format, whole)
    assert _mask_time(batched.read_bytes(), file_format) == _mask_time(whole.read_bytes(), file_format)


@pytest.mark.parametrize("file_format", ["sav", "dta"])
def test_the_labelled_files_of_a_survey_without_answers_have_no_rows(app, user, tmp_path, file_format):
    import pyreadstat

    _make_survey(app, "empty", QUESTIONS, rows=0)
    with app.app_context():
        path = tmp_path / f"empty.{file_format}"
        labelled.write_labelled(db.session, _survey("empty"), file_format, path)
    frame, meta = (pyreadstat.read_sav if file_format == "sav" else pyreadstat.read_dta)(str(path))
    assert len(frame) == 0 and meta.number_rows in (0, None)
    assert list(frame.columns) == ["submission", "submitted_on", "smoked", "often", "group", "age", "drinks", "in_1"]


def test_plain_rows_write_what_row_writes_and_refuse_what_row_would_convert():
    table = CsvTable([("n", "number"), ("day", "text"), ("x", "number")])
    rows = [(1, "2026-11-01", None), (2, "2026-11-02", -0.125), (3, None, 7)]
    assert table.plain_rows(rows) == "".join(table.row(r) for r in rows)
    with pytest.raises(ValueError, match="neutralizing"):
        table.plain_rows([(1, "=1+1", 0)])
    with pytest.raises(TypeError):
        table.plain_rows([(1, "2026-11-01", "-1")])  # a string in a number column
    with pytest.raises(TypeError):
        table.plain_rows([(1, "2026-11-01", True)])  # row() refuses a bool as well
