"""A number's bins (the share of answers in each bin the organizer sets) and decimal range ends.

The estimator (survey/privacy/number_bins.py) against independent computations: counting and
Wilson's formula for a number asked directly; for a randomized number, the shares and intervals
against a brute-force profile likelihood (scipy's SLSQP on the same mixture), consistency (each
share in [0, 1], the shares summing to 1), and the whole way through the app: spec, builder,
results page, JSON. Coverage is a benchmark (benchmarks/number_bins.md), not a test.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import optimize, stats
from sqlalchemy import select

from survey.domain.errors import DomainError
from survey.domain.models import Survey
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.privacy import number_bins
from survey.privacy.number_bins import (
    CODE_GROUPS,
    bin_labels,
    check_edges,
    direct_bin_shares,
    randomized_bin_shares,
)
from survey.privacy.number_planning import code_probabilities
from survey.privacy.numeric import GRID_STEPS, DuchiNumber, HybridNumber, PiecewiseNumber

from .builder import FormValues
from .surveys import add_survey

EDGES = [1, 5, 15]
DRINKS = {
    "key": "drinks",
    "kind": "rr_number",
    "text": "How many drinks did you have last week?",
    "minimum": 0,
    "maximum": 30,
    "bins": EDGES,
    "privacy": {"design": "piecewise", "epsilon": 3},
}
AGE = {"key": "age", "kind": "number", "text": "How old are you?", "minimum": 16, "maximum": 99, "bins": [30, 60]}
SPEC = {"title": "Drinks", "slug": "drinks", "questions": [DRINKS, AGE]}


def _codes(mechanism, truths, seed=11):
    return Counter(int(c) for c in mechanism.randomize(np.asarray(truths, dtype=float), np.random.default_rng(seed)))


# -- the estimator ---------------------------------------------------------------------------------


def test_direct_bins_count_the_answers_and_give_wilsons_interval():
    values, counts = [16, 29, 30, 59, 60, 99], [5, 10, 20, 15, 40, 10]
    r = direct_bin_shares(values, counts, 16, 99, [30, 60])
    assert r.n == 100 and r.shares == pytest.approx((0.15, 0.35, 0.5))  # 30 and 60 belong to the bin above
    z = stats.norm.ppf(0.975)
    for share, low, high in zip(r.shares, r.ci_low, r.ci_high, strict=True):
        # Wilson's interval, written out
        centre = (share + z * z / 200) / (1 + z * z / 100)
        half = z / (1 + z * z / 100) * math.sqrt(share * (1 - share) / 100 + z * z / 40000)
        assert (low, high) == (pytest.approx(centre - half, abs=1e-12), pytest.approx(centre + half, abs=1e-12))
    assert r.labels == ["16 to under 30", "30 to under 60", "60 to 99"]


@pytest.mark.parametrize(
    "edges",
    [[0], [30], [5, 5], [10, 5], ["5"], [True], [float("nan")], list(range(1, 21))],
)
def test_bad_edges_are_refused(edges):
    with pytest.raises(ValueError):
        check_edges(edges, 0, 30)


def test_labels_write_decimal_edges_as_typed():
    assert bin_labels(0.5, 2.5, [1.25]) == ["0.5 to under 1.25", "1.25 to 2.5"]


def _brute_force_profile(mechanism, counts, edges, level=0.95, bins=None):
    """The same model solved another way: the support and the pooled codes rebuilt here, the MLE and
    each bin's interval ends by SLSQP (minimize / maximize the bin's share subject to the
    log-likelihood staying within χ²₁/2 of its maximum); ``bins`` names the bins to solve (all)."""
    ts, owner = number_bins._support(tuple(float(t) for t in mechanism.normalize(edges)))
    runs = np.arange(GRID_STEPS + 1) * CODE_GROUPS // (GRID_STEPS + 1)
    matrix = np.array(
        [np.bincount(runs, weights=code_probabilities(mechanism, t), minlength=CODE_GROUPS) for t in ts]
    ).T
    y = np.zeros(CODE_GROUPS)
    for code, c in counts.items():
        y[code * CODE_GROUPS // (GRID_STEPS + 1)] += c
    seen = y > 0
    a, y = matrix[seen], y[seen]
    m = a.shape[1]

    def loglik(w):
        return float(y @ np.log(np.maximum(a @ w, 1e-300)))

    def per_report(w):
        # in units of one report: given the log-likelihood itself (-563,344 at 200,000 reports),
        # SLSQP on one machine returned weights summing to 1 + 1.2e-6, which at that n is 0.23 of
        # log-likelihood above the true maximum (-563,344.497), a target too high and ends 0.0025
        # too narrow; scaled, its weights sum to 1 and its ends agree with the barrier's to 1e-6
        return loglik(w) / y.sum()

    simplex = [{"type": "eq", "fun": lambda w: w.sum() - 1}]
    bounds = [(0, 1)] * m
    best = optimize.minimize(
        lambda w: -per_report(w),
        np.full(m, 1 / m),
        method="SLSQP",
        bounds=bounds,
        constraints=simplex,
        options={"maxiter": 2000, "ftol": 1e-12},
    )
    target = -best.fun - stats.chi2.ppf(level, 1) / 2 / y.sum()
    plausible = [*simplex, {"type": "ineq", "fun": lambda w: per_report(w) - target}]
    ends = []
    for b in range(len(edges) + 1) if bins is None else bins:
        inside = (owner == b).astype(float)
        lo = optimize.minimize(
            lambda w, inside=inside: inside @ w,
            best.x,
            method="SLSQP",
            bounds=bounds,
            constraints=plausible,
            options={"maxiter": 2000, "ftol": 1e-12},
        )
        hi = optimize.minimize(
            lambda w, inside=inside: -(inside @ w),
            best.x,
            method="SLSQP",
            bounds=bounds,
            constraints=plausible,
            options={"maxiter": 2000, "ftol": 1e-12},
        )
        ends.append((float(inside @ lo.x), float(inside @ hi.x)))
    return -best.fun * y.sum(), np.bincount(owner, weights=best.x, minlength=len(edges) + 1), ends


def test_randomized_bins_agree_with_a_brute_force_profile_likelihood():
    mechanism = PiecewiseNumber(3.0, 0, 30)
    rng = np.random.default_rng(3)
    truths = np.where(rng.random(400) < 0.5, 0.0, rng.uniform(0, 30, 400))
    counts = _codes(mechanism, truths)
    r = randomized_bin_shares(mechanism, counts, EDGES)
    _, shares, ends = _brute_force_profile(mechanism, counts, EDGES)
    # the shares of a mixture MLE need not be unique, the likelihood's maximum is: compare the
    # intervals (functionals of the plausible set) and check the shares are inside them
    for i, (lo, hi) in enumerate(ends):
        assert r.ci_low[i] == pytest.approx(lo, abs=0.01)
        assert r.ci_high[i] == pytest.approx(hi, abs=0.01)
        assert lo - 0.01 <= r.shares[i] <= hi + 0.01
    assert abs(sum(shares) - 1) < 1e-9


def test_randomized_bins_hold_the_exact_interval_at_many_reports():
    """At 200,000 reports the fit is still exact. The EM this replaced stopped after its 200 steps
    (at a million reports, 1.25 units of log-likelihood below the maximum, against the interval's
    whole drop of 1.92); here its ends came out 0.02 to 0.04 too wide. The ends here hold the
    brute-force ones and lie within their stated tolerance of them."""
    mechanism = HybridNumber(1.0, 0, 30)
    rng = np.random.default_rng(5)
    truths = np.where(rng.random(200_000) < 0.6, 0.0, rng.uniform(0, 30, 200_000))
    counts = _codes(mechanism, truths)
    r = randomized_bin_shares(mechanism, counts, EDGES)
    _, _, ends = _brute_force_profile(mechanism, counts, EDGES, bins=[0])
    (lo, hi) = ends[0]
    slack = 1e-4  # SLSQP's own tolerance on the likelihood constraint
    assert lo - number_bins.END_TOLERANCE - slack <= r.ci_low[0] <= lo + slack
    assert hi - slack <= r.ci_high[0] <= hi + number_bins.END_TOLERANCE + slack
    assert r.ci_high[0] - r.ci_low[0] < 0.08  # the EM's interval here was [0.536, 0.670]


def test_the_ends_are_certified_however_the_fit_converged(monkeypatch):
    """Each end is the least share over the simplex cut by the log-likelihood's tangent plane at the
    fitted distribution, a bound that holds at any fit: with the ends' fits cut off before their
    first step (left at the maximum), the intervals are wider, and still hold the converged ones."""
    mechanism = HybridNumber(2.0, 0, 30)
    counts = _codes(mechanism, [0] * 300 + [3] * 100 + [10] * 100 + [25] * 100)
    good = randomized_bin_shares(mechanism, counts, EDGES)
    real = number_bins._barrier

    def no_steps_for_the_ends(a, y, w, cost, *rest):
        return (w, 1.0) if cost is not None else real(a, y, w, cost, *rest)

    monkeypatch.setattr(number_bins, "_barrier", no_steps_for_the_ends)
    cut_short = randomized_bin_shares(mechanism, counts, EDGES)
    assert cut_short.shares == good.shares
    for lo, hi, lo_short, hi_short in zip(good.ci_low, good.ci_high, cut_short.ci_low, cut_short.ci_high, strict=True):
        assert lo_short <= lo and hi <= hi_short
    assert sum(cut_short.ci_high) - sum(cut_short.ci_low) > sum(good.ci_high) - sum(good.ci_low) + 0.1


def test_a_code_no_true_number_sends_is_left_out():
    """Duchi's reports are the grid's two ends; a forged middle code has likelihood 0 whatever the
    distribution, so it changes nothing of the fit (it still counts in n)."""
    mechanism = DuchiNumber(1.0, 0, 30)
    counts = _codes(mechanism, [0] * 300 + [20] * 300)
    clean = randomized_bin_shares(mechanism, counts, EDGES)
    forged = randomized_bin_shares(mechanism, {**counts, GRID_STEPS // 2: 3}, EDGES)
    assert forged.shares == pytest.approx(clean.shares, abs=1e-6) and forged.n == clean.n + 3
    with pytest.raises(ValueError, match="no report"):
        randomized_bin_shares(mechanism, {GRID_STEPS // 2: 3}, EDGES)


@pytest.mark.parametrize("mechanism", [HybridNumber(1.0, 0, 30), DuchiNumber(1.0, 0, 30), PiecewiseNumber(4.0, 0, 30)])
def test_randomized_bins_are_consistent(mechanism):
    counts = _codes(mechanism, [0] * 60 + [3] * 20 + [20] * 20)
    r = randomized_bin_shares(mechanism, counts, EDGES)
    assert sum(r.shares) == pytest.approx(1, abs=1e-9)
    for share, low, high in zip(r.shares, r.ci_low, r.ci_high, strict=True):
        assert 0 <= low <= share <= high <= 1
    assert r.method == "profile-likelihood" and r.n == 100


def test_many_reports_at_a_high_epsilon_find_the_true_shares():
    mechanism = PiecewiseNumber(6.0, 0, 30)
    truths = [0.0] * 3000 + [3.0] * 2000 + [10.0] * 3000 + [25.0] * 2000
    r = randomized_bin_shares(mechanism, _codes(mechanism, truths), EDGES)
    assert r.shares == pytest.approx((0.3, 0.2, 0.3, 0.2), abs=0.03)
    for truth, low, high in zip((0.3, 0.2, 0.3, 0.2), r.ci_low, r.ci_high, strict=True):
        assert low <= truth <= high and high - low < 0.1


def test_duchis_reports_tell_the_mean_only_so_its_intervals_stay_wide():
    """Duchi's mechanism reports a sign: bins it cannot tell apart keep wide intervals."""
    mechanism = DuchiNumber(1.0, 0, 30)
    r = randomized_bin_shares(mechanism, _codes(mechanism, [0] * 500 + [20] * 500), EDGES)
    assert max(h - lo for lo, h in zip(r.ci_low, r.ci_high, strict=True)) > 0.6


def test_the_results_keep_the_bins_while_the_tallies_are_the_same(monkeypatch):
    """The fit runs once per tallies (kept.py): read again, the same object; a new report, a new fit;
    another mechanism, level or edge set, its own fit. Each is the fit of its own counts."""
    from survey.domain.results import kept

    kept.forget()
    fits = []
    real = kept.randomized_bin_shares
    monkeypatch.setattr(kept, "randomized_bin_shares", lambda *a: fits.append(a) or real(*a))
    mechanism = HybridNumber(3.0, 0, 30)
    counts = dict(_codes(mechanism, [0] * 70 + [3] * 30))
    first = kept.kept_bins(mechanism, counts, EDGES, 0.95)
    assert kept.kept_bins(mechanism, dict(counts), EDGES, 0.95) is first and len(fits) == 1
    more = {**counts, 0: counts.get(0, 0) + 1}
    assert kept.kept_bins(mechanism, more, EDGES, 0.95).n == 101 and len(fits) == 2
    kept.kept_bins(HybridNumber(2.0, 0, 30), counts, EDGES, 0.95)
    kept.kept_bins(mechanism, counts, EDGES, 0.9)
    kept.kept_bins(mechanism, counts, [1, 5, 16], 0.95)
    assert len(fits) == 5
    assert first == randomized_bin_shares(mechanism, counts, EDGES)
    kept.forget()


def test_laplace_has_no_bins():
    from survey.privacy.numeric import LaplaceNumber

    with pytest.raises(ValueError, match="bounded"):
        randomized_bin_shares(LaplaceNumber(1.0, 0, 30), {1000: 5}, EDGES)


# -- the spec and the builder ----------------------------------------------------------------------


def test_bins_and_decimal_ends_round_trip_through_the_spec(app):
    spec = {**SPEC, "questions": [{**DRINKS, "minimum": 0.5, "maximum": 2.5, "bins": [1, 1.5]}, AGE]}
    with app.app_context():
        survey = create_survey_from_spec(db.session, spec)
        db.session.commit()
        db.session.expire_all()
        again = survey_to_spec(db.session.get(Survey, survey.id))
        q = again["questions"][0]
        assert (q["minimum"], q["maximum"], q["bins"]) == (0.5, 2.5, [1, 1.5])
        assert again["questions"][1]["bins"] == [30, 60] and again["questions"][1]["minimum"] == 16
        assert isinstance(again["questions"][1]["minimum"], int)  # whole ends stay whole
        mechanism = survey.questions[0].mechanism()
        assert (mechanism.low, mechanism.high) == (0.5, 2.5)


@pytest.mark.parametrize(
    ("question", "field"),
    [
        ({**DRINKS, "bins": [0]}, "bins"),
        ({**DRINKS, "bins": [5, 2]}, "bins"),
        ({**DRINKS, "bins": "1, 5"}, "bins"),
        ({**AGE, "minimum": 16.5}, "minimum"),  # a number asked directly keeps whole ends
        ({**DRINKS, "minimum": "0.5"}, "minimum"),
        ({**DRINKS, "maximum": float("inf")}, "maximum"),
        ({"key": "x", "kind": "yes_no", "text": "X?", "bins": [1], "privacy": {"design": "grr", "epsilon": 1}}, "bins"),
    ],
)
def test_bad_bins_and_ends_are_refused_on_their_field(app, question, field):
    with app.app_context(), pytest.raises(DomainError) as caught:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert caught.value.path[-1] == field


def test_the_builder_saves_bins_and_a_decimal_range(signed_in, user):
    add_survey(signed_in.application, {**SPEC, "status": "draft"})
    form = FormValues.of(signed_in, "/surveys/drinks/questions/drinks/edit")
    assert form["bins"] == "1, 5, 15"
    form["minimum"], form["maximum"], form["bins"] = "0.5", "2.5", "1; 1.75"
    response = signed_in.post("/surveys/drinks/questions/drinks/edit", data=form)
    assert response.status_code in (302, 303), response.get_data(as_text=True)[:3000]
    with signed_in.application.app_context():
        q = db.session.scalar(select(Survey).where(Survey.slug == "drinks")).questions[0]
        assert (q.minimum, q.maximum, q.bins) == (0.5, 2.5, [1, 1.75])
    form["bins"] = "3"
    refused = signed_in.post("/surveys/drinks/questions/drinks/edit", data=form)
    assert refused.status_code == 400 and "bin edges" in refused.get_data(as_text=True)


# -- the results -----------------------------------------------------------------------------------


def test_the_results_give_each_bins_share_with_its_interval(signed_in, user):
    add_survey(signed_in.application, SPEC)
    mechanism = PiecewiseNumber(3.0, 0, 30)
    rng = np.random.default_rng(5)
    truths = np.where(rng.random(120) < 0.5, 0.0, rng.uniform(0, 30, 120))
    codes = [int(c) for c in mechanism.randomize(truths, rng)]
    ages = [16 + i % 80 for i in range(120)]
    for code, age in zip(codes, ages, strict=True):
        response = signed_in.post("/api/surveys/drinks/responses", json={"answers": {"drinks": code, "age": age}})
        assert response.status_code == 201
    expected = randomized_bin_shares(mechanism, Counter(codes), EDGES)
    document = signed_in.get("/api/surveys/drinks/estimates").get_json()
    item = next(q for q in document["questions"] if q["key"] == "drinks")
    bins = item["bins"]
    assert bins["interval_method"] == "profile-likelihood" and bins["n"] == 120
    assert [b["label"] for b in bins["bins"]] == ["0 to under 1", "1 to under 5", "5 to under 15", "15 to 30"]
    for got, share, low, high in zip(bins["bins"], expected.shares, expected.ci_low, expected.ci_high, strict=True):
        assert (got["share"], got["ci_low"], got["ci_high"]) == (
            pytest.approx(share, abs=1e-12),
            pytest.approx(low, abs=1e-12),
            pytest.approx(high, abs=1e-12),
        )
    age = next(q for q in document["questions"] if q["key"] == "age")["bins"]
    direct = direct_bin_shares(*zip(*Counter(ages).items(), strict=True), 16, 99, [30, 60])
    assert [b["share"] for b in age["bins"]] == pytest.approx(list(direct.shares))
    page = signed_in.get("/surveys/drinks/results").get_data(as_text=True)
    assert "Estimated share of “How many drinks did you have last week?” in each bin" in page
    assert f"{expected.ci_low[0] * 100:.1f}% to {expected.ci_high[0] * 100:.1f}%" in page
    assert "30 to under 60" in page


def test_the_codebook_carries_each_number_questions_bins(signed_in, user):
    """The codebook gives the bins the results use (edges, and each bin's label and ends, as the
    estimates JSON labels them), randomized or not; a number without bins and an option question
    say so."""
    plain = {"key": "kids", "kind": "number", "text": "Children?", "minimum": 0, "maximum": 9}
    smoked = {"key": "smoked", "kind": "yes_no", "text": "Smoked?", "privacy": {"design": "grr", "epsilon": 1}}
    add_survey(signed_in.application, {**SPEC, "questions": [DRINKS, AGE, plain, smoked]})
    book = {q["key"]: q for q in signed_in.get("/surveys/drinks/codebook.json").get_json()["questions"]}
    drinks = book["drinks"]["bins"]
    assert drinks["edges"] == [1, 5, 15]
    assert [(b["label"], b["from"], b["to"]) for b in drinks["bins"]] == [
        ("0 to under 1", 0, 1),
        ("1 to under 5", 1, 5),
        ("5 to under 15", 5, 15),
        ("15 to 30", 15, 30),
    ]
    assert "bin above" in drinks["note"] and "maximum likelihood" in drinks["note"]
    age = book["age"]["bins"]
    assert age["edges"] == [30, 60]
    assert [(b["label"], b["from"], b["to"]) for b in age["bins"]] == [
        ("16 to under 30", 16, 30),
        ("30 to under 60", 30, 60),
        ("60 to 99", 60, 99),
    ]
    assert book["kids"]["bins"] is None and "bins" not in book["smoked"]
    answers = {"drinks": 1000, "age": 40, "kids": 2, "smoked": 1}
    assert signed_in.post("/api/surveys/drinks/responses", json={"answers": answers}).status_code == 201
    estimates = {q["key"]: q for q in signed_in.get("/api/surveys/drinks/estimates").get_json()["questions"]}
    for key in ("drinks", "age"):
        assert [b["label"] for b in estimates[key]["bins"]["bins"]] == [b["label"] for b in book[key]["bins"]["bins"]]


# -- a range with decimal ends ---------------------------------------------------------------------

HOURS = {
    "key": "hours",
    "kind": "rr_number",
    "text": "How many hours did you game yesterday?",
    "minimum": 0.5,
    "maximum": 2.5,
    "bins": [1, 1.5],
    "privacy": {"design": "hybrid", "epsilon": 2},
}


def test_a_decimal_range_is_estimated_and_shown_in_its_units_everywhere(signed_in, user):
    add_survey(signed_in.application, {"title": "Hours", "slug": "hours", "questions": [HOURS, AGE]})
    page = signed_in.get("/s/hours").get_data(as_text=True)
    assert 'min="0.5" max="2.5"' in page and "A number from 0.5 to 2.5" in page
    mechanism = HybridNumber(2.0, 0.5, 2.5)
    rng = np.random.default_rng(8)
    codes = [int(c) for c in mechanism.randomize(rng.uniform(0.5, 2.5, 80), rng)]
    for i, code in enumerate(codes):
        answers = {"hours": code, "age": 20 + i % 50}
        assert signed_in.post("/api/surveys/hours/responses", json={"answers": answers}).status_code == 201
    item = next(q for q in signed_in.get("/api/surveys/hours/estimates").get_json()["questions"] if q["key"] == "hours")
    expected = mechanism.estimate(Counter(codes))
    assert item["range"] == {"minimum": 0.5, "maximum": 2.5}
    assert (item["summary"]["mean"], item["summary"]["ci_low"], item["summary"]["ci_high"]) == (
        pytest.approx(expected.estimate, abs=1e-12),
        pytest.approx(expected.low, abs=1e-12),
        pytest.approx(expected.high, abs=1e-12),
    )
    assert [b["label"] for b in item["bins"]["bins"]] == ["0.5 to under 1", "1 to under 1.5", "1.5 to 2.5"]
    for url in (
        "/surveys/hours/results",
        "/surveys/hours/estimates.csv",
        "/surveys/hours/responses.csv",
        "/surveys/hours/codebook.json",
        "/surveys/hours/responses.sav",
        "/surveys/hours/estimates.R",
        "/surveys/hours/compare",
        "/surveys/hours/regression",
        "/surveys/hours/spec.json",
        "/api/surveys/hours/live",
    ):
        response = signed_in.get(url)
        assert response.status_code == 200, (url, response.get_data(as_text=True)[:2000])
    assert "from 0.5 to 2.5" in signed_in.get("/surveys/hours/results").get_data(as_text=True)
