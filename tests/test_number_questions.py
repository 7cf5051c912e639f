"""Number questions: a whole number in a range the organizer sets, asked directly.

From the spec to the respondent's post, the tallies, the results page, the exports and the
regression, where a number enters as itself.
"""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest
from scipy import stats
from sqlalchemy import func, select

from survey.domain.errors import DomainError
from survey.domain.models import Answer, AnswerTally, Submission, Survey
from survey.domain.responses.pending import fold_all
from survey.domain.responses.tallies import number_results, rebuild_tallies, tally_mismatches
from survey.domain.results.analysis import compare, regression
from survey.domain.results.numbers import LIVE_TUNED_FOR, summarize
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.privacy import CoinFlip, rr_logistic

from .surveys import add_survey

SPEC = {
    "title": "Ages",
    "slug": "ages",
    "questions": [
        {
            "key": "smoked",
            "kind": "yes_no",
            "text": "Smoked?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 0.5},
        },
        {"key": "age", "kind": "number", "text": "How old are you?", "minimum": 16, "maximum": 99},
        {"key": "group", "kind": "direct", "text": "Group?", "options": ["a", "b"], "required": False},
    ],
}


@pytest.fixture
def ages(app, user):
    return add_survey(app, SPEC)


def _post(client, answers):
    return client.post("/api/surveys/ages/responses", json={"answers": answers})


def _survey():
    return db.session.scalar(select(Survey).where(Survey.slug == "ages"))


# -- the spec --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"minimum": None}, "minimum", "needs a minimum and a maximum"),
        ({"maximum": 16}, "maximum", "must be above the minimum"),
        ({"maximum": 10}, "maximum", "must be above the minimum"),
        ({"minimum": 1.5}, "minimum", "whole number"),
        ({"maximum": True}, "maximum", "whole number"),
        ({"maximum": 10**10}, "maximum", "whole number"),
        ({"options": ["a", "b"]}, "options", "range (minimum and maximum), not options"),
        ({"privacy": {"design": "grr", "epsilon": 1}}, "privacy", "no privacy settings"),
    ],
)
def test_a_bad_number_question_is_refused_on_its_field(app, change, path, words):
    question = {**SPEC["questions"][1], **change}
    question = {k: v for k, v in question.items() if v is not None}
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert refused.value.path[-1] == path and words in refused.value.message


def test_only_a_number_question_has_a_range(app):
    question = {**SPEC["questions"][0], "minimum": 1}
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert refused.value.path[-1] == "minimum"


def test_the_spec_round_trips_the_range(app, ages):
    with app.app_context():
        spec = survey_to_spec(_survey())
    age = next(q for q in spec["questions"] if q["key"] == "age")
    assert (age["kind"], age["minimum"], age["maximum"]) == ("number", 16, 99) and "options" not in age


# -- answering -------------------------------------------------------------------------------------


def test_a_number_in_range_is_stored_as_itself(app, client, ages):
    assert _post(client, {"smoked": 1, "age": 42}).status_code == 201
    assert _post(client, {"smoked": 0, "age": "16"}).status_code == 201  # typed digits, as a form sends them
    with app.app_context():
        survey = _survey()
        age = next(q for q in survey.questions if q.key == "age")
        assert sorted(db.session.scalars(select(Answer.value).where(Answer.question_id == age.id))) == [16, 42]
        assert tally_mismatches(db.session, survey) == []


@pytest.mark.parametrize("bad", [15, 100, 4.5, "4.5", "forty", True, [42]])
def test_a_number_out_of_range_or_not_whole_is_a_400_and_writes_nothing(app, client, ages, bad):
    response = _post(client, {"smoked": 1, "age": bad})
    assert response.status_code == 400
    body = response.get_json()
    assert "whole number from 16 to 99" in body["error"] and body["path"] == ["answers", "age"]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 0
        assert db.session.scalar(select(func.count()).select_from(AnswerTally)) == 0


def test_the_respondent_page_offers_a_number_input_with_its_range(client, ages):
    page = client.get("/s/ages").get_data(as_text=True)
    assert 'type="number" id="age-number" name="q_age" min="16"' in page and 'max="99"' in page
    assert "A whole number from 16 to 99" in page


# -- summarizing -----------------------------------------------------------------------------------


def _betting_by_definition(answers: np.ndarray, low: float, high: float, tuned_for: int, level: float = 0.95):
    """The betting interval written out from its definition (docs/exports.md, "betting") on the answers
    one by one, not their tallies, with bisection instead of Brent's method: an independent check of
    survey.privacy.bounded.mean_interval as the summary uses it."""
    z = (answers - low) / (high - low)
    alpha = 1 - level
    first = np.sqrt(2 * np.log(2 / alpha) / (tuned_for / 4))
    bets = first * 1.45 ** np.arange(8)

    def evidence(scaled: np.ndarray, m: float) -> float:  # log of the average wealth, minus log(2/α)
        capped = np.minimum(bets, 0.999 / m)
        logs = np.array([np.sum(np.log1p(lam * (scaled - m))) for lam in capped])
        return float(np.log(np.mean(np.exp(logs - logs.max()))) + logs.max() - np.log(2 / alpha))

    def end(scaled: np.ndarray) -> float:  # the m in (0, mean) where the evidence falls to the threshold
        lo, hi = 1e-12, float(scaled.mean())
        if hi <= lo or evidence(scaled, lo) <= 0:
            return 0.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if evidence(scaled, mid) > 0 else (lo, mid)
        return (lo + hi) / 2

    return low + (high - low) * end(z), low + (high - low) * (1 - end(1 - z))


def test_the_summary_equals_numpy_on_the_answers_and_the_betting_interval_by_its_definition(app):
    counts = {20: 2, 30: 1, 40: 1, 17: 3, 99: 1}
    answers = np.repeat(list(counts), list(counts.values())).astype(float)
    with app.app_context():
        question = create_survey_from_spec(db.session, SPEC).questions[1]
        m = summarize(question, counts)
    assert m.n == answers.size and m.mean == pytest.approx(answers.mean(), abs=1e-12)
    assert m.standard_deviation == pytest.approx(answers.std(ddof=1), abs=1e-12)
    low, high = _betting_by_definition(answers, 16, 99, tuned_for=answers.size)
    assert (m.ci_low, m.ci_high) == (pytest.approx(low, abs=1e-8), pytest.approx(high, abs=1e-8))
    live_low, live_high = _betting_by_definition(answers, 16, 99, tuned_for=LIVE_TUNED_FOR)
    assert (m.live_low, m.live_high) == (pytest.approx(live_low, abs=1e-8), pytest.approx(live_high, abs=1e-8))
    assert m.to_dict()["summary"]["interval_method"] == "betting"
    assert [m.lower_quartile, m.median, m.upper_quartile] == list(np.percentile(answers, [25, 50, 75]))
    assert (m.minimum, m.maximum) == (17, 99)
    # check values: 8 answers summing to 260; the interval holds the mean inside the range
    assert m.mean == 32.5 and m.median == 20.0
    assert 16 <= m.ci_low < m.mean < m.ci_high <= 99


def test_one_answer_has_a_mean_and_the_whole_range_as_its_interval(app):
    """With one answer z, every bet's wealth is 1 + λ(z − m) ≤ 1 + 0.999 (z − m)/m < 2, far below
    2/α = 40, so no mean in the range can be ruled out: the interval is exactly the range (the t
    interval had none; any interval valid for every distribution must be this wide)."""
    with app.app_context():
        m = summarize(create_survey_from_spec(db.session, SPEC).questions[1], {30: 1})
    assert (m.n, m.mean, m.standard_deviation, m.median) == (1, 30.0, None, 30.0)
    assert (m.ci_low, m.ci_high, m.live_low, m.live_high) == (16, 99, 16, 99)
    assert summarize(m.question, {}).ci_low is None


PERCENT_SPEC = {
    "title": "Days",
    "slug": "days",
    "questions": [{"key": "days", "kind": "number", "text": "Days of 100?", "minimum": 0, "maximum": 100}],
}


def test_nineteen_zeros_and_one_hundred_give_an_interval_every_valid_interval_must_reach(app):
    """n = 20 in [0, 100], k answers at 100 and the rest at 0. Under the two-point distribution with
    P(100) = p, an interval whose upper end U(k) grows with k misses 100p whenever k ≤ 1 and
    U(1) < 100p; so an interval valid at 95% for every distribution must have U(1) ≥ 100·p*, where
    P(k ≤ 1 | p*) = 5%, i.e. p* = the 95% quantile of Beta(2, 19) (21.61). The t interval gave
    5 ± 10.46: up to 15.46 only, and down to −5.46, below the range. Its coverage at p = 0.05 is at
    most P(k ≥ 1) = 1 − 0.95²⁰ = 0.64; the betting interval's is summed exactly here, over every k."""
    n = 20
    with app.app_context():
        question = create_survey_from_spec(db.session, PERCENT_SPEC).questions[0]
        ends = [summarize(question, {0: n - k, 100: k}) for k in range(n + 1)]
    one = ends[1]
    assert (one.mean, one.ci_low) == (5.0, 0.0)
    assert one.ci_high >= 100 * stats.beta.ppf(0.95, 2, n - 1)
    highs = np.array([m.ci_high for m in ends])
    lows = np.array([m.ci_low for m in ends])
    assert (np.diff(highs) >= 0).all() and (np.diff(lows) >= 0).all()  # so the bound above applies
    assert ends[0].ci_high >= 100 * (1 - 0.025 ** (1 / n))  # twenty zeros: the bound of test_bounded_mean
    assert ((lows >= 0) & (highs <= 100)).all()
    # the t interval on the same outcomes, for comparison: it covers 5 only when some answer is 100
    t_covers = np.zeros(n + 1, dtype=bool)
    for k in range(1, n):  # (k = 0 and k = n: every answer equal, a t interval of width 0 away from 5)
        answers = np.repeat([0.0, 100.0], [n - k, k])
        t_low, t_high = stats.t.interval(0.95, n - 1, loc=answers.mean(), scale=stats.sem(answers))
        t_covers[k] = t_low <= 5 <= t_high
    t_coverage = float(stats.binom.pmf(np.arange(n + 1), n, 0.05)[t_covers].sum())
    assert t_coverage <= 1 - 0.95**n and t_coverage == pytest.approx(0.64, abs=0.005)
    for p in np.linspace(0.0025, 0.9975, 400):
        mass = stats.binom.pmf(np.arange(n + 1), n, p)
        covered = float(mass[(lows <= 100 * p) & (100 * p <= highs)].sum())
        assert covered >= 0.95 - 1e-12, (p, covered)


def _shown_intervals(page: str, key: str) -> list[tuple[float, float]]:
    """The intervals a number question's table on the results page shows (fixed, then live)."""
    section = page[page.index(f'aria-labelledby="q-{key}"') :]
    section = section[: section.index("</section>")]
    cells = re.findall(r'<td class="interval[^"]*">(-?[\d.]+) to (-?[\d.]+)</td>', section)
    return [(float(a), float(b)) for a, b in cells]


def test_no_interval_shown_or_exported_leaves_the_range(signed_in, ages):
    """Nineteen answers at the minimum (16) and one at the maximum (99): the t interval went down to
    11.5. At every look, the page, the JSON and the CSV keep both intervals inside [16, 99]."""
    answers = [16] * 19 + [99]
    for i, age in enumerate(answers, start=1):
        assert _post(signed_in, {"smoked": 0, "age": age}).status_code == 201
        if i not in (1, 2, 5, 19, 20):
            continue
        summary = next(
            q for q in signed_in.get("/api/surveys/ages/estimates").get_json()["questions"] if q["key"] == "age"
        )["summary"]
        assert summary["interval_method"] == "betting"
        assert 16 <= summary["ci_low"] <= summary["mean"] <= summary["ci_high"] <= 99, (i, summary)
        page = signed_in.get("/surveys/ages/results").get_data(as_text=True)
        shown = _shown_intervals(page, "age")
        assert len(shown) == 2 and all(16 <= low <= high <= 99 for low, high in shown), (i, shown)
        assert shown[0] == (round(summary["ci_low"], 2), round(summary["ci_high"], 2))
        rows = csv.DictReader(io.StringIO(signed_in.get("/surveys/ages/estimates.csv").get_data(as_text=True)))
        row = next(r for r in rows if r["question_key"] == "age")
        assert 16 <= float(row["ci_low"]) <= float(row["ci_high"]) <= 99 and row["interval_method"] == "betting"
    assert shown[0][0] == 16.0  # one answer in twenty at 99 does not rule out a mean at the minimum


def test_the_live_interval_holds_at_every_look_exactly(app):
    """A yes/no answer as a number in [0, 1], watched after every answer up to 40: the chance that the
    page's live interval (tuned for 1,000 answers) ever misses the mean, summed exactly over every path
    (a dynamic program over the count of ones), is at most 5% (measured: 0.02% to 1.6% over these p)."""
    horizon = 40
    spec = {**PERCENT_SPEC, "questions": [{**PERCENT_SPEC["questions"][0], "maximum": 1}]}
    with app.app_context():
        question = create_survey_from_spec(db.session, spec).questions[0]
        ends = [[summarize(question, {0: n - k, 1: k}) for k in range(n + 1)] for n in range(1, horizon + 1)]
    for p in (0.02, 0.1, 0.3, 0.5, 0.9):
        alive = np.array([1.0])  # P(k ones after n answers and never missed yet)
        for n in range(1, horizon + 1):
            grown = np.zeros(n + 1)
            grown[:-1] += alive * (1 - p)
            grown[1:] += alive * p
            alive = grown * np.array([m.live_low <= p <= m.live_high for m in ends[n - 1]])
        assert 1 - alive.sum() <= 0.05 + 1e-12, p


def test_the_live_api_gives_the_mean_s_live_interval_outside_the_stopping_rule(signed_in, ages):
    for age in (20, 30, 40, 50):
        assert _post(signed_in, {"smoked": 0, "age": age}).status_code == 201
    document = signed_in.get("/api/surveys/ages/live").get_json()
    assert [q["key"] for q in document["questions"]] == ["smoked"]  # the stopping rule: randomized only
    (number,) = document["numbers"]
    with signed_in.application.app_context():
        m = summarize(next(q for q in _survey().questions if q.key == "age"), {20: 1, 30: 1, 40: 1, 50: 1})
    assert number == {
        "key": "age",
        "n": 4,
        "range": {"minimum": 16, "maximum": 99},
        "mean": 35.0,
        "live_low": m.live_low,
        "live_high": m.live_high,
        "tuned_for": LIVE_TUNED_FOR,
        "interval_method": "betting",
    }
    assert 16 <= m.live_low < 35 < m.live_high <= 99


def test_recount_checks_and_rebuilds_number_tallies(app, client, ages):
    for age in (30, 30, 45):
        assert _post(client, {"smoked": 1, "age": age}).status_code == 201
    with app.app_context():
        survey = _survey()
        age = next(q for q in survey.questions if q.key == "age")
        assert fold_all(db.session) == 3  # the answer tallies are added by the fold
        tally = db.session.scalars(select(AnswerTally).where(AnswerTally.question_id == age.id)).first()
        tally.count += 5
        db.session.commit()
        assert any("'age'" in problem for problem in tally_mismatches(db.session, survey))
        rebuild_tallies(db.session, survey)
        db.session.commit()
        assert tally_mismatches(db.session, survey) == []
        assert number_results(db.session, survey)[0].n == 3


# -- results, exports, analysis --------------------------------------------------------------------


def test_results_and_exports_carry_the_numbers(signed_in, ages):
    for age in (20, 30, 40, 50):
        assert _post(signed_in, {"smoked": 0, "age": age}).status_code == 201
    page = signed_in.get("/surveys/ages/results").get_data(as_text=True)
    assert "number, from 16 to 99" in page and "<td>35.00</td>" in page
    document = signed_in.get("/api/surveys/ages/estimates").get_json()
    age = next(q for q in document["questions"] if q["key"] == "age")
    assert [q["key"] for q in document["questions"]] == ["smoked", "age", "group"]
    assert age["summary"]["mean"] == 35.0 and age["range"] == {"minimum": 16, "maximum": 99}
    rows = list(csv.DictReader(io.StringIO(signed_in.get("/surveys/ages/estimates.csv").get_data(as_text=True))))
    mean_row = next(r for r in rows if r["question_key"] == "age")
    assert (mean_row["option_label"], float(mean_row["unbiased"])) == ("mean", 35.0)
    assert mean_row["interval_method"] == age["summary"]["interval_method"] == "betting"
    summary = age["summary"]
    assert (float(mean_row["ci_low"]), float(mean_row["ci_high"])) == (summary["ci_low"], summary["ci_high"])
    micro = list(csv.DictReader(io.StringIO(signed_in.get("/surveys/ages/responses.csv").get_data(as_text=True))))
    assert [r["age"] for r in micro] == ["20", "30", "40", "50"]
    book = signed_in.get("/surveys/ages/codebook.json").get_json()
    assert next(q for q in book["questions"] if q["key"] == "age")["range"] == {"minimum": 16, "maximum": 99}


def test_a_number_is_no_breakdown_but_enters_a_regression_as_itself(app, client, ages):
    rng = np.random.default_rng(3)
    design = CoinFlip(0.6, 0.5)
    rows = []
    for _ in range(300):
        age = int(rng.integers(16, 100))
        truth = int(rng.random() < 1 / (1 + np.exp(-(-2 + 0.04 * age))))  # 1 = smoked
        reported = int(design.randomize(np.array([1 - truth]), rng)[0])  # stored code 0 is "yes"
        rows.append((age, reported))
        assert _post(client, {"smoked": reported, "age": age}).status_code == 201
    with app.app_context():
        survey = _survey()
        with pytest.raises(DomainError) as refused:
            compare(db.session, survey, "smoked", "age")
        assert refused.value.path == ("by",) and "regression" in refused.value.message
        fit = regression(db.session, survey, "smoked", ["age"]).fit
    # the same model fitted on the respondents one by one, without the database
    X = np.array([[age] for age, _ in rows], dtype=float)
    reports = np.array([int(reported == 0) for _, reported in rows])
    direct = rr_logistic(design, X, reports, category=0, names=["age"])
    np.testing.assert_allclose(fit.params, direct.params, rtol=1e-6, atol=1e-8)
    assert fit.names[-1] == "age"
