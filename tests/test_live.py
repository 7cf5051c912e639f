"""Live results on the pages: live intervals, the estimate over time, stopping when precise, the
anytime-valid test. The mathematics is tested in test_privacy_sequences.py; here, that the pages
and the API show exactly what the privacy core computes from the survey's own tallies.
"""

from __future__ import annotations

import datetime as dt
import math
import re

import numpy as np
import pytest
from sqlalchemy import select, update

from survey.domain.models import Submission, Survey
from survey.domain.responses.tallies import rebuild_tallies, survey_counts
from survey.domain.results import live
from survey.domain.results.live import live_status, timeline
from survey.platform.extensions import db
from survey.privacy import CoinFlip, anytime_test, confidence_sequence, estimate
from survey.privacy.sequences import log_mixture_martingale

from .surveys import LIVE_SPEC, add_survey

DESIGN = CoinFlip(0.75, 0.5)


@pytest.fixture
def live_survey(app, user):
    return add_survey(app, LIVE_SPEC)


def _survey():
    return db.session.scalar(select(Survey).where(Survey.slug == "live"))


def _send(client, reports: list[int]) -> None:
    for i, reported in enumerate(reports):
        response = client.post("/api/surveys/live/responses", json={"answers": {"smoked": reported, "group": i % 2}})
        assert response.status_code == 201, response.get_json()


REPORTS = [0] * 14 + [1] * 26  # stored codes: 0 is "yes"


def test_live_intervals_are_the_privacy_cores_on_the_tallies(app, client, live_survey):
    _send(client, REPORTS)
    with app.app_context():
        status = live_status(db.session, _survey())
    (q,) = status.questions
    expected = confidence_sequence(DESIGN, np.array([14, 26]), 0.95)
    np.testing.assert_array_equal(q.sequence.low, expected.low)
    np.testing.assert_array_equal(q.sequence.high, expected.high)
    assert q.n == 40 and q.half_width == pytest.approx(float(np.max(expected.half_width)))
    # the interval's upper end is where the mixture martingale, evaluated directly, reaches 1/α = 20
    a, b = DESIGN.affine_coefficients(0)
    assert float(log_mixture_martingale(14, 40, a * q.sequence.high[0] + b)) == pytest.approx(math.log(20), abs=1e-6)
    assert q.reached == (q.half_width <= 0.25) and status.all_reached == q.reached


def test_the_estimate_over_time_adds_each_days_counts(app, client, live_survey):
    _send(client, REPORTS)
    days = [dt.date(2026, 11, 2), dt.date(2026, 11, 4), dt.date(2026, 11, 9)]
    with app.app_context():
        ids = db.session.scalars(select(Submission.id).order_by(Submission.id)).all()
        for i, sid in enumerate(ids):
            db.session.execute(update(Submission).where(Submission.id == sid).values(submitted_on=days[i % 3]))
        rebuild_tallies(db.session, _survey())  # the day tallies follow the stored days after a recount
        db.session.commit()
        question = _survey().questions[0]
        line = timeline(db.session, question).to_dict()
    per_day = np.zeros((3, 2), dtype=int)
    for i, reported in enumerate(REPORTS):
        per_day[i % 3, reported] += 1
    cumulative = np.cumsum(per_day, axis=0)
    assert line["days"] == [d.isoformat() for d in days] and line["n"] == [14, 27, 40]
    assert line["share"] == estimate(DESIGN, cumulative).proportions[:, 0].tolist()
    live = confidence_sequence(DESIGN, cumulative)
    assert (line["live_low"], line["live_high"]) == (live.low[:, 0].tolist(), live.high[:, 0].tolist())


def test_the_results_page_shows_the_live_interval_its_meaning_and_a_chart_over_time(signed_in, live_survey):
    _send(signed_in, REPORTS)
    page = signed_in.get("/surveys/live/results").get_data(as_text=True)
    assert "valid however often you look" in page
    low, high = confidence_sequence(DESIGN, np.array([14, 26])).low, confidence_sequence(DESIGN, [14, 26]).high
    assert f'<td class="interval live">{100 * low[0]:.1f}% to {100 * high[0]:.1f}%</td>' in page
    assert 'aria-labelledby="timeline-smoked-title timeline-smoked-desc"' in page
    assert "target margin of ±25.0 points" in page


def test_the_live_api_gives_intervals_in_the_exports_codes(signed_in, live_survey):
    _send(signed_in, REPORTS)
    document = signed_in.get("/api/surveys/live/live").get_json()
    (q,) = document["questions"]
    live = confidence_sequence(DESIGN, np.array([14, 26]))
    by_code = {c["code"]: c for c in q["intervals"]}
    assert by_code[1]["label"] == "yes" and by_code[1]["low"] == live.low[0]  # yes = 1, as in the exports
    assert by_code[0]["high"] == live.high[1]
    assert q["timeline"]["n"] == [40] and document["target_margin"] == 0.25


# -- stopping --------------------------------------------------------------------------------------


def _set_auto_close(signed_in, on: bool):
    page = signed_in.get("/surveys/live/share").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    data = {"csrf_token": token, **({"auto_close": "y"} if on else {})}
    return signed_in.post("/surveys/live/auto-close", data=data)


def _first_precise(reports: list[int]) -> int:
    """The number of reports at which the live interval of ``smoked`` first reaches the margin (0.25)."""
    counts = np.zeros(2, dtype=int)
    for n, reported in enumerate(reports, 1):
        counts[reported] += 1
        if float(np.max(confidence_sequence(DESIGN, counts, 0.95).half_width)) <= 0.25:
            return n
    raise AssertionError("never precise")


def test_a_survey_set_to_close_itself_closes_once_precise_and_refuses_the_next_answer(app, signed_in, live_survey):
    assert _set_auto_close(signed_in, True).status_code == 303
    rng = np.random.default_rng(8)
    sent: list[int] = []
    while True:
        reported = int(DESIGN.randomize(np.array([int(rng.random() >= 0.3)]), rng)[0])
        response = signed_in.post("/api/surveys/live/responses", json={"answers": {"smoked": reported, "group": 0}})
        if response.status_code == 409:
            assert "closed" in response.get_json()["error"]
            break
        assert response.status_code == 201
        sent.append(reported)
        assert len(sent) < 2000, "never closed"
    with app.app_context():
        survey = _survey()
        status = live_status(db.session, survey)
        assert survey.status == "closed" and status.all_reached
        counts = survey_counts(db.session, survey).by_question[survey.questions[0].id]
    assert counts.sum() == len(sent)
    # it closed once precise, and no later than the check schedule allows: at most n/50 submissions
    # after the first moment it could (live.RECHECK_DIVISOR), not after every one
    first = _first_precise(sent)
    assert first <= len(sent) <= first + max(1, first // live.RECHECK_DIVISOR)
    page = signed_in.get("/surveys/live/share").get_data(as_text=True)
    assert "Precise enough" in page and "Reopen" in page


def test_a_survey_far_from_its_margin_is_checked_seldom_not_after_every_submission(
    app, signed_in, live_survey, monkeypatch
):
    """Checking reads every tally and computes every live interval: a survey set to close by itself
    pays it when its count reaches the next check's, not on each submission."""
    with app.app_context():
        db.session.execute(update(Survey).where(Survey.slug == "live").values(target_margin=0.001))
        db.session.commit()
    assert _set_auto_close(signed_in, True).status_code == 303
    checks: list[int] = []
    decide = live.live_status

    def counted(session, survey, counts=None):
        checks.append(1)
        return decide(session, survey, counts)

    monkeypatch.setattr(live, "live_status", counted)
    _send(signed_in, [0, 1] * 150)
    with app.app_context():
        survey = _survey()
        assert survey.status == "open" and survey.auto_close
        # the next check is due beyond the count, at most 2% of it further
        assert 300 < survey.auto_close_due <= 300 + max(1, 300 // live.RECHECK_DIVISOR) + 1
    # the schedule far from the margin: after every submission up to 100, then every n/50 (164 checks
    # for 300 submissions, ~660 for a million); before, a check after each
    due, scheduled = 1, 0
    while due <= 300:
        scheduled += 1
        due += max(1, due // live.RECHECK_DIVISOR)
    assert len(checks) == scheduled < 300


def test_without_the_setting_a_precise_survey_stays_open(app, client, live_survey):
    _send(client, [0, 1] * 200)
    with app.app_context():
        survey = _survey()
        assert live_status(db.session, survey).all_reached and survey.status == "open"


def test_turning_the_setting_on_closes_a_survey_that_is_already_precise(app, signed_in, live_survey):
    _send(signed_in, [0, 1] * 200)
    response = _set_auto_close(signed_in, True)
    assert response.status_code == 303
    with app.app_context():
        assert _survey().status == "closed" and _survey().auto_close
    # reopening switches closing by itself off, or the next answer would close the survey again
    page = signed_in.get("/surveys/live/share").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    assert signed_in.post("/surveys/live/reopen", data={"csrf_token": token}).status_code == 303
    _send(signed_in, [0])
    with app.app_context():
        assert _survey().status == "open" and not _survey().auto_close


# -- the anytime-valid test ------------------------------------------------------------------------


def test_the_anytime_test_api_is_the_privacy_cores_test(signed_in, live_survey):
    _send(signed_in, REPORTS)
    document = signed_in.get("/api/surveys/live/anytime-test?question=smoked&threshold=0.05").get_json()
    expected = anytime_test(DESIGN, [14, 26], threshold=0.05, category=0)
    assert document["p_value"] == expected.p_value and document["e_value"] == expected.e_value
    assert document["category"] == 1 and document["label"] == "yes"  # the exports' code of "yes"
    below = signed_in.get("/api/surveys/live/anytime-test?question=smoked&threshold=0.9&alternative=less").get_json()
    assert below["p_value"] == anytime_test(DESIGN, [14, 26], 0.9, category=0, alternative="less").p_value


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("question=group&threshold=0.1", "question"),
        ("question=smoked&threshold=ten", "threshold"),
        ("question=smoked&threshold=1.5", "threshold"),
        ("question=smoked&threshold=0.1&alternative=sideways", "alternative"),
        ("question=smoked&threshold=0.1&category=7", "category"),
    ],
)
def test_a_bad_anytime_test_is_a_400_that_says_which_input(signed_in, live_survey, query, path):
    _send(signed_in, REPORTS[:5])
    response = signed_in.get(f"/api/surveys/live/anytime-test?{query}")
    assert response.status_code == 400 and response.get_json()["path"] == [path]


def test_the_results_page_runs_the_test_a_researcher_types(signed_in, live_survey):
    _send(signed_in, REPORTS)
    page = signed_in.get("/surveys/live/results?test=smoked&threshold=5&alternative=greater").get_data(as_text=True)
    expected = anytime_test(DESIGN, [14, 26], threshold=0.05, category=0)
    assert f"Anytime-valid p = {expected.p_value:.3g}" in page
    wrong = signed_in.get("/surveys/live/results?test=smoked&threshold=lots").get_data(as_text=True)
    assert "as a percentage" in wrong
