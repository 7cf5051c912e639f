"""The second demo: a validation study, with split ballots and simulated respondents who do not all comply.

It shows what the split-ballot analyses are for (docs/analysis.md, "Split ballots"): simulated
respondents who, asked directly, deny a behaviour they have (so the direct arm under-reports and
"randomized minus direct" finds it), and some who answer "no" whatever the coin says (so the
cheating detection model has a share γ to find). The truth is known, so each arm's results show it
beside the estimate, and the rates below are what the non-compliance fit should recover.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from survey.domain.models import Answer, Survey
from survey.domain.responses.tallies import rebuild_tallies
from survey.domain.surveys.arms import groups_of
from survey.domain.surveys.demo import ensure_demo_user, insert_submissions
from survey.domain.surveys.specs import create_survey_from_spec

VALIDATION_SLUG = "asking-honestly"
VALIDATION_RESPONDENTS = 3000

#: The share of respondents with each behaviour (both ballots ask about one).
PREVALENCE = {"drugs": 0.20, "shoplifting": 0.25}
#: Asked directly, this share of those who have the behaviour deny it (the direct arm under-reports).
DIRECT_DENIAL = 0.40
#: In the shoplifting ballot, this share of all respondents answers "no" whatever the coins say
#: (self-protective "no"): the cheating detection model's γ. (The drugs ballot's respondents comply, so
#: its randomized arm recovers the prevalence the direct arm under-reports.)
SELF_PROTECTIVE_NO = 0.10

#: The ballots whose respondents include the self-protective "no" sayers.
CHEATED = frozenset({"shoplifting"})

_YES_NO_COIN = {"design": "coin_flip", "yes_probability": 1, "allow_one_sided": True}

VALIDATION_SPEC: dict[str, Any] = {
    "title": "Asking honestly: a validation study",
    "slug": VALIDATION_SLUG,
    "introduction": (
        "Two questions about things people often prefer not to tell. Each is asked one of two ways, "
        "chosen at random for you, so that the ways can be compared."
    ),
    "closing_message": "Thank you for taking part.",
    "run_by": "the Private Survey team",
    "contact": "privacy@example.org",
    "questions": [
        {
            "key": "drugs_direct",
            "kind": "direct",
            "text": "In the last 12 months, have you used an illegal drug?",
            "options": ["yes", "no"],
            "arm": {"group": "drugs", "share": 0.5},
        },
        {
            "key": "drugs_randomized",
            "kind": "yes_no",
            "text": "In the last 12 months, have you used an illegal drug?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5},
            "arm": {"group": "drugs", "share": 0.5},
        },
        {
            "key": "shoplifting_a",
            "kind": "yes_no",
            "text": "Have you ever taken something from a shop without paying?",
            "privacy": {**_YES_NO_COIN, "truth_probability": 0.8},
            "arm": {"group": "shoplifting", "share": 0.5},
        },
        {
            "key": "shoplifting_b",
            "kind": "yes_no",
            "text": "Have you ever taken something from a shop without paying?",
            "privacy": {**_YES_NO_COIN, "truth_probability": 0.25},
            "arm": {"group": "shoplifting", "share": 0.5},
        },
    ],
}


def _reports(question: Any, truth: np.ndarray, protective: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """What the respondents assigned ``question`` report, given their true answers (code 0 is "yes")."""
    if not question.is_randomized:
        denied = (truth == 0) & (rng.random(truth.size) < DIRECT_DENIAL)
        return np.where(denied, 1, truth)
    reports = question.mechanism().randomize(truth, rng)
    return np.where(protective, 1, reports)  # a self-protective "no" whatever the coins said


def create_validation_demo(session: Session, respondents: int = VALIDATION_RESPONDENTS, seed: int = 2027) -> Survey:
    """Create the validation demo (once) with ``respondents`` simulated respondents; the caller commits."""
    existing = session.scalar(select(Survey).where(Survey.slug == VALIDATION_SLUG))
    if existing is not None:
        return existing
    survey = create_survey_from_spec(session, VALIDATION_SPEC, owner=ensure_demo_user(session))
    session.flush()
    rng = np.random.default_rng(seed)
    protective = rng.random(respondents) < SELF_PROTECTIVE_NO
    by_key = {q.key: q for q in survey.questions}
    answers: list[dict[str, int]] = [{} for _ in range(respondents)]
    for group in groups_of(survey.questions):
        truth = np.where(rng.random(respondents) < PREVALENCE[group.name], 0, 1)
        shares = np.array([a.share for a in group.arms])
        arm = rng.choice(len(group.arms), size=respondents, p=shares / shares.sum())
        for index, spec_arm in enumerate(group.arms):
            q = by_key[spec_arm.key]
            mine = arm == index
            values = _reports(q, truth[mine], protective[mine] & (group.name in CHEATED), rng)
            for who, value in zip(np.flatnonzero(mine), values, strict=True):
                answers[who][q.id] = int(value)
            # beside the estimate: the true share among those asked this way
            q.simulated_truth = (np.bincount(truth[mine], minlength=2) / max(int(mine.sum()), 1)).tolist()
    survey.is_simulated = True
    ids = insert_submissions(session, survey, respondents, rng)
    session.execute(
        insert(Answer),
        [
            {"submission_id": sid, "question_id": qid, "value": value}
            for sid, given in zip(ids, answers, strict=True)
            for qid, value in given.items()
        ],
    )
    rebuild_tallies(session, survey)
    return survey
