"""The registry of designs: everything the rest of the app knows about each randomized-response design.

One frozen :class:`Design` per design: its id (the spec's ``privacy.design``), its name and a one-line
summary for organizers, the question kinds it serves, its parameters (names, labels, ranges,
defaults, and which one an organizer may give instead of ε), how the spec's ``privacy`` object is
made from a privacy level (:meth:`Design.from_level`), how its mechanism is built
(:meth:`Design.mechanism`). How it is told to a respondent in words is not here: the privacy core
holds no sentences for respondents (survey/domain/surveys/wording.py has them, by design id).

The spec's validation, the builder's form and live preview, the results page and the plain-words
descriptions all read this registry, so they cannot disagree about which designs exist or what they
take. Adding a design is one entry in :data:`DESIGNS` (plus its :class:`~.mechanisms.Mechanism`
subclass if its matrix is new); the builder then offers it for the kinds it serves.

Pure: numpy and the standard library, like the rest of the privacy core.

    >>> [d.id for d in designs_for("choice")]
    ['grr', 'forced_response']
    >>> [d.id for d in designs_for("rr_number")]
    ['hybrid', 'duchi', 'piecewise', 'laplace']
    >>> DESIGNS["hybrid"].mechanism({"epsilon": 1}, bounds=(0, 30)).sampler()["sampler"]
    'hybrid'
    >>> DESIGNS["warner"].from_level("epsilon", math.log(3), {}, k=2)
    {'design': 'warner', 'p': 0.75}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .mechanisms import (
    CoinFlip,
    Crosswise,
    ForcedResponse,
    GeneralizedRR,
    Mechanism,
    ParameterError,
    Triangular,
    UnrelatedQuestion,
    Warner,
)
from .numeric import NUMBER_MECHANISMS, WholeCodes
from .unrelated_items import DEFAULT_ITEM

__all__ = [
    "DESIGNS",
    "EPSILON",
    "KINDS",
    "Design",
    "Parameter",
    "design_name",
    "designs_for",
    "kinds_served",
]

#: The question kinds a design can serve (a "direct" question has no design).
KINDS = ("yes_no", "choice", "rr_number")


@dataclass(frozen=True)
class Parameter:
    """One number (or, with ``per_option``, one number per option) a design is built from.

    ``name`` is the key in the spec's ``privacy`` object; ``field`` is the name the builder's input
    and the preview API use for it (the same, except that every chance of sending the true answer
    is typed as ``truth_probability``, Warner's ``p`` included). ``low``/``high`` bound it, each end
    included unless ``low_open``/``high_open``; the mechanism's own checks are the final word (a
    few designs exclude more: Warner's 1/2, GRR's values up to 1/k).
    """

    name: str
    label: str
    hint: str
    low: float = 0.0
    high: float = 1.0
    low_open: bool = False
    high_open: bool = False
    #: What the builder starts with; None: the organizer must type it.
    default: float | None = None
    #: The builder's and preview's name for it, when not ``name``.
    input: str | None = None
    per_option: bool = False
    #: What a valid value is, in plain words that follow "must be" (the builder's messages).
    rule: str = "a number from 0 to 1"
    #: The label as it reads inside a sentence ("Type the truth probability: …") and at the start of
    #: one ("The truth probability must be …"); the label itself when not given.
    phrase: str | None = None
    subject: str | None = None
    #: A text (the unrelated question's wording), not a number: ``default`` and the bounds do not apply.
    text: bool = False

    @property
    def field(self) -> str:
        return self.input or self.name

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the range (NaN does not)."""
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return bool(above and below)


#: ε itself, which every design can be set by: the largest log-ratio of the matrix's rows.
EPSILON = Parameter(
    "epsilon",
    "ε (epsilon)",
    "Privacy loss: smaller is more private, larger is more precise.",
    low=0.0,
    high=math.inf,
    low_open=True,
    high_open=True,
    rule="a number greater than 0, for example 1 (smaller is more private, larger is more precise)",
)


@dataclass(frozen=True)
class Design:
    """One design: what it is called, what it serves, what it takes, and how it is built."""

    id: str
    name: str
    summary: str
    kinds: tuple[str, ...]
    #: The parameter an organizer may give instead of ε.
    level: Parameter
    #: Parameters given in every case (with ε or with ``level``).
    others: tuple[Parameter, ...]
    #: ``privacy`` (the spec's object) and the question's shape → the mechanism; raises
    #: ParameterError. The shape is the option ``labels``, or, for a design of numbers
    #: (:attr:`reports` given), the question's range ``(low, high)``.
    build: Callable[[Mapping[str, Any], Any], Any] = field(repr=False)
    #: ε, the other parameters, the number of options → the ``level`` parameter's value.
    solve: Callable[[float, Mapping[str, Any], int], Any] = field(repr=False)
    #: Whether the spec may hold ``epsilon`` itself instead of ``level`` (then exactly one of them).
    epsilon_in_spec: bool = False
    #: For a design of numbers (:mod:`.numeric`: its reports are codes on a grid, whatever its ε and
    #: the question's range), the domain of its reports; None for a matrix (its codes are options).
    reports: WholeCodes | None = None
    #: Whether the builder's form offers it yet (a spec may hold it either way).
    in_builder: bool = True
    #: Whether nothing is drawn at random: the respondent answers a combined question whose answer
    #: is the report (the non-randomized response designs).
    combined: bool = False

    @property
    def numbers(self) -> bool:
        """Whether it randomizes a number in a range (its mechanism needs ``bounds``, not labels)."""
        return self.reports is not None

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return (self.level, *self.others)

    @property
    def spec_fields(self) -> frozenset[str]:
        """The keys the spec's ``privacy`` object may hold besides ``design`` and ``allow_one_sided``."""
        names = {p.name for p in self.parameters}
        return frozenset(names | {"epsilon"} if self.epsilon_in_spec else names)

    def parameter(self, name: str) -> Parameter | None:
        """The parameter called ``name`` in the spec (ε included: a design set by ε alone has its own,
        with its own bounds), if the design has it."""
        if name == EPSILON.name:
            return self.level if self.level.name == EPSILON.name else EPSILON
        return next((p for p in self.parameters if p.name == name), None)

    def from_level(self, set_by: str, value: Any, others: Mapping[str, Any], k: int) -> dict[str, Any]:
        """The spec's ``privacy`` object for a level given as ε (``set_by="epsilon"``) or as the
        ``level`` parameter, with the ``others`` as given (their defaults where absent), for a
        question of ``k`` options. Raises :class:`ParameterError` naming the parameter at fault."""
        given = {p.name: others.get(p.name, p.default) for p in self.others}
        for p in self.others:
            if given[p.name] is None:
                raise ParameterError(p.name, f"{p.name} is missing")
        if set_by == EPSILON.name:
            level = {"epsilon": value} if self.epsilon_in_spec else {self.level.name: self._solved(value, given, k)}
        elif set_by == self.level.name:
            level = {self.level.name: value}
        else:
            raise ParameterError(set_by, f"{self.name} is set by epsilon or {self.level.name}, not {set_by}")
        return {"design": self.id, **level, **given}

    def _solved(self, epsilon: Any, given: Mapping[str, Any], k: int) -> Any:
        """The level parameter for ``epsilon``. Solving builds the design's mechanism, which refuses a
        matrix too close to singular with a plain ValueError; an ε that small (1e-12 for forced
        response: nearly every report forced) is the ε's fault, and is refused naming it."""
        try:
            return self.solve(epsilon, given, k)
        except ParameterError:
            raise
        except ValueError as error:
            message = f"ε = {float(epsilon):g} is too small for this design ({error})"
            raise ParameterError(EPSILON.name, message) from None

    def mechanism(
        self,
        privacy: Mapping[str, Any],
        labels: Sequence[str] | None = None,
        *,
        bounds: tuple[float, float] | None = None,
    ) -> Any:
        """The mechanism ``privacy`` (the spec's object) describes for options ``labels`` (a yes/no
        design knows its own), or for a design of numbers, for the range ``bounds``; raises
        :class:`ParameterError` naming the parameter at fault. A matrix design gives a
        :class:`~.mechanisms.Mechanism`, a design of numbers a :class:`~.numeric.NumberMechanism`
        (both :class:`~.interface.Randomizer`)."""
        if self.numbers:
            if bounds is None:
                raise ValueError(f"a {self.id} design needs the question's range")
            return self.build(privacy, bounds)
        return self.build(privacy, labels)


# -- the entries -------------------------------------------------------------------------------------

TRUTH = "truth_probability"


def _grr(privacy: Mapping[str, Any], labels: Sequence[str] | None) -> Mechanism:
    if labels is None:
        raise ValueError("a grr design needs its option labels")
    by_truth = TRUTH in privacy
    return GeneralizedRR(
        len(labels),
        epsilon=None if by_truth else privacy.get("epsilon"),
        truth_probability=privacy.get(TRUTH) if by_truth else None,
        labels=labels,
    )


#: The largest ε a design of numbers takes: above it the piecewise mechanism's window fills its
#: whole range in floating point (ε = 20 already sends the clamped number within 0.01% of the range).
NUMBER_EPSILON_MAX = 20.0

#: ε as the level of a design of numbers (set by ε alone: no other parameter).
NUMBER_EPSILON = Parameter(
    "epsilon",
    "ε (epsilon)",
    "Privacy loss: smaller is more private, larger is more precise.",
    low=0.0,
    high=NUMBER_EPSILON_MAX,
    low_open=True,
    rule=f"a number greater than 0 and at most {NUMBER_EPSILON_MAX:g}, for example 1 (smaller is more private, "
    "larger is more precise)",
)


def _number_design(design: str, name: str, summary: str) -> Design:
    """A design of numbers: the mechanism :data:`~.numeric.NUMBER_MECHANISMS` ``[design]`` at the
    spec's ε on the question's range (stored as its ε alone: the range is the question's)."""
    mechanism = NUMBER_MECHANISMS[design]

    def build(privacy: Mapping[str, Any], bounds: tuple[float, float]) -> Any:
        epsilon = privacy.get("epsilon")
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not NUMBER_EPSILON.contains(epsilon):
            raise ParameterError("epsilon", f"ε must be {NUMBER_EPSILON.rule}, got {epsilon!r}")
        return mechanism(float(epsilon), *bounds)

    return Design(
        id=design,
        name=name,
        summary=summary,
        kinds=("rr_number",),
        level=NUMBER_EPSILON,
        others=(),
        build=build,
        solve=lambda eps, o, k: eps,
        reports=mechanism(1.0).reports,
    )


#: The non-randomized designs' level: the unrelated question's known "yes" rate (Warner's ``p`` for
#: the crosswise model).
UNRELATED_RATE = Parameter(
    "unrelated_yes_rate",
    "“Yes” rate of the unrelated question",
    "How often the unrelated question is answered “yes”, known in advance (for example 90/365 = 0.2466 "
    "for “is your mother's birthday in January–March?”).",
    low_open=True,
    high_open=True,
    default=DEFAULT_ITEM.rate,
    input="unrelated_rate",
    phrase="the “yes” rate of the unrelated question",
    subject="The “yes” rate of the unrelated question",
    rule="a number above 0 and below 1 other than 0.5, for example 0.2466 (at 0.5 a crosswise answer says nothing)",
)

#: The unrelated question's wording, which the respondent reads inside the combined question.
UNRELATED_TEXT = Parameter(
    "unrelated_question",
    "Unrelated question",
    "A question whose “yes” rate is known and whose answer nobody else knows.",
    phrase="the unrelated question",
    subject="The unrelated question",
    rule="a question in words",
    text=True,
)


def _set_by_rate(design: str) -> Callable[[float, Mapping[str, Any], int], Any]:
    """The solver of a non-randomized design: its ε follows from the unrelated question's rate, which
    is a fact about that question, so it cannot be chosen to meet an ε."""

    def solve(epsilon: float, others: Mapping[str, Any], k: int) -> Any:
        raise ParameterError(
            EPSILON.name,
            f"a {design} design is set by its unrelated question's “yes” rate, not by ε",
        )

    return solve


DESIGNS: dict[str, Design] = {
    d.id: d
    for d in (
        Design(
            id="coin_flip",
            name="Coin flip (forced response)",
            summary="A first coin decides whether the true answer is sent; otherwise a second coin picks "
            "“yes” or “no”.",
            kinds=("yes_no",),
            level=Parameter(
                TRUTH,
                "Truth probability",
                "The chance that the first coin says “send the true answer”.",
                low_open=True,
                phrase="the truth probability",
                subject="The truth probability",
                rule="a number above 0 and at most 1, for example 0.5",
            ),
            others=(
                Parameter(
                    "yes_probability",
                    "Forced “yes” probability",
                    "When the first coin says “don't”, the chance that “yes” is sent. 0.5 protects both answers.",
                    default=0.5,
                    phrase="the forced “yes” probability",
                    subject="The forced “yes” probability",
                    rule="a number from 0 to 1, for example 0.5 (0 or 1 protects only one answer, so such a "
                    "design cannot be set by ε: set it by its truth probability)",
                ),
            ),
            build=lambda s, labels: CoinFlip(s.get(TRUTH), s.get("yes_probability")),
            solve=lambda eps, o, k: CoinFlip.from_epsilon(eps, o["yes_probability"]).truth_probability,
        ),
        Design(
            id="warner",
            name="Warner (mirrored question)",
            summary="The true answer is sent with one chance, the opposite answer otherwise.",
            kinds=("yes_no",),
            level=Parameter(
                "p",
                "Truth probability",
                "The chance that the true answer is sent (otherwise the opposite one); not 0.5.",
                input=TRUTH,
                phrase="the truth probability",
                subject="The truth probability",
                rule="a number from 0 to 1 other than 0.5, for example 0.75 (at 0.5 what is sent says "
                "nothing about the answer; at 0 or 1 it reveals the answer)",
            ),
            others=(),
            build=lambda s, labels: Warner(s.get("p")),
            solve=lambda eps, o, k: Warner.from_epsilon(eps).p,
        ),
        Design(
            id="unrelated_question",
            name="Unrelated question",
            summary="The true answer is sent with one chance; otherwise the answer to an innocuous question "
            "whose “yes” rate is known.",
            kinds=("yes_no",),
            level=Parameter(
                "sensitive_probability",
                "Sensitive-question probability",
                "The chance that the true answer is sent; otherwise the browser answers the unrelated question.",
                low_open=True,
                phrase="the sensitive-question probability",
                subject="The sensitive-question probability",
                rule="a number above 0 and at most 1, for example 0.7",
            ),
            others=(
                Parameter(
                    "unrelated_yes_rate",
                    "“Yes” rate of the unrelated question",
                    "How often the innocuous question is answered “yes”, known in advance (for example 1/12 "
                    "for “were you born in April?”, written 0.0833).",
                    phrase="the “yes” rate of the unrelated question",
                    subject="The “yes” rate of the unrelated question",
                    rule="a number from 0 to 1, for example 0.0833 (0 or 1 protects only one answer, so such a "
                    "design cannot be set by ε: set it by its sensitive-question probability)",
                ),
            ),
            build=lambda s, labels: UnrelatedQuestion(s.get("sensitive_probability"), s.get("unrelated_yes_rate")),
            solve=lambda eps, o, k: UnrelatedQuestion.from_epsilon(eps, o["unrelated_yes_rate"]).sensitive_probability,
        ),
        Design(
            id="grr",
            name="Generalized randomized response (GRR)",
            summary="The true option is sent with one chance; otherwise one of the other options, at random.",
            kinds=("yes_no", "choice"),
            level=Parameter(
                TRUTH,
                "Truth probability",
                "The chance that the browser sends the true answer; above 1 divided by the number of options.",
                phrase="the truth probability",
                subject="The truth probability",
                rule="a number above 1 divided by the number of options (above 0.5 for yes / no) and at most 1, "
                "for example 0.75",
            ),
            others=(),
            build=_grr,
            solve=lambda eps, o, k: GeneralizedRR(k, epsilon=eps).truth_probability,
            epsilon_in_spec=True,
        ),
        Design(
            id="forced_response",
            name="Forced response",
            summary="With a fixed chance per option the browser is told to send that option; otherwise the truth.",
            kinds=("choice",),
            level=Parameter(
                "forced",
                "Forcing probabilities",
                "For each option in order, the chance of sending it whatever the answer, separated by commas "
                "(for example 0.1, 0.1, 0.1); together below 1. Set by ε, every option gets the same chance.",
                high_open=True,
                per_option=True,
                phrase="the forcing probabilities",
                subject="The forcing probabilities",
                rule="one number from 0 to 1 per option, separated by commas and together below 1, for example "
                "0.1, 0.1, 0.1",
            ),
            others=(),
            build=lambda s, labels: ForcedResponse(s.get("forced", ()), labels=labels),
            solve=lambda eps, o, k: ForcedResponse.from_epsilon(eps, k).parameters["forced"],
        ),
        Design(
            id="crosswise",
            name="Crosswise (non-randomized)",
            summary="The respondent says only whether their answers to the question and to an unrelated one "
            "with a known “yes” rate are the same or different; nothing is drawn at random.",
            kinds=("yes_no",),
            level=UNRELATED_RATE,
            others=(UNRELATED_TEXT,),
            build=lambda s, labels: Crosswise(s.get("unrelated_yes_rate"), s.get("unrelated_question", "")),
            solve=_set_by_rate("crosswise"),
            combined=True,
        ),
        Design(
            id="triangular",
            name="Triangular (non-randomized, one-sided)",
            summary="The respondent picks the circle if their answers to the question and to an unrelated one "
            "are both “no”, else the triangle; only a “yes” is protected.",
            kinds=("yes_no",),
            level=UNRELATED_RATE,
            others=(UNRELATED_TEXT,),
            build=lambda s, labels: Triangular(s.get("unrelated_yes_rate"), s.get("unrelated_question", "")),
            solve=_set_by_rate("triangular"),
            combined=True,
        ),
        _number_design(
            "hybrid",
            "Hybrid (piecewise or two-point)",
            "The browser sends a random number whose average is the true number: from a window around it "
            "or from the two ends of a wider range (the least noise at every ε).",
        ),
        _number_design(
            "duchi",
            "Two-point (Duchi)",
            "The browser sends one of two numbers beyond the range's ends, the nearer end more likely.",
        ),
        _number_design(
            "piecewise",
            "Piecewise",
            "The browser sends a random number, more often from a window around the true number.",
        ),
        _number_design(
            "laplace",
            "Laplace noise",
            "The browser adds random noise from a Laplace distribution to the true number.",
        ),
    )
}

#: Names of matrices that are no registered design (a researcher's own, in the privacy core).
OTHER_NAMES = {"custom": "Custom matrix"}


def designs_for(kind: str) -> list[Design]:
    """The designs that serve questions of ``kind``, in registry order (none for "direct")."""
    return [d for d in DESIGNS.values() if kind in d.kinds]


def kinds_served() -> dict[str, list[str]]:
    """Kind → the ids of the designs that serve it, for every kind a design can serve."""
    return {kind: [d.id for d in designs_for(kind)] for kind in KINDS}


def design_name(design_id: str) -> str:
    """The display name of a design id (the id itself for one nobody knows)."""
    design = DESIGNS.get(design_id)
    return design.name if design is not None else OTHER_NAMES.get(design_id, design_id)
