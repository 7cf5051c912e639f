"""Plain words for what a design does to an answer and what its ε means to a respondent.

Every figure in these sentences comes from the privacy core (the matrix, ε, the posterior bounds),
so the page can never promise more than the mechanism delivers.
"""

from __future__ import annotations

import math

from survey.privacy import Mechanism, mechanism_posterior_bounds, posterior_bounds


def percent(x: float) -> str:
    """62%, 0.5%, 99.9%: whole percents unless that would round a real chance to 0 or 100."""
    value = 100 * x
    if value == 0 or value == 100 or 1 <= value <= 99:
        return f"{value:.0f}%"
    return f"{value:.1f}%"


def epsilon_text(epsilon: float | None) -> str:
    if epsilon is None or math.isinf(epsilon):
        return "∞"
    return f"{epsilon:.2f}"


def describe_design(mechanism: Mechanism) -> str:
    """What the respondent's browser does with their answer, in one or two sentences."""
    params = mechanism.parameters
    name = mechanism.design
    if name in ("coin_flip", "unrelated_question"):
        p = params.get("truth_probability", params.get("sensitive_probability"))
        f = params.get("yes_probability", params.get("unrelated_yes_rate"))
        return (
            f"Before anything is sent, your browser flips a virtual coin: {percent(p)} of the time it sends "
            f"your answer; otherwise it sends “yes” with a chance of {percent(f)} and “no” otherwise, "
            "whatever you answered."
        )
    if name == "warner":
        p = params["p"]
        return (
            f"Before anything is sent, your browser sends your answer {percent(p)} of the time and the "
            f"opposite answer {percent(1 - p)} of the time."
        )
    if name == "grr":
        p = mechanism.truth_probability
        others = mechanism.k - 1
        return (
            f"Before anything is sent, your browser keeps your answer {percent(p)} of the time; otherwise it "
            f"sends one of the other {others} option{'s' if others > 1 else ''}, picked at random."
        )
    if name == "forced_response":
        return (
            f"Before anything is sent, your browser keeps your answer {percent(mechanism.truth_probability)} "
            "of the time; otherwise it sends an option drawn at random with fixed chances."
        )
    return "Before anything is sent, your browser replaces your answer by a random draw that depends on it."


def deniability_sentence(mechanism: Mechanism, prior: float = 0.5) -> str:
    """“Someone who was 50% sure you answered yes can become at most 75% sure.”"""
    if mechanism.k == 2 and mechanism.labels == ("yes", "no"):
        low_yes, high_yes = mechanism_posterior_bounds(mechanism, prior, 0)
        reveals_yes, reveals_no = high_yes >= 1.0 - 1e-12, low_yes <= 1e-12
        if reveals_yes or reveals_no:
            exposed, safe = ("yes", "no") if reveals_yes else ("no", "yes")
            return (
                f"Warning: only a “{safe}” is protected. Some of what your browser sends can only come from "
                f"a true “{exposed}”, so a “{exposed}” can be given away."
            )
        return (
            f"Someone who was {percent(prior)} sure you would answer “yes” can, after seeing what is sent, "
            f"become at most {percent(high_yes)} sure (and at least {percent(low_yes)})."
        )
    high = max(mechanism_posterior_bounds(mechanism, prior, c)[1] for c in range(mechanism.k))
    if high >= 1.0 - 1e-12:
        return "Warning: some options are not protected: what is sent can reveal them."
    return (
        f"Someone who was {percent(prior)} sure which option you would pick can, after seeing what is sent, "
        f"become at most {percent(high)} sure."
    )


def total_deniability_sentence(epsilon: float) -> str:
    """What a survey's total ε means: how far everything one respondent sends can move a belief.

    With ε-differential privacy over all the randomized answers together, the odds of any statement
    about a respondent's true answers can grow at most e^ε-fold, whatever an observer knew before.
    """
    if epsilon <= 0:
        return "No question in this survey is randomized, so no answer is protected by randomization."
    if math.isinf(epsilon):
        return (
            "At least one question protects only some of its answers, so there is no overall limit: what your "
            "browser sends for that question can give the others away."
        )
    even, rare = (_at_most(posterior_bounds(epsilon, prior)[1]) for prior in (0.5, 0.1))
    return (
        f"Someone who was {percent(0.5)} sure of something about your true answers taken together (for example, that "
        f"you answered “yes” to at least one of the randomized questions) can, after seeing everything your browser "
        f"sends, become {even} sure; someone who was {percent(0.1)} sure can become {rare} sure."
    )


def _at_most(belief: float) -> str:
    text = percent(belief)
    return "almost 100%" if belief < 1 and text.startswith("100") else f"at most {text}"
