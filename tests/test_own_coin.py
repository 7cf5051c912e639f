"""Randomizing with one's own coins or die: the design's matrix, drawn by the respondent.

The procedure the page tells (two coins counting heads, or a die) must give exactly the design's
matrix: for every design it accepts, the chance of each report given each true answer, summed over
the device's outcomes, is the stored matrix's entry. A design it cannot carry out (not a forced
response, or chances that are not quarters or sixths) is refused by the spec with a reason. The page
then draws nothing for the question: its answers are named inputs posted as they are, under the
instruction, and the server checks them as reports.
"""

from __future__ import annotations

import copy
import re
from fractions import Fraction

import numpy as np
import pytest

from survey.domain.errors import DomainError
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.domain.surveys.wording import own_coin_instruction
from survey.platform.extensions import db
from survey.privacy import CoinFlip, Warner
from survey.privacy.designs import DESIGNS
from survey.privacy.physical import COIN_OUTCOMES, COINS, DIE, physical_procedure

from .surveys import OWN_COIN_SPEC as SPEC
from .surveys import add_survey, stored, text


def _matrix_of(procedure, k: int) -> np.ndarray:
    """The matrix the procedure makes: for each true answer, the chance of each report."""
    chance = {h: Fraction(q, 4) for h, q in COIN_OUTCOMES.items()} if procedure.device == COINS else None
    if procedure.device == DIE:
        chance = {face: Fraction(1, 6) for face in range(1, 7)}
    matrix = np.zeros((k, k))
    for t in range(k):
        matrix[t][t] += float(sum(chance[o] for o in procedure.truth))
        for r, outcomes in enumerate(procedure.forced):
            matrix[r][t] += float(sum(chance[o] for o in outcomes))
    return matrix


@pytest.mark.parametrize(
    ("mechanism", "device"),
    [
        (CoinFlip(0.5, 0.5), COINS),
        (CoinFlip(0.5, 1.0), COINS),
        (CoinFlip(0.75, 1.0), COINS),
        (CoinFlip(0.5, 0.0), COINS),
        (Warner(0.75), COINS),
        (Warner(2 / 3), DIE),
        (Warner(5 / 6), DIE),
        (DESIGNS["forced_response"].mechanism({"forced": [1 / 6] * 3}, ["a", "b", "c"]), DIE),
        (DESIGNS["forced_response"].mechanism({"forced": [0.25, 0.25]}, ["a", "b"]), COINS),
        (DESIGNS["forced_response"].mechanism({"forced": [1 / 6, 0, 1 / 3]}, ["a", "b", "c"]), DIE),
    ],
)
def test_the_procedure_makes_exactly_the_designs_matrix(mechanism, device):
    procedure = physical_procedure(mechanism)
    assert procedure is not None and procedure.device == device
    assert _matrix_of(procedure, mechanism.k) == pytest.approx(np.asarray(mechanism.matrix), abs=1e-12)


@pytest.mark.parametrize(
    "mechanism",
    [
        CoinFlip(0.7, 1.0),  # tenths
        CoinFlip(0.75, 0.5),  # eighths: 0.125 forced each way
        Warner(0.8),
        DESIGNS["grr"].mechanism({"truth_probability": 0.5}, ["a", "b", "c", "d", "e", "f"]),  # six options
    ],
)
def test_designs_no_coin_or_die_can_make_are_not_offered_by_hand(mechanism):
    assert physical_procedure(mechanism) is None


def test_the_instruction_names_every_outcome_once():
    words = own_coin_instruction(physical_procedure(CoinFlip(0.5, 0.5)), ["Yes", "No"])
    assert words == (
        "Toss two coins (or one coin twice) where no one can see them, and count the heads. "
        "No heads: answer “Yes”, whatever the truth. Two heads: answer “No”, whatever the truth. "
        "One head: give your true answer."
    )
    die = own_coin_instruction(physical_procedure(Warner(2 / 3)), ["Yes", "No"])
    assert die == (
        "Roll a die where no one can see it. 1 or 2: answer “Yes”, whatever the truth. "
        "3 or 4: answer “No”, whatever the truth. 5 or 6: give your true answer."
    )


def test_a_spec_round_trips_own_coins_and_keeps_the_design(app, user):
    with app.app_context():
        survey = create_survey_from_spec(db.session, SPEC)
        assert [q.own_coin for q in survey.questions] == [True, True, False]
        again = survey_to_spec(survey)["questions"]
        assert again[0]["privacy"] == SPEC["questions"][0]["privacy"]
        assert again[1]["privacy"]["own_coin"] is True
        assert survey.questions[0].mechanism().matrix.tolist() == CoinFlip(0.5, 0.5).matrix.tolist()


@pytest.mark.parametrize(
    ("privacy", "code"),
    [
        ({"design": "warner", "p": 0.8, "own_coin": True}, "spec.own_coin_impossible"),
        (
            {
                "design": "crosswise",
                "unrelated_yes_rate": 0.25,
                "unrelated_question": "Born in spring?",
                "own_coin": True,
            },
            "spec.own_coin_impossible",
        ),
        ({"design": "warner", "p": 0.75, "own_coin": "yes"}, "spec.not_boolean"),
    ],
)
def test_a_spec_refuses_own_coins_it_cannot_carry_out(app, user, privacy, code):
    spec = copy.deepcopy(SPEC)
    spec["questions"][0]["privacy"] = privacy
    with app.app_context():
        with pytest.raises(DomainError) as caught:
            create_survey_from_spec(db.session, spec)
        assert caught.value.code == code
        assert list(caught.value.path) == ["questions", 0, "privacy", "own_coin"]


def test_a_randomized_number_cannot_be_randomized_by_hand(app, user):
    spec = {
        "title": "N",
        "questions": [
            {
                "key": "n",
                "kind": "rr_number",
                "text": "How many?",
                "minimum": 0,
                "maximum": 10,
                "privacy": {"design": "hybrid", "epsilon": 1, "own_coin": True},
            }
        ],
    }
    with app.app_context():
        with pytest.raises(DomainError) as caught:
            create_survey_from_spec(db.session, spec)
        assert caught.value.code == "spec.own_coin_impossible"


def test_the_page_draws_nothing_and_posts_the_answer_given(app, client, user):
    add_survey(app, SPEC)
    page = text(client.get("/s/by-hand"))
    fieldset = re.search(r'<fieldset class="question" id="question-cheated"(.*?)>', page, re.S).group(1)
    assert "data-randomized" not in fieldset and "data-columns" not in fieldset
    # its answers are named, posted as they are: the respondent's coins already randomized them
    assert re.search(r'<input type="radio" id="cheated-0" name="q_cheated" value="0"', page)
    assert 'data-reported-for="cheated"' not in page and 'id="try-cheated"' not in page
    flat = re.sub(r"\s+", " ", page)
    assert "Toss two coins (or one coin twice) where no one can see them, and count the heads." in flat
    assert "Roll a die where no one can see it. 1: answer “Calm”, whatever the truth." in flat
    assert "Questions 1 and 2: you randomize with your own coins or die, as each says" in flat
    before = stored(app)
    response = client.post("/api/surveys/by-hand/responses", json={"answers": {"cheated": 1, "mood": 2}})
    assert response.status_code == 201
    assert stored(app) == (before[0] + 1, before[1] + 2)
