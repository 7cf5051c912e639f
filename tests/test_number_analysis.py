"""A randomized number by group of a direct question, and as the outcome of a linear regression.

Seeded simulated respondents are posted through the API; every figure the compare and regression
endpoints give is recomputed here from the codes each respondent sent, per respondent (numpy: the
group means, the betting intervals at the Bonferroni level, OLS and the HC3 sandwich written out),
not from the covariate patterns or the tallies the app reads.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from sqlalchemy import select

from survey.domain.models import PairTally, Question, Survey
from survey.domain.responses.pending import fold_all
from survey.domain.responses.tallies import tally_mismatches
from survey.platform.extensions import db
from survey.privacy.bounded import mean_interval
from survey.privacy.numeric import GRID_STEPS, HybridNumber

from .surveys import add_survey

SPEC = {
    "title": "Drinks",
    "slug": "drinks",
    "questions": [
        {
            "key": "drinks",
            "kind": "rr_number",
            "text": "How many drinks did you have last week?",
            "minimum": 0,
            "maximum": 30,
            "privacy": {"design": "hybrid", "epsilon": 2},
        },
        {
            "key": "region",
            "kind": "direct",
            "text": "Where do you live?",
            "options": ["north", "south", "east"],
            "required": False,
        },
        {"key": "age", "kind": "number", "text": "How old are you?", "minimum": 16, "maximum": 99},
        {
            "key": "smoked",
            "kind": "yes_no",
            "text": "Smoked?",
            "required": False,
            "privacy": {"design": "grr", "epsilon": 1},
        },
    ],
}
MECHANISM = HybridNumber(2.0, 0, 30)
N = 240


@pytest.fixture
def answered(signed_in, user):
    """N respondents: region 0..2, age 16..79, true drinks 2 + 4·south + 8·east + 0.1·(age − 16)
    plus noise, clamped to the range, randomized as the browser does; every 7th skips the region."""
    add_survey(signed_in.application, SPEC)
    rng = np.random.default_rng(2024)
    region = rng.integers(0, 3, N)
    age = rng.integers(16, 80, N)
    truth = np.clip(2 + 4 * (region == 1) + 8 * (region == 2) + 0.1 * (age - 16) + rng.normal(0, 3, N), 0, 30)
    codes = MECHANISM.randomize(truth, rng)
    skipped = np.arange(N) % 7 == 0
    for i in range(N):
        answers = {"drinks": int(codes[i]), "age": int(age[i]), "smoked": int(i % 2)}
        if not skipped[i]:
            answers["region"] = int(region[i])
        response = signed_in.post("/api/surveys/drinks/responses", json={"answers": answers})
        assert response.status_code == 201, response.get_data(as_text=True)
    return {"region": region, "age": age, "codes": codes, "skipped": skipped}


def test_the_mean_by_group_is_each_groups_mean_of_reports_with_simultaneous_betting_intervals(signed_in, answered):
    data = signed_in.get("/api/surveys/drinks/compare?question=drinks&by=region").get_json()
    assert data["kind"] == "number_breakdown" and data["simultaneous"] and data["interval_method"] == "betting"
    values = MECHANISM.value_of(answered["codes"])
    low, high = (float(v) for v in MECHANISM.value_of([0, GRID_STEPS]))
    groups = {g["label"]: g for g in data["groups"]}
    assert set(groups) == {"north", "south", "east", "no answer"}
    each = 1 - 0.05 / 4
    for label, members in (
        ("north", ~answered["skipped"] & (answered["region"] == 0)),
        ("south", ~answered["skipped"] & (answered["region"] == 1)),
        ("east", ~answered["skipped"] & (answered["region"] == 2)),
        ("no answer", answered["skipped"]),
    ):
        mine = values[members]
        g = groups[label]
        assert g["n"] == members.sum()
        assert g["mean"] == pytest.approx(mine.mean(), abs=1e-9)
        expected = mean_interval(mine, np.ones(mine.size), low, high, each)
        assert (g["ci_low"], g["ci_high"]) == (
            pytest.approx(expected.low, abs=1e-9),
            pytest.approx(expected.high, abs=1e-9),
        )
    assert data["total"]["n"] == N and data["total"]["mean"] == pytest.approx(values.mean(), abs=1e-9)
    # the east group drinks 8 more: its estimate is above the north's (seeded: it is)
    assert groups["east"]["mean"] > groups["north"]["mean"]
    rows = list(
        csv.DictReader(
            io.StringIO(signed_in.get("/surveys/drinks/compare.csv?question=drinks&by=region").get_data(as_text=True))
        )
    )
    assert [r["group"] for r in rows][-1] == "everyone" and float(rows[0]["mean"]) == pytest.approx(
        groups[rows[0]["group"]]["mean"]
    )
    page = signed_in.get("/surveys/drinks/compare?question=drinks&by=region").get_data(as_text=True)
    assert "mean by “Where do you live?”" in page and f"{groups['east']['mean']:.2f}" in page


def _mover_by_hand(values, first, second, low, high, level, width):
    """first − second with MOVER's interval, written out from the two groups' betting intervals."""
    a = mean_interval(values[first], np.ones(first.sum()), low, high, level)
    b = mean_interval(values[second], np.ones(second.sum()), low, high, level)
    d = values[first].mean() - values[second].mean()
    lo = d - np.sqrt((a.estimate - a.low) ** 2 + (b.high - b.estimate) ** 2)
    hi = d + np.sqrt((a.high - a.estimate) ** 2 + (b.estimate - b.low) ** 2)
    return d, max(lo, -width), min(hi, width)


def test_each_groups_mean_minus_the_first_groups_with_intervals_that_hold_together(signed_in, answered):
    """South and east minus north (the first option), each MOVER's interval from the two groups' own
    betting intervals at 1 − 0.05/2 (two differences), recomputed here per respondent; in the JSON,
    the CSV (on each group's row) and on the page with what it means."""
    data = signed_in.get("/api/surveys/drinks/compare?question=drinks&by=region").get_json()
    values = MECHANISM.value_of(answered["codes"])
    low, high = (float(v) for v in MECHANISM.value_of([0, GRID_STEPS]))
    asked = ~answered["skipped"]
    north = asked & (answered["region"] == 0)
    assert data["reference"] == "north" and data["differences_method"] == "mover"
    assert [d["label"] for d in data["differences"]] == ["south", "east"]
    for d, code in zip(data["differences"], (1, 2), strict=True):
        diff, lo, hi = _mover_by_hand(values, asked & (answered["region"] == code), north, low, high, 1 - 0.05 / 2, 30)
        assert d["minus"] == "north" and d["difference"] == pytest.approx(diff, abs=1e-9)
        assert (d["ci_low"], d["ci_high"]) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))
    east = data["differences"][1]
    assert east["ci_low"] < east["difference"] < east["ci_high"] and east["difference"] > 0  # 8 more (seeded)
    csv_text = signed_in.get("/surveys/drinks/compare.csv?question=drinks&by=region").get_data(as_text=True)
    rows = {r["group"]: r for r in csv.DictReader(io.StringIO(csv_text))}
    assert float(rows["east"]["difference"]) == pytest.approx(east["difference"])
    assert float(rows["east"]["difference_low"]) == pytest.approx(east["ci_low"]) and rows["east"]["minus"] == "north"
    assert rows["north"]["difference"] == rows["no answer"]["difference"] == rows["everyone"]["difference"] == ""
    page = signed_in.get("/surveys/drinks/compare?question=drinks&by=region").get_data(as_text=True)
    assert "Differences from “north”" in page and f"{east['difference']:+.2f}" in page
    assert f"{east['ci_low']:.2f} to {east['ci_high']:.2f}" in page and "leaves out 0" in page


def test_the_differences_intervals_cover_together_in_simulated_surveys():
    """Three groups of 300 whose true numbers (in [0, 30], randomized at ε = 2) are drawn around 6,
    6 and 12: in 200 seeded surveys both differences' intervals held the true differences of the
    groups' population means at once at least 95% of the time (the betting intervals they come
    from are conservative: 200 of 200 here), and the difference of about 6 was found (interval
    above 0) in most (168)."""
    from survey.domain.results.number_analysis import mean_differences
    from survey.privacy.bounded import mean_interval as interval

    rng = np.random.default_rng(99)
    low, high = (float(v) for v in MECHANISM.value_of([0, GRID_STEPS]))
    centres = {"a": 6.0, "b": 6.0, "c": 12.0}
    population = {k: float(np.clip(rng.normal(c, 4.0, 2_000_000), 0, 30).mean()) for k, c in centres.items()}
    held = found = 0
    for _ in range(200):
        groups = {}
        for label, centre in centres.items():
            values = MECHANISM.value_of(MECHANISM.randomize(np.clip(rng.normal(centre, 4.0, 300), 0, 30), rng))
            groups[label] = lambda at, v=values: interval(v, np.ones(v.size), low, high, at)
        got = mean_differences(groups, 0.95, 30.0)
        truths = [population[k] - population["a"] for k in ("b", "c")]
        held += all(d.low <= t <= d.high for d, t in zip(got, truths, strict=True))
        found += got[1].low > 0
    assert held >= 190 and found >= 140


DECLINING = {
    "title": "Declining",
    "slug": "declining",
    "questions": [
        {"key": "region", "kind": "direct", "text": "Region?", "options": ["north", "south"], "required": False},
        {**SPEC["questions"][0], "decline": True, "required": False},
    ],
}


def test_the_mean_by_group_leaves_declines_out_and_reads_a_number_asked_after_its_group(signed_in, user):
    """The number asked after the direct question (its pair tallies stored the other way round) and
    declined by some: every group's mean and n from the reports alone, checked per respondent here
    (a decline is no report: the read before took declines for reports of code −1, below the grid,
    and the page failed). The figures are kept while the tallies are the same, and a new report
    changes them."""
    add_survey(signed_in.application, DECLINING)
    rng = np.random.default_rng(77)
    n = 90
    region = rng.integers(0, 2, n)
    codes = MECHANISM.randomize(np.where(region == 1, 20.0, 4.0), rng)
    declined = np.arange(n) % 6 == 0
    skipped = np.arange(n) % 9 == 4
    for i in range(n):
        answers = {"drinks": "declined" if declined[i] else int(codes[i])}
        if not skipped[i]:
            answers["region"] = int(region[i])
        assert signed_in.post("/api/surveys/declining/responses", json={"answers": answers}).status_code == 201
    data = signed_in.get("/api/surveys/declining/compare?question=drinks&by=region").get_json()
    values = MECHANISM.value_of(codes)
    low, high = (float(v) for v in MECHANISM.value_of([0, GRID_STEPS]))
    groups = {g["label"]: g for g in data["groups"]}
    assert set(groups) == {"north", "south", "no answer"}
    for label, members in (
        ("north", ~declined & ~skipped & (region == 0)),
        ("south", ~declined & ~skipped & (region == 1)),
        ("no answer", ~declined & skipped),
    ):
        expected = mean_interval(values[members], np.ones(members.sum()), low, high, 1 - 0.05 / 3)
        g = groups[label]
        assert g["n"] == members.sum() and g["mean"] == pytest.approx(values[members].mean(), abs=1e-9)
        assert (g["ci_low"], g["ci_high"]) == (
            pytest.approx(expected.low, abs=1e-9),
            pytest.approx(expected.high, abs=1e-9),
        )
    assert data["total"]["n"] == (~declined).sum()
    assert data["total"]["mean"] == pytest.approx(values[~declined].mean(), abs=1e-9)
    # two groups: the one difference, at the level itself
    south, north = (~declined & ~skipped & (region == code) for code in (1, 0))
    diff, lo, hi = _mover_by_hand(values, south, north, low, high, 0.95, 30)
    (only,) = data["differences"]
    assert (only["label"], only["minus"]) == ("south", "north")
    assert (only["difference"], only["ci_low"], only["ci_high"]) == (
        pytest.approx(diff, abs=1e-9),
        pytest.approx(lo, abs=1e-9),
        pytest.approx(hi, abs=1e-9),
    )
    assert signed_in.get("/api/surveys/declining/compare?question=drinks&by=region").get_json() == data
    signed_in.post("/api/surveys/declining/responses", json={"answers": {"drinks": 0, "region": 0}})
    again = signed_in.get("/api/surveys/declining/compare?question=drinks&by=region").get_json()
    assert again["total"]["n"] == data["total"]["n"] + 1
    assert {g["label"]: g["n"] for g in again["groups"]}["north"] == groups["north"]["n"] + 1


def test_the_pair_tallies_pair_a_randomized_number_with_direct_questions_only(signed_in, answered):
    with signed_in.application.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "drinks"))
        ids = {q.key: q.id for q in survey.questions}
        fold_all(db.session)
        pairs = {
            (a, b)
            for a, b in db.session.execute(
                select(PairTally.question_id, PairTally.other_id).where(PairTally.question_id.in_(ids.values()))
            )
        }
        assert (ids["drinks"], ids["region"]) in pairs
        assert not {(ids["drinks"], ids["smoked"]), (ids["smoked"], ids["drinks"])} & pairs  # two randomized
        assert (min(ids["region"], ids["smoked"]), max(ids["region"], ids["smoked"])) in pairs  # as before
        assert tally_mismatches(db.session, survey) == []  # the recount follows the same rule


def _hc3_by_hand(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS and its HC3 standard errors, per respondent: β = (X'X)⁻¹X'y, e = y − Xβ,
    h = diag(X(X'X)⁻¹X'), V = (X'X)⁻¹ X' diag(e²/(1 − h)²) X (X'X)⁻¹."""
    xtx_inv = np.linalg.inv(x.T @ x)
    beta = xtx_inv @ x.T @ y
    e = y - x @ beta
    h = np.einsum("ij,jk,ik->i", x, xtx_inv, x)
    meat = x.T @ (x * (e**2 / (1 - h) ** 2)[:, None])
    return beta, np.sqrt(np.diag(xtx_inv @ meat @ xtx_inv))


def test_the_linear_regression_is_ols_on_the_reports_with_hc3_errors(signed_in, answered):
    data = signed_in.get("/api/surveys/drinks/regression?outcome=drinks&covariates=region&covariates=age").get_json()
    assert data["kind"] == "linear" and data["covariance"] == "HC3"
    kept = ~answered["skipped"]
    region, age = answered["region"][kept], answered["age"][kept]
    y = MECHANISM.value_of(answered["codes"][kept])
    x = np.column_stack([np.ones(kept.sum()), region == 1, region == 2, age]).astype(float)
    beta, se = _hc3_by_hand(x, y)
    names = [c["name"] for c in data["coefficients"]]
    assert names == ["const", "region = south", "region = east", "age"] and data["n"] == kept.sum()
    for c, b, s in zip(data["coefficients"], beta, se, strict=True):
        assert c["estimate"] == pytest.approx(b, rel=1e-9, abs=1e-9)
        assert c["standard_error"] == pytest.approx(s, rel=1e-9)
    # the truth's coefficients (4 and 8 for the regions) are inside the intervals (seeded: they are)
    south, east = data["coefficients"][1], data["coefficients"][2]
    assert south["ci_low"] < 4 < south["ci_high"] and east["ci_low"] < 8 < east["ci_high"]
    page = signed_in.get("/surveys/drinks/regression?outcome=drinks&covariates=region&covariates=age").get_data(
        as_text=True
    )
    assert "What predicts a sensitive number" in page and f"{beta[2]:.3f}" in page
    lines = signed_in.get("/surveys/drinks/regression.csv?outcome=drinks&covariates=region").get_data(as_text=True)
    assert lines.splitlines()[0].startswith("outcome,term,estimate")


@pytest.mark.parametrize(
    ("url", "status", "code_fragment"),
    [
        ("/api/surveys/drinks/compare?question=drinks&by=age", 400, "is not a question with options asked directly"),
        ("/api/surveys/drinks/compare?question=drinks&by=smoked", 400, "is not a question with options asked directly"),
        ("/api/surveys/drinks/compare?question=smoked&by=drinks", 400, "too many groups"),
        ("/api/surveys/drinks/regression?outcome=drinks&covariates=smoked", 400, "randomized"),
    ],
)
def test_choices_that_make_no_sense_are_refused(signed_in, answered, url, status, code_fragment):
    response = signed_in.get(url)
    assert response.status_code == status, response.get_data(as_text=True)
    assert code_fragment in response.get_data(as_text=True)


def test_the_pages_offer_the_randomized_number(signed_in, answered):
    for url in ("/surveys/drinks/compare", "/surveys/drinks/regression"):
        page = signed_in.get(url).get_data(as_text=True)
        assert "Randomized numbers" in page and ("question=drinks" in page or "outcome=drinks" in page)
    with signed_in.application.app_context():
        assert db.session.scalar(select(Question.kind).where(Question.key == "drinks")) == "rr_number"
