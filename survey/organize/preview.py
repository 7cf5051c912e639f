"""What a privacy setting means, computed before it is saved: the builder's live preview.

The organizer types ε *or* the truth probability; this module builds the mechanism with the privacy
core, derives the other parameter, and reports what the design costs and protects. The preview API
and the question form's POST both go through :func:`privacy_settings` and :func:`preview`, so the
numbers the page shows while typing are the numbers the saved design will have, and the browser
never needs a privacy formula of its own.

Pure functions: they import the privacy core and the wording, nothing from Flask or the database.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from survey.privacy import (
    CoinFlip,
    Mechanism,
    Warner,
    design_effect,
    margin_of_error,
    mechanism_from_dict,
    sample_size,
)
from survey.wording import deniability_sentence, describe_design, epsilon_text

#: The designs the builder offers, by question kind (a direct question has none).
BUILDER_DESIGNS: dict[str, tuple[str, ...]] = {
    "yes_no": ("coin_flip", "warner", "grr"),
    "choice": ("grr",),
    "direct": (),
}
DESIGN_NAMES = {
    "coin_flip": "Coin flip (forced response)",
    "warner": "Warner (mirrored question)",
    "grr": "Generalized randomized response",
    "unrelated_question": "Unrelated question",
    "forced_response": "Forced response",
    "custom": "Custom matrix",
}
#: The parameters one sets a privacy level by.
SET_BY = ("epsilon", "truth_probability")
PARAMETER_LABELS = {"epsilon": "ε", "truth_probability": "truth probability"}
MAX_OPTIONS = 50
#: Planning figures are shown for the worst case of a yes/no question, a true share of 50%, at 95%.
PLANNING_SHARE = 0.5
PLANNING_LEVEL = 0.95
ONE_SIDED_WARNING = (
    "This design has ε = ∞: it protects only one side. Some of what a respondent's browser sends can only come "
    "from one true answer, so those reports reveal the answer (for example, a forced-“yes” design never sends "
    "“no” for a true “yes”, so every “no” is a true “no”). Only the other answer stays deniable."
)
DEFAULT_RESPONDENTS = 1000
DEFAULT_MARGIN = 0.05


class InputError(ValueError):
    """Input the preview or the form cannot use; ``field`` names the input the message belongs to."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _number(field: str, value: Any) -> float:
    """A finite number typed into ``field``, or the core's own wording of why not."""
    if _blank(value):
        raise InputError(field, f"enter the {PARAMETER_LABELS.get(field, field.replace('_', ' '))}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(field, f"{field} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise InputError(field, f"{field} must be a finite number, got {value!r}")
    return number


def _field_of(error: ValueError, fallback: str) -> str:
    """The input a privacy-core message is about (Warner's ``p`` is what the form calls the truth probability)."""
    text = str(error)
    for name, field in (("yes_probability", "yes_probability"), ("truth_probability", "truth_probability")):
        if text.startswith(name):
            return field
    if text.startswith("epsilon"):
        return "epsilon"
    if text.startswith("p must"):
        return "truth_probability"
    return fallback


def privacy_settings(
    design: str,
    *,
    set_by: str,
    epsilon: Any = None,
    truth_probability: Any = None,
    yes_probability: Any = None,
    allow_one_sided: bool = False,
) -> dict[str, Any]:
    """The spec's ``privacy`` object for what the organizer typed.

    Coin flip and Warner are stored by their probabilities, so a level set by ε is turned into them
    here with ``CoinFlip.from_epsilon`` / ``Warner.from_epsilon``; GRR takes ε or the truth
    probability as it is. Raises :class:`InputError` naming the input.
    """
    if design not in ("coin_flip", "warner", "grr"):
        raise InputError("design", f"choose a design: coin_flip, warner or grr, got {design!r}")
    if set_by not in SET_BY:
        raise InputError("set_by", f"set the privacy level by epsilon or truth_probability, got {set_by!r}")
    given = _number(set_by, epsilon if set_by == "epsilon" else truth_probability)
    privacy: dict[str, Any] = {"design": design}
    try:
        if design == "coin_flip":
            f = _number("yes_probability", "0.5" if _blank(yes_probability) else yes_probability)
            p = CoinFlip.from_epsilon(given, f).truth_probability if set_by == "epsilon" else given
            privacy.update(truth_probability=p, yes_probability=f)
        elif design == "warner":
            privacy["p"] = Warner.from_epsilon(given).p if set_by == "epsilon" else given
        else:
            privacy[set_by] = given
    except ValueError as error:
        raise InputError(_field_of(error, set_by), str(error)) from None
    if allow_one_sided:
        privacy["allow_one_sided"] = True
    return privacy


def labels_for(kind: str, k: int) -> list[str]:
    """Labels to build a preview mechanism with: yes/no, or neutral option names."""
    if kind == "yes_no":
        return ["yes", "no"]
    return [f"option {i + 1}" for i in range(k)]


def mechanism_for(privacy: Mapping[str, Any], labels: list[str], set_by: str = "epsilon") -> Mechanism:
    """The mechanism of a ``privacy`` object, with the spec's rule that a design must randomize."""
    spec = {k: v for k, v in privacy.items() if k != "allow_one_sided"}
    try:
        mechanism = mechanism_from_dict({**spec, "labels": labels})
    except ValueError as error:
        raise InputError(_field_of(error, set_by), str(error)) from None
    if mechanism.is_identity:
        raise InputError(
            set_by,
            "this design always sends the true answer and protects nothing; ask the question directly instead",
        )
    return mechanism


def planning_figures(mechanism: Mechanism, n: int, margin: float) -> dict[str, Any]:
    """Expected margin at ``n`` respondents, respondents for ``margin``, design effect (worst case, 95%)."""
    return {
        "margin_of_error": margin_of_error(mechanism, n, PLANNING_SHARE, PLANNING_LEVEL),
        "respondents_needed": sample_size(mechanism, margin, PLANNING_SHARE, PLANNING_LEVEL),
        "design_effect": design_effect(mechanism, PLANNING_SHARE),
    }


# -- words for the numbers ---------------------------------------------------------------------------


def points_text(margin: float) -> str:
    """±6.2 percentage points."""
    return f"±{100 * margin:.1f} percentage points"


def count_text(n: int) -> str:
    return f"{n:,}"


def times_text(x: float) -> str:
    """4.0× (how many times the respondents of asking directly)."""
    return "∞" if math.isinf(x) else f"{x:.1f}×"


def probability_text(p: float) -> str:
    """0.5, 0.4754, 0.9999: four decimals at most, trailing zeros dropped."""
    return f"{p:.4f}".rstrip("0").rstrip(".") if p not in (0.0, 1.0) else f"{p:.0f}"


# -- the preview -------------------------------------------------------------------------------------


def _whole(field: str, value: Any, default: int, low: int, high: int, what: str) -> int:
    if _blank(value):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number != int(number) or not low <= number <= high:
        raise InputError(field, f"{what} must be a whole number from {low:,} to {high:,}, got {value!r}")
    return int(number)


def _share(field: str, value: Any, default: float) -> float:
    if _blank(value):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not 0.0 < number < 1.0:
        raise InputError(field, f"the target margin must be between 0 and 1, got {value!r}")
    return number


def _flag(value: Any) -> bool:
    return str(value or "").strip().lower() in ("1", "true", "on", "y", "yes")


def preview(params: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the builder shows beside a question's privacy inputs, as a JSON-ready dict.

    ``params``: ``design``, ``kind`` (``yes_no`` or ``choice``, optional), ``k`` (options),
    exactly one of ``epsilon`` and ``truth_probability``, ``yes_probability`` (coin flip),
    ``n`` (expected respondents), ``margin`` (target), ``allow_one_sided``. Raises
    :class:`InputError` for input that describes no valid design.
    """
    design = str(params.get("design") or "")
    if design not in ("coin_flip", "warner", "grr"):
        raise InputError("design", f"design must be one of coin_flip, warner, grr, got {design!r}")
    kind = str(params.get("kind") or ("choice" if design == "grr" else "yes_no"))
    if kind not in ("yes_no", "choice") or design not in BUILDER_DESIGNS[kind]:
        raise InputError("design", f"a {kind} question cannot use the design {design!r}")
    k = 2 if kind == "yes_no" else _whole("k", params.get("k"), 2, 0, MAX_OPTIONS, "the number of options")
    if k < 2:
        raise InputError("k", "a choice question needs at least 2 options: type them one per line")
    has_eps, has_p = not _blank(params.get("epsilon")), not _blank(params.get("truth_probability"))
    if has_eps == has_p:
        raise InputError("epsilon", "give exactly one of epsilon and truth_probability")
    set_by = "epsilon" if has_eps else "truth_probability"
    n = _whole("n", params.get("n"), DEFAULT_RESPONDENTS, 1, 100_000_000, "n")
    margin = _share("margin", params.get("margin"), DEFAULT_MARGIN)
    allowed = _flag(params.get("allow_one_sided"))
    privacy = privacy_settings(
        design,
        set_by=set_by,
        epsilon=params.get("epsilon"),
        truth_probability=params.get("truth_probability"),
        yes_probability=params.get("yes_probability"),
        allow_one_sided=allowed,
    )
    mechanism = mechanism_for(privacy, labels_for(kind, k), set_by)
    return describe(mechanism, set_by=set_by, n=n, margin=margin, allow_one_sided=allowed)


def describe(
    mechanism: Mechanism, *, set_by: str = "epsilon", n: int, margin: float, allow_one_sided: bool = False
) -> dict[str, Any]:
    """The preview of a built mechanism: ε, the derived parameter, words, and planning figures."""
    eps = mechanism.epsilon
    infinite = math.isinf(eps)
    p = mechanism.truth_probability
    if set_by == "epsilon":
        derived = {"name": "truth_probability", "value": p, "text": f"→ truth probability {probability_text(p)}"}
    else:
        derived = {"name": "epsilon", "value": None if infinite else eps, "text": f"→ ε = {epsilon_text(eps)}"}
    figures = planning_figures(mechanism, n, margin)
    one_sided = mechanism.one_sided
    return {
        "ok": True,
        "design": mechanism.design,
        "design_name": DESIGN_NAMES.get(mechanism.design, mechanism.design),
        "k": mechanism.k,
        "epsilon": None if infinite else eps,
        "epsilon_infinite": infinite,
        "epsilon_text": epsilon_text(eps),
        "truth_probability": p,
        "yes_probability": getattr(mechanism, "yes_probability", None),
        "set_by": set_by,
        "derived": derived,
        "deniability": deniability_sentence(mechanism),
        "description": describe_design(mechanism),
        "n": n,
        "margin": margin,
        **figures,
        "margin_text": points_text(figures["margin_of_error"]),
        "respondents_needed_text": count_text(figures["respondents_needed"]),
        "design_effect_text": times_text(figures["design_effect"]),
        "one_sided": one_sided,
        "one_sided_allowed": allow_one_sided,
        "one_sided_warning": ONE_SIDED_WARNING if one_sided else None,
    }


def error_dict(error: InputError) -> dict[str, Any]:
    return {"ok": False, "field": error.field, "error": error.message}
