"""Plain words for what a design does to an answer and what its ε means to a respondent.

Every figure in these sentences comes from the privacy core (the matrix, ε, the posterior bounds),
so the page can never promise more than the mechanism delivers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from survey.domain.messages import N_
from survey.privacy import Mechanism, Randomizer, mechanism_posterior_bounds, posterior_bounds
from survey.privacy.deniability import highest_posterior, odds_bound, report_odds
from survey.privacy.designs import DESIGNS
from survey.privacy.physical import COINS, DIE, Procedure

#: What turns one of this module's English templates into the reader's language before it is filled:
#: the web layer installs gettext here (survey/web/languages.py); the domain alone, a script or a
#: test without a request, keeps the English.
translate: Callable[[str], str] = str


#: How a list of alternatives reads ("1, 2 or 3"): the web layer installs the reader's language's
#: (CLDR's "or" pattern, through Babel); English otherwise.
def _english_or_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


or_list: Callable[[list[str]], str] = _english_or_list


def percent(x: float) -> str:
    """62%, 0.5%, 99.9%: whole percents unless that would round a real chance to 0 or 100."""
    value = 100 * x
    if value == 0 or value == 100 or 1 <= value <= 99:
        return f"{value:.0f}%"
    return f"{value:.1f}%"


def _rounded(x: float, direction: int) -> str:
    """``x`` as a percentage written like :func:`percent`, but rounded up (``direction`` 1) or down
    (-1) instead of to the nearest, so that a bound shown as "at most" or "at least" stays true."""
    value = 100 * x
    if value in (0.0, 100.0):
        return f"{value:.0f}%"
    step = math.ceil if direction > 0 else math.floor
    if 1 <= value <= 99:
        return f"{step(value - direction * 1e-9):.0f}%"
    return f"{step(10 * value - direction * 1e-9) / 10:.1f}%"


def percent_at_most(x: float) -> str:
    """A percentage that is never below ``x``: what an upper bound may be shown as ("at most 76%")."""
    return _rounded(x, 1)


def percent_at_least(x: float) -> str:
    """A percentage that is never above ``x``: what a lower bound may be shown as ("at least 24%")."""
    return _rounded(x, -1)


def epsilon_text(epsilon: float | None) -> str:
    if epsilon is None or math.isinf(epsilon):
        return "∞"
    return f"{epsilon:.2f}"


# -- what each design does, told to a respondent ----------------------------------------------------
# The privacy core's registry (survey/privacy/designs.py) holds no sentences for respondents: they
# are here, by design id, as templates marked for translation (N_) and filled with the percentages
# the mechanism gives.

BROWSER_WORDS = {
    "coin": N_(
        "Before anything is sent, your browser flips a virtual coin: {truth} of the time it sends your answer; "
        "otherwise it sends “yes” with a chance of {forced_yes} and “no” otherwise, whatever you answered."
    ),
    "warner": N_(
        "Before anything is sent, your browser sends your answer {truth} of the time and the opposite answer "
        "{opposite} of the time."
    ),
    "grr_two": N_(
        "Before anything is sent, your browser keeps your answer {truth} of the time and sends the other answer "
        "{other} of the time."
    ),
    "grr": N_(
        "Before anything is sent, your browser keeps your answer {truth} of the time; otherwise it sends one of "
        "the other {others} options, picked at random."
    ),
    "forced_response": N_(
        "Before anything is sent, your browser keeps your answer {truth} of the time; otherwise it sends an "
        "option drawn at random with fixed chances."
    ),
    "custom": N_("Before anything is sent, your browser replaces your answer by a random draw that depends on it."),
    "crosswise": N_(
        "Nothing is drawn at random: you say only whether your two answers are the same or different, and "
        "{rate} of people answer “yes” to the second question, so “same” does not tell which answer is yours."
    ),
    "triangular": N_(
        "Nothing is drawn at random: you pick the circle only if both answers are “no”, and {rate} of people "
        "answer “yes” to the second question, so the triangle does not tell which answer is yours."
    ),
    "hybrid": N_(
        "Before anything is sent, your browser replaces your number by a random number: usually one near it, "
        "sometimes one of two numbers beyond the ends of the range. Only averages over many people are accurate."
    ),
    "duchi": N_(
        "Before anything is sent, your browser replaces your number by one of two numbers beyond the ends of the "
        "range, the nearer end more likely. Only averages over many people are accurate."
    ),
    "piecewise": N_(
        "Before anything is sent, your browser replaces your number by a random number, more often one near it. "
        "Only averages over many people are accurate."
    ),
    "laplace": N_(
        "Before anything is sent, your browser adds random noise to your number. Only averages over many people "
        "are accurate."
    ),
}


def _coin_words(mechanism: Mechanism) -> str:
    params = mechanism.parameters
    p = params.get("truth_probability", params.get("sensitive_probability"))
    f = params.get("yes_probability", params.get("unrelated_yes_rate"))
    return translate(BROWSER_WORDS["coin"]).format(truth=percent(p), forced_yes=percent(f))


def _warner_words(mechanism: Mechanism) -> str:
    p = mechanism.parameters["p"]
    return translate(BROWSER_WORDS["warner"]).format(truth=percent(p), opposite=percent(1 - p))


#: The combined question's two answers, by design: code 0 (the matrix's "yes" row: "same", the
#: triangle) first. The respondent picks one; it is what is sent.
COMBINED_OPTIONS = {
    "crosswise": (
        N_("Same: “yes” to both questions, or “no” to both"),
        N_("Different: “yes” to one question and “no” to the other"),
    ),
    "triangular": (
        N_("Triangle: “yes” to at least one of the two questions"),
        N_("Circle: “no” to both questions"),
    ),
}

#: The one line above the combined question's answers: how to answer it, with the unrelated question.
COMBINED_INSTRUCTIONS = {
    "crosswise": N_(
        "Think of your answer to this question and to a second one, “{unrelated}”, and say only whether the two "
        "answers are the same or different."
    ),
    "triangular": N_(
        "Think of your answer to this question and to a second one, “{unrelated}”, and pick the circle only if "
        "both answers are “no”."
    ),
}


#: Randomizing by hand (survey.privacy.physical): how to toss or roll, then one rule per outcome group.
OWN_COIN_DEVICE = {
    COINS: N_("Toss two coins (or one coin twice) where no one can see them, and count the heads."),
    DIE: N_("Roll a die where no one can see it."),
}
OWN_COIN_TRUTH = N_("{outcomes}: give your true answer.")
OWN_COIN_FORCED = N_("{outcomes}: answer “{label}”, whatever the truth.")
#: Two coins' outcomes, by the number of heads.
HEADS = (N_("No heads"), N_("One head"), N_("Two heads"))


def _outcomes(device: str, outcomes: tuple[int, ...]) -> str:
    if device == COINS:
        names = [translate(HEADS[h]) for h in outcomes]
        return or_list([names[0], *(n[:1].lower() + n[1:] for n in names[1:])])
    return or_list([str(face) for face in outcomes])


OWN_COIN_WORDS = N_(
    "You randomize with your own coins or die, as the question says: what you then answer is sent as it is, "
    "and it could have come from any true answer."
)


def own_coin_description() -> str:
    """What randomizing by hand does, in the words of the panel under the question."""
    return translate(OWN_COIN_WORDS)


def own_coin_instruction(procedure: Procedure, labels: list[str]) -> str:
    """What a respondent who randomizes with their own coins or die does, in a few short sentences:
    the device, then one rule per group of outcomes (the truth, or an option whatever the truth)."""
    sentences = [translate(OWN_COIN_DEVICE[procedure.device])]
    for code, outcomes in enumerate(procedure.forced):
        if outcomes:
            label = labels[code]
            sentences.append(
                translate(OWN_COIN_FORCED).format(outcomes=_outcomes(procedure.device, outcomes), label=label)
            )
    sentences.append(translate(OWN_COIN_TRUTH).format(outcomes=_outcomes(procedure.device, procedure.truth)))
    return " ".join(sentences)


def combined_instruction(mechanism: Mechanism, unrelated: str | None = None) -> str:
    """The one line telling a respondent how to answer a non-randomized design's combined question;
    ``unrelated`` is the unrelated question in the page's language (the organizer's translation), when
    not the design's own."""
    unrelated = unrelated or mechanism.parameters["unrelated_question"]
    return translate(COMBINED_INSTRUCTIONS[mechanism.design]).format(unrelated=unrelated)


def _combined_words(design: str) -> Callable[[Mechanism], str]:
    def words(mechanism: Mechanism) -> str:
        return translate(BROWSER_WORDS[design]).format(rate=percent(mechanism.parameters["unrelated_yes_rate"]))

    return words


def _grr_words(mechanism: Mechanism) -> str:
    p = mechanism.truth_probability
    others = mechanism.k - 1
    if others == 1:
        return translate(BROWSER_WORDS["grr_two"]).format(truth=percent(p), other=percent(1 - p))
    return translate(BROWSER_WORDS["grr"]).format(truth=percent(p), others=others)


def _forced_words(mechanism: Mechanism) -> str:
    return translate(BROWSER_WORDS["forced_response"]).format(truth=percent(mechanism.truth_probability))


#: Design id → what the respondent's browser does with the answer, in words. A design in the
#: registry without an entry here is told in the general words of a custom matrix.
DESIGN_WORDS: dict[str, Callable[[Mechanism], str]] = {
    "coin_flip": _coin_words,
    "warner": _warner_words,
    "unrelated_question": _coin_words,
    "grr": _grr_words,
    "forced_response": _forced_words,
    "crosswise": _combined_words("crosswise"),
    "triangular": _combined_words("triangular"),
    # the designs of numbers: the same words whatever ε (ε is stated beside them)
    "hybrid": lambda mechanism: translate(BROWSER_WORDS["hybrid"]),
    "duchi": lambda mechanism: translate(BROWSER_WORDS["duchi"]),
    "piecewise": lambda mechanism: translate(BROWSER_WORDS["piecewise"]),
    "laplace": lambda mechanism: translate(BROWSER_WORDS["laplace"]),
}


def describe_design(mechanism: Mechanism) -> str:
    """What the respondent's browser does with their answer, in one or two sentences (the words for
    its design; a custom matrix, or a design without words of its own, gets a general sentence)."""
    words = DESIGN_WORDS.get(mechanism.design)
    return words(mechanism) if words is not None else translate(BROWSER_WORDS["custom"])


def _belief_bounds(mechanism: Mechanism, prior: float) -> tuple[str | None, float, float | None]:
    """For a yes/no design: (the answer a report can give away or None, the highest belief in “yes”,
    the lowest); for a choice: (None or "", the highest belief in any option, None). A design that
    can give an answer away is said so in a warning, not in bounds."""
    if mechanism.k == 2 and mechanism.labels == ("yes", "no"):
        low_yes, high_yes = mechanism_posterior_bounds(mechanism, prior, 0)
        if high_yes >= 1.0 - 1e-12:
            return "yes", high_yes, low_yes
        if low_yes <= 1e-12:
            return "no", high_yes, low_yes
        return None, high_yes, low_yes
    high = highest_posterior(mechanism, prior)
    return ("" if high >= 1.0 - 1e-12 else None), high, None


WARNINGS = {
    "some": N_("Warning: some options are not protected: what is sent can reveal them."),
    "yes": N_(
        "Warning: only a “no” is protected. Some of what your browser sends can only come from a true “yes”, "
        "so a “yes” can be given away."
    ),
    "no": N_(
        "Warning: only a “yes” is protected. Some of what your browser sends can only come from a true “no”, "
        "so a “no” can be given away."
    ),
}


def _warning(exposed: str) -> str:
    return translate(WARNINGS[exposed or "some"])


def deniability_sentence(mechanism: Mechanism, prior: float = 0.5) -> str:
    """“Someone who was 50% sure you answered yes can become at most 75% sure.” (the builder's preview)
    A number mechanism is told the bound ε-LDP puts on any statement about the number
    (:func:`~survey.privacy.deniability.posterior_bounds`)."""
    if not isinstance(mechanism, Mechanism):
        low, high = posterior_bounds(mechanism.epsilon, prior)
        return (
            f"Someone who was {percent(prior)} sure of anything about your number (that it is above some value, "
            f"say) can, after seeing what is sent, become {_at_most(high)} sure (and at least "
            f"{percent_at_least(low)})."
        )
    exposed, high, low = _belief_bounds(mechanism, prior)
    if exposed is not None:
        return _warning(exposed)
    if low is not None:
        return (
            f"Someone who was {percent(prior)} sure you would answer “yes” can, after seeing what is sent, "
            f"become {_at_most(high)} sure (and at least {percent_at_least(low)})."
        )
    return (
        f"Someone who was {percent(prior)} sure which option you would pick can, after seeing what is sent, "
        f"become {_at_most(high)} sure."
    )


def odds_text(ratio: float) -> str:
    """A likelihood ratio as the "N" of "at most N to 1", rounded *up* to two significant figures
    (so that the bound stays true) and written with thousands separators: 3, 2.8, 21, 3,300.

    >>> [odds_text(x) for x in (3.0000000000000004, 2.718281828, 20.09, 3294.5, 1.0)]
    ['3', '2.8', '21', '3,300', '1']
    """
    if math.isinf(ratio):
        return "∞"
    digits = max(0, 1 - math.floor(math.log10(ratio)))  # decimals that keep two significant figures
    scale = 10.0 ** (1 - math.floor(math.log10(ratio)))
    shown = math.ceil(ratio * scale * (1 - 1e-12)) / scale
    text = f"{shown:,.{digits}f}"
    return text[:-2] if text.endswith(".0") else text


#: The one line under a randomized question, by what its answer is. Each says what is true for
#: every such design (what is sent may come from any answer) and then the bound, as odds.
LINES = {
    "options": N_("Hidden by chance: what is sent favours no answer more than {odds} to 1."),
    "numeric": N_("Hidden by chance: what is sent favours no guess about your number more than {odds} to 1."),
    "combined": N_("Hidden by a second question: your answer favours neither “yes” nor “no” more than {odds} to 1."),
}


def _is_yes_no(mechanism: Mechanism) -> bool:
    return mechanism.k == 2 and tuple(mechanism.labels) == ("yes", "no")


def deniability_line(mechanism: Mechanism | Randomizer) -> str:
    """The one short line a respondent reads under a question: that what is sent is hidden by chance,
    and how strongly it can favour one answer over another (e^ε to 1, whichever answer and report:
    the bound of :func:`~survey.privacy.deniability.odds_bound`). A design that can give an answer
    away gets the full warning instead."""
    odds = odds_text(odds_bound(mechanism.epsilon))
    if not isinstance(mechanism, Mechanism):  # a number mechanism: ε-LDP bounds any statement about it
        return translate(LINES["numeric"]).format(odds=odds)
    exposed, _, _ = _belief_bounds(mechanism, 0.5)
    if exposed is not None:
        return _warning(exposed)
    design = DESIGNS.get(mechanism.design)
    if design is not None and design.combined:
        return translate(LINES["combined"]).format(odds=odds)
    return translate(LINES["options"]).format(odds=odds)


TOTAL = {
    "none": N_("No question in this survey is randomized, so no answer is protected by randomization."),
    "unbounded": N_(
        "At least one question protects only some of its answers, so there is no overall limit: what your "
        "browser sends for that question can give the others away."
    ),
    "bounded": N_(
        "Each answer is hidden on its own. Answers that go together can add up: everything sent for you, taken "
        "together, favours no statement about your answers more than {odds} to 1."
    ),
}


def total_deniability_sentence(epsilon: float) -> str:
    """What a survey's total ε means: how far everything one respondent sends can favour a statement.

    With ε-differential privacy over all the randomized answers together, the odds of any statement
    about a respondent's true answers can grow at most e^ε-fold, whatever an observer knew before.
    """
    if epsilon <= 0:
        return translate(TOTAL["none"])
    if math.isinf(epsilon):
        return translate(TOTAL["unbounded"])
    return translate(TOTAL["bounded"]).format(odds=odds_text(odds_bound(epsilon)))


#: After sending: what was sent for one question, and why it does not give the answer away.
SENT = {
    "two_answers": N_(
        "“{report}” is sent for {if_yes} of people whose answer is “yes” and {if_no} of people whose answer is "
        "“no”, so it favours neither more than {odds} to 1."
    ),
    "many_answers": N_(
        "“{report}” is sent for {low} to {high} of people, whatever their answer, so it favours no answer more "
        "than {odds} to 1."
    ),
    "numeric": N_(
        "This number was drawn at random from yours: any true number could have led to it, so it favours no "
        "guess about your number more than {odds} to 1."
    ),
    "gives_away": N_(
        "“{report}” is sent only for people whose answer is “{answer}”: this is the answer the question's warning "
        "said can be given away."
    ),
    "rules_out": N_(
        "“{report}” is sent for {low} to {high} of people, depending on their answer: it is never sent for some "
        "answers, as the question's warning said."
    ),
}


def sent_sentence(
    mechanism: Mechanism | Randomizer, report: int, label: str = "", labels: Sequence[str] | None = None
) -> str:
    """Why the report ``report`` (shown as ``label``; the options shown as ``labels``, in the page's
    language, where given) that was sent for a respondent protects them:
    how often each true answer leads to it (its row of the matrix) and the odds it gives, computed
    for this very report (:func:`~survey.privacy.deniability.report_odds`); for a number, the ε-LDP
    bound on the density of any report."""
    if not isinstance(mechanism, Mechanism):
        return translate(SENT["numeric"]).format(odds=odds_text(odds_bound(mechanism.epsilon)))
    row = mechanism.matrix[report]
    if row.min() <= 0:  # a one-sided design's report that some answers never send: no odds to state
        if _is_yes_no(mechanism):
            shown = labels if labels is not None else mechanism.labels
            return translate(SENT["gives_away"]).format(report=label, answer=shown[int(row.argmax())])
        return translate(SENT["rules_out"]).format(report=label, low=percent(row.min()), high=percent(row.max()))
    odds = odds_text(report_odds(mechanism, report))
    if _is_yes_no(mechanism):
        return translate(SENT["two_answers"]).format(
            report=label, if_yes=percent(row[0]), if_no=percent(row[1]), odds=odds
        )
    return translate(SENT["many_answers"]).format(
        report=label, low=percent(row.min()), high=percent(row.max()), odds=odds
    )


def _at_most(belief: float) -> str:
    """Words for an upper bound on a belief: "at most 76%", rounded up so that it stays true."""
    text = percent_at_most(belief)
    return "almost 100%" if belief < 1 and text.startswith("100") else f"at most {text}"


#: Promises no randomized-response survey can keep: a report always shifts what an observer may
#: believe (by up to e^ε in the odds), and a survey with a large total ε can make them almost sure.
#: Pages state the bounds computed from the survey's own numbers instead.
OVERCLAIMS = re.compile(
    r"\b(nobody|no one|not even (us|the)|can(no|'|’)?t (ever )?know|impossible to (know|tell)|"
    r"(completely|fully|totally|perfectly|100%) (anonymous|private|safe|secret))\b",
    re.IGNORECASE,
)


def overclaims(text: str) -> list[str]:
    """The phrases in ``text`` that promise more secrecy than randomized response gives."""
    return [match.group(0) for match in OVERCLAIMS.finditer(text or "")]
