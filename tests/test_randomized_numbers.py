"""Randomized numbers: a sensitive number in a range, randomized in the respondent's browser by a
design of numbers (survey/privacy/numeric.py) and sent as a report code.

From the spec to the respondent's post, the tallies (one per code), the results page and its
estimate (the mechanism's mean and interval on the tallies), and the exports (the report in the
question's units).
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
import subprocess
from collections import Counter

import numpy as np
import pyreadstat
import pytest
from sqlalchemy import func, select

from survey.domain.errors import DomainError
from survey.domain.models import Answer, AnswerTally, Submission, Survey
from survey.domain.responses.pending import fold_all
from survey.domain.responses.tallies import rebuild_tallies, tally_mismatches
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.privacy.number_planning import number_margin
from survey.privacy.numeric import GRID_STEPS, HybridNumber, LaplaceNumber

from .builder import FormValues
from .surveys import add_survey

DRINKS = {
    "key": "drinks",
    "kind": "rr_number",
    "text": "How many drinks did you have last week?",
    "minimum": 0,
    "maximum": 30,
    "privacy": {"design": "hybrid", "epsilon": 1},
}
SPEC = {
    "title": "Drinks",
    "slug": "drinks",
    "questions": [
        {
            "key": "smoked",
            "kind": "yes_no",
            "text": "Smoked?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 0.5},
        },
        DRINKS,
        {"key": "age", "kind": "number", "text": "How old are you?", "minimum": 16, "maximum": 99, "required": False},
    ],
}


@pytest.fixture
def drinks(app, user):
    return add_survey(app, SPEC)


def _post(client, answers):
    return client.post("/api/surveys/drinks/responses", json={"answers": answers})


def _survey():
    return db.session.scalar(select(Survey).where(Survey.slug == "drinks"))


def _question(key="drinks"):
    return next(q for q in _survey().questions if q.key == key)


# -- the spec --------------------------------------------------------------------------------------


@pytest.mark.parametrize("design", ["hybrid", "duchi", "piecewise", "laplace"])
def test_the_spec_round_trips_the_range_and_the_privacy(app, design):
    question = {**DRINKS, "privacy": {"design": design, "epsilon": 1.5}}
    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
        db.session.commit()
        stored = survey.questions[0]
        assert (stored.design.mechanism_name, stored.design.epsilon, stored.design.matrix) == (design, 1.5, [])
        mechanism = stored.mechanism()
        assert (mechanism.design, mechanism.epsilon, mechanism.low, mechanism.high) == (design, 1.5, 0, 30)
        assert survey.total_epsilon() == pytest.approx(1.5)
        again = survey_to_spec(survey)["questions"][0]
    assert again == {**question, "required": True, "privacy": {"design": design, "epsilon": 1.5}}
    with app.app_context():
        copy = create_survey_from_spec(db.session, {**SPEC, "slug": "copy", "questions": [again]})
        assert survey_to_spec(copy)["questions"][0] == again


@pytest.mark.parametrize(
    ("change", "path", "code"),
    [
        ({"minimum": None}, ("minimum",), "spec.range_missing"),
        ({"maximum": None}, ("maximum",), "spec.range_missing"),
        ({"maximum": 0}, ("maximum",), "spec.range_reversed"),
        ({"privacy": None}, ("privacy",), "spec.privacy_missing"),
        ({"privacy": {"design": "grr", "epsilon": 1}}, ("privacy", "design"), "spec.design_unknown"),
        ({"privacy": {"design": "gaussian", "epsilon": 1}}, ("privacy", "design"), "spec.design_unknown"),
        ({"privacy": {"design": "hybrid"}}, ("privacy", "epsilon"), "spec.parameter_missing"),
        ({"privacy": {"design": "hybrid", "epsilon": 0}}, ("privacy", "epsilon"), "design.invalid"),
        ({"privacy": {"design": "hybrid", "epsilon": -1}}, ("privacy", "epsilon"), "design.invalid"),
        ({"privacy": {"design": "laplace", "epsilon": 21}}, ("privacy", "epsilon"), "design.invalid"),
        ({"privacy": {"design": "hybrid", "epsilon": "1"}}, ("privacy", "epsilon"), "spec.not_number"),
        ({"privacy": {"design": "hybrid", "epsilon": 1, "p": 0.5}}, ("privacy", "p"), "spec.unknown_field"),
        ({"options": ["a", "b"]}, ("options",), "spec.number_has_no_options"),
    ],
)
def test_a_bad_randomized_number_is_refused_on_its_field(app, change, path, code):
    question = {k: v for k, v in {**DRINKS, **change}.items() if v is not None}
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert refused.value.code == code and refused.value.path == ("questions", 0, *path), refused.value
    assert "question 1 ('drinks')" in str(refused.value)


def test_a_design_of_numbers_serves_no_question_with_options(app):
    question = {**SPEC["questions"][0], "privacy": {"design": "hybrid", "epsilon": 1}}
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert refused.value.code == "spec.design_unknown"


# -- answering -------------------------------------------------------------------------------------


def test_a_report_code_is_stored_and_tallied_by_code(app, client, drinks):
    for code in (0, 1000, 1000, GRID_STEPS, "17"):
        assert _post(client, {"smoked": 1, "drinks": code}).status_code == 201
    with app.app_context():
        survey, question = _survey(), _question()
        assert sorted(db.session.scalars(select(Answer.value).where(Answer.question_id == question.id))) == [
            0,
            17,
            1000,
            1000,
            GRID_STEPS,
        ]
        assert fold_all(db.session) == 5  # the answer tallies are added by the fold
        counts = dict(
            db.session.execute(
                select(AnswerTally.value, func.sum(AnswerTally.count))
                .where(AnswerTally.question_id == question.id)
                .group_by(AnswerTally.value)
            ).all()
        )
        assert counts == {0: 1, 17: 1, 1000: 2, GRID_STEPS: 1}
        assert tally_mismatches(db.session, survey) == []


@pytest.mark.parametrize("bad", [-1, GRID_STEPS + 1, 12.5, "12.5", "many", True, [3], None])
def test_a_report_outside_the_domain_is_a_400_and_writes_nothing(app, client, drinks, bad):
    response = _post(client, {"smoked": 1, "drinks": bad})
    assert response.status_code == 400
    body = response.get_json()
    assert body["path"] == ["answers", "drinks"] and body["code"].startswith("answer.")
    assert "drinks" in body["error"]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 0
        assert db.session.scalar(select(func.count()).select_from(AnswerTally)) == 0


def test_the_domain_is_the_mechanisms_not_the_range(app, client, user):
    """A Laplace report can fall far outside the range: its codes run beyond the grid's ends."""
    question = {**DRINKS, "privacy": {"design": "laplace", "epsilon": 1}}
    add_survey(app, {**SPEC, "questions": [question]})
    domain = LaplaceNumber(1.0).reports
    for code in (-5000, GRID_STEPS + 5000, domain.low, domain.high):
        assert _post(client, {"drinks": code}).status_code == 201
    assert _post(client, {"drinks": domain.high + 1}).status_code == 400


def test_recount_checks_and_rebuilds_report_tallies(app, client, drinks):
    for code in (3, 3, 1999):
        assert _post(client, {"smoked": 0, "drinks": code}).status_code == 201
    with app.app_context():
        survey, question = _survey(), _question()
        assert fold_all(db.session) == 3
        tally = db.session.scalars(select(AnswerTally).where(AnswerTally.question_id == question.id)).first()
        tally.count += 5
        db.session.commit()
        assert any("'drinks'" in problem for problem in tally_mismatches(db.session, survey))
        rebuild_tallies(db.session, survey)
        db.session.commit()
        assert tally_mismatches(db.session, survey) == []


def test_the_mechanism_rebuilt_from_the_row_is_the_one_the_spec_made(app, drinks):
    with app.app_context():
        assert _question().mechanism() == HybridNumber(1.0, 0, 30)


# -- the respondent's page -------------------------------------------------------------------------


def test_the_page_carries_the_sampler_and_a_number_input_that_is_never_sent(app, client, drinks):
    page = client.get("/s/drinks").get_data(as_text=True)
    fieldset = re.search(r'<fieldset class="question" id="question-drinks"[^>]*>', page).group(0)
    with app.app_context():
        sampler = _question().mechanism().sampler()
    assert 'data-sampler="hybrid"' in fieldset and "data-randomized" in fieldset and "data-number" in fieldset
    carried = {name: html.unescape(value) for name, value in re.findall(r'data-([a-z_]+)="([^"]*)"', fieldset)}
    assert {name: json.loads(carried[name]) for name in sampler if name != "sampler"} == {
        name: value for name, value in sampler.items() if name != "sampler"
    }
    number_input = re.search(r'<input type="number" id="drinks-number"[^>]*>', page).group(0)
    # the typed number has no name and belongs to the form that is never sent; only the code is posted
    assert "name=" not in number_input and 'form="true-answers"' in number_input
    assert 'min="0"' in number_input and 'max="30"' in number_input and 'step="any"' in number_input
    assert 'name="q_drinks"' in page and 'data-reported-for="drinks"' in page
    assert re.search(r"/static/js/respond/numbers\.[0-9a-f]{10}\.js", page)  # (named by its content's hash)


def test_a_survey_without_randomized_numbers_does_not_load_their_sampler(app, client, user):
    add_survey(app, {**SPEC, "slug": "plain", "questions": [SPEC["questions"][0]]})
    assert "/static/js/respond/numbers." not in client.get("/s/plain").get_data(as_text=True)


# -- results and exports ---------------------------------------------------------------------------


def _simulated_codes(mechanism, truths, seed=7):
    return [int(c) for c in mechanism.randomize(np.asarray(truths, dtype=float), np.random.default_rng(seed))]


def test_results_estimate_the_mean_from_the_tallies_with_the_mechanisms_interval(signed_in, drinks):
    truths = [0] * 30 + [2] * 40 + [10] * 20 + [30] * 10  # mean 4.8
    codes = _simulated_codes(HybridNumber(1.0, 0, 30), truths)
    for code in codes:
        assert _post(signed_in, {"smoked": 0, "drinks": code}).status_code == 201
    expected = HybridNumber(1.0, 0, 30).estimate(Counter(codes))
    assert expected.method == "betting" and expected.low < 4.8 < expected.high  # (seeded: it does cover)
    document = signed_in.get("/api/surveys/drinks/estimates").get_json()
    item = next(q for q in document["questions"] if q["key"] == "drinks")
    assert (item["randomized"], item["n"], item["epsilon"], item["design"]["design"]) == (True, 100, 1.0, "hybrid")
    assert item["summary"]["mean"] == pytest.approx(expected.estimate, abs=1e-12)
    assert (item["summary"]["ci_low"], item["summary"]["ci_high"]) == (
        pytest.approx(expected.low, abs=1e-12),
        pytest.approx(expected.high, abs=1e-12),
    )
    assert item["summary"]["interval_method"] == "betting"
    # the survey's total ε counts it (basic composition): the coin flip's and this question's 1
    with signed_in.application.app_context():
        coin = _question("smoked").mechanism().epsilon
    assert document["total_epsilon"] == pytest.approx(coin + 1.0)
    page = signed_in.get("/surveys/drinks/results").get_data(as_text=True)
    assert f"<td>{expected.estimate:.2f}</td>" in page and f"{expected.low:.2f} to {expected.high:.2f}" in page
    assert "randomized answers" in page and "ε = 1" in page
    rows = list(csv.DictReader(io.StringIO(signed_in.get("/surveys/drinks/estimates.csv").get_data(as_text=True))))
    row = next(r for r in rows if r["question_key"] == "drinks")
    assert (row["option_label"], row["randomized"], row["interval_method"]) == ("mean", "1", "betting")
    assert float(row["unbiased"]) == pytest.approx(expected.estimate, abs=1e-9)


def _live_note(page: str, key: str) -> str:
    found = re.search(rf'<p class="live-note" id="live-{key}">(.*?)</p>', page, re.S)
    assert found, "no live note for " + key
    return html.unescape(found.group(1))


def test_the_results_page_shows_the_randomized_numbers_live_interval_against_the_target(signed_in, drinks):
    """The live interval the live API gives is on the page beside the fixed one, with its widest half
    and the survey's target margin in the number's units (the same share of the range), reached or not."""
    codes = _simulated_codes(HybridNumber(1.0, 0, 30), [0] * 30 + [2] * 40 + [10] * 20 + [30] * 10)
    for code in codes:
        assert _post(signed_in, {"smoked": 0, "drinks": code}).status_code == 201
    live = next(m for m in signed_in.get("/api/surveys/drinks/live").get_json()["numbers"] if m["key"] == "drinks")
    assert live["interval_method"] == "betting" and live["n"] == len(codes)
    half = max(live["mean"] - live["live_low"], live["live_high"] - live["mean"])
    for margin in (0.05, 0.5):  # ±1.50 on 0–30: far from reached at 100 answers; ±15: reached
        with signed_in.application.app_context():
            db.session.scalar(select(Survey).where(Survey.slug == "drinks")).target_margin = margin
            db.session.commit()
        page = signed_in.get("/surveys/drinks/results").get_data(as_text=True)
        assert f'<td class="interval live">{live["live_low"]:.2f} to {live["live_high"]:.2f}</td>' in page
        note = _live_note(page, "drinks")
        target = margin * 30
        assert f"widest half here is ±{half:.2f}" in note and f"is ±{target:.2f}:" in note
        assert note.endswith("not on numbers.)")
        assert ("not yet reached" in note) == (half > target) and ("reached" in note)
    assert 1.5 < half < 15  # (seeded: the two margins above fall on either side of it)


def test_laplace_gives_the_normal_interval(signed_in, user):
    question = {**DRINKS, "privacy": {"design": "laplace", "epsilon": 2}}
    add_survey(signed_in.application, {**SPEC, "questions": [question]})
    mechanism = LaplaceNumber(2.0, 0, 30)
    codes = _simulated_codes(mechanism, [5] * 50)
    for code in codes:
        assert _post(signed_in, {"drinks": code}).status_code == 201
    item = next(
        q for q in signed_in.get("/api/surveys/drinks/estimates").get_json()["questions"] if q["key"] == "drinks"
    )
    expected = mechanism.estimate(Counter(codes))
    assert item["summary"]["interval_method"] == "normal" and item["summary"]["mean"] == pytest.approx(
        expected.estimate
    )
    page = signed_in.get("/surveys/drinks/results").get_data(as_text=True)
    assert "No live interval: Laplace noise has no bound" in _live_note(page, "drinks")
    assert "interval live" not in page


def test_every_page_and_download_of_a_survey_with_a_randomized_number_works(signed_in, drinks):
    codes = _simulated_codes(HybridNumber(1.0, 0, 30), [3, 5, 8, 0, 12] * 4)
    for i, code in enumerate(codes):
        assert _post(signed_in, {"smoked": i % 2, "drinks": code, "age": 20 + i}).status_code == 201
    for url in (
        "/surveys/drinks/results",
        "/surveys/drinks/estimates.csv",
        "/surveys/drinks/responses.csv",
        "/surveys/drinks/codebook.json",
        "/surveys/drinks/responses.sav",
        "/surveys/drinks/responses.dta",
        "/surveys/drinks/estimates.R",
        "/api/surveys/drinks/live",
        "/surveys/drinks/compare",
        "/surveys/drinks/regression",
        "/surveys/drinks/build",
        "/surveys/drinks/spec.json",
        "/surveys/drinks/share",
        "/s/drinks/privacy",
        "/s/drinks/preview",
        "/",
    ):
        response = signed_in.get(url)
        assert response.status_code == 200, (url, response.status_code, response.get_data(as_text=True)[:2000])
    # the live API gives the randomized number its live interval, which holds its estimate
    live = next(m for m in signed_in.get("/api/surveys/drinks/live").get_json()["numbers"] if m["key"] == "drinks")
    assert live["n"] == len(codes) and live["interval_method"] == "betting"
    assert live["live_low"] <= live["mean"] <= live["live_high"]


def test_the_microdata_give_the_report_in_the_questions_units(signed_in, drinks, tmp_path):
    mechanism = HybridNumber(1.0, 0, 30)
    codes = [0, 1000, GRID_STEPS, 1234]
    for code in codes:
        assert _post(signed_in, {"smoked": 1, "drinks": code}).status_code == 201
    micro = list(csv.DictReader(io.StringIO(signed_in.get("/surveys/drinks/responses.csv").get_data(as_text=True))))
    values = [r["drinks"] for r in micro]
    assert [float(v) for v in values] == pytest.approx([float(mechanism.value_of(c)) for c in codes], abs=1e-9)
    assert float(values[1]) == pytest.approx(15.0)  # the grid's middle is the range's middle
    book = signed_in.get("/surveys/drinks/codebook.json").get_json()
    entry = next(q for q in book["questions"] if q["key"] == "drinks")
    assert entry["randomized"] and entry["range"] == {"minimum": 0, "maximum": 30}
    assert entry["design"]["name"] == "hybrid" and entry["design"]["epsilon"] == 1.0
    assert entry["design"]["grid"]["codes"] == [0, GRID_STEPS] and "report" in entry["design"]["values_note"]
    column = next(c for c in book["columns"] if c.get("question") == "drinks")
    assert column["type"] == "number or empty" and "randomized report" in column["description"]
    assert book["total_epsilon"] == pytest.approx(
        signed_in.get("/api/surveys/drinks/estimates").get_json()["total_epsilon"]
    )
    # the labelled files: a numeric column with decimals and no value labels
    for extension in ("sav", "dta"):
        response = signed_in.get(f"/surveys/drinks/responses.{extension}")
        path = str(tmp_path / f"read.{extension}")
        with open(path, "wb") as handle:
            handle.write(response.get_data())
        read = pyreadstat.read_sav if extension == "sav" else pyreadstat.read_dta
        frame, meta = read(path)
        assert list(frame["drinks"][:4]) == pytest.approx([float(mechanism.value_of(c)) for c in codes], abs=1e-6)
        assert "drinks" not in meta.variable_value_labels
    script = signed_in.get("/surveys/drinks/estimates.R").get_data(as_text=True)
    low, high = (float(v) for v in mechanism.value_of([0, GRID_STEPS]))
    assert f"reports = TRUE, low = {low!r}, high = {high!r}" in script


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed (make test installs it)")
def test_the_r_script_redoes_a_randomized_number_to_1e_6(signed_in, drinks, tmp_path):
    """The survey's R script, run on its microdata, gives the randomized number's mean and betting
    interval (over the report grid's ends) that the estimates file gives, to 1e-6."""
    for i, code in enumerate([10, 500, 1500, 2000, 999, 3, 1200, 1200]):
        assert _post(signed_in, {"smoked": i % 2, "drinks": code, "age": 30 + i}).status_code == 201
    script, data, out = tmp_path / "e.R", tmp_path / "r.csv", tmp_path / "out.csv"
    script.write_bytes(signed_in.get("/surveys/drinks/estimates.R").get_data())
    data.write_bytes(signed_in.get("/surveys/drinks/responses.csv").get_data())
    run = subprocess.run(
        [shutil.which("Rscript"), str(script), str(data), str(out)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    theirs = {row["question_key"]: row for row in csv.DictReader(out.open())}
    assert set(theirs) == {"smoked", "drinks", "age"}
    ours = next(
        row
        for row in csv.DictReader(io.StringIO(signed_in.get("/surveys/drinks/estimates.csv").get_data(as_text=True)))
        if row["question_key"] == "drinks"
    )
    r = theirs["drinks"]
    assert r["interval_method"] == ours["interval_method"] == "betting" and r["n"] == ours["n"] == "8"
    for column in ("unbiased", "ci_low", "ci_high"):
        assert float(r[column]) == pytest.approx(float(ours[column]), abs=1e-6), column


def test_the_demo_estimates_the_mean_of_its_randomized_number(app):
    """The demo's randomized number (hybrid at ε = 1 on 0 to 30), drawn by the mechanism's own
    randomize as the browser draws: the estimate and its interval beside the true mean of the
    simulated respondents (the demo's seed: the same every run)."""
    from survey.domain.responses.tallies import number_results
    from survey.domain.surveys.demo import create_demo

    with app.app_context():
        survey = create_demo(db.session)
        summary = next(m for m in number_results(db.session, survey) if m.question.key == "drinks_last_week")
        assert summary.n == 3000 and summary.interval_method == "betting" and summary.epsilon == 1.0
        assert summary.ci_low < summary.simulated_mean < summary.ci_high
        assert 3.5 < summary.simulated_mean < 5.5
        # no wider than planned for the widest spread (survey.privacy.number_planning)
        planned = number_margin(3000, 0, 30, mechanism=HybridNumber(1.0, 0, 30))
        assert (summary.ci_high - summary.ci_low) / 2 <= planned


def test_a_draft_with_a_randomized_number_is_built_and_its_question_shown(signed_in, user):
    """A draft imported with one shows it, with its range, and saving its edit page unchanged keeps
    it (tests/test_builder.py builds one through the form)."""
    add_survey(signed_in.application, {**SPEC, "status": "draft", "questions": [DRINKS]})
    build = signed_in.get("/surveys/drinks/build")
    assert build.status_code == 200
    page = build.get_data(as_text=True)
    assert "Number, randomized" in page and "0 to 30" in page
    edit = signed_in.get("/surveys/drinks/questions/drinks/edit")
    assert edit.status_code == 200, edit.get_data(as_text=True)[:2000]
    with signed_in.application.app_context():
        before = survey_to_spec(_survey())
    shown = FormValues.of(signed_in, "/surveys/drinks/questions/drinks/edit")
    saved = signed_in.post("/surveys/drinks/questions/drinks/edit", data=shown)
    with signed_in.application.app_context():
        after = survey_to_spec(_survey())
    assert after == before, saved.get_data(as_text=True)[:3000]


def test_the_build_pages_plan_gives_the_means_margin_in_its_units(signed_in, user):
    """The planning table: a randomized number's ε, the planned half-width of its mean's interval at
    the survey's expected respondents (the widest spread), the respondents needed for the survey's
    target margin taken as that share of its range (±4 points: ±1.20 on 0 to 30), and its design
    effect against asking it directly."""
    add_survey(signed_in.application, {**SPEC, "status": "draft", "expected_respondents": 1000, "target_margin": 0.04})
    with signed_in.application.app_context():
        from survey.domain.surveys.budget import survey_budget

        cost = next(c for c in survey_budget(db.session, _survey()).costs if c.question.key == "drinks")
    mechanism = HybridNumber(1.0, 0, 30)
    planned = number_margin(1000, 0, 30, mechanism=mechanism)
    direct = number_margin(1000, 0, 30)
    needed = cost.respondents_needed
    assert (cost.epsilon, cost.margin_of_error) == (1.0, None)
    assert cost.target_in_units == pytest.approx(1.2)
    # the fewest answers whose planned half-width is within ±1.20
    at = lambda n: number_margin(n, 0, 30, mechanism=mechanism)  # noqa: E731
    assert at(needed) <= 1.2 < at(needed - 1)
    assert cost.margin_in_units == pytest.approx(planned) and not cost.pending
    assert cost.design_effect == pytest.approx((planned / direct) ** 2)
    page = signed_in.get("/surveys/drinks/build").get_data(as_text=True)
    assert f"±{planned:.2f}" in page and 'data-planning-url="/api/surveys/drinks/questions/drinks/planning"' not in page
    assert f'{needed:,} <span class="muted">(for ±1.20, 4% of its range)</span>' in page
