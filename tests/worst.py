"""The costliest survey the spec accepts, shared by ``tests/test_bounded_cost.py`` and
``benchmarks/worst_case.py``.

Every bound is read from the domain's own constants (the most questions, options and characters, the
widest number range, the largest planning figures), so when a limit moves this survey moves with
it. What it holds, and why each part is there:

* ``d1`` … ``d6``: questions asked directly with the most options: the most covariates a regression
  takes, each with the most indicators, and the widest breakdowns;
* ``age``: a number question with the widest range (a regression's number covariate);
* ``yn1``, ``yn2``: two yes/no questions (a coin flip and Warner's design), whose association has
  the 2×2 measures and their profile-likelihood region;
* ``r001`` …: randomized questions with the most options, every design that serves them in turn,
  each at its own ε, from very private to not very (every question a design of its own, so that no
  cache of planning figures or matrices serves two of them), the rest of the questions allowed;
* every text at its longest, the planning figures at their most demanding (the most respondents,
  the smallest target margin), no question required (so a submission may answer a few of them).
"""

from __future__ import annotations

import random
from typing import Any

from survey.domain.surveys.planning import MAX_RESPONDENTS, MIN_TARGET_MARGIN
from survey.domain.surveys.specs import MAX_OPTIONS, MAX_QUESTIONS, NUMBER_LIMIT
from survey.domain.validation import TEXT_LIMITS
from survey.privacy.designs import DESIGNS

DIRECT = [f"d{i}" for i in range(1, 7)]
NUMBER = "age"
YES_NO = ["yn1", "yn2"]
#: The regression the issue's attack ran: the first randomized question on six 50-option covariates.
OUTCOME = "r001"


def _text(length: int, what: str) -> str:
    """A text of exactly ``length`` characters that starts with ``what`` (so pages stay readable),
    with characters that HTML, CSV and JSON each have to escape."""
    filler = " <&\"'> é 日本 =" * (length // 10 + 1)
    return (what + filler)[:length]


def _labels(question: int) -> list[str]:
    return [_text(TEXT_LIMITS["option"], f"q{question} option {i + 1}") for i in range(MAX_OPTIONS)]


def _randomized(index: int, count: int) -> dict[str, Any]:
    """The ``index``-th randomized 50-option question: GRR and forced response in turn, ε spread
    geometrically from 0.001 to 5 over the ``count`` of them (each question its own design)."""
    epsilon = round(0.001 * (5000 ** (index / max(1, count - 1))), 9)
    if index % 2 == 0:
        return {"design": "grr", "epsilon": epsilon}
    return {"design": "forced_response", "forced": DESIGNS["forced_response"].solve(epsilon, {}, MAX_OPTIONS)}


def worst_spec(status: str = "open", slug: str = "worst") -> dict[str, Any]:
    """The spec of the costliest survey: ``status`` "open" (to be answered) or "draft" (to be built)."""
    questions: list[dict[str, Any]] = []

    def question(key: str, kind: str, **fields: Any) -> None:
        n = len(questions) + 1
        questions.append(
            {
                "key": key,
                "kind": kind,
                "text": _text(TEXT_LIMITS["text"], f"Question {n} ({key})"),
                "help_text": _text(TEXT_LIMITS["help_text"], f"Help for {key}"),
                "required": False,
                **fields,
            }
        )

    for key in DIRECT:
        question(key, "direct", options=_labels(len(questions) + 1))
    question(NUMBER, "number", minimum=-NUMBER_LIMIT, maximum=NUMBER_LIMIT)
    coin = DESIGNS["coin_flip"].solve(0.5, {"yes_probability": 0.5}, 2)
    question(YES_NO[0], "yes_no", privacy={"design": "coin_flip", "truth_probability": coin, "yes_probability": 0.5})
    question(YES_NO[1], "yes_no", privacy={"design": "warner", "p": DESIGNS["warner"].solve(0.7, {}, 2)})
    count = MAX_QUESTIONS - len(questions)
    for i in range(count):
        question(f"r{i + 1:03d}", "choice", options=_labels(len(questions) + 1), privacy=_randomized(i, count))
    texts = {name: _text(TEXT_LIMITS[name], name) for name in ("introduction", "closing_message", "ethics_statement")}
    return {
        "title": _text(TEXT_LIMITS["title"], "The costliest survey"),
        "slug": slug,
        "status": status,
        "run_by": _text(TEXT_LIMITS["run_by"], "Run by"),
        "contact": _text(TEXT_LIMITS["contact"], "Contact"),
        **texts,
        "expected_respondents": MAX_RESPONDENTS,
        "target_margin": MIN_TARGET_MARGIN,
        "questions": questions,
    }


def randomized_keys(spec: dict[str, Any]) -> list[str]:
    return [q["key"] for q in spec["questions"] if q["kind"] == "choice"]


def full_answers(spec: dict[str, Any], rng: random.Random) -> dict[str, int]:
    """One submission answering every question (a random code, a random number in the range)."""
    answers = {}
    for q in spec["questions"]:
        if q["kind"] == "number":
            answers[q["key"]] = rng.randint(q["minimum"], q["maximum"])
        else:
            answers[q["key"]] = rng.randrange(len(q.get("options", ["yes", "no"])))
    return answers


def analysis_answers(spec: dict[str, Any], rng: random.Random) -> dict[str, int]:
    """One submission answering only what the analyses read (the regression's outcome and
    covariates, the two yes/no questions and two randomized ones): each is its own covariate
    pattern almost surely, the most patterns a regression can meet for its number of respondents."""
    keys = {*DIRECT, NUMBER, *YES_NO, *randomized_keys(spec)[:2]}
    full = full_answers({"questions": [q for q in spec["questions"] if q["key"] in keys]}, rng)
    full[NUMBER] = rng.randint(0, 120)  # an age: a regression with a number covariate that fits
    return full
