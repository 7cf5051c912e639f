"""The surveys the tests build, the answers they send, and small readers of what got stored.

Shared here, not in a test module, so that a test file never imports another (tests/test_layout.py
holds that): the small survey most tests use, one good answer to it, the forty submissions the
results and export tests count, and the survey the live-status tests answer until precise enough.
"""

from __future__ import annotations

import csv
import io

from sqlalchemy import func, select

from survey.domain.models import Answer, HeldSubmission, Submission, Survey, User
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

SMALL_SPEC = {
    "title": "Small test survey",
    "slug": "small-test",
    "introduction": "For tests.",
    "questions": [
        {
            "key": "drugs",
            "kind": "yes_no",
            "text": "Have you used drugs?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5},
        },
        {"key": "mirror", "kind": "yes_no", "text": "Mirrored?", "privacy": {"design": "warner", "p": 0.75}},
        {
            "key": "often",
            "kind": "choice",
            "text": "How often?",
            "options": ["never", "sometimes", "often", "always"],
            "privacy": {"design": "grr", "epsilon": 1.0},
        },
        {"key": "age", "kind": "direct", "text": "Age group?", "options": ["young", "old"], "required": False},
    ],
}
#: SMALL_SPEC's texts in Spanish and Arabic, as its spec's "translations" (survey.domain.surveys.content_translations).
SMALL_TRANSLATIONS = {
    "es": {
        "title": "Encuesta de prueba",
        "introduction": "Para las pruebas.",
        "q:drugs:text": "¿Ha consumido drogas?",
        "q:mirror:text": "¿Reflejado?",
        "q:often:text": "¿Con qué frecuencia?",
        "q:often:option:0": "nunca",
        "q:often:option:1": "a veces",
        "q:often:option:2": "a menudo",
        "q:often:option:3": "siempre",
        "q:age:text": "¿Grupo de edad?",
        "q:age:option:0": "joven",
        "q:age:option:1": "mayor",
    },
    "ar": {
        "title": "استطلاع تجريبي",
        "introduction": "للاختبارات.",
        "q:drugs:text": "هل تعاطيت المخدرات؟",
        "q:mirror:text": "معكوس؟",
        "q:often:text": "كم مرة؟",
        "q:often:option:0": "أبدًا",
        "q:often:option:1": "أحيانًا",
        "q:often:option:2": "غالبًا",
        "q:often:option:3": "دائمًا",
        "q:age:text": "الفئة العمرية؟",
        "q:age:option:0": "شاب",
        "q:age:option:1": "كبير",
    },
}
#: One crosswise question, its unrelated question translated into Spanish (a combined question's texts).
CROSSWISE_ES_SPEC = {
    "title": "Crosswise",
    "slug": "crosswise-es",
    "questions": [
        {
            "key": "evaded",
            "kind": "yes_no",
            "text": "Have you evaded taxes?",
            "privacy": {
                "design": "crosswise",
                "unrelated_yes_rate": 0.25,
                "unrelated_question": "Is your mother's birthday in January, February or March?",
            },
        }
    ],
    "translations": {
        "es": {
            "title": "Cruzada",
            "q:evaded:text": "¿Ha evadido impuestos?",
            "q:evaded:unrelated_question": "¿Cumple años su madre en enero, febrero o marzo?",
        }
    },
}
#: One valid answer to SMALL_SPEC (stored codes), as the JSON API takes it ...
GOOD = {"drugs": 1, "mirror": 0, "often": 3, "age": 1}
#: ... and as the respondent's form posts it.
FORM = {f"q_{k}": str(v) for k, v in GOOD.items()}

KEYS = [q["key"] for q in SMALL_SPEC["questions"]]


def _codes(counts: list[int], shift: int) -> list[int]:
    """Codes with the given counts, rotated so that the questions are not answered in lockstep."""
    codes = [code for code, count in enumerate(counts) for _ in range(count)]
    return codes[shift:] + codes[:shift]


# 40 submissions to SMALL_SPEC. "often" has a reported share below GRR's off-diagonal chance, so its
# unbiased estimate goes negative and the consistent estimate differs from it; "age" is skipped 10
# times.
N = 40
DRUGS = _codes([14, 26], 3)
MIRROR = _codes([25, 15], 11)
OFTEN = _codes([20, 12, 6, 2], 17)
AGE: list[int | None] = [None if i % 4 == 0 else (0 if i % 3 else 1) for i in range(N)]
SUBMISSIONS = [
    {k: v for k, v in zip(KEYS, values, strict=True) if v is not None}
    for values in zip(DRUGS, MIRROR, OFTEN, AGE, strict=True)
]

#: A survey with a target margin, for the live status and the automatic close.
LIVE_SPEC = {
    "title": "Live",
    "slug": "live",
    "target_margin": 0.25,
    "questions": [
        {
            "key": "smoked",
            "kind": "yes_no",
            "text": "Smoked?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.75, "yes_probability": 0.5},
        },
        {"key": "group", "kind": "direct", "text": "Group?", "options": ["a", "b"]},
    ],
}


def add_survey(app, spec: dict, owner: str | None = "alice", **changes) -> str:
    """Create ``spec``'s survey owned by the user named ``owner`` (``None``: by nobody), with the
    attributes ``changes`` set on it; returns its slug."""
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == owner)) if owner is not None else None
        survey = create_survey_from_spec(db.session, spec, owner=user)
        for name, value in changes.items():
            setattr(survey, name, value)
        db.session.commit()
        return survey.slug


def submit_answers(client, slug: str, answers: list[dict]) -> None:
    """Send each of ``answers`` to the survey's submission API; each must be stored (201)."""
    for one in answers:
        response = client.post(f"/api/surveys/{slug}/responses", json={"answers": one})
        assert response.status_code == 201, response.get_json()


def survey_row(app, slug: str) -> Survey:
    """A detached snapshot of the survey's scalar columns."""
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        db.session.expunge(survey)
        return survey


def count(app, model) -> int:
    """Rows of ``model``'s table."""
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model))


def stored(app) -> tuple[int, int]:
    """Submissions and answers stored, those held for release in a batch (a survey by invitation,
    survey/domain/responses/mixing.py) included."""
    with app.app_context():
        held = db.session.scalars(select(HeldSubmission.answers)).all()
    return count(app, Submission) + len(held), count(app, Answer) + sum(len(a) for a in held)


def text(response) -> str:
    """A test client response's body as text."""
    return response.get_data(as_text=True)


def make_codes(signed_in, n: int, slug: str = "small-test") -> list[dict[str, str]]:
    """Switch the survey to invitation codes through the organizer's pages, make ``n``, and return
    the rows of the downloaded CSV."""
    assert signed_in.post(f"/surveys/{slug}/access", data={"access": "invitation"}).status_code == 303
    assert signed_in.post(f"/surveys/{slug}/invitations", data={"count": str(n)}).status_code == 303
    response = signed_in.get(f"/surveys/{slug}/invitations.csv")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(text(response))))


#: A question of every design (coin flip, Warner, unrelated question, GRR on yes/no and on five options,
#: forced response, a one-sided coin flip, a randomized number) and one asked directly: what
#: tests/test_privacy_network.py and tests/test_see_it_browser.py answer in a real browser.
EVERY_DESIGN_QUESTIONS = [
    {
        "key": "coin",
        "kind": "yes_no",
        "text": "Coin flip?",
        "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5},
    },
    {"key": "warner", "kind": "yes_no", "text": "Mirrored?", "privacy": {"design": "warner", "p": 0.75}},
    {
        "key": "unrelated",
        "kind": "yes_no",
        "text": "Unrelated question?",
        "privacy": {"design": "unrelated_question", "sensitive_probability": 0.6, "unrelated_yes_rate": 0.3},
    },
    {"key": "grr_yes_no", "kind": "yes_no", "text": "GRR on yes/no?", "privacy": {"design": "grr", "epsilon": 1.5}},
    {
        "key": "grr_five",
        "kind": "choice",
        "text": "GRR on five options?",
        "options": ["never", "once", "sometimes", "often", "always"],
        "privacy": {"design": "grr", "truth_probability": 0.5},
    },
    {
        "key": "forced",
        "kind": "choice",
        "text": "Forced response?",
        "options": ["a", "b", "c"],
        "privacy": {"design": "forced_response", "forced": [0.1, 0.15, 0.05]},
    },
    {
        "key": "one_sided",
        "kind": "yes_no",
        "text": "One-sided coin flip?",
        "privacy": {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 1.0, "allow_one_sided": True},
    },
    {"key": "direct", "kind": "direct", "text": "Asked directly?", "options": ["x", "y", "z"]},
    {
        "key": "drinks",
        "kind": "rr_number",
        "text": "Drinks last week?",
        "minimum": 0,
        "maximum": 30,
        "privacy": {"design": "hybrid", "epsilon": 1.0},
    },
]


#: Two split ballots (tests/test_split_ballots*.py): asked directly or through Warner's design ("more is
#: better"), and two coin flips whose second coin always says "yes", with forced-"yes" chances 0.3 and
#: 0.6 (the cheating detection model's design); and one ordinary question between them.
SPLIT_SPEC = {
    "title": "Split ballots",
    "slug": "split",
    "questions": [
        {
            "key": "drugs_direct",
            "kind": "direct",
            "text": "Have you used drugs?",
            "options": ["yes", "no"],
            "required": False,
            "arm": {"group": "drugs", "share": 0.5},
        },
        {
            "key": "drugs_rr",
            "kind": "yes_no",
            "text": "Have you used drugs?",
            "required": False,
            "privacy": {"design": "warner", "p": 0.75},
            "arm": {"group": "drugs", "share": 0.5},
        },
        {"key": "age", "kind": "direct", "text": "Age group?", "options": ["young", "old"], "required": False},
        {
            "key": "cheat_a",
            "kind": "yes_no",
            "text": "Have you cheated?",
            "required": False,
            "privacy": {"design": "coin_flip", "truth_probability": 0.7, "yes_probability": 1, "allow_one_sided": True},
            "arm": {"group": "cheating", "share": 0.4},
        },
        {
            "key": "cheat_b",
            "kind": "yes_no",
            "text": "Have you cheated?",
            "required": False,
            "privacy": {"design": "coin_flip", "truth_probability": 0.4, "yes_probability": 1, "allow_one_sided": True},
            "arm": {"group": "cheating", "share": 0.6},
        },
    ],
}

#: Randomized with the respondent's own coins or die (tests/test_own_coin*.py).
OWN_COIN_SPEC = {
    "title": "By hand",
    "slug": "by-hand",
    "questions": [
        {
            "key": "cheated",
            "kind": "yes_no",
            "text": "Have you cheated in an exam?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5, "own_coin": True},
        },
        {
            "key": "mood",
            "kind": "choice",
            "text": "Which is most often true?",
            "options": ["calm", "anxious", "angry"],
            "privacy": {"design": "forced_response", "forced": [1 / 6, 1 / 6, 1 / 6], "own_coin": True},
        },
        {"key": "age", "kind": "direct", "text": "Age group?", "options": ["young", "old"], "required": False},
    ],
}
