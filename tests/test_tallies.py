"""Running tallies: kept in each submission's transaction, always equal to a recount, and the only
thing estimates read (so their cost does not grow with respondents)."""

from __future__ import annotations

import re
import threading
from collections import Counter

import numpy as np
import pytest
from sqlalchemy import select, text

from survey.domain.models import TALLY_SHARDS, DayTally, PairTally, Survey
from survey.domain.responses.codes import generate_codes
from survey.domain.responses.mixing import held_count, question_kinds, release
from survey.domain.responses.pending import fold_all
from survey.domain.responses.tallies import (
    rebuild_tallies,
    recount,
    survey_counts,
    survey_results,
    tally_mismatches,
)
from survey.domain.results.analysis import compare
from survey.domain.results.exports import estimates_document
from survey.domain.surveys.lifecycle import close
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

from .databases import statements
from .live import serve
from .servers import post
from .surveys import GOOD, SMALL_SPEC


def the_survey(slug: str = "small-test") -> Survey:
    return db.session.scalar(select(Survey).where(Survey.slug == slug))


def random_answers(rng) -> dict:
    return {"drugs": int(rng.integers(2)), "mirror": int(rng.integers(2)), "often": int(rng.integers(4))}


def test_every_stored_submission_is_counted_and_every_refused_one_is_not(app, client, small_survey):
    rng = np.random.default_rng(1)
    expected = {key: Counter() for key in ("drugs", "mirror", "often", "age")}
    for i in range(60):
        answers = random_answers(rng)
        if i % 3:
            answers["age"] = int(rng.integers(2))  # optional: sometimes left out
        assert client.post("/api/surveys/small-test/responses", json={"answers": answers}).status_code == 201
        for key, code in answers.items():
            expected[key][code] += 1
    refused = [
        {"answers": {**GOOD, "often": 9}},  # a code outside the options
        {"answers": {"drugs": 1}},  # required questions missing
        {"answers": {**GOOD, "nope": 1}},  # an unknown question
    ]
    for body in refused:
        assert client.post("/api/surveys/small-test/responses", json=body).status_code == 400
    assert client.post("/s/small-test", data={"q_drugs": "7"}).status_code == 400
    with app.app_context():
        survey = the_survey()
        counts = survey_counts(db.session, survey)
        assert counts.submissions == 60
        for q in survey.questions:
            assert counts.by_question[q.id].tolist() == [expected[q.key][c] for c in range(len(q.options))]
        assert tally_mismatches(db.session, survey) == []
        close(survey)
        db.session.commit()
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 409
    with app.app_context():
        assert survey_counts(db.session, the_survey()).submissions == 60


def test_a_used_invitation_code_adds_nothing_anywhere(app, client, user):
    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "access": "invitation"})
        db.session.flush()
        code = generate_codes(db.session, survey, 1)[0]
        db.session.commit()
    body = {"answers": GOOD, "invitation": code}
    assert client.post("/api/surveys/small-test/responses", json=body).status_code == 201
    second = client.post("/api/surveys/small-test/responses", json=body)
    assert second.status_code == 403 and "already been used" in second.json["error"]
    with app.app_context():
        survey = the_survey()
        assert held_count(db.session, survey.id) == 1  # held until its batch is released
        release(db.session, survey.id, question_kinds(survey), force=True)
        assert survey_counts(db.session, survey).submissions == 1
        assert tally_mismatches(db.session, survey) == []


def writes(found: list[str]) -> list[str]:
    return [s for s in found if re.match(r"\s*(WITH|INSERT|UPDATE|DELETE)", s, re.I)]


def test_a_submission_costs_the_same_few_statements_whatever_the_number_of_questions(app, client, user):
    many = {
        "title": "Thirty questions",
        "slug": "thirty",
        "questions": [
            {"key": f"q{i}", "kind": "yes_no", "text": f"Q{i}?", "privacy": {"design": "warner", "p": 0.8}}
            for i in range(30)
        ],
    }
    with app.app_context():
        create_survey_from_spec(db.session, SMALL_SPEC)
        create_survey_from_spec(db.session, many)
        db.session.commit()
    counted = {}
    for slug, answers in (("small-test", GOOD), ("thirty", {f"q{i}": i % 2 for i in range(30)})):
        client.post(f"/api/surveys/{slug}/responses", json={"answers": answers})  # warm up
        with statements(app) as seen:
            assert client.post(f"/api/surveys/{slug}/responses", json={"answers": answers}).status_code == 201
        counted[slug] = (len(seen), len(writes(seen)))
    assert counted["small-test"] == counted["thirty"]
    with app.app_context():
        postgresql = db.engine.dialect.name == "postgresql"
    # the survey's questions were read by the first submission; then PostgreSQL needs one statement
    # (so one round trip) per submission, SQLite five: BEGIN IMMEDIATE (the write lock first), then four
    # writes (the submission, its answers, the submission tally and its listing for the fold)
    assert counted["thirty"] == ((1, 1) if postgresql else (5, 4))


def test_estimates_never_read_the_answers_and_cost_the_same_at_any_size(app, client, small_survey):
    """The only answers the estimates read are those of the submissions not yet folded into the
    answer tallies, read from the list of them (here the first 5 are folded by the third size, the
    rest not)."""
    rng = np.random.default_rng(2)
    sizes = {}
    for total in (0, 5, 150):
        if total == 150:
            with app.app_context():
                assert fold_all(db.session) == 5
        while True:
            with app.app_context():
                if survey_counts(db.session, the_survey()).submissions >= total:
                    break
            client.post("/api/surveys/small-test/responses", json={"answers": random_answers(rng)})
        with statements(app) as seen, app.app_context():
            document = estimates_document(db.session, the_survey())
            db.session.remove()
        assert document["survey"]["submissions"] == total
        drugs = next(q for q in document["questions"] if q["key"] == "drugs")
        assert sum(c["reported"] for c in drugs["categories"]) == total  # folded or listed, each counted once
        read = [s for s in seen if re.search(r"\b(FROM|JOIN)\s+(answers|submissions)\b", s, re.I)]
        assert all(re.search(r"\bFROM pending_submissions\b", s) for s in read), read
        sizes[total] = len(seen)
    assert len(set(sizes.values())) == 1, sizes


def test_comparisons_read_the_pair_and_day_tallies_never_the_answers(app, client, small_survey):
    """Breakdowns by a direct question and by week, and associations, cost the same at any size: the
    only answers they read are those of the submissions not yet folded into the pair tallies, read
    from the list of them (here the first 5 are folded by the time of the second size, the rest not)."""
    rng = np.random.default_rng(4)
    sizes = {}
    for total in (5, 60):
        if total == 60:
            with app.app_context():
                assert fold_all(db.session) == 5
        while True:
            with app.app_context():
                if survey_counts(db.session, the_survey()).submissions >= total:
                    break
            answers = random_answers(rng) | ({"age": int(rng.integers(2))} if rng.random() < 0.7 else {})
            client.post("/api/surveys/small-test/responses", json={"answers": answers})
        with app.app_context():
            survey = the_survey()
            assert tally_mismatches(db.session, survey) == []  # pairs and days equal their GROUP BY
        with statements(app) as seen, app.app_context():
            survey = the_survey()
            got = {by: compare(db.session, survey, "often", by).to_dict() for by in ("age", "week")}
            association = compare(db.session, survey, "often", "drugs").to_dict()
            db.session.remove()
        # every respondent is in one group, those who skipped "age" in a group of their own
        for data in got.values():
            assert sum(g["n"] for g in data["groups"]) == total
        assert sum(c["reported"] for c in association["cells"]) == total
        read = [s for s in seen if re.search(r"\b(FROM|JOIN)\s+(answers|submissions)\b", s, re.I)]
        assert read and all(re.search(r"\bFROM pending_submissions\b", s) for s in read), read
        sizes[total] = len(seen)
    assert len(set(sizes.values())) == 1, sizes


def test_a_wrong_pair_or_day_tally_is_found_and_rebuilt(app, client, small_survey):
    rng = np.random.default_rng(5)
    for _ in range(15):
        client.post("/api/surveys/small-test/responses", json={"answers": random_answers(rng) | {"age": 0}})
    with app.app_context():
        assert fold_all(db.session) == 15
    for table, words in ((PairTally, "pairs of answers"), (DayTally, "answers per day")):
        with app.app_context():
            survey = the_survey()
            row = db.session.scalars(select(table)).first()
            row.count += 2
            db.session.commit()
            assert any(words in problem for problem in tally_mismatches(db.session, survey))
            rebuild_tallies(db.session, survey)
            db.session.commit()
            assert tally_mismatches(db.session, survey) == []


def test_recount_command_finds_a_wrong_tally_and_fix_rebuilds_it(app, client, runner, small_survey):
    rng = np.random.default_rng(3)
    for _ in range(20):
        client.post("/api/surveys/small-test/responses", json={"answers": random_answers(rng)})
    result = runner.invoke(args=["recount"])
    assert result.exit_code == 0 and "tallies agree" in result.output
    with app.app_context():
        db.session.execute(text("UPDATE answer_tallies SET count = count + 5 WHERE value = 1"))
        one_shard = "shard = (SELECT min(shard) FROM submission_tallies)"
        db.session.execute(text(f"UPDATE submission_tallies SET count = count + 1 WHERE {one_shard}"))
        db.session.commit()
    result = runner.invoke(args=["recount", "small-test"])
    assert result.exit_code != 0
    assert "differ" in result.output and "submissions: tally 21, recount 20" in result.output
    result = runner.invoke(args=["recount", "small-test", "--fix"])
    assert result.exit_code == 0 and "now: agree" in result.output
    with app.app_context():
        assert tally_mismatches(db.session, the_survey()) == []
    assert runner.invoke(args=["recount", "no-such-survey"]).exit_code != 0


REBUILD_ROUNDS = 150


def test_rebuilding_while_submissions_arrive_loses_and_doubles_nothing(app, small_survey):
    """A rebuild (after a bulk load, or a repair) running beside live submissions, many times over.

    It hunts the deadlock a rebuild that locked the two tally tables could meet on PostgreSQL: a
    submission's statement takes its table locks in an order the server chooses (a prepared plan,
    which psycopg switches to after a few runs, takes them in the other order), so the two could
    each hold one and wait for the other. With that lock, this test failed in 8 runs out of 8; a
    rebuild that locks one table never deadlocks, and no submission is refused or lost meanwhile.
    """
    from survey.domain.responses.submissions import record_submission, submission_form

    acknowledged = Counter()
    failures: list[str] = []
    stop = threading.Event()
    progress = threading.Condition()

    def load(worker: int) -> None:
        rng = np.random.default_rng(worker)
        with app.app_context():
            form = submission_form(db.session, "small-test")
            db.session.rollback()
            try:
                while not stop.is_set():
                    record_submission(db.session, form, random_answers(rng))
                    with progress:
                        acknowledged[worker] += 1
                        progress.notify_all()
            except Exception as error:  # reported below: any refusal or error fails the test
                failures.append(f"submission: {error!r}")
            finally:
                db.session.remove()

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        with app.app_context():
            for round_ in range(REBUILD_ROUNDS):
                # each rebuild waits for one more acknowledged submission, so that the two interleave
                # on SQLite too, where a rebuild looping at full speed would keep the one write lock
                with progress:
                    progress.wait_for(lambda r=round_: sum(acknowledged.values()) > r or bool(failures), timeout=60)
                rebuild_tallies(db.session, the_survey())
                db.session.commit()
                if failures:
                    break
    except Exception as error:
        failures.append(f"rebuild: {error!r}")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert failures == []
    with app.app_context():
        survey = the_survey()
        assert tally_mismatches(db.session, survey) == []
        assert survey_counts(db.session, survey).submissions == sum(acknowledged.values()) > REBUILD_ROUNDS


def test_concurrent_submissions_spread_over_shards_and_sum_exactly(app, small_survey):
    with app.app_context():
        db.engine.dispose()
    with serve(app) as port:
        results = Counter()

        def load(worker: int) -> None:
            rng = np.random.default_rng(100 + worker)
            for _ in range(40):
                results[post(port, {"answers": random_answers(rng)}, timeout=30)[0]] += 1

        threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert results == {201: 160}
    with app.app_context():
        survey = the_survey()
        assert tally_mismatches(db.session, survey) == []
        shards = db.session.scalars(text("SELECT DISTINCT shard FROM submission_tallies")).all()
        assert len(shards) > 1 and all(0 <= s < TALLY_SHARDS for s in shards)
        kept = survey_counts(db.session, survey)
        again = recount(db.session, survey)
        for r in survey_results(db.session, survey):
            qid = r.question.id
            assert r.counts.tolist() == again.by_question[qid].tolist() == kept.by_question[qid].tolist()


@pytest.mark.parametrize("bad", [{"often": -1}, {"often": 4}, {"drugs": "yes"}])
def test_a_refused_submission_through_the_form_changes_no_tally(app, client, small_survey, bad):
    data = {f"q_{k}": str(v) for k, v in {**GOOD, **bad}.items()}
    assert client.post("/s/small-test", data=data).status_code == 400
    with app.app_context():
        counts = survey_counts(db.session, the_survey())
        assert counts.submissions == 0
        assert all(int(c.sum()) == 0 for c in counts.by_question.values())


DAYS = {"none": None, "yesterday": -1, "today": 0, "tomorrow": 1}


def test_the_database_accepts_exactly_when_the_survey_says_it_accepts(app, small_survey):
    """The write checks, in SQL, the rule that ``Survey.accepting_on`` states in Python."""
    import datetime as dt
    import itertools

    from survey.domain.models import today
    from survey.domain.responses.submissions import submission_form, write_submission

    day = today()
    with app.app_context():
        form = submission_form(db.session, "small-test")
        db.session.rollback()
        values = {f.id: 0 for f in form.fields}
        combinations = itertools.product(("open", "closed"), DAYS, DAYS, ("link", "invitation"))
        for status, opens, closes, access in combinations:
            survey = the_survey()
            survey.status, survey.access = status, access
            survey.opens_on = None if DAYS[opens] is None else day + dt.timedelta(days=DAYS[opens])
            survey.closes_on = None if DAYS[closes] is None else day + dt.timedelta(days=DAYS[closes])
            db.session.commit()
            expected = survey.accepting_on(day)[0] and access == "link"
            stored = write_submission(db.session, form, day, values, "link")
            db.session.rollback()
            assert stored.stored == expected, (status, opens, closes, access)
            db.session.execute(text("DELETE FROM answer_tallies"))
            db.session.execute(text("DELETE FROM submission_tallies"))
            db.session.execute(text("DELETE FROM answers"))
            db.session.execute(text("DELETE FROM submissions"))
            db.session.commit()


def test_a_survey_switched_to_invitations_refuses_a_sender_who_saw_it_open(app, client, small_survey):
    """The form (and its access mode) is kept per process; the write checks the access again."""
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 201
    with app.app_context():
        the_survey().access = "invitation"
        db.session.commit()
    refused = client.post("/api/surveys/small-test/responses", json={"answers": GOOD})
    assert refused.status_code == 403 and "invitation" in refused.json["error"]
    with app.app_context():
        survey = the_survey()
        code = generate_codes(db.session, survey, 1)[0]
        db.session.commit()
    body = {"answers": GOOD, "invitation": code}
    assert client.post("/api/surveys/small-test/responses", json=body).status_code == 201
    with app.app_context():
        the_survey().access = "link"
        db.session.commit()
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 201
    with app.app_context():
        survey = the_survey()
        assert survey_counts(db.session, survey).submissions == 2 and held_count(db.session, survey.id) == 1
        release(db.session, survey.id, question_kinds(survey), force=True)
        assert survey_counts(db.session, the_survey()).submissions == 3
        assert tally_mismatches(db.session, the_survey()) == []


def test_sqlite_connections_wait_for_the_writer_instead_of_failing(app):
    with app.app_context():
        if db.engine.dialect.name != "sqlite":
            pytest.skip("a SQLite setting")
        waited = db.session.execute(text("PRAGMA busy_timeout")).scalar()
    assert waited == 30_000
