"""Split ballots: one question asked in several ways (arms), each respondent assigned one by chance.

What a spec may say (``"arm": {"group": ..., "share": ...}``) and what it may not; that a submission
answers one arm of a group (two refused, none of a required group refused, nothing written either
way), on the web and in an import; that a group costs its worst arm's ε, wherever the total is
computed; and that the results read each arm's tallies into randomized-minus-direct and the
non-compliance models with the figures the privacy core gives for the same counts (whose agreement
with RRreg tests/test_noncompliance.py holds), closed forms included.
"""

from __future__ import annotations

import copy
import math
import re

import pytest
from sqlalchemy import select

from survey.domain.errors import DomainError
from survey.domain.models import Survey
from survey.domain.responses.imports import ImportRefused, import_responses
from survey.domain.responses.tallies import survey_counts, survey_results, tally_mismatches
from survey.domain.results.exports import estimates_document
from survey.domain.results.split_ballots import split_ballots
from survey.domain.surveys.budget import stored_total_epsilon, survey_epsilons
from survey.domain.surveys.lifecycle import publish_refusals
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.privacy import Warner
from survey.privacy.arms import randomized_minus_direct
from survey.privacy.noncompliance import cheating_detection, stochastic_lie_detector

from .surveys import SPLIT_SPEC, add_survey, stored, text

YES_NO = ["yes", "no"]
SPEC = SPLIT_SPEC


def _spec(**changes) -> dict:
    spec = copy.deepcopy(SPEC)
    spec.update(changes)
    return spec


def _survey() -> Survey:
    return db.session.scalar(select(Survey).where(Survey.slug == "split"))


def _rows(key: str, yes: int, n: int, labels: tuple[str, str] = ("1", "0")) -> list[str]:
    return [f"2026-11-01,{key},{labels[0] if i < yes else labels[1]}" for i in range(n)]


def _import(survey: Survey) -> None:
    """100 answers per arm: 10 "yes" asked directly, 40 reported "yes" under Warner's p = 0.75; 40 and
    65 reported "yes" in the cheating arms (forced "yes" 0.3 and 0.6)."""
    rows = [
        *_rows("drugs_direct", 10, 100, ("yes", "no")),
        *_rows("drugs_rr", 40, 100),
        *_rows("cheat_a", 40, 100),
        *_rows("cheat_b", 65, 100),
    ]
    lines = ["submitted_on,drugs_direct,drugs_rr,cheat_a,cheat_b"]
    columns = {"drugs_direct": 1, "drugs_rr": 2, "cheat_a": 3, "cheat_b": 4}
    for row in rows:
        day, key, value = row.split(",")
        cells = ["", "", "", ""]
        cells[columns[key] - 1] = value
        lines.append(",".join([day, *cells]))
    import_responses(db.session, survey, "\n".join(lines) + "\n", "csv")
    db.session.commit()


# -- the spec ---------------------------------------------------------------------------------------


def test_a_spec_with_split_ballots_round_trips(app, user):
    with app.app_context():
        survey = create_survey_from_spec(db.session, SPEC)
        assert [(q.arm_group, q.arm_share) for q in survey.questions] == [
            ("drugs", 0.5),
            ("drugs", 0.5),
            (None, None),
            ("cheating", 0.4),
            ("cheating", 0.6),
        ]
        again = survey_to_spec(survey)
        assert [q.get("arm") for q in again["questions"]] == [q.get("arm") for q in SPEC["questions"]]


def _with(index: int, **changes) -> dict:
    spec = _spec()
    spec["questions"][index].update(changes)
    return spec


@pytest.mark.parametrize(
    ("spec", "code", "path"),
    [
        (_with(0, arm={"group": "drugs", "share": 1.5}), "spec.arm_share_invalid", ["questions", 0, "arm", "share"]),
        (_with(0, arm={"group": "drugs", "share": 0}), "spec.arm_share_invalid", ["questions", 0, "arm", "share"]),
        (_with(0, arm={"group": "Drugs!", "share": 0.5}), "spec.arm_group_malformed", ["questions", 0, "arm", "group"]),
        (_with(0, arm="drugs"), "spec.arm_not_object", ["questions", 0, "arm"]),
        (_with(0, arm={"group": "drugs", "share": 0.5, "x": 1}), "spec.unknown_field", ["questions", 0, "arm", "x"]),
        # the arms of a group are consecutive
        (_with(2, arm={"group": "drugs", "share": 0.2}), "spec.arm_shares_sum", ["questions", 0, "arm", "share"]),
        (_with(3, arm={"group": "drugs", "share": 0.4}), "spec.arm_group_split", ["questions", 3, "arm", "group"]),
        # a group of one arm, and shares that do not sum to 1
        (_with(1, arm={"group": "other", "share": 0.5}), "spec.arm_group_alone", ["questions", 0, "arm", "group"]),
        (_with(4, arm={"group": "cheating", "share": 0.5}), "spec.arm_shares_sum", ["questions", 3, "arm", "share"]),
    ],
)
def test_a_spec_refuses_split_ballots_that_cannot_be_asked(app, user, spec, code, path):
    with app.app_context():
        with pytest.raises(DomainError) as caught:
            create_survey_from_spec(db.session, spec)
        assert caught.value.code == code
        assert list(caught.value.path) == path
        db.session.rollback()
        assert db.session.scalar(select(Survey.id)) is None


def test_shares_typed_as_decimals_may_round_to_one_third(app, user):
    spec = _spec()
    for i in (3, 4):
        spec["questions"][i]["arm"]["share"] = 0.3333
    spec["questions"].insert(
        5,
        {**spec["questions"][4], "key": "cheat_c", "arm": {"group": "cheating", "share": 0.3334}},
    )
    with app.app_context():
        assert len(create_survey_from_spec(db.session, spec).questions) == 6


def test_publishing_refuses_a_draft_whose_split_ballot_lost_an_arm(app, user):
    with app.app_context():
        survey = create_survey_from_spec(db.session, _spec(status="draft"))
        assert publish_refusals(survey) == []
        survey.questions.remove(survey.questions[1])  # as the builder's delete does
        refusals = publish_refusals(survey)
        assert [r.code for r in refusals] == ["survey.publish_split_ballot"]
        assert "'drugs' has one arm" in str(refusals[0])


# -- privacy ----------------------------------------------------------------------------------------


def test_a_split_ballot_costs_its_worst_arm_wherever_the_total_is_computed(app, user):
    spec = {
        "title": "Budget",
        "slug": "budget",
        "questions": [
            {"key": "a", "kind": "yes_no", "text": "A?", "privacy": {"design": "warner", "p": 0.75}},
            {
                "key": "b1",
                "kind": "yes_no",
                "text": "B?",
                "privacy": {"design": "warner", "p": 0.75},
                "arm": {"group": "b", "share": 0.5},
            },
            {
                "key": "b2",
                "kind": "yes_no",
                "text": "B?",
                "privacy": {"design": "warner", "p": 0.9},
                "arm": {"group": "b", "share": 0.5},
            },
            {
                "key": "b3",
                "kind": "direct",
                "text": "B?",
                "options": YES_NO,
                "arm": {"group": "b", "share": 0.0001},
            },
        ],
    }
    spec["questions"][1]["arm"]["share"] = 0.4999
    expected = math.log(3) + math.log(9)  # a, then the worst arm of b (p = 0.9: ln 9), not ln 3 + ln 9 + ln 3
    with app.app_context():
        survey = create_survey_from_spec(db.session, spec)
        db.session.commit()
        assert survey.total_epsilon() == pytest.approx(expected)
        assert stored_total_epsilon(survey) == pytest.approx(expected)
        assert survey_epsilons(db.session, [survey])[survey.id] == pytest.approx(expected)
        assert estimates_document(db.session, survey)["total_epsilon"] == pytest.approx(expected)


# -- submissions ------------------------------------------------------------------------------------


def test_a_submission_answers_one_arm_of_a_group(app, client, user):
    add_survey(app, SPEC)
    before = stored(app)
    both = client.post("/api/surveys/split/responses", json={"answers": {"drugs_direct": 0, "drugs_rr": 1}})
    assert both.status_code == 400
    body = both.get_json()
    assert body["code"] == "answer.several_arms"
    assert body["path"] == ["answers", "drugs_rr"]
    assert "arms of the split ballot 'drugs'" in body["detail"]
    assert stored(app) == before
    one = client.post("/api/surveys/split/responses", json={"answers": {"drugs_rr": 1, "cheat_b": 0}})
    assert one.status_code == 201, one.get_json()
    assert stored(app) == (before[0] + 1, before[1] + 2)


def test_a_required_split_ballot_needs_one_of_its_arms(app, client, user):
    spec = _spec()
    for q in spec["questions"][:2]:
        q["required"] = True
    add_survey(app, spec)
    before = stored(app)
    missing = client.post("/api/surveys/split/responses", json={"answers": {"age": 0}})
    assert missing.status_code == 400
    assert missing.get_json()["code"] == "answer.arm_missing"
    assert "drugs_direct, drugs_rr" in missing.get_json()["detail"]
    assert stored(app) == before
    # each arm is enough on its own: the other was never shown
    for answers in ({"drugs_direct": 1}, {"drugs_rr": 0}):
        assert client.post("/api/surveys/split/responses", json={"answers": answers}).status_code == 201


def test_an_import_row_answering_two_arms_is_refused_with_its_row_and_column(app, user):
    with app.app_context():
        survey = create_survey_from_spec(db.session, SPEC)
        db.session.commit()
        data = "submitted_on,drugs_direct,drugs_rr\n2026-11-01,yes,\n2026-11-01,no,1\n"
        with pytest.raises(ImportRefused) as caught:
            import_responses(db.session, survey, data, "csv")
        db.session.rollback()
        [problem] = caught.value.problems
        assert (problem.row, problem.column, problem.code) == (2, "drugs_rr", "answer.several_arms")
        assert survey_counts(db.session, survey).submissions == 0


# -- the analyses -----------------------------------------------------------------------------------


def test_the_arms_tallies_give_randomized_minus_direct_and_the_noncompliance_models(app, user):
    with app.app_context():
        survey = create_survey_from_spec(db.session, SPEC)
        db.session.commit()
        _import(survey)
        results = survey_results(db.session, survey)
        [drugs, cheating] = split_ballots(survey.questions, results)

        assert [(a.question.key, a.share, a.n) for a in drugs.arms] == [
            ("drugs_direct", 0.5, 100),
            ("drugs_rr", 0.5, 100),
        ]
        [difference] = drugs.differences
        assert (difference.randomized, difference.direct, difference.label) == ("drugs_rr", "drugs_direct", "yes")
        # Warner p = 0.75: (0.40 − 0.25) / 0.5 = 0.30 said yes under randomization, 0.10 directly
        assert difference.result.randomized == pytest.approx(0.30)
        assert difference.result.direct == pytest.approx(0.10)
        assert difference.result.difference == pytest.approx(0.20)
        same = randomized_minus_direct(Warner(0.75), [40, 60], yes_direct=10, n_direct=100)
        assert (difference.result.low, difference.result.high) == pytest.approx((same.low, same.high))
        assert difference.result.p_value == pytest.approx(same.p_value)
        assert difference.result.low > 0
        assert drugs.cheating is None and drugs.notes == []

        # cheating detection: π + 0.3 β = 0.40 and π + 0.6 β = 0.65, so β = 5/6, π = 0.15, γ = 1/60 (RRreg's
        # RRuni gives 0.15, 0.833333, 0.016667; as SLD with p = 0.7, 0.4: π 0.166667, t 0.9)
        assert cheating.fitted_arms == ("cheat_a", "cheat_b")
        assert cheating.cheating.estimates == pytest.approx({"pi": 0.15, "beta": 5 / 6, "gamma": 1 / 60})
        reference = cheating_detection([40, 65], [100, 100], [0.3, 0.6])
        for name, interval in reference.intervals.items():
            assert cheating.cheating.intervals[name] == pytest.approx(interval)
        # the stochastic lie detector on the same arms: π = 1 − β, t = π_CDM / π
        assert cheating.lie_detector.estimates == pytest.approx({"pi": 1 / 6, "t": 0.15 / (1 / 6)})
        sld = stochastic_lie_detector([40, 65], [100, 100], [0.7, 0.4])
        for name, interval in sld.intervals.items():
            assert cheating.lie_detector.intervals[name] == pytest.approx(interval)

        from survey.domain.results.exports import codebook

        book = codebook(survey)
        assert [q["arm"] for q in book["questions"]][:3] == [
            {"group": "drugs", "share": 0.5},
            {"group": "drugs", "share": 0.5},
            None,
        ]
        document = estimates_document(db.session, survey)
        assert [b["group"] for b in document["split_ballots"]] == ["drugs", "cheating"]
        fitted = document["split_ballots"][1]["noncompliance"]["cheating_detection"]["parameters"]
        assert fitted["gamma"]["estimate"] == pytest.approx(1 / 60)


def test_a_ballot_that_cannot_be_analysed_says_why(app, user):
    spec = _spec()
    # two Warner arms: every arm randomized, neither makes each "yes" carrier answer "yes"
    spec["questions"][0] = {**spec["questions"][1], "key": "drugs_rr2", "privacy": {"design": "warner", "p": 0.8}}
    with app.app_context():
        survey = create_survey_from_spec(db.session, spec)
        db.session.commit()
        [drugs, cheating] = split_ballots(survey.questions, survey_results(db.session, survey))
        assert drugs.differences == [] and drugs.cheating is None
        assert "need two randomized yes/no arms whose designs make every “yes” carrier" in drugs.notes[0]
        assert cheating.cheating is None
        assert cheating.notes == ["The non-compliance models need answers in both arms (0 and 0 so far)."]


def test_the_results_page_shows_the_split_ballots(app, client, signed_in):
    add_survey(app, SPEC, owner="alice")
    with app.app_context():
        _import(_survey())
    page = text(client.get("/surveys/split/results"))
    section = page[page.index('id="split-ballots"') :]
    assert "Split ballot <code>drugs</code>" in section
    difference = re.search(r'data-claim="difference">([^<]+)<', section).group(1)
    assert difference == "+20.0"
    assert re.search(r'data-claim="cdm-gamma">.*?<td>1\.7%</td>', section, re.S)
    assert 'data-claim="arm-n" data-arm="cheat_b">100<' in section
    # each arm's own result says which ballot it belongs to
    assert "assigned to 40.0% of respondents by chance" in page


def test_the_respondent_page_hides_every_arm_until_its_script_draws_one(app, client, user):
    add_survey(app, SPEC)
    page = text(client.get("/s/split"))
    fieldsets = re.findall(r'<fieldset class="question" id="question-(\w+)"(.*?)>', page, re.S)
    armed = {key: attrs for key, attrs in fieldsets if "data-arm-group" in attrs}
    assert sorted(armed) == ["cheat_a", "cheat_b", "drugs_direct", "drugs_rr"]
    for attrs in armed.values():
        assert " hidden disabled" in attrs
    assert 'data-arm-share="0.4"' in armed["cheat_a"]
    # the arms of a ballot share a number: the respondent sees questions 1, 2 and 3
    numbers = re.findall(r"<legend>\s*(\d+)\.", page)
    assert numbers == ["1", "1", "2", "3", "3"]
    assert "Questions 1 and 3 are each asked in one of 2 ways, chosen at random for you" in re.sub(r"\s+", " ", page)


def test_the_validation_demo_finds_what_its_simulated_respondents_hid(app, user):
    """The second demo's respondents deny drug use to the direct arm 40% of the time, and 10% of them
    say "no" to the shoplifting coins whatever happens: at its seed, randomized minus direct is above
    0, and the cheating detection model's intervals hold the simulated π = 0.25 × 0.9, β = 0.75 × 0.9
    and γ = 0.1."""
    from survey.domain.surveys.validation_demo import create_validation_demo

    with app.app_context():
        survey = create_validation_demo(db.session)
        db.session.commit()
        [drugs, shoplifting] = split_ballots(survey.questions, survey_results(db.session, survey))
        [difference] = drugs.differences
        assert (round(difference.result.randomized, 3), round(difference.result.direct, 3)) == (0.225, 0.12)
        assert difference.result.low > 0 and difference.result.p_value < 0.001
        fit = shoplifting.cheating
        assert {k: round(v, 3) for k, v in fit.estimates.items()} == {"pi": 0.229, "beta": 0.68, "gamma": 0.091}
        # RRreg 0.7.5 (R 4.2.2) on this survey's microdata CSV, as docs/analysis.md reads it:
        # RRuni(response, model = "CDM", p = c(0.2, 0.75), group = group, MLest = TRUE) and "SLD" with 0.8, 0.25
        assert fit.estimates == pytest.approx({"pi": 0.228649, "beta": 0.679884, "gamma": 0.091467}, abs=1e-6)
        lie = shoplifting.lie_detector.estimates
        assert lie == pytest.approx({"pi": 0.320116, "t": 0.714269}, abs=1e-6)
        for name, truth in {"pi": 0.225, "beta": 0.675, "gamma": 0.1}.items():
            assert fit.intervals[name][0] < truth < fit.intervals[name][1]
        assert tally_mismatches(db.session, survey) == []


def test_an_organizer_builds_a_split_ballot_in_the_builder(app, signed_in):
    from .builder import add, field_error, new_draft, snapshot

    slug = new_draft(signed_in, "Validation")
    base = {"kind": "yes_no", "text": "Have you cheated?", "required": "y", "design": "warner", "set_by": "epsilon"}
    add(signed_in, slug, {**base, "key": "cheat_rr", "epsilon": "1", "arm_group": "cheat", "arm_share": "0.5"})
    # a share that is not a probability is refused beside its input
    refused = add(signed_in, slug, {**base, "key": "x", "epsilon": "2", "arm_group": "cheat", "arm_share": "2"}, 400)
    assert "above 0 and below 1" in field_error(refused.text, "arm_share")
    # with one way only, publishing says the ballot cannot be asked
    page = signed_in.post(f"/surveys/{slug}/publish")
    assert page.status_code == 409 and "has one arm" in text(page)
    direct = {"kind": "direct", "text": "Have you cheated?", "required": "y", "options": "yes\nno"}
    add(signed_in, slug, {**direct, "key": "cheat_direct", "arm_group": "cheat", "arm_share": "0.5"})
    questions = snapshot(app, slug)["questions"]
    assert [q.get("arm") for q in questions] == [{"group": "cheat", "share": 0.5}] * 2
    # editing a question keeps its ballot unless the form changes it
    edited = signed_in.post(
        f"/surveys/{slug}/questions/cheat_rr/edit",
        data={**base, "key": "cheat_rr", "epsilon": "1", "text": "Cheated?", "arm_group": "cheat", "arm_share": "0.5"},
    )
    assert edited.status_code == 303, edited.text[:2000]
    assert snapshot(app, slug)["questions"][0]["arm"] == {"group": "cheat", "share": 0.5}
    assert signed_in.post(f"/surveys/{slug}/publish").status_code in (302, 303)
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        assert survey.status == "open" and survey.total_epsilon() == pytest.approx(1.0)


def test_the_build_page_plans_each_split_ballot(app, signed_in):
    """Respondents in all for randomized minus direct: a coin flip (0.5, 0.5) has variance 1 per
    respondent at a true share of 50%, so with half the ballot in each way N = 1.96² (1/0.5 + 0.25/0.5)
    / 0.05² = 3,842; and for γ, the cheating detection model's delta-method size at the stated guess."""
    from survey.domain.surveys.validation_demo import VALIDATION_SPEC
    from survey.privacy.noncompliance import noncompliance_sample_size

    add_survey(app, {**VALIDATION_SPEC, "status": "draft"}, owner="alice", target_margin=0.05)
    page = re.sub(r"\s+", " ", text(signed_in.get("/surveys/asking-honestly/build")))
    assert '<span data-plan="difference">3,842 respondents in all</span>' in page
    needed = noncompliance_sample_size("CDM", [0.2, 0.75], {"pi": 0.2, "beta": 0.7}, 0.05, "gamma", shares=[1, 1])
    assert f'<span data-plan="noncompliance">{needed:,} respondents in all</span>' in page
    assert "a split ballot counts once, with its largest ε" in page


def test_a_ballot_is_broken_down_by_a_direct_question_from_its_pair_tallies(app, signed_in):
    """Within each group of "age", the cheating detection model fitted on that group's answers of the
    two arms: young 20/50 and 35/50 reported "yes", old 30/50 and 40/50."""
    from survey.domain.results.split_ballots import split_ballot_by

    add_survey(app, SPEC, owner="alice")
    cells = {("cheat_a", "young"): (20, 50), ("cheat_b", "young"): (35, 50)}
    cells |= {("cheat_a", "old"): (30, 50), ("cheat_b", "old"): (40, 50)}
    lines = ["submitted_on,cheat_a,cheat_b,age"]
    for (arm, age), (yes, n) in cells.items():
        for i in range(n):
            value = "1" if i < yes else "0"
            lines.append(f"2026-11-01,{value if arm == 'cheat_a' else ''},{value if arm == 'cheat_b' else ''},{age}")
    lines.append("2026-11-01,1,,")  # no age: in no group
    with app.app_context():
        survey = _survey()
        import_responses(db.session, survey, "\n".join(lines) + "\n", "csv")
        db.session.commit()
        age = next(q for q in survey.questions if q.key == "age")
        groups = split_ballot_by(db.session, survey.questions, "cheating", age)
        assert [g.label for g in groups] == ["young", "old"]
        for g, (a, b) in zip(groups, [((20, 50), (35, 50)), ((30, 50), (40, 50))], strict=True):
            reference = cheating_detection([a[0], b[0]], [a[1], b[1]], [0.3, 0.6])
            assert g.ballot.cheating.estimates == pytest.approx(reference.estimates)
            assert [arm.n for arm in g.ballot.arms] == [50, 50]
        with pytest.raises(DomainError) as caught:
            split_ballot_by(db.session, survey.questions, "cheating", survey.questions[1])
        assert caught.value.code == "split.by_not_direct"
    page = text(signed_in.get("/surveys/split/results?ballot=cheating&by=age"))
    table = page[page.index('id="split-cheating-by"') :]
    young = cheating_detection([20, 35], [50, 50], [0.3, 0.6]).estimates["gamma"]
    assert f"{round(young * 100, 1)}%" in table[: table.index('data-group="old"')]


def test_ballots_asked_in_as_many_ways_are_said_once(app, client, user):
    from survey.domain.surveys.content_translations import pieces
    from survey.domain.surveys.validation_demo import VALIDATION_SPEC

    with app.app_context():  # a Spanish version of the survey's own texts, so that it is offered in Spanish
        draft = create_survey_from_spec(db.session, {**VALIDATION_SPEC, "slug": "draft-copy", "status": "draft"})
        spanish_texts = {piece.path: f"[es] {piece.source}" for piece in pieces(draft)}
        db.session.rollback()
    add_survey(app, {**VALIDATION_SPEC, "translations": {"es": spanish_texts}})
    page = re.sub(r"\s+", " ", text(client.get("/s/asking-honestly")))
    assert "Questions 1 and 2 are each asked in one of 2 ways, chosen at random for you" in page
    spanish = re.sub(r"\s+", " ", text(client.get("/s/asking-honestly?lang=es")))
    assert "Las preguntas 1 y 2 se hacen cada una de una de 2 formas" in spanish
