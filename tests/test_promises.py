"""Whatever a respondent is told about their protection is computed from the survey's own numbers,
said the same way on the survey page and on its privacy page, and true.

The pages mark each claim (``data-claim`` with ``data-question``): a question's ε, what its design
does, how far it can move a suspicion, whether it is protected at all; the survey's total ε and what
that means. These tests read the claims off the rendered pages, hold the two pages against each
other, and check every figure against an independent computation from the stored matrices.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, Decimal
from html.parser import HTMLParser

import numpy as np
import pytest
from sqlalchemy import select

from survey.domain.models import Survey
from survey.domain.surveys.demo import DEMO_SPEC, create_demo
from survey.domain.surveys.specs import create_survey_from_spec
from survey.domain.surveys.wording import overclaims
from survey.platform.extensions import db

from .surveys import SMALL_SPEC

ONE_SIDED_SPEC = {
    "title": "Strong and weak designs",
    "slug": "strong-and-weak",
    "questions": [
        {
            "key": "forced",
            "kind": "choice",
            "text": "Which one?",
            "options": ["a", "b", "c"],
            "privacy": {"design": "forced_response", "forced": [0.1, 0.15, 0.05]},
        },
        {
            "key": "onesided",
            "kind": "yes_no",
            "text": "One-sided?",
            "privacy": {
                "design": "coin_flip",
                "truth_probability": 0.6,
                "yes_probability": 1.0,
                "allow_one_sided": True,
            },
        },
        {"key": "weak", "kind": "yes_no", "text": "Weak?", "privacy": {"design": "grr", "epsilon": 6.0}},
        {
            # after a "yes" report at most 70% sure of a "yes"; after a "no", 86% sure of a "no"
            "key": "lopsided",
            "kind": "yes_no",
            "text": "Lopsided?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.8},
        },
    ],
}


class Claims(HTMLParser):
    """The text of every element marked ``data-claim``, keyed by (question key or "", claim name)."""

    def __init__(self) -> None:
        super().__init__()
        self.claims: dict[tuple[str, str], str] = {}
        self._open: list[tuple[str, tuple[str, str] | None]] = []
        self._text: dict[tuple[str, str], list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        key = None
        if "data-claim" in found:
            key = (found.get("data-question") or "", found["data-claim"] or "")
            assert key not in self.claims and key not in self._text, f"claim {key} made twice on one page"
            self._text[key] = []
        if tag not in ("br", "input", "img", "meta", "link"):
            self._open.append((tag, key))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            name, key = self._open.pop()
            if key is not None:
                self.claims[key] = " ".join("".join(self._text.pop(key)).split())
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        for key in self._text:
            self._text[key].append(data)


def claims_of(client, path: str) -> dict[tuple[str, str], str]:
    response = client.get(path)
    assert response.status_code == 200, path
    parser = Claims()
    parser.feed(response.get_data(as_text=True))
    return parser.claims


def percents(sentence: str) -> list[float]:
    return [float(x) / 100 for x in re.findall(r"(\d+(?:\.\d+)?)%", sentence)]


def odds(sentence: str) -> float:
    """The N of the one "N to 1" a sentence states."""
    found = re.findall(r"([\d,]+(?:\.\d+)?) to 1\b", sentence)
    assert len(found) == 1, sentence
    return float(found[0].replace(",", ""))


def ceiling_two_figures(x: float) -> float:
    """The smallest number of two significant figures that is at least ``x`` (written out here with
    Decimal, not taken from the app): what a bound "N to 1" must show for a true ratio ``x``."""
    exact = Decimal(repr(float(x)))
    exponent = exact.adjusted() - 1  # keep two significant figures
    step = Decimal(1).scaleb(exponent)
    shown = (exact / step).to_integral_value(rounding=ROUND_CEILING) * step
    # the shown N is at least x, and no more than one unit of its last figure above it
    return float(shown)


def assert_odds_bound(sentence: str, ratio: float, what) -> None:
    """``sentence`` bounds a likelihood ratio ``ratio`` by "N to 1": never below it, and rounded up
    by less than one unit of N's second figure (a float ratio like 3.0000000000000004 may show 3)."""
    shown = odds(sentence)
    assert shown >= ratio * (1 - 1e-9), (what, sentence, ratio)
    assert shown <= ceiling_two_figures(ratio * (1 - 1e-9)), (what, sentence, ratio)


def largest_ratio(matrix: np.ndarray) -> float:
    """How strongly any report of ``matrix`` can favour one true answer over another: the largest
    P(report | a) / P(report | b) over every report sent at all and every pair of answers."""
    ratio = 1.0
    for row in matrix:
        if row.max() == 0:
            continue
        for a in range(matrix.shape[1]):
            for b in range(matrix.shape[1]):
                ratio = max(ratio, math.inf if row[b] == 0 else row[a] / row[b])
    return ratio


def belief_range(matrix: np.ndarray, answer: int, prior: float = 0.5) -> tuple[float, float]:
    """How low and how high an observer who gave ``answer`` the ``prior`` can come to believe in it
    after any report, with the rest of the prior on whichever other answer moves the belief most
    (written out here, not taken from the app)."""
    low, high = 1.0, 0.0
    for report in range(matrix.shape[0]):
        for other in range(matrix.shape[1]):
            if other == answer:
                continue
            denominator = prior * matrix[report, answer] + (1 - prior) * matrix[report, other]
            if denominator > 0:
                belief = prior * matrix[report, answer] / denominator
                low, high = min(low, belief), max(high, belief)
    return low, high


@pytest.fixture(params=["small", "demo", "one-sided"])
def survey_slug(request, app):
    with app.app_context():
        if request.param == "demo":
            survey = create_demo(db.session, respondents=20)
        else:
            survey = create_survey_from_spec(db.session, SMALL_SPEC if request.param == "small" else ONE_SIDED_SPEC)
        db.session.commit()
        return survey.slug


def test_the_survey_page_and_its_privacy_page_make_the_same_claims(app, client, survey_slug):
    on_survey = claims_of(client, f"/s/{survey_slug}")
    on_privacy = claims_of(client, f"/s/{survey_slug}/privacy")
    assert on_survey == on_privacy
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == survey_slug))
        randomized = {q.key for q in survey.randomized_questions}
        direct = {q.key for q in survey.direct_questions}
    assert {q for q, claim in on_survey if claim == "deniability"} == randomized
    assert {q for q, claim in on_survey if claim == "epsilon"} == randomized
    assert {q for q, claim in on_survey if claim == "not-protected"} == direct
    assert ("", "total-epsilon") in on_survey and ("", "total-deniability") in on_survey


def test_every_figure_a_respondent_is_shown_is_true(app, client, survey_slug):
    claims = claims_of(client, f"/s/{survey_slug}")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == survey_slug))
        matrices = {q.key: np.array(q.design.matrix) for q in survey.randomized_option_questions}
        # a randomized number has no matrix: its ε is its design's (ε-LDP by its definition,
        # tests/test_numeric_mechanisms.py), and its line the ε-LDP bound on any statement
        numbers = {q.key: q.mechanism().epsilon for q in survey.randomized_questions if not q.is_randomized_option}
    total = 0.0
    for key, epsilon in numbers.items():
        total += epsilon
        assert claims[(key, "epsilon")] == f"{epsilon:.2f}", key
        # ε-LDP: the density of any report under two true numbers differs at most e^ε-fold
        assert_odds_bound(claims[(key, "deniability")], math.exp(epsilon), key)
    for key, matrix in matrices.items():
        # ε from the stored matrix, computed here: the largest log-ratio within a reported row
        with np.errstate(divide="ignore"):
            epsilon = max(math.log(row.max() / row.min()) if row.min() > 0 else math.inf for row in matrix)
        total += epsilon
        shown = claims[(key, "epsilon")]
        assert shown == ("∞" if math.isinf(epsilon) else f"{epsilon:.2f}"), key
        sentence = claims[(key, "deniability")]
        ranges = [belief_range(matrix, answer) for answer in range(matrix.shape[1])]
        if max(high for _, high in ranges) >= 1 - 1e-12:  # some report gives an answer away
            assert sentence.startswith("Warning:"), (key, sentence)
            continue
        assert not sentence.startswith("Warning")
        assert sentence.startswith("Hidden by"), sentence  # what is true of every such design comes first
        # the line's one bound holds whichever the answer and the report: the largest ratio of the
        # matrix (a lopsided design favours a "no" more than a "yes", and the line must not promise
        # the "yes" figure)
        assert_odds_bound(sentence, largest_ratio(matrix), key)
    shown_total = claims[("", "total-epsilon")]
    assert shown_total == ("∞" if math.isinf(total) else f"{total:.2f}")
    sentence = claims[("", "total-deniability")]
    if math.isinf(total):
        assert "no overall limit" in sentence
    else:
        # ε-DP over all the answers: the odds of any statement grow at most e^ε-fold
        assert_odds_bound(sentence, math.exp(total), "total")


def test_no_page_promises_more_secrecy_than_randomized_response_gives(app, client, survey_slug):
    pages = [f"/s/{survey_slug}", f"/s/{survey_slug}/privacy", f"/s/{survey_slug}/thanks", "/"]
    for path in pages:
        text = re.sub(r"<[^>]+>", " ", client.get(path).get_data(as_text=True))
        assert overclaims(text) == [], path


def test_the_demo_spec_makes_no_promise_its_numbers_break():
    texts = [DEMO_SPEC[name] for name in ("introduction", "closing_message", "run_by", "ethics_statement")]
    texts += [q["text"] for q in DEMO_SPEC["questions"]] + [q.get("help_text", "") for q in DEMO_SPEC["questions"]]
    assert [claim for text in texts for claim in overclaims(text)] == []


@pytest.mark.parametrize(
    "text",
    [
        "so nobody (not even us) can know what you really answered",
        "Nobody, not even the people running the survey, can know what one person really answered.",
        "Your answers are completely anonymous.",
        "It is impossible to tell what you answered.",
    ],
)
def test_the_promises_that_were_printed_before_are_caught(text):
    assert overclaims(text)


@pytest.mark.parametrize("labels", [("yes", "no"), ("a", "b"), ("a", "b", "c")])
def test_the_words_for_a_design_count_the_other_answers_right(labels):
    """A two-answer GRR sends "the other answer", never "one of the other 1 option"."""
    from survey.domain.surveys.wording import describe_design
    from survey.privacy import GeneralizedRR

    words = describe_design(GeneralizedRR(list(labels), epsilon=1.0))
    assert not re.search(r"\b1 options?\b", words), words
    assert ("the other answer" in words) == (len(labels) == 2), words
    if len(labels) > 2:
        assert f"one of the other {len(labels) - 1} options" in words


def _session_payload(client) -> dict:
    from .pages import session_cookie_payload

    cookie = client.get_cookie("session")
    return session_cookie_payload(cookie.value) if cookie is not None else {}


def test_what_the_thank_you_page_says_was_sent_is_the_report_and_true(app, client, survey_slug):
    """Right after a sending, the thank-you page names each randomized question's report (never an
    answer asked directly) and says why it protects: how often each true answer sends it and the odds
    it gives, recomputed here from the stored matrix, for every report each question can send."""
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == survey_slug))
        questions = [
            (
                q.key,
                np.array(q.design.matrix) if q.is_randomized_option else None,
                q.mechanism(),
                [o.label for o in q.options],
                q.kind_entry.randomized and not q.mechanism().sampler().get("sampler") == "combined",
            )
            for q in survey.questions
        ]
    drawn = {key for key, _, _, _, is_drawn in questions if is_drawn}
    assert drawn
    rounds = max((len(matrix) for _, matrix, _, _, is_drawn in questions if is_drawn and matrix is not None), default=1)
    for r in range(rounds):
        data = {}
        for key, matrix, mechanism, _labels, is_drawn in questions:
            if matrix is not None:
                sent_at_all = [row for row in range(len(matrix)) if matrix[row].max() > 0]
                data[f"q_{key}"] = str(sent_at_all[r % len(sent_at_all)])
            elif is_drawn:  # a randomized number: a report code of its domain
                data[f"q_{key}"] = str(mechanism.reports.low + r)
            else:
                data[f"q_{key}"] = "0"
        posted = client.post(f"/s/{survey_slug}", data=data)
        assert posted.status_code == 303, posted.get_data(as_text=True)[:500]
        # the session carries the randomized questions' reports only, and only until the page is shown
        assert set(_session_payload(client)["sent"]["reports"]) == drawn
        # the page's own fetch() of the redirect (Sec-Fetch-Dest: empty) leaves them for the page
        fetched = client.get(f"/s/{survey_slug}/thanks", headers={"Sec-Fetch-Dest": "empty"})
        assert fetched.status_code == 204 and fetched.get_data() == b""  # nothing made for it
        assert "Sec-Fetch-Dest" in fetched.vary and "sent" in _session_payload(client)  # left for the page
        assert client.get("/s/no-such-survey/thanks", headers={"Sec-Fetch-Dest": "empty"}).status_code == 404
        claims = claims_of(client, f"/s/{survey_slug}/thanks")
        assert {key for key, claim in claims if claim == "sent"} == drawn
        assert "sent" not in _session_payload(client)
        for key, matrix, mechanism, labels, is_drawn in questions:
            if not is_drawn:
                continue
            sentence = claims[(key, "sent")]
            if matrix is None:  # a number: ε-LDP bounds the density ratio of any report
                assert_odds_bound(sentence, math.exp(mechanism.epsilon), key)
                continue
            row = matrix[int(data[f"q_{key}"])]
            assert sentence.startswith(f"“{labels[int(data[f'q_{key}'])].capitalize()}”"), sentence
            figures = percents(sentence)
            if row.min() == 0:  # a one-sided design's report: said, not bounded
                assert "warning" in sentence, sentence
                continue
            expected = [row[0], row[1]] if len(row) == 2 and labels == ["yes", "no"] else [row.min(), row.max()]
            close = [abs(f - p) <= 0.005 + 1e-12 for f, p in zip(figures, expected, strict=True)]
            assert len(figures) == 2 and all(close), (key, sentence, expected)
            assert_odds_bound(sentence, row.max() / row.min(), key)
        # shown once
        assert {claim for _, claim in claims_of(client, f"/s/{survey_slug}/thanks")} & {"sent"} == set()
