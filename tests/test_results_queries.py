"""The results page's cost in statements, and the numbers it keeps between views staying right.

The page's floor is the one SELECT of the tallies; what it sends besides (who is signed in, the
survey, its questions, the day tallies of the timelines) must stay a handful whatever the survey's
size, so a query per question creeping back in fails here. The timelines are kept between views
(survey/domain/results/kept.py), keyed on the counts read: a new submission must show at once.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from sqlalchemy import event, select

from survey.domain.models import Survey
from survey.domain.responses.tallies import question_mechanism
from survey.domain.results import kept
from survey.domain.results.live import LEVEL, timelines
from survey.platform.extensions import db
from survey.privacy import confidence_sequence, estimate

from .surveys import GOOD, SMALL_SPEC, SUBMISSIONS, submit_answers

#: Statements a results page may send: the signed-in user, the survey, its questions, their designs
#: and options, the tallies, the day tallies of the timelines; one spare.
MOST_STATEMENTS = 8


def _statements(app, fn) -> list[str]:
    """The SQL statements sent while ``fn`` runs."""
    seen: list[str] = []
    with app.app_context():
        engine = db.engine

    def log(conn, cursor, statement, *args) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", log)
    try:
        fn()
    finally:
        event.remove(engine, "before_cursor_execute", log)
    return seen


@pytest.fixture
def answered(client, small_survey):
    submit_answers(client, small_survey, SUBMISSIONS)
    return small_survey


def _last_day_answers(html: str) -> list[int]:
    """Per timeline on the page, the number of answers after its last day (its description says)."""
    return [int(n) for n in re.findall(r"After the last day \((\d+) answers\)", html)]


def test_the_results_page_sends_a_bounded_number_of_statements(app, signed_in, answered):
    slug = SMALL_SPEC["slug"]
    signed_in.get(f"/surveys/{slug}/results")  # first view: nothing to compare against yet
    responses = []
    statements = _statements(app, lambda: responses.append(signed_in.get(f"/surveys/{slug}/results")))
    assert responses[0].status_code == 200
    assert len(statements) <= MOST_STATEMENTS, "\n".join(statements)
    tally_reads = [s for s in statements if "answer_tallies" in s]
    assert len(tally_reads) == 1, tally_reads  # one read of the tallies, not one per question
    assert sum("day_tallies" in s for s in statements) == 1  # every timeline from one query


def test_a_new_submission_shows_on_the_next_view_of_the_page(app, signed_in, answered):
    slug = SMALL_SPEC["slug"]
    before = signed_in.get(f"/surveys/{slug}/results").get_data(as_text=True)
    randomized = sum(1 for q in SMALL_SPEC["questions"] if "privacy" in q)
    assert _last_day_answers(before) == [len(SUBMISSIONS)] * randomized
    submit_answers(signed_in, slug, [GOOD])
    after = signed_in.get(f"/surveys/{slug}/results").get_data(as_text=True)
    assert _last_day_answers(after) == [len(SUBMISSIONS) + 1] * randomized


def test_kept_timelines_equal_computing_them_afresh_and_follow_new_submissions(app, client, answered):
    def read() -> dict[str, tuple[list[int], list[float], list[float], list[float]]]:
        with app.app_context():
            survey = db.session.scalar(select(Survey).where(Survey.slug == answered))
            questions = survey.randomized_option_questions
            return {
                q.key: (t.n, t.share, t.low, t.high)
                for q, t in zip(questions, timelines(db.session, questions).values(), strict=True)
            }

    def afresh() -> dict[str, tuple[list[int], list[float], list[float], list[float]]]:
        with app.app_context():
            survey = db.session.scalar(select(Survey).where(Survey.slug == answered))
            out = {}
            for q in survey.randomized_option_questions:
                mechanism = question_mechanism(q)
                answers = [s.get(q.key) for s in SUBMISSIONS + extra]
                counts = np.array([answers.count(c) for c in range(len(q.options))])
                estimates, live = (
                    estimate(mechanism, counts[None, :]),
                    confidence_sequence(mechanism, counts[None, :], LEVEL),
                )
                out[q.key] = (
                    [int(counts.sum())],
                    [float(estimates.proportions[0, 0])],
                    [float(live.low[0, 0])],
                    [float(live.high[0, 0])],
                )
            return out

    extra: list[dict] = []
    kept.forget()
    assert read() == afresh()
    assert read() == afresh()  # now from what was kept
    extra.append(GOOD)
    submit_answers(client, answered, extra)
    assert read() == afresh()
