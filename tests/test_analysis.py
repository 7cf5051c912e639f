"""Comparisons on the results side: breakdowns by a direct question and by week, associations.

Each number is held against the privacy core applied to counts the test makes itself from what it
submitted: a breakdown's group is ``estimate`` on that group's own counts, an association is
``association`` on the table of reported pairs.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections import Counter

import numpy as np
import pytest
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from survey.domain.models import Submission, Survey
from survey.domain.responses.tallies import rebuild_tallies
from survey.domain.results.analysis import NO_ANSWER, regression, week_label
from survey.platform.extensions import db
from survey.privacy import association, breakdown, estimate

from .surveys import SMALL_SPEC, submit_answers

SLUG = SMALL_SPEC["slug"]
N = 60
# a deterministic mix in which "drugs" depends on "age": the young report "yes" (code 0) more often
SUBMISSIONS = []
for i in range(N):
    age = None if i % 10 == 0 else i % 2
    answers = {"drugs": 0 if (age == 0) == (i % 3 != 0) else 1, "mirror": (i // 3) % 2, "often": i % 4}
    if age is not None:
        answers["age"] = age
    SUBMISSIONS.append(answers)


@pytest.fixture
def answered(client, small_survey):
    submit_answers(client, small_survey, SUBMISSIONS)
    return small_survey


@pytest.fixture
def mechanisms(app, small_survey):
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == small_survey))
        return {q.key: q.mechanism() for q in survey.randomized_questions}


def _counts(key: str, where, k: int) -> np.ndarray:
    tally = Counter(s[key] for s in SUBMISSIONS if where(s))
    return np.array([tally[c] for c in range(k)])


def test_breakdown_groups_are_each_estimated_on_their_own_counts(signed_in, answered, mechanisms):
    got = signed_in.get(f"/api/surveys/{answered}/compare?question=drugs&by=age")
    assert got.status_code == 200, got.get_json()
    data = got.get_json()
    assert data["kind"] == "breakdown" and data["category"] == "yes"
    groups = {
        "young": _counts("drugs", lambda s: s.get("age") == 0, 2),
        "old": _counts("drugs", lambda s: s.get("age") == 1, 2),
        NO_ANSWER: _counts("drugs", lambda s: "age" not in s, 2),
    }
    assert [g["label"] for g in data["groups"]] == list(groups)
    expected = breakdown(mechanisms["drugs"], groups)
    for row, (label, counts) in zip(data["groups"], groups.items(), strict=True):
        own = estimate(mechanisms["drugs"], counts)
        low, high = own.ci()
        assert row["n"] == counts.sum()
        assert row["share"] == own.proportions[0] and (row["ci_low"], row["ci_high"]) == (low[0], high[0])
        assert row["comparison"] == expected[label].comparison.to_dict()
    assert data["total"]["n"] == N
    assert data["homogeneity_p_value"] == pytest.approx(expected.homogeneity_p_value, abs=0)


def test_breakdown_by_week_groups_by_the_monday_of_each_submission(app, signed_in, answered, mechanisms):
    days = [dt.date(2026, 11, 2), dt.date(2026, 11, 8), dt.date(2026, 11, 9)]  # Monday, Sunday, Monday
    with app.app_context():
        ids = db.session.scalars(select(Submission.id).order_by(Submission.id)).all()
        for i, sid in enumerate(ids):
            db.session.execute(update(Submission).where(Submission.id == sid).values(submitted_on=days[i % 3]))
        # the day tallies are derived data: a change of the stored days is followed by a recount
        rebuild_tallies(db.session, db.session.scalar(select(Survey).where(Survey.slug == answered)))
        db.session.commit()
    data = signed_in.get(f"/api/surveys/{answered}/compare?question=often&by=week&category=2").get_json()
    assert [g["label"] for g in data["groups"]] == ["week of 2026-11-02", "week of 2026-11-09"]
    assert week_label(dt.date(2026, 11, 8)) == "week of 2026-11-02"
    first = np.array([0, 0, 0, 0])
    for i, s in enumerate(SUBMISSIONS):
        if i % 3 != 2:
            first[s["often"]] += 1
    own = estimate(mechanisms["often"], first)
    assert data["category"] == "often" and data["groups"][0]["n"] == first.sum()
    assert data["groups"][0]["share"] == own.proportions[2]


def test_association_is_the_product_design_on_the_table_of_reported_pairs(signed_in, answered, mechanisms):
    data = signed_in.get(f"/api/surveys/{answered}/compare?question=drugs&by=mirror").get_json()
    assert data["kind"] == "association"
    table = np.zeros((2, 2), dtype=int)
    for s in SUBMISSIONS:
        table[s["drugs"], s["mirror"]] += 1
    expected = association(mechanisms["drugs"], mechanisms["mirror"], table).to_dict()
    assert data["n"] == N and [c["reported"] for c in data["cells"]] == table.reshape(-1).tolist()
    assert data["cells"] == expected["cells"] and data["measures"] == expected["measures"]


def test_comparison_csv_is_the_page_table(signed_in, answered):
    response = signed_in.get(f"/surveys/{answered}/compare.csv?question=drugs&by=age")
    assert response.status_code == 200
    assert response.headers["Content-Disposition"] == f'attachment; filename="{SLUG}-drugs-by-age.csv"'
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    data = signed_in.get(f"/api/surveys/{answered}/compare?question=drugs&by=age").get_json()
    assert [r["group"] for r in rows] == [g["label"] for g in data["groups"]] + ["everyone"]
    for row, group in zip(rows, data["groups"], strict=False):
        assert float(row["share"]) == group["share"] and int(row["n"]) == group["n"]
        assert float(row["difference_vs_rest"]) == group["comparison"]["difference"]
    pairs = signed_in.get(f"/surveys/{answered}/compare.csv?question=drugs&by=mirror").get_data(as_text=True)
    assert pairs.splitlines()[0].startswith("question_a,answer_a,question_b,answer_b")
    assert "odds_ratio" in pairs


def test_the_page_shows_one_row_per_group_with_intervals_and_a_chart(signed_in, answered):
    page = signed_in.get(f"/surveys/{answered}/compare?question=drugs&by=age").get_data(as_text=True)
    for label in ("young", "old", NO_ANSWER):
        assert f'<th scope="row">{label}' in page
    assert "<svg" in page and "interval" in page and "download>This table (CSV)" in page
    results = signed_in.get(f"/surveys/{answered}/results").get_data(as_text=True)
    assert f"/surveys/{answered}/compare" in results
    pair = signed_in.get(f"/surveys/{answered}/compare?question=drugs&by=mirror").get_data(as_text=True)
    assert "Odds ratio" in pair and "Correlation" in pair


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("question=age&by=drugs", ["question"]),  # a direct question is not compared
        ("question=nope&by=age", ["question"]),
        ("question=drugs&by=drugs", ["by"]),
        ("question=drugs&by=nope", ["by"]),
        ("question=drugs&by=age&category=2", ["category"]),
        ("question=drugs&by=age&category=x", ["category"]),
    ],
)
def test_a_bad_choice_is_a_400_that_says_which_input(signed_in, answered, query, path):
    response = signed_in.get(f"/api/surveys/{answered}/compare?{query}")
    assert response.status_code == 400 and response.get_json()["path"] == path
    assert signed_in.get(f"/surveys/{answered}/compare.csv?{query}").status_code == 400


def test_before_anyone_answered_the_page_says_so(signed_in, small_survey):
    page = signed_in.get(f"/surveys/{small_survey}/compare")
    assert page.status_code == 200 and "Nobody has answered" in page.get_data(as_text=True)
    assert signed_in.get(f"/api/surveys/{small_survey}/compare?question=drugs&by=age").status_code == 409


def test_comparisons_are_for_results_readers_only(client, small_survey):
    assert client.get(f"/api/surveys/{small_survey}/compare?question=drugs&by=age").status_code == 401
    assert client.get(f"/surveys/{small_survey}/compare").status_code == 302
    assert client.get(f"/surveys/{small_survey}/compare.csv").status_code == 302


def test_the_demo_has_a_difference_by_age_and_an_association_to_find(app):
    from survey.domain.results.analysis import compare
    from survey.domain.surveys.demo import create_demo

    with app.app_context():
        survey = create_demo(db.session)
        by_age = compare(db.session, survey, "cannabis", "age_group").result
        assert by_age["18–29"].comparison.significant and by_age["18–29"].comparison.difference > 0
        pair = compare(db.session, survey, "cannabis", "cheating").result
        assert pair.odds_ratio.low > 1  # those who used cannabis cheated more often, as simulated


# -- regression ------------------------------------------------------------------------------------


def test_a_regression_on_one_direct_question_predicts_each_group_as_its_breakdown_does(signed_in, answered):
    """With one categorical covariate the model is saturated: its maximum-likelihood share per group
    is the group's own consistent estimate, which the breakdown shows."""
    fit = signed_in.get(f"/api/surveys/{answered}/regression?outcome=drugs&covariates=age").get_json()
    assert fit["converged"] and [c["name"] for c in fit["coefficients"]] == ["const", "age = old"]
    groups = signed_in.get(f"/api/surveys/{answered}/compare?question=drugs&by=age").get_json()["groups"]
    by_label = {g["label"]: g for g in groups}
    assert [p["pattern"]["age"] for p in fit["predictions"]] == ["young", "old"]
    for p in fit["predictions"]:
        group = by_label[p["pattern"]["age"]]
        assert p["n"] == group["n"] and p["share"] == pytest.approx(group["share"], abs=1e-7)
    assert fit["n"] == sum(1 for s in SUBMISSIONS if "age" in s)  # who skipped a covariate is left out


def test_regression_page_and_csv(signed_in, answered):
    page = signed_in.get(f"/surveys/{answered}/regression?outcome=drugs&covariates=age")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "Odds ratio" in text and "age = old" in text and "Predicted share" in text
    rows = list(
        csv.DictReader(
            io.StringIO(
                signed_in.get(f"/surveys/{answered}/regression.csv?outcome=drugs&covariates=age").get_data(as_text=True)
            )
        )
    )
    fit = signed_in.get(f"/api/surveys/{answered}/regression?outcome=drugs&covariates=age").get_json()
    assert [r["term"] for r in rows] == ["const", "age = old"]
    assert float(rows[1]["odds_ratio"]) == fit["coefficients"][1]["odds_ratio"]
    assert "regression" in signed_in.get(f"/surveys/{answered}/results").get_data(as_text=True)


def _selected(page: str, select_id: str) -> list[str]:
    """The values of the options marked selected in the select ``select_id`` of ``page``."""
    start = page.index(f'<select id="{select_id}"')
    select = page[start : page.index("</select>", start)]
    return re.findall(r'<option value="([^"]*)" selected>', select)


def test_the_regression_page_models_the_option_chosen_and_keeps_it_in_its_links(signed_in, answered):
    """A choice outcome's third option, as the JSON API could always fit it: the page fits it too,
    its select shows it, and both downloads fit the same model."""
    url = f"/surveys/{answered}/regression?outcome=often&covariates=age&category=2"
    page = signed_in.get(url).get_data(as_text=True)
    fit = signed_in.get(f"/api/surveys/{answered}/regression?outcome=often&covariates=age&category=2").get_json()
    assert fit["category"] == "often" and "answering “often”" in page
    assert _selected(page, "category") == ["2"]
    assert "regression.csv?outcome=often&amp;covariates=age&amp;category=2" in page
    assert "api/surveys/small-test/regression?outcome=often&amp;covariates=age&amp;category=2" in page
    rows = list(
        csv.DictReader(io.StringIO(signed_in.get(url.replace("regression?", "regression.csv?")).get_data(as_text=True)))
    )
    assert float(rows[1]["odds_ratio"]) == fit["coefficients"][1]["odds_ratio"]
    # without a choice, the first listed option (yes, researcher code 1) is chosen and fitted
    plain = signed_in.get(f"/surveys/{answered}/regression?outcome=drugs&covariates=age").get_data(as_text=True)
    assert _selected(plain, "category") == ["1"] and "answering “yes”" in plain
    # an option of the outcome picked before: this outcome's first option, not an error
    switched = signed_in.get(f"/surveys/{answered}/regression?outcome=drugs&covariates=age&category=3")
    assert switched.status_code == 200 and _selected(switched.get_data(as_text=True), "category") == ["1"]


def test_the_chosen_answer_stays_chosen_while_two_sensitive_questions_are_related(signed_in, answered):
    """Relating "drugs" to "mirror" has no answer of its own; the select still says the one chosen
    (before, it fell back on its first option, "no", and the next breakdown silently showed "no")."""
    for query, chosen in (("", "1"), ("&category=1", "1"), ("&category=0", "0")):
        page = signed_in.get(f"/surveys/{answered}/compare?question=drugs&by=mirror{query}").get_data(as_text=True)
        assert "Odds ratio" in page and _selected(page, "category") == [chosen]
    page = signed_in.get(f"/surveys/{answered}/compare?question=often&by=mirror&category=2").get_data(as_text=True)
    assert _selected(page, "category") == ["2"]


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("outcome=age&covariates=age", ["outcome"]),
        ("outcome=drugs", ["covariates"]),  # an outcome given without covariates
        ("outcome=drugs&covariates=mirror", ["covariates"]),  # a randomized covariate
        ("outcome=drugs&covariates=nope", ["covariates"]),
        ("outcome=often&covariates=age&category=9", ["category"]),
    ],
)
def test_a_bad_regression_is_a_400_that_says_which_input(signed_in, answered, query, path):
    response = signed_in.get(f"/api/surveys/{answered}/regression?{query}")
    assert response.status_code == 400 and response.get_json()["path"] == path


def test_without_a_choice_the_downloads_start_where_the_pages_do(signed_in, answered):
    """The first randomized question by the first direct one; a regression on every direct one."""
    plain = signed_in.get(f"/api/surveys/{answered}/compare").get_json()
    assert (plain["question"], plain["by"]) == ("drugs", "age")
    fit = signed_in.get(f"/api/surveys/{answered}/regression").get_json()
    assert fit["outcome"] == "drugs" and [c["key"] for c in fit["covariates"]] == ["age"]


def test_a_regression_leaves_its_connection_as_it_found_it(app, answered):
    """The regression's join turns three planner settings off for its statement (plans.merge_joins);
    after it each holds the value it had, within its transaction and after a commit: the connection's
    own ``jit = off`` kept (a ``RESET`` set it back to the server's ``on``, which a commit kept)."""
    with app.app_context():
        if db.engine.dialect.name != "postgresql":
            pytest.skip("PostgreSQL's planner settings")
        settings = text(
            "SELECT current_setting('enable_hashjoin'), current_setting('enable_nestloop'), current_setting('jit')"
        )
        with db.engine.connect() as connection:
            session = Session(bind=connection)
            before = session.execute(settings).one()
            assert tuple(before) == ("on", "on", "off")  # the app's connections compile nothing
            survey = session.scalar(select(Survey).where(Survey.slug == answered))
            assert regression(session, survey, "drugs", ["age"]).fit.converged
            assert session.execute(settings).one() == before
            session.commit()
            assert connection.execute(settings).one() == before
            session.close()
