"""One write path: what a submission writes is declared once (survey/domain/responses/writes.py), and both
databases, a released batch and the recount follow that one declaration.

The same submissions go through SQLite and PostgreSQL; every tally table (summed over its random
shards, keyed by question keys rather than ids) must come out the same in both, and equal to what
this file works out on its own from the rule as the docs state it. On PostgreSQL a submission stays
one statement in one round trip, counted at the driver.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from contextlib import contextmanager

import numpy as np
import psycopg
import pytest
from psycopg import pq
from sqlalchemy import event, select

from survey import create_app
from survey.domain.errors import DomainError
from survey.domain.models import (
    TALLY_SHARDS,
    Answer,
    AnswerTally,
    DayTally,
    PairTally,
    Question,
    Submission,
    SubmissionTally,
    Survey,
)
from survey.domain.responses.codes import generate_codes
from survey.domain.responses.mixing import held_count, release_if_closed
from survey.domain.responses.pending import fold_all, listed
from survey.domain.responses.submissions import record_submission, submission_form
from survey.domain.responses.tallies import tally_mismatches
from survey.domain.surveys.lifecycle import close
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

from .databases import PG_URL, make_config

QUESTIONS = [
    {"key": "drugs", "kind": "yes_no", "text": "Drugs?", "privacy": {"design": "warner", "p": 0.75}},
    {
        "key": "often",
        "kind": "choice",
        "text": "How often?",
        "options": ["never", "sometimes", "often", "always"],
        "privacy": {"design": "grr", "epsilon": 1.0},
    },
    {"key": "region", "kind": "direct", "text": "Region?", "options": ["north", "south", "east"], "required": False},
    {"key": "team", "kind": "direct", "text": "Team?", "options": ["a", "b"], "required": False},
    {"key": "age", "kind": "number", "text": "Age?", "minimum": 16, "maximum": 99, "required": False},
    {
        "key": "drinks",
        "kind": "rr_number",
        "text": "Drinks last week?",
        "minimum": 0,
        "maximum": 30,
        "privacy": {"design": "hybrid", "epsilon": 1.0},
        "required": False,
    },
]
#: The rule, as docs/architecture.md states it, written out here by hand: randomized answers are
#: counted per day; a pair of answers is counted when neither is a number and one is randomized.
RANDOMIZED = {"drugs", "often", "drinks"}
PAIRED = {"drugs", "often", "region", "team", "drinks"}
#: A randomized number's reports pair with the questions asked directly only.
REPORTS = {"drinks"}
BY_LINK = {"title": "By link", "slug": "by-link", "questions": QUESTIONS}
BY_CODE = {"title": "By code", "slug": "by-code", "access": "invitation", "questions": QUESTIONS}
BATCH = 4


def answers_for(rng: np.random.Generator) -> dict:
    answers = {"drugs": int(rng.integers(2)), "often": int(rng.integers(4))}
    for key, k in (("region", 3), ("team", 2)):
        if rng.random() < 0.7:
            answers[key] = int(rng.integers(k))
    if rng.random() < 0.6:
        answers["age"] = int(rng.integers(16, 100))
    if rng.random() < 0.8:  # a randomized number's report code (few codes, so that some repeat)
        answers["drinks"] = int(rng.choice([0, 1, 999, 1000, 2000]))
    return answers


def expected_tallies(sent: list[dict], day: dt.date) -> dict:
    answers = Counter((k, v) for a in sent for k, v in a.items())
    days = Counter((k, v, day) for a in sent for k, v in a.items() if k in RANDOMIZED)
    order = [q["key"] for q in QUESTIONS]  # question ids grow in this order: the lower id comes first
    pairs = Counter(
        (a, answer[a], b, answer[b])
        for answer in sent
        for a, b in itertools.combinations([k for k in order if k in answer], 2)
        if a in PAIRED
        and b in PAIRED
        and (a in RANDOMIZED or b in RANDOMIZED)
        and not ({a, b} <= RANDOMIZED and {a, b} & REPORTS)
    )
    return {"answers": answers, "pairs": pairs, "days": days, "submissions": len(sent)}


def stored_tallies(slug: str) -> dict:
    """Every tally of survey ``slug``, summed over shards, with question keys for ids."""
    survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
    key = {q.id: q.key for q in survey.questions}
    ids = select(Question.id).where(Question.survey_id == survey.id)

    def summed(table, *columns):
        rows = db.session.execute(
            select(*columns, table.count).where(table.question_id.in_(ids)).order_by(*columns)
        ).all()
        found: Counter = Counter()
        for *cell, n in rows:
            found[tuple(cell)] += n
        return found

    answers = summed(AnswerTally, AnswerTally.question_id, AnswerTally.value)
    pairs = summed(PairTally, PairTally.question_id, PairTally.value, PairTally.other_id, PairTally.other_value)
    days = summed(DayTally, DayTally.question_id, DayTally.value, DayTally.day)
    submissions = db.session.scalars(select(SubmissionTally.count).where(SubmissionTally.survey_id == survey.id))
    return {
        "answers": Counter({(key[q], v): n for (q, v), n in answers.items() if n}),
        "pairs": Counter({(key[a], va, key[b], vb): n for (a, va, b, vb), n in pairs.items() if n}),
        "days": Counter({(key[q], v, day): n for (q, v, day), n in days.items() if n}),
        "submissions": sum(submissions),
    }


def number_shards(slug: str) -> dict[int, set[int]]:
    """The shards the randomized number's cells of ``slug`` are counted in (answer, day and pair
    tallies), by report code."""
    survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
    drinks = next(q.id for q in survey.questions if q.key == "drinks")
    found: dict[int, set[int]] = {}
    for table in (AnswerTally, DayTally):
        for value, shard in db.session.execute(select(table.value, table.shard).where(table.question_id == drinks)):
            found.setdefault(value, set()).add(shard)
    pairs = select(PairTally.value, PairTally.other_value, PairTally.question_id, PairTally.shard).where(
        (PairTally.question_id == drinks) | (PairTally.other_id == drinks)
    )
    for value, other_value, question_id, shard in db.session.execute(pairs):
        found.setdefault(value if question_id == drinks else other_value, set()).add(shard)
    return found


def stored_answers(slug: str) -> Counter:
    """The stored submissions of ``slug`` as a multiset of their answers (ids and order aside)."""
    survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
    key = {q.id: q.key for q in survey.questions}
    by_submission: dict[int, list] = {
        s: [] for s in db.session.scalars(select(Submission.id).where(Submission.survey_id == survey.id))
    }
    for s, q, v in db.session.execute(
        select(Answer.submission_id, Answer.question_id, Answer.value)
        .join(Submission)
        .where(Submission.survey_id == survey.id)
    ):
        by_submission[s].append((key[q], v))
    return Counter(tuple(sorted(a)) for a in by_submission.values())


def run_submissions(app, sent_by_link: list[dict], sent_by_code: list[dict]) -> dict:
    """Send the same submissions to ``app``'s database (by link, some with a key sent twice, some
    refused; by code, released in batches and at the close) and read back everything they wrote."""
    with app.app_context():
        create_survey_from_spec(db.session, BY_LINK)
        coded = create_survey_from_spec(db.session, BY_CODE)
        db.session.flush()
        codes = generate_codes(db.session, coded, len(sent_by_code))
        db.session.commit()
        link = submission_form(db.session, "by-link")
        for i, answers in enumerate(sent_by_link):
            key = f"{i:032x}" if i % 3 == 0 else None
            assert not record_submission(db.session, link, answers, key=key).already
            if key is not None:  # a resend with the same key stores nothing more
                assert record_submission(db.session, link, answers, key=key).already
        with pytest.raises(DomainError):  # refused: writes nothing
            record_submission(db.session, link, {**sent_by_link[0], "often": 9})
        code_form = submission_form(db.session, "by-code")
        for i, (answers, code) in enumerate(zip(sent_by_code, codes, strict=True)):
            key = f"{i:031x}c" if i % 2 else None
            record_submission(db.session, code_form, answers, invitation=code, key=key, batch=BATCH)
        survey = db.session.scalar(select(Survey).where(Survey.slug == "by-code"))
        assert held_count(db.session, survey.id) == len(sent_by_code) % BATCH
        close(survey)
        db.session.commit()
        release_if_closed(db.session, survey, batch=BATCH)
        assert held_count(db.session, survey.id) == 0
        # the submissions by link wait for the fold of their answers, days and pairs (those by code
        # were released with theirs): the recount agrees before it, counting them as every reader does, and after
        assert listed(db.session) == len(sent_by_link)
        for slug in ("by-link", "by-code"):
            assert tally_mismatches(db.session, db.session.scalar(select(Survey).where(Survey.slug == slug))) == []
        assert fold_all(db.session) == len(sent_by_link) and listed(db.session) == 0
        found = {}
        for slug in ("by-link", "by-code"):
            survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
            assert tally_mismatches(db.session, survey) == []  # the recount agrees
            found[slug] = (stored_tallies(slug), stored_answers(slug))
            # a report code inside the number's grid names its shard; its ends and every other
            # question's values are counted in the shard its writer drew (a fold's, a released batch's)
            shards = number_shards(slug)
            assert shards[999] == {999 % TALLY_SHARDS} and shards[1000] == {1000 % TALLY_SHARDS}, shards
            if slug == "by-link":  # one fold added them all
                assert len(shards[0] | shards[1] | shards[2000]) == 1, shards
        db.session.remove()
    recounted = app.test_cli_runner().invoke(args=["recount"])  # flask recount: the same declaration
    assert recounted.exit_code == 0 and recounted.output.count("tallies agree") == 2, recounted.output
    return found


@pytest.mark.skipif(not PG_URL, reason="compares SQLite with PostgreSQL: TEST_DATABASE_URL is not set")
def test_both_databases_write_identical_tallies_for_the_same_submissions(tmp_path, request):
    rng = np.random.default_rng(26)
    by_link = [answers_for(rng) for _ in range(40)]
    by_code = [answers_for(rng) for _ in range(BATCH * 3 + 2)]  # the last two released at the close
    found = {}
    for backend in ("sqlite", "postgresql"):
        (tmp_path / backend).mkdir()
        app = create_app(make_config(backend, tmp_path / backend, request))
        try:
            found[backend] = run_submissions(app, by_link, by_code)
        finally:
            with app.app_context():
                db.engine.dispose()
    day = dt.date.today()
    for slug, sent in (("by-link", by_link), ("by-code", by_code)):
        sqlite_tallies, sqlite_answers = found["sqlite"][slug]
        postgresql_tallies, postgresql_answers = found["postgresql"][slug]
        for table in ("answers", "pairs", "days", "submissions"):
            assert sqlite_tallies[table] == postgresql_tallies[table], (slug, table)
        assert sqlite_tallies == postgresql_tallies == expected_tallies(sent, day)
        assert sqlite_answers == postgresql_answers == Counter(tuple(sorted(a.items())) for a in sent)
        assert sqlite_tallies["pairs"] and sqlite_tallies["days"]  # the comparison compared something


@contextmanager
def round_trips(app):
    """Every statement the app sends while the block runs, through SQLAlchemy (its
    ``before_cursor_execute`` event) or straight on a psycopg cursor, and the round trips they cost:
    one each, plus the BEGIN psycopg sends first outside autocommit, plus each COMMIT or ROLLBACK."""
    seen: list[str] = []
    trips: list[str] = []
    originals = {name: getattr(psycopg.Cursor, name) for name in ("execute", "executemany")}
    ends = {name: getattr(psycopg.Connection, name) for name in ("commit", "rollback")}

    def wrap(name):
        def sent(self, query, *args, **kwargs):
            connection = self.connection
            if not connection.autocommit and connection.info.transaction_status == pq.TransactionStatus.IDLE:
                trips.append("BEGIN")
            trips.append(str(query))
            return originals[name](self, query, *args, **kwargs)

        return sent

    def end(name):
        def ended(self):
            if self.info.transaction_status != pq.TransactionStatus.IDLE:
                trips.append(name.upper())
            return ends[name](self)

        return ended

    def listener(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", listener)
    for name in originals:
        setattr(psycopg.Cursor, name, wrap(name))
    for name in ends:
        setattr(psycopg.Connection, name, end(name))
    try:
        yield seen, trips
    finally:
        event.remove(engine, "before_cursor_execute", listener)
        for name, original in originals.items():
            setattr(psycopg.Cursor, name, original)
        for name, original in ends.items():
            setattr(psycopg.Connection, name, original)


@pytest.mark.skipif(not PG_URL, reason="the single statement is PostgreSQL's: TEST_DATABASE_URL is not set")
@pytest.mark.parametrize("keyed", [False, True])
def test_a_submission_is_one_statement_and_one_round_trip_on_postgresql(tmp_path, request, keyed):
    app = create_app(make_config("postgresql", tmp_path, request))
    client = app.test_client()
    with app.app_context():
        create_survey_from_spec(db.session, BY_LINK)
        db.session.commit()
    body = {"answers": {"drugs": 1, "often": 2, "region": 0, "team": 1, "age": 40}}
    api = "/api/surveys/by-link/responses"
    assert client.post(api, json={**body, "submission_key": "f" * 32}).status_code == 201  # warm up, daily purge
    try:
        for i in range(3):
            sent = {**body, "submission_key": f"{i:032x}"} if keyed else body
            with round_trips(app) as (seen, trips):
                assert client.post(api, json=sent).status_code == 201
            assert seen == []  # nothing through SQLAlchemy's execution layer...
            assert len(trips) == 1, trips  # ...and one statement, in one round trip, on the driver
            # the answers, the submission tally, and the submission listed for the fold of the others
            for table in ("answers", "submission_tallies", "pending_submissions"):
                assert f"INSERT INTO {table} " in trips[0]
            for table in ("answer_tallies", "day_tallies", "pair_tallies"):
                assert table not in trips[0]
        with app.app_context():
            survey = db.session.scalar(select(Survey).where(Survey.slug == "by-link"))
            assert tally_mismatches(db.session, survey) == []
    finally:
        with app.app_context():
            db.engine.dispose()


@pytest.mark.skipif(not PG_URL, reason="PostgreSQL's casts read the literals: TEST_DATABASE_URL is not set")
def test_the_arrays_of_a_submission_travel_as_literals_postgresql_reads_back_exactly():
    """The compiled statements send their array parameters as PostgreSQL's own text (``{3,-1,0}``,
    ``{t,f}``) rather than Python lists: what the casts make of them is exactly the lists, negative
    codes, a question with no answer (-1) and a shard above 9 included. The parameters themselves
    stay lists, for SQLAlchemy's statement (benchmarks/write_path.py sends it through Core)."""
    from survey.domain.responses.writes import (
        Feeds,
        array_literal,
        batch_statements,
        postgresql_submission,
        submission_params,
    )

    assert array_literal([3, -1, 0]) == "{3,-1,0}" and array_literal([True, False]) == "{t,f}"
    assert array_literal([]) == "{}"
    feeds = {
        7: Feeds(randomized=True, paired=True),
        12: Feeds(randomized=False, paired=False),
        30: Feeds(randomized=True, paired=False),
        41: Feeds(randomized=True, paired=True, coded=True),  # a randomized number's code names its shard
    }
    given = submission_params({30: -1, 7: 2, 12: -40, 41: 1234}, feeds, "postgresql", shard=13)
    assert given["values"] == [2, -40, -1, 1234]  # lists, as SQLAlchemy takes them
    compiled = postgresql_submission(False)
    assert compiled.arrays == {"questions", "values", "randomized", "paired", "shards"}
    params = compiled.params(given)
    assert params["values"] == "{2,-40,-1,1234}" and params["randomized"] == "{t,f,t,t}"
    assert {"submissions", "fresh", "released"} <= batch_statements("postgresql")[0].arrays
    with psycopg.connect(PG_URL.replace("postgresql+psycopg://", "postgresql://")) as conn:
        row = conn.execute(
            "SELECT %(questions)s::INTEGER[], %(values)s::INTEGER[], %(randomized)s::BOOLEAN[],"
            " %(paired)s::BOOLEAN[], %(shards)s::SMALLINT[]",
            params,
        ).fetchone()
    assert row[0] == [7, 12, 30, 41] and row[1] == [2, -40, -1, 1234]
    assert row[2] == [True, False, True, True] and row[3] == [True, False, False, True]
    assert row[4] == [13, 13, 13, 1234 % 16]
