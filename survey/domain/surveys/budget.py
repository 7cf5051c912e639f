"""A survey's privacy budget and what each question's privacy level costs, for the organizer.

The total ε is what one respondent spends across the randomized questions (basic composition,
:meth:`survey.domain.models.Survey.total_epsilon`); directly asked questions are not protected and not
part of it. Beside it, per randomized question: the expected margin of error at the survey's
expected number of respondents, the respondents needed for its target margin, and the design
effect, all from the privacy core at a true share of 50% (the worst case) and 95% confidence.

Those figures are exact sums over the binomial counts, up to 100,001 terms each, and finding the
respondents needed takes a few to a few dozen of them: from a millisecond to a quarter of a second
per design. A draft may have 200 randomized questions, each a design of its own, so a page does not
compute them all: the figures are kept for the process's life (per matrix in
:func:`planning_figures`, per stored design in :func:`survey_budget`), and one page spends at most
:data:`PAGE_PLANNING_TERMS` binomial terms on figures it has not seen (a design it has to build
counting :data:`DESIGN_WORK`); the page fills in the other rows one request each
(:func:`question_planning`), each bounded by one design's cost.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import statistics
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from scipy import stats
from sqlalchemy import select
from sqlalchemy.orm import Session

from survey.domain.errors import DomainError
from survey.domain.models import Design, Question, Survey
from survey.domain.surveys.arms import composed, groups_of, noncompliance_pair
from survey.domain.surveys.outline import option_counts, question_list
from survey.domain.surveys.planning import PLANNING_LEVEL, PLANNING_SHARE
from survey.domain.validation import within_cap
from survey.privacy import Mechanism, design_effect, margin_of_error, sample_size, total_epsilon
from survey.privacy.designs import DESIGNS
from survey.privacy.noncompliance import noncompliance_sample_size
from survey.privacy.number_planning import number_margin, number_sample_size
from survey.privacy.planning import per_respondent_variance, summed_terms

#: How many designs' planning figures a process keeps (each a few dozen bytes).
FIGURES_KEPT = 4096
#: The most binomial terms one build page sums for figures it has not computed before: about 0.05 s
#: (a term costs about 0.1 µs, ``benchmarks/worst_case.md``). The rest are filled in by the page.
PAGE_PLANNING_TERMS = 500_000
#: What building a design not seen before counts for against that allowance (a 50-option design
#: takes about a millisecond: its inverse and its ε), so that a page builds a bounded number of them.
DESIGN_WORK = 10_000
#: Finding the respondents needed sums the counts at this many n at most, in practice (a few where
#: the large-sample guess is good, a few dozen near 10^12 respondents).
SEARCH_STEPS = 30

_kept: OrderedDict[tuple[bytes, int, float], dict[str, Any]] = OrderedDict()
_lock = threading.Lock()


def _key(mechanism: Mechanism, n: int, margin: float) -> tuple[bytes, int, float]:
    digest = hashlib.blake2b(mechanism.matrix.tobytes(), digest_size=16)
    digest.update(str(mechanism.matrix.shape).encode())
    return digest.digest(), int(n), float(margin)


def known_figures(mechanism: Mechanism, n: int, margin: float) -> dict[str, Any] | None:
    """The figures :func:`planning_figures` has computed for this matrix, ``n`` and ``margin``, if any."""
    key = _key(mechanism, n, margin)
    with _lock:
        found = _kept.get(key)
        if found is None:
            return None
        _kept.move_to_end(key)
        return dict(found)


def planning_work(mechanism: Mechanism, n: int, margin: float) -> int:
    """About how many binomial terms :func:`planning_figures` sums for this design: the margin of error
    at ``n``, and :data:`SEARCH_STEPS` sums near the respondents the large-sample formula expects."""
    variance = per_respondent_variance(mechanism, PLANNING_SHARE)
    z = statistics.NormalDist().inv_cdf(0.5 + PLANNING_LEVEL / 2)
    guess = z**2 * variance / margin**2
    needed = int(min(max(guess, 1.0), 2.0**62))
    return summed_terms(mechanism, n, PLANNING_SHARE) + SEARCH_STEPS * summed_terms(mechanism, needed, PLANNING_SHARE)


def planning_figures(mechanism: Mechanism, n: int, margin: float) -> dict[str, Any]:
    """What a design costs in precision: the expected margin of error at ``n`` respondents, the
    respondents needed for ``margin``, and the design effect (a true share of 50%, 95%). The budget
    panel and the builder's live preview both show these. Kept per matrix, ``n`` and ``margin``."""
    found = known_figures(mechanism, n, margin)
    if found is not None:
        return found
    figures = {
        "margin_of_error": margin_of_error(mechanism, n, PLANNING_SHARE, PLANNING_LEVEL),
        "respondents_needed": sample_size(mechanism, margin, PLANNING_SHARE, PLANNING_LEVEL),
        "design_effect": design_effect(mechanism, PLANNING_SHARE),
    }
    with _lock:
        _kept[_key(mechanism, n, margin)] = dict(figures)
        while len(_kept) > FIGURES_KEPT:
            _kept.popitem(last=False)
    return figures


@dataclass(frozen=True)
class QuestionCost:
    """One randomized question's privacy level and what it costs in precision; the margin and the
    respondents needed are None when the page left them to be filled in (:func:`question_planning`)."""

    question: Question
    epsilon: float
    margin_of_error: float | None
    respondents_needed: int | None
    design_effect: float | None
    #: A randomized number's planned half-width of its mean's interval, in the question's units
    #: (:func:`survey.privacy.number_planning.number_margin` at the widest spread); its margin of
    #: error in points is None, and its respondents needed are for the target margin as a share of
    #: its range (:func:`number_needed`).
    margin_in_units: float | None = None
    #: ... and that target in its units (:func:`margin_in_units`).
    target_in_units: float | None = None

    @property
    def one_sided(self) -> bool:
        return math.isinf(self.epsilon)

    @property
    def pending(self) -> bool:
        return self.margin_of_error is None and self.margin_in_units is None


@dataclass(frozen=True)
class Budget:
    """The survey's total ε, its cap, and the per-question planning table."""

    total_epsilon: float
    cap: float | None
    expected_respondents: int
    target_margin: float
    costs: list[QuestionCost] = field(default_factory=list)
    direct: list[Question] = field(default_factory=list)
    #: The split ballots' plans (:func:`ballot_plans`).
    ballots: list[BallotPlan] = field(default_factory=list)

    @property
    def within_cap(self) -> bool:
        return within_cap(self.total_epsilon, self.cap)

    @property
    def infinite(self) -> bool:
        """Some question is only one-sided deniable, so the total is ∞."""
        return math.isinf(self.total_epsilon)


#: A design's figures in the budget panel, by its stored design (name, parameters, kind, options), the
#: survey's planning figures: found without building its mechanism.
_by_design: OrderedDict[tuple, dict[str, Any]] = OrderedDict()


def _design_key(question: Question, k: int) -> tuple:
    design = question.design
    assert design is not None  # a randomized question always has a design
    return design.mechanism_name, json.dumps(design.parameters, sort_keys=True), question.kind, k


def _planning_mechanism(question: Question, k: int) -> Mechanism:
    """The question's design built from its stored parameters for ``k`` options with neutral labels:
    what its planning figures depend on, without reading its options."""
    design = question.design
    assert design is not None
    labels = question.kind_entry.neutral_labels(k)
    return DESIGNS[design.mechanism_name].mechanism({"design": design.mechanism_name, **design.parameters}, labels)


def _remember(key: tuple, figures: dict[str, Any]) -> None:
    with _lock:
        _by_design[key] = dict(figures)
        while len(_by_design) > FIGURES_KEPT:
            _by_design.popitem(last=False)


def survey_budget(
    session: Session,
    survey: Survey,
    questions: list[Question] | None = None,
    counts: dict[int, int] | None = None,
    work: int = PAGE_PLANNING_TERMS,
) -> Budget:
    """The budget panel's figures for ``survey``, from its frozen (or draft) designs: those already
    known, and those whose design (:data:`DESIGN_WORK`) and figures fit in ``work`` binomial terms;
    the others are left pending. Reads the questions and their designs (unless given, as
    :func:`question_list` with designs gives them) and how many options each has
    (:func:`option_counts`), never the options."""
    if questions is None:
        questions = question_list(session, survey, designs=True)
    if counts is None:
        counts = option_counts(session, survey)
    n, margin = survey.expected_respondents, survey.target_margin
    costs = []
    for question in questions:
        if not question.is_randomized:
            continue
        if not question.is_randomized_option:  # a randomized number: its ε and its mean's planned margin
            costs.append(number_cost(question, n, margin))
            continue
        k = counts.get(question.id, 2)
        key = (*_design_key(question, k), n, margin)
        with _lock:
            figures = _by_design.get(key)
        effect = None if figures is None else figures["design_effect"]
        if figures is None and work >= DESIGN_WORK:
            work -= DESIGN_WORK
            mechanism = _planning_mechanism(question, k)
            effect = design_effect(mechanism, PLANNING_SHARE)
            needs = planning_work(mechanism, n, margin)
            if needs <= work:
                work -= needs
                figures = planning_figures(mechanism, n, margin)
                _remember(key, figures)
        epsilon = question.design.epsilon if question.design is not None else None
        costs.append(
            QuestionCost(
                question=question,
                epsilon=math.inf if epsilon is None else epsilon,
                margin_of_error=None if figures is None else figures["margin_of_error"],
                respondents_needed=None if figures is None else figures["respondents_needed"],
                design_effect=effect,
            )
        )
    return Budget(
        total_epsilon=stored_total_epsilon(survey, questions),
        cap=survey.epsilon_cap,
        expected_respondents=n,
        target_margin=margin,
        costs=costs,
        direct=[q for q in questions if not q.is_randomized],
        ballots=ballot_plans(questions, counts, margin),
    )


#: The guess a split ballot's non-compliance plan is made at (the build page states it): 20% honest
#: carriers, 70% honest non-carriers, and γ = 10% who say "no" whatever happens.
NONCOMPLIANCE_GUESS = {"pi": 0.2, "beta": 0.7}


@dataclass(frozen=True)
class BallotPlan:
    """What one split ballot needs: respondents in all (across its arms, at their chances) for
    randomized minus direct, and for the share who do not comply, to reach the survey's target margin."""

    name: str
    arms: list[str]
    #: The randomized and the direct arm compared, and the respondents that needs (None: no such pair).
    difference: tuple[str, str] | None = None
    difference_needed: int | None = None
    #: The two arms the non-compliance models would be fitted on, and the respondents that needs.
    noncompliance: tuple[str, str] | None = None
    noncompliance_needed: int | None = None


def ballot_plans(questions: list[Question], counts: dict[int, int], margin: float) -> list[BallotPlan]:
    """Each split ballot's plan at the target ``margin`` (the half-width of a 95% interval, large-sample):

    - randomized minus direct, at a true share of 50% in both arms (the worst case):
      ``N = z² (V_R / s_R + ¼ / s_D) / margin²``, where ``V_R`` is the randomized arm's variance per
      respondent (:func:`~survey.privacy.planning.per_respondent_variance`) and ``s`` each arm's chance;
    - the share γ who say "no" whatever happens, under the cheating detection model at
      :data:`NONCOMPLIANCE_GUESS` (:func:`~survey.privacy.noncompliance.noncompliance_sample_size`,
      with the two arms' chances), divided by the two arms' share of the ballot.
    """
    z = float(stats.norm.ppf(0.5 + PLANNING_LEVEL / 2))
    by_key = {q.key: q for q in questions}
    plans = []
    for group in groups_of(questions):
        total = math.fsum(a.share for a in group.arms)
        share = {a.key: a.share / total for a in group.arms}
        arms = [by_key[a.key] for a in group.arms]
        mechanisms = {
            q.key: _planning_mechanism(q, counts.get(q.id, 2)) for q in arms if q.is_randomized_option and q.design
        }
        plan = BallotPlan(group.name, [q.key for q in arms])
        randomized = [q for q in arms if q.key in mechanisms]
        direct = [q for q in arms if not q.is_randomized and q.kind_entry.has_options]
        if randomized and direct:
            r, d = randomized[0], direct[0]
            variance = per_respondent_variance(mechanisms[r.key], PLANNING_SHARE) / share[r.key]
            variance += PLANNING_SHARE * (1 - PLANNING_SHARE) / share[d.key]
            plan = dataclasses.replace(
                plan, difference=(r.key, d.key), difference_needed=math.ceil(z * z * variance / margin**2)
            )
        pair = noncompliance_pair((q, mechanisms.get(q.key)) for q in randomized)
        if pair is not None:
            (a, pa), (b, pb) = pair
            both = share[a.key] + share[b.key]
            needed = noncompliance_sample_size(
                "CDM", [pa, pb], NONCOMPLIANCE_GUESS, margin, "gamma", shares=[share[a.key], share[b.key]]
            )
            plan = dataclasses.replace(
                plan, noncompliance=(a.key, b.key), noncompliance_needed=math.ceil(needed / both)
            )
        plans.append(plan)
    return plans


def number_cost(question: Question, n: int, margin: float) -> QuestionCost:
    """A randomized number's row of the planning table: its ε, the planned half-width of its mean's
    interval with ``n`` answers at the widest spread of the true numbers (in the question's units),
    the answers needed for the survey's target margin taken as that share of its range
    (:func:`number_needed`), and the design effect against asking it directly (the squared ratio of
    the two planned half-widths)."""
    mechanism = question.mechanism()
    randomized, direct = number_margins(mechanism.design, mechanism.epsilon, mechanism.low, mechanism.high, n)
    needed, _ = number_needed(mechanism.design, mechanism.epsilon, mechanism.low, mechanism.high, margin)
    return QuestionCost(
        question,
        float(mechanism.epsilon),
        None,
        needed,
        (randomized / direct) ** 2,
        margin_in_units=randomized,
        target_in_units=margin_in_units(margin, mechanism.low, mechanism.high),
    )


@functools.lru_cache(maxsize=FIGURES_KEPT)
def number_margins(design: str, epsilon: float, low: float, high: float, n: int) -> tuple[float, float]:
    """The planned half-widths, randomized and asked directly (about 15 ms for both; kept per
    design, ε, range and n, like the matrix designs' figures): the build page's plan and the
    builder's live preview both read them."""
    mechanism = DESIGNS[design].mechanism({"epsilon": epsilon}, bounds=(low, high))
    return number_margin(n, low, high, PLANNING_LEVEL, mechanism), number_margin(n, low, high, PLANNING_LEVEL)


def margin_in_units(margin: float, low: float, high: float) -> float:
    """The survey's target margin for a number's mean: the same share of the number's range as a
    share's margin is of a share's (±5 points of 0–100% is ±3.50 on a range of 0 to 70)."""
    return margin * (high - low)


@functools.lru_cache(maxsize=FIGURES_KEPT)
def number_needed(design: str, epsilon: float, low: float, high: float, margin: float) -> tuple[int, int]:
    """The answers a number needs, randomized and asked directly, for its mean's planned half-width
    (:func:`survey.privacy.number_planning.number_sample_size`, at the widest spread) to be at most
    :func:`margin_in_units` (about 40 ms for the hybrid; kept like :func:`number_margins`); past a
    billion answers, the large-sample law (a figure only: no survey reaches it)."""
    units = margin_in_units(margin, low, high)
    mechanism = DESIGNS[design].mechanism({"epsilon": epsilon}, bounds=(low, high))
    return (
        number_sample_size(units, low, high, PLANNING_LEVEL, mechanism),
        number_sample_size(units, low, high, PLANNING_LEVEL),
    )


def stored_total_epsilon(survey: Survey, questions: list[Question] | None = None) -> float:
    """:meth:`Survey.total_epsilon` from the ε each design stored when it was made (the same number),
    without rebuilding any mechanism: for pages that show the total but nothing else of the designs.
    ``questions`` are the survey's, when they have been read already (with their designs)."""
    return total_epsilon(
        composed(
            (q.arm_group, math.inf if q.design is None or q.design.epsilon is None else q.design.epsilon)
            for q in (survey.questions if questions is None else questions)
            if q.is_randomized
        )
    )


def survey_epsilons(session: Session, surveys: list[Survey]) -> dict[int, float]:
    """The total ε of each of ``surveys`` (by id) in one query over the stored designs, reading no
    question, option or matrix: what a list of surveys shows."""
    if not surveys:
        return {}
    rows = session.execute(
        select(Question.survey_id, Question.arm_group, Design.epsilon)
        .join(Design, Design.question_id == Question.id)
        .where(Question.survey_id.in_([s.id for s in surveys]))
        .order_by(Question.survey_id, Question.position)
    )
    found: dict[int, list[tuple[str | None, float]]] = {s.id: [] for s in surveys}
    for survey_id, group, epsilon in rows:  # summed in question order, as Survey.total_epsilon does
        found[survey_id].append((group, math.inf if epsilon is None else epsilon))
    return {survey_id: total_epsilon(composed(values)) for survey_id, values in found.items()}


def question_planning(survey: Survey, question: Question) -> dict[str, Any]:
    """One randomized question's planning figures at the survey's planning figures (what the build
    page fills a pending row with): bounded by one design's cost."""
    if question.design is None or not question.is_randomized_option:  # (a randomized number's: to come)
        raise DomainError("planning.not_randomized", key=question.key)
    k = len(question.options)
    n, margin = survey.expected_respondents, survey.target_margin
    figures = planning_figures(_planning_mechanism(question, k), n, margin)
    _remember((*_design_key(question, k), n, margin), figures)
    return figures
