"""The pair tallies' fold: a submission lists itself, a fold adds the listed ones later, and every
reader counts each submission exactly once whatever the fold has done, concurrent folds and
submissions included (survey.domain.responses.pending)."""

from __future__ import annotations

import logging
import socket
import threading
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from alembic import command
from sqlalchemy import func, select, text

from survey.domain.models import PendingSubmission, SubmissionTally, Survey
from survey.domain.responses import writes
from survey.domain.responses.pending import fold, fold_all, listed
from survey.domain.responses.tallies import (
    counts_statement,
    pair_tally_counts,
    question_kinds,
    rebuild_tallies,
    recount_pairs,
    recounted_cells,
    survey_counts,
    tally_mismatches,
)
from survey.domain.results.analysis import pair_counts
from survey.platform import background, folding
from survey.platform.extensions import db
from survey.platform.schema import alembic_config

from .live import serve
from .servers import post

API = "/api/surveys/small-test/responses"


def the_survey() -> Survey:
    return db.session.scalar(select(Survey).where(Survey.slug == "small-test"))


def answers(rng) -> dict:
    found = {"drugs": int(rng.integers(2)), "mirror": int(rng.integers(2)), "often": int(rng.integers(4))}
    if rng.random() < 0.7:
        found["age"] = int(rng.integers(2))
    return found


def questions(survey: Survey) -> dict:
    return {q.key: q for q in survey.questions}


def test_a_submission_is_listed_and_counted_by_every_reader_before_and_after_the_fold(app, client, small_survey):
    rng = np.random.default_rng(41)
    sent = [answers(rng) for _ in range(30)]
    for body in sent:
        assert client.post(API, json={"answers": body}).status_code == 201
    expected = Counter((a["often"], a.get("age")) for a in sent)
    with app.app_context():
        survey = the_survey()
        often, age = questions(survey)["often"], questions(survey)["age"]
        assert listed(db.session) == 30
        kept = writes.TALLY["pairs"].kept().where(writes.TALLY["pairs"].of_survey(survey.id))
        assert db.session.execute(kept).all() == []  # nothing folded yet...
        before = (pair_counts(db.session, often, age), pair_tally_counts(db.session, survey))
        assert before[0] == expected  # ...and every reader counts them all
        assert before[1] == recount_pairs(db.session, survey)
        assert tally_mismatches(db.session, survey) == []
        # a fold of part of them, then of the rest: the same counts at every step
        assert fold(db.session, batch=12) == 12 and listed(db.session) == 18
        assert (pair_counts(db.session, often, age), pair_tally_counts(db.session, survey)) == before
        assert fold_all(db.session) == 18 and listed(db.session) == 0
        assert (pair_counts(db.session, often, age), pair_tally_counts(db.session, survey)) == before
        assert len(db.session.execute(kept).all()) > 0
        assert fold_all(db.session) == 0  # nothing left: nothing done


def test_a_rebuild_unlists_the_surveys_submissions_and_counts_their_pairs_once(app, client, small_survey):
    rng = np.random.default_rng(42)
    for _ in range(12):
        assert client.post(API, json={"answers": answers(rng)}).status_code == 201
    with app.app_context():
        assert fold(db.session, batch=5) == 5
        survey = the_survey()
        before = pair_tally_counts(db.session, survey)
        rebuild_tallies(db.session, survey)
        db.session.commit()
        assert listed(db.session) == 0
        assert pair_tally_counts(db.session, survey) == before == recount_pairs(db.session, survey)
        assert tally_mismatches(db.session, survey) == []


def test_a_listed_submission_whose_row_is_gone_adds_nothing_and_is_dropped(app, client, small_survey):
    rng = np.random.default_rng(43)
    for _ in range(3):
        assert client.post(API, json={"answers": answers(rng)}).status_code == 201
    with app.app_context():
        survey = the_survey()
        before = pair_tally_counts(db.session, survey)
        db.session.add(PendingSubmission(submission_id=10_000))  # no such submission
        db.session.commit()
        assert pair_tally_counts(db.session, survey) == before
        assert fold_all(db.session) == 4 and listed(db.session) == 0
        assert pair_tally_counts(db.session, survey) == before == recount_pairs(db.session, survey)


def test_the_web_process_folds_in_the_background_at_most_once_per_interval(app, client, small_survey, monkeypatch):
    folding.clock(app).next_at = 0.0
    app.config["FOLD_SECONDS"] = 3600.0  # one fold now, none again during the test
    rng = np.random.default_rng(44)
    started = []
    monkeypatch.setattr(background, "run_later", lambda *a, real=background.run_later: started.append(a) or real(*a))
    for _ in range(5):
        assert client.post(API, json={"answers": answers(rng)}).status_code == 201
    assert background.settle(30)
    assert len(started) == 1  # after the first submission, not after the four others
    with app.app_context():
        # the fold ran after the first submission stored: it took that one, maybe more
        assert listed(db.session) < 5
        survey = the_survey()
        assert tally_mismatches(db.session, survey) == []
    app.config["FOLD_SECONDS"] = 0  # off: nothing started
    assert folding.fold_soon(app) is False


def test_a_host_of_four_workers_starts_a_fold_about_once_an_interval_not_four(app, monkeypatch):
    """Each of gunicorn's W workers folds at most every W × FOLD_SECONDS: four workers folding
    every second each upserted the same cells four times a second."""
    clock = [1000.0]
    # folding's own clock only: the time module itself stays as it is for every other thread
    monkeypatch.setattr(folding, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(background, "run_later", lambda *a: True)
    app.config["FOLD_SECONDS"] = 1.0

    def folds_started(processes: str) -> list[int]:
        """Over 10 s of submissions, one every 0.125 s (a step with no rounding): at which of them a fold
        was started."""
        monkeypatch.setenv("SURVEY_WORKER_PROCESSES", processes)
        folding.clock(app).next_at = 0.0
        started = []
        for i in range(80):
            if folding.fold_soon(app):
                started.append(i)
            clock[0] += 0.125
        return started

    assert folds_started("4") == [0, 32, 64]  # at 0, 4 and 8 s
    assert folds_started("1") == list(range(0, 80, 8))  # one process: every second
    assert folds_started("0") == folds_started("many") == list(range(0, 80, 8))  # not a count above 0: as one


def test_two_apps_in_one_process_keep_their_own_fold_clock(app, monkeypatch):
    """A fold one app started does not hold back another's in the same process (as the tests build
    one app after another): the interval is the app's, not the module's."""
    from survey import create_app

    monkeypatch.setattr(folding, "time", SimpleNamespace(monotonic=lambda: 1000.0))
    monkeypatch.setattr(background, "run_later", lambda *a: True)
    monkeypatch.setenv("SURVEY_WORKER_PROCESSES", "1")
    other = create_app({**app.config, "FOLD_SECONDS": 3600.0})
    app.config["FOLD_SECONDS"] = 3600.0
    assert folding.fold_soon(app) is True and folding.fold_soon(app) is False
    assert folding.fold_soon(other) is True and folding.fold_soon(other) is False
    assert folding.clock(app) is not folding.clock(other)


def test_a_fold_that_finds_the_database_down_notes_the_outage_once_and_logs_no_traceback(caplog, monkeypatch):
    """A fold started while the database is down (here: nothing listening at its address) is an
    outage like a request's, logged once by the process, not a background job's traceback per fold;
    gunicorn's crash test (tests/test_faults.py) met this when a fold was under way at the crash."""
    from survey import create_app
    from survey.platform.connections import outage_of

    with socket.socket() as probe:  # a port nothing listens at
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(
        {"SQLALCHEMY_DATABASE_URI": f"postgresql+psycopg://postgres@127.0.0.1:{port}/gone", "SECRET_KEY": "x"}
    )
    outage = outage_of(app)  # the app's own: no other test's outage is in it
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            assert background.run_later(app, folding._fold)
        assert background.settle(30)
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert [r.getMessage()[:20] for r in caplog.records if r.levelno >= logging.ERROR] == ["database unavailable"]
    assert outage.refused == 3 and outage.since is not None


def test_a_fold_that_a_working_database_refuses_is_not_taken_for_an_outage(app, monkeypatch):
    """A deadlock or a cancelled statement is the fold's own fault (its SQLSTATE says the database is
    up): it is raised, for the background thread to log with its traceback."""
    import psycopg
    from sqlalchemy import exc

    from survey.platform.connections import outage_of

    for error in (psycopg.errors.DeadlockDetected("deadlock detected"), psycopg.errors.QueryCanceled("canceled")):
        wrapped = exc.OperationalError("DELETE FROM pending_submissions ...", {}, error)
        monkeypatch.setattr(folding, "fold_all", lambda session, wrapped=wrapped: (_ for _ in ()).throw(wrapped))
        with pytest.raises(exc.OperationalError), app.app_context():  # as the background thread runs it
            folding._fold()
    assert outage_of(app).since is None and outage_of(app).refused == 0


@pytest.mark.parametrize("app", ["postgresql"], indirect=True)
def test_concurrent_folds_and_submissions_count_every_submission_exactly_once_at_every_moment(app, small_survey):
    """Four clients submit through a threaded server that starts a fold every 10 ms, two threads fold
    as fast as they can, and a reader checks in one statement (one snapshot) that the pairs counted
    for two questions every submission answers, and the answers and the answers by day counted for
    one of them (randomized), each equal the submissions counted: a submission both listed and
    folded, or neither, would show as a difference."""
    app.config["FOLD_SECONDS"] = 0.01
    with app.app_context():
        survey = the_survey()
        drugs, often = questions(survey)["drugs"], questions(survey)["often"]
        low, high = sorted((drugs, often), key=lambda q: q.id)
        dialect = db.engine.dialect.name
        pairs = writes.pair_cells(low, high, dialect).subquery()
        given = writes.question_cells(writes.TALLY["answers"], [drugs], dialect).subquery()
        by_day = writes.question_cells(writes.TALLY["days"], [drugs], dialect).subquery()
        snapshot = select(
            *(select(func.coalesce(func.sum(list(c.c)[-1]), 0)).scalar_subquery() for c in (pairs, given, by_day)),
            select(func.coalesce(func.sum(SubmissionTally.count), 0))
            .where(SubmissionTally.survey_id == survey.id)
            .scalar_subquery(),
        )
        db.engine.dispose()
    done = threading.Event()
    seen: list[tuple[int, int]] = []
    failures: list[BaseException] = []
    results: Counter = Counter()

    def guarded(work):
        def run(*args):
            try:
                work(*args)
            except BaseException as error:  # the main thread reports it
                failures.append(error)

        return run

    @guarded
    def submit(port: int, worker: int) -> None:
        rng = np.random.default_rng(500 + worker)
        for _ in range(60):
            results[post(port, {"answers": answers(rng)}, timeout=30)[0]] += 1

    @guarded
    def folder() -> None:
        with app.app_context():
            while not done.is_set():
                fold(db.session, batch=7)

    @guarded
    def reader() -> None:
        with app.app_context():
            while not done.is_set():
                *counted, submissions = db.session.execute(snapshot).one()
                seen.append((*(int(c) for c in counted), int(submissions)))
                db.session.rollback()

    with serve(app) as port:
        helpers = [threading.Thread(target=folder) for _ in range(2)] + [threading.Thread(target=reader)]
        clients = [threading.Thread(target=submit, args=(port, i)) for i in range(4)]
        for t in helpers + clients:
            t.start()
        for t in clients:
            t.join(timeout=120)
        done.set()
        for t in helpers:
            t.join(timeout=60)
    assert background.settle(60)
    assert not failures, failures
    assert results == {201: 240}
    assert len(seen) > 10 and all(len(set(s)) == 1 for s in seen), [s for s in seen if len(set(s)) > 1][:5]
    assert seen[-1][-1] > 0
    with app.app_context():
        survey = the_survey()
        assert tally_mismatches(db.session, survey) == []
        fold_all(db.session)
        assert listed(db.session) == 0
        assert tally_mismatches(db.session, survey) == []
        db.engine.dispose()


def test_a_downgrade_past_0024_folds_what_is_listed_first(app, client, small_survey):
    rng = np.random.default_rng(45)
    for _ in range(9):
        assert client.post(API, json={"answers": answers(rng)}).status_code == 201
    with app.app_context():
        survey = the_survey()
        expected = {t.name: recounted_cells(db.session, survey, t) for t in writes.DEFERRED}
        db.session.remove()
        command.downgrade(alembic_config(), "0023")
        try:
            # what 0023 has: the tallies alone, read without the list (0025's downgrade added the
            # answers and days it owed, 0024's the pairs)
            for tally in writes.DEFERRED:
                kept = db.session.execute(tally.kept().where(tally.of_survey(survey.id))).all()
                assert {tuple(row[:-1]): int(row[-1]) for row in kept} == expected[tally.name], tally.name
            db.session.remove()
        finally:
            command.upgrade(alembic_config(), "head")
        assert listed(db.session) == 0 and tally_mismatches(db.session, survey) == []


def test_the_upgrade_to_0025_adds_only_the_pairs_of_what_the_older_code_listed(app, client, small_survey):
    """At 0024 a listed submission is in the answer and day tallies already and owes its pairs
    alone: the upgrade must add those and nothing twice (the new fold would add its answers again)."""
    rng = np.random.default_rng(46)
    for _ in range(7):
        assert client.post(API, json={"answers": answers(rng)}).status_code == 201
    with app.app_context():
        survey = the_survey()
        db.session.remove()
        command.downgrade(alembic_config(), "0024")
        try:
            # what the older code leaves: every submission counted but for its pairs, and listed
            with db.engine.begin() as connection:
                connection.execute(text("DELETE FROM pair_tallies"))
                connection.execute(
                    text("INSERT INTO pending_pairs SELECT id FROM submissions WHERE survey_id = :s"), {"s": survey.id}
                )
                assert connection.execute(text("SELECT count(*) FROM pending_pairs")).scalar() == 7
        finally:
            command.upgrade(alembic_config(), "head")
        survey = the_survey()
        assert listed(db.session) == 0
        assert tally_mismatches(db.session, survey) == []
        assert sum(survey_counts(db.session, survey).by_question[survey.questions[0].id]) == 7


@pytest.mark.parametrize("app", ["postgresql"], indirect=True)
def test_the_apps_postgresql_connections_compile_nothing_to_machine_code(app):
    """JIT off (survey.platform.connections.no_jit_on_postgresql), and still off after a rollback."""
    with app.app_context():
        assert db.session.execute(text("SHOW jit")).scalar() == "off"
        db.session.rollback()
        assert db.session.execute(text("SHOW jit")).scalar() == "off"
        db.session.remove()


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_on_sqlite_the_list_drives_the_lookup_of_the_listed_answers(app, client, small_survey):
    """SQLite, given an index on the question, read every answer of the survey's questions and looked
    each up in the list, so every read of the counts grew with the survey (21 ms at 20,000
    submissions with nothing listed, benchmarks/fold_readers.md): each listed id must be looked up."""
    rng = np.random.default_rng(47)
    for _ in range(3):
        assert client.post(API, json={"answers": answers(rng)}).status_code == 201
    with app.app_context():
        survey = the_survey()
        statement = counts_statement(survey.id, question_kinds(survey), "sqlite")
        sql = str(statement.compile(dialect=db.engine.dialect, compile_kwargs={"literal_binds": True}))
        plan = [row[-1] for row in db.session.execute(text("EXPLAIN QUERY PLAN " + sql))]
        assert not [step for step in plan if step.startswith("SCAN answers")], plan
        assert [step for step in plan if step.startswith("SEARCH answers") and "(submission_id=?)" in step], plan
        assert sum(survey_counts(db.session, survey).by_question[questions(survey)["drugs"].id]) == 3


def _plan_nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _plan_nodes(child)


def _reads_of_the_list(nodes: list[dict]) -> list[dict]:
    return [
        n for n in nodes if n.get("Relation Name") == "pending_submissions" or n.get("Function Name") == "listed_ids"
    ]


@pytest.mark.parametrize("app", ["postgresql"], indirect=True)
def test_statistics_that_say_the_list_is_empty_leave_its_readers_and_the_fold_linear(app, client, small_survey):
    """The list is nearly empty at every moment, so an analyze (autovacuum's, once a minute on a
    default server) may record it empty; the planner then put it inside nested loops: a read of a
    pair with 1,000 listed took 3.3 s instead of about 20 ms, and the fold's delete probed the whole list
    per row (benchmarks/fold_readers.md). Gathered once per statement and planned at the size migration
    0026 declares, the list is read once, whatever its statistics say."""
    rng = np.random.default_rng(49)
    listed_now = 400
    with app.app_context():
        for _ in range(50):
            assert client.post(API, json={"answers": answers(rng)}).status_code == 201
        fold_all(db.session)
        db.session.commit()
        db.session.execute(text("ANALYZE pending_submissions"))  # as autovacuum would, at an empty moment
        db.session.commit()
        tuples, pages = db.session.execute(
            text("SELECT reltuples, relpages FROM pg_class WHERE oid = 'pending_submissions'::regclass")
        ).one()
        assert tuples == 0 and pages > 0  # "empty", and pages to scale that density by: the trap
        for _ in range(listed_now):
            assert client.post(API, json={"answers": answers(rng)}).status_code == 201
        assert listed(db.session) == listed_now
        survey = the_survey()
        low, high = sorted((questions(survey)["drugs"], questions(survey)["often"]), key=lambda q: q.id)
        read = writes.pair_cells(low, high).compile(dialect=db.engine.dialect, compile_kwargs={"literal_binds": True})
        plans = {"pair read": db.session.execute(text(f"EXPLAIN (ANALYZE, FORMAT JSON) {read}")).scalar()}
        statement = writes.postgresql_fold()
        params = statement.params({"batch": 2000, "shard": 0})
        with db.session.connection().connection.driver_connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement.sql}", params)
            plans["fold"] = cursor.fetchone()[0]
        db.session.rollback()  # the fold explained above was carried out: undone
        for name, plan in plans.items():
            nodes = list(_plan_nodes(plan[0]["Plan"]))
            reads = _reads_of_the_list(nodes)
            assert reads and all(n["Actual Loops"] == 1 for n in reads), name  # the list read once
            # rows handled by every node, summed: about 31 a listed submission for the read, 55 for the
            # fold; a list inside a nested loop handles listed × listed (160,000 here) or more
            assert sum(n["Actual Loops"] * n["Actual Rows"] for n in nodes) <= 100 * listed_now, name
        assert listed(db.session) == listed_now
        assert fold_all(db.session) == listed_now
        assert tally_mismatches(db.session, survey) == []
        db.session.remove()
