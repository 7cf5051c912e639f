"""What a privacy setting means, computed before it is saved: the builder's live preview.

The organizer picks a design and types ε *or* the parameter the registry says may stand for it (the
truth probability, the sensitive-question probability, the forcing probabilities), plus the design's
other parameters. :func:`privacy_settings` turns what was typed into the spec's ``privacy`` object
with the registry's :meth:`~survey.privacy.designs.Design.from_level`; :func:`preview` then checks it
with :func:`survey.domain.surveys.specs.design_mechanism`, the very function that saving goes through, and
reports what the design costs and protects. So the numbers the page shows while typing are the
numbers the saved design will have, a design saving would refuse is refused here with the same
message at the same path, and the browser needs no privacy formula of its own.

The inputs' names (``design``, ``kind``, ``k``, ``epsilon``, each parameter's
:attr:`~survey.privacy.designs.Parameter.field`, ``n``, ``margin``, ``allow_one_sided``) are those of
the builder's form and of ``GET /api/privacy/preview``. Errors are
:class:`~survey.domain.errors.DomainError` with the path the spec would give the same problem inside a
question (``("privacy", "p")``, ``("privacy",)``, ``("options",)``); :func:`input_for` names the input
a path belongs to.

Pure functions: the privacy core, the registry and the spec's checks; no Flask, no database.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from survey.domain import validation
from survey.domain.errors import DomainError, Path
from survey.domain.messages import message
from survey.domain.surveys.budget import margin_in_units, number_margins, number_needed, planning_figures
from survey.domain.surveys.kinds import FIXED, LISTED, builder_designs, find_kind, kind_of
from survey.domain.surveys.planning import (
    DEFAULT_RESPONDENTS,
    DEFAULT_TARGET_MARGIN,
    MAX_RESPONDENTS,
    TARGET_MARGIN_RULE,
    target_margin_ok,
)
from survey.domain.surveys.specs import MAX_OPTIONS, design_mechanism, number_range
from survey.domain.surveys.wording import deniability_sentence, describe_design, epsilon_text
from survey.domain.validation import Place, loose_number
from survey.privacy import Mechanism
from survey.privacy.designs import DESIGNS, EPSILON, KINDS, Design, design_name
from survey.privacy.mechanisms import ParameterError

ONE_SIDED_WARNING = (
    "This design has ε = ∞: it protects only one side. Some of what a respondent's browser sends can only come "
    "from one true answer, so those reports reveal the answer (for example, a forced-“yes” design never sends "
    "“no” for a true “yes”, so every “no” is a true “no”). Only the other answer stays deniable."
)
HERE = Place()
#: Inputs that are no design parameter, by the path their errors carry.
OWN_INPUTS: dict[Path, str] = {
    ("privacy", "design"): "design",
    ("kind",): "kind",
    ("options",): "k",
    ("minimum",): "minimum",
    ("maximum",): "maximum",
}


def default_kind(design: Design) -> str:
    """The kind a preview assumes when none is given: a choice where the design serves one."""
    return next((kind for kind in design.kinds if kind_of(kind).options == LISTED), design.kinds[0])


def input_for(path: Path, design: Design | None, set_by: str = EPSILON.name) -> str | None:
    """The input (form field, preview parameter) an error at ``path`` belongs to.

    ``("privacy", <parameter>)`` is the parameter's input (Warner's ``p`` is typed as the truth
    probability); ``("privacy",)``, a problem with the design as a whole (it reveals everything, it
    needs exactly one of two parameters), is the input the level was set by.
    """
    if path in OWN_INPUTS:
        return OWN_INPUTS[path]
    if path[:1] == ("privacy",):
        if len(path) == 1:
            return set_by
        name = path[1]
        if name == "allow_one_sided":
            return "allow_one_sided"
        parameter = design.parameter(str(name)) if design is not None else None
        return parameter.field if parameter is not None else str(name)
    return str(path[0]) if path else None


def labels_for(kind: str, k: int) -> list[str]:
    """Labels to build a preview mechanism with: the kind's own (yes/no), or neutral option names."""
    entry = find_kind(kind)
    return entry.neutral_labels(k) if entry is not None else [f"option {i + 1}" for i in range(k)]


def _values(typed: Any, k: int, place: Place, *field: str, name: str, what: str) -> list[float]:
    """One number per option, typed as a list ("0.1, 0.1, 0.1"); also a list of numbers as is."""
    if isinstance(typed, list):
        return [validation.finite_number(x, place, *field, i, name=name, what=what) for i, x in enumerate(typed)]
    if validation.is_blank(typed):
        raise place.error("number.blank", *field, what=what)
    parts = [p for p in re.split(r"[\s,;]+", str(typed).strip()) if p]
    if len(parts) != k:
        raise place.error("preview.shares_count", *field, k=k, got=len(parts))
    return [validation.finite_number(x, place, *field, i, name=name, what=what) for i, x in enumerate(parts)]


def _typed(design: Design, name: str, typed: Any, k: int) -> Any:
    """What was typed for the spec parameter ``name`` of ``design`` (or ε), as a number or list."""
    parameter = design.parameter(name)
    assert parameter is not None
    if parameter.text:  # words (the spec refuses blank ones, at this parameter)
        return "" if typed is None else str(typed).strip()
    what = parameter.label[:1].lower() + parameter.label[1:]
    if parameter.per_option:
        return _values(typed, k, HERE, "privacy", name, name=parameter.field, what=what)
    return validation.finite_number(typed, HERE, "privacy", name, name=parameter.field, what=what)


def privacy_settings(
    design: Design,
    *,
    set_by: str,
    level: Any,
    others: Mapping[str, Any],
    k: int,
    allow_one_sided: bool = False,
) -> dict[str, Any]:
    """The spec's ``privacy`` object for what the organizer typed: ``level`` set by ε
    (``set_by="epsilon"``) or by the design's level input, ``others`` by input name (blank ones take
    their default, which a parameter without one has not). Raises :class:`DomainError` at the path of
    the parameter at fault."""
    if set_by not in (EPSILON.name, design.level.field):
        raise HERE.error("preview.level_unknown", "privacy", level=design.level.field, set_by=set_by)
    level_name = EPSILON.name if set_by == EPSILON.name else design.level.name
    value = _typed(design, level_name, level, k)
    given: dict[str, Any] = {}
    for parameter in design.others:
        typed = others.get(parameter.field)
        if not validation.is_blank(typed) or parameter.default is None:
            given[parameter.name] = _typed(design, parameter.name, typed, k)
    try:
        privacy = design.from_level(level_name, value, given, k)
    except ParameterError as error:
        index = () if error.index is None else (error.index,)
        raise HERE.error("design.invalid", "privacy", error.parameter, *index, reason=str(error)) from None
    if allow_one_sided:
        privacy["allow_one_sided"] = True
    return privacy


def _whole(value: Any, default: int, place: Place, *field: str, low: int, high: int, what: str) -> int:
    if validation.is_blank(value):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number != int(number) or not low <= number <= high:
        raise place.error("preview.whole_number_out_of_range", *field, what=what, low=low, high=high, value=value)
    return int(number)


def _margin(value: Any) -> float:
    if validation.is_blank(value):
        return DEFAULT_TARGET_MARGIN
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not target_margin_ok(number):  # the spec's own bound: what is previewed can be saved
        raise HERE.error("preview.margin_out_of_range", "margin", rule=TARGET_MARGIN_RULE, value=value)
    return number


def _flag(value: Any) -> bool:
    return str(value or "").strip().lower() in ("1", "true", "on", "y", "yes")


def chosen_design(params: Mapping[str, Any]) -> Design:
    """The design ``params`` names, or a DomainError at ``("privacy", "design")``."""
    offered = builder_designs()
    design = offered.get(str(params.get("design") or ""))
    if design is None:
        raise HERE.error(
            "preview.design_unknown", "privacy", "design", designs=", ".join(offered), design=params.get("design")
        )
    return design


def chosen_set_by(params: Mapping[str, Any], design: Design) -> str:
    """The input the level is set by: ``set_by`` when given (the builder says which one the organizer
    types into, so that a blank one is "type it" at that input, not a riddle about two inputs);
    otherwise the one of ε and the level input that is filled in, and exactly one must be."""
    level = design.level.field
    named = str(params.get("set_by") or "")
    if named:
        if named not in (EPSILON.name, level):
            raise HERE.error("preview.level_named_unknown", "privacy", level=level, named=named)
        return named
    has_eps, has_level = not validation.is_blank(params.get("epsilon")), not validation.is_blank(params.get(level))
    if has_eps == has_level:
        raise HERE.error("preview.level_twice", "privacy", "epsilon", level=level)
    return EPSILON.name if has_eps else level


def _as_float(typed: Any) -> float:
    try:
        return float(typed)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def plain_message(error: DomainError, design: Design | None, typed: Mapping[str, Any]) -> str:
    """The builder's words for ``error``: what the input at fault must hold, from the registry's
    :attr:`~survey.privacy.designs.Parameter.rule` ("ε (epsilon) must be a number greater than 0,
    for example 1 …"), instead of the core's precise message for a spec's reader ("epsilon must
    be a finite number greater than 0, got 0.0"). ``typed`` holds what was typed, by input name:
    a blank input is asked for. Errors about no single parameter keep their message."""
    path = error.path[2:] if error.path[:1] == ("questions",) else error.path
    if design is None or len(path) < 2 or path[0] != "privacy" or not isinstance(path[1], str):
        return error.message
    parameter = design.parameter(path[1])
    if parameter is None:
        return error.message
    if validation.is_blank(typed.get(parameter.field)):  # the registry's words for it inside a sentence
        return message("preview.parameter_blank", named=parameter.phrase or parameter.label, rule=parameter.rule)
    if parameter is EPSILON and EPSILON.contains(_as_float(typed.get(parameter.field))):
        return error.message  # an ε above 0 refused: too small for the design, which the message says
    return message("preview.parameter_rule", named=parameter.subject or parameter.label, rule=parameter.rule)


def preview(params: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the builder shows beside a question's privacy inputs, as a JSON-ready dict.

    ``params``: ``design``, ``kind`` (optional), ``k`` (options), exactly one of ``epsilon`` and the
    design's level input, its other parameters' inputs, ``n`` (expected respondents), ``margin``
    (target), ``allow_one_sided``. A randomized number (kind ``rr_number``) takes ``minimum`` and
    ``maximum`` instead of ``k``, ε alone, and ``n``: :func:`describe_number`. Raises
    :class:`DomainError` for input that describes no valid design (:func:`input_for` names the input).
    """
    design = chosen_design(params)
    kind = str(params.get("kind") or default_kind(design))
    if kind not in KINDS or kind not in design.kinds:
        raise HERE.error("preview.design_not_for_kind", "privacy", "design", kind=kind, design=design.id)
    entry = kind_of(kind)
    if entry.randomized_number:
        return _number_preview(params, design, kind)
    k = (
        len(entry.labels)
        if entry.options == FIXED
        else _whole(params.get("k"), 2, HERE, "options", low=0, high=MAX_OPTIONS, what="the number of options")
    )
    if k < 2:
        raise HERE.error("preview.too_few_options", "options")
    set_by = chosen_set_by(params, design)
    n = _whole(params.get("n"), DEFAULT_RESPONDENTS, HERE, "n", low=1, high=MAX_RESPONDENTS, what="n")
    margin = _margin(params.get("margin"))
    allowed = _flag(params.get("allow_one_sided"))
    privacy = privacy_settings(
        design,
        set_by=set_by,
        level=params.get(set_by),
        others={p.field: params.get(p.field) for p in design.others},
        k=k,
        allow_one_sided=allowed,
    )
    mechanism = design_mechanism(kind, labels_for(kind, k), privacy, HERE)
    return describe(mechanism, set_by=set_by, n=n, margin=margin, allow_one_sided=allowed)


def _number_preview(params: Mapping[str, Any], design: Design, kind: str) -> dict[str, Any]:
    """The preview of a randomized number: its range checked by the spec's rule
    (:func:`~survey.domain.surveys.specs.number_range`), its design built on that range at the ε
    typed, and its planned half-width at ``n`` answers."""
    low, high = number_range(
        {name: loose_number(params.get(name)) for name in ("minimum", "maximum")}, HERE, decimal=True
    )
    n = _whole(params.get("n"), DEFAULT_RESPONDENTS, HERE, "n", low=1, high=MAX_RESPONDENTS, what="n")
    privacy = privacy_settings(design, set_by=EPSILON.name, level=params.get(EPSILON.name), others={}, k=2)
    margin = _margin(params.get("margin"))
    mechanism = design_mechanism(kind, [], privacy, HERE, bounds=(low, high))
    return describe_number(mechanism, n=n, margin=margin)


def units_text(margin: float) -> str:
    """±4.37 (a mean's half-width, in the question's units, as the build page's plan shows it)."""
    return f"±{margin:.2f}"


def describe_number(mechanism: Any, *, n: int, margin: float = DEFAULT_TARGET_MARGIN) -> dict[str, Any]:
    """The preview of a built number mechanism: its ε, what it means for a respondent, and the
    planned half-width of the mean's 95% interval with ``n`` answers at the widest spread of the
    true numbers (:func:`survey.privacy.number_planning.number_margin`, in the question's units),
    beside asking the number directly, the answers needed for the target ``margin`` as a share of
    the range, and the design effect (the squared ratio of the half-widths). The figures are kept
    per design, ε, range and ``n`` or margin (:func:`~survey.domain.surveys.budget.number_margins`,
    :func:`~survey.domain.surveys.budget.number_needed`)."""
    eps = float(mechanism.epsilon)
    randomized, direct = number_margins(mechanism.design, eps, mechanism.low, mechanism.high, n)
    needed, direct_needed = number_needed(mechanism.design, eps, mechanism.low, mechanism.high, margin)
    units = margin_in_units(margin, mechanism.low, mechanism.high)
    effect = (randomized / direct) ** 2
    return {
        "ok": True,
        "result": "numbers",
        "design": mechanism.design,
        "design_name": design_name(mechanism.design),
        "minimum": mechanism.low,
        "maximum": mechanism.high,
        "epsilon": eps,
        "epsilon_infinite": False,
        "epsilon_text": epsilon_text(eps),
        "parameters": {EPSILON.name: eps},
        "set_by": EPSILON.name,
        # set by ε alone: nothing follows from it
        "derived": {"name": EPSILON.name, "value": eps, "text": "", "input": ""},
        "deniability": deniability_sentence(mechanism),
        "description": describe_design(mechanism),
        "n": n,
        "margin_in_units": randomized,
        "direct_margin_in_units": direct,
        "design_effect": effect,
        "margin_text": units_text(randomized),
        "direct_margin_text": units_text(direct),
        "margin": margin,
        "target_in_units": units,
        "respondents_needed": needed,
        "direct_respondents_needed": direct_needed,
        "respondents_needed_text": needed_for_units_text(needed, units, margin),
        "direct_respondents_needed_text": count_text(direct_needed),
        "design_effect_text": times_text(effect),
        "one_sided": False,
        "one_sided_allowed": False,
        "one_sided_warning": None,
    }


# -- words for the numbers ---------------------------------------------------------------------------


def points_text(margin: float) -> str:
    """±6.2 percentage points."""
    return f"±{100 * margin:.1f} percentage points"


def count_text(n: int) -> str:
    return f"{n:,}"


def target_units_text(units: float, margin: float) -> str:
    """(for ±3.50, 5% of its range): the survey's target margin as a number's, a share of its range
    (survey.domain.surveys.budget.margin_in_units); the build page's plan shows it too."""
    return f"(for {units_text(units)}, {100 * margin:g}% of its range)"


def needed_for_units_text(needed: int, units: float, margin: float) -> str:
    """2,041 (for ±3.50, 5% of its range): a number's answers needed for that target."""
    return f"{count_text(needed)} {target_units_text(units, margin)}"


def times_text(x: float) -> str:
    """4.0× (how many times the respondents of asking directly)."""
    return "∞" if math.isinf(x) else f"{x:.1f}×"


def probability_text(p: float) -> str:
    """0.5, 0.4754, 0.9999: four decimals at most, trailing zeros dropped."""
    return f"{p:.4f}".rstrip("0").rstrip(".") if p not in (0.0, 1.0) else f"{p:.0f}"


def input_text(value: Any) -> str:
    """A parameter as its input shows it: six significant digits, a list separated by commas."""
    if isinstance(value, (list, tuple)):
        return ", ".join(input_text(v) for v in value)
    return f"{value:.6g}"


def _derived(mechanism: Mechanism, set_by: str) -> dict[str, Any]:
    """The parameter that follows from the one typed: the level parameter from ε, or ε from it."""
    if set_by == EPSILON.name:
        design = DESIGNS.get(mechanism.design)
        parameter = design.level if design is not None else None
        name = parameter.name if parameter is not None else "truth_probability"
        value = mechanism.parameters.get(name, mechanism.truth_probability)
        label = parameter.label.lower() if parameter is not None else "truth probability"
        shown = ", ".join(probability_text(v) for v in value) if isinstance(value, list) else probability_text(value)
        field = parameter.field if parameter is not None else "truth_probability"
        return {"name": field, "value": value, "text": f"→ {label} {shown}", "input": input_text(value)}
    eps = mechanism.epsilon
    infinite = math.isinf(eps)
    design = DESIGNS.get(mechanism.design)
    source = ""
    if design is not None and design.level.name in mechanism.parameters:
        typed = mechanism.parameters[design.level.name]
        shown = ", ".join(probability_text(v) for v in typed) if isinstance(typed, list) else probability_text(typed)
        source = f"(from the {design.level.label.lower()} {shown})"
    return {
        "name": EPSILON.name,
        "value": None if infinite else eps,
        # ε itself is shown beside this: the words say what it follows from, not ε a second time
        "text": source or f"→ ε = {epsilon_text(eps)}",
        "input": "" if infinite else input_text(eps),
    }


def describe(
    mechanism: Mechanism, *, set_by: str = EPSILON.name, n: int, margin: float, allow_one_sided: bool = False
) -> dict[str, Any]:
    """The preview of a built mechanism: ε, the derived parameter, words, and planning figures."""
    eps = mechanism.epsilon
    infinite = math.isinf(eps)
    figures = planning_figures(mechanism, n, margin)
    one_sided = mechanism.one_sided
    return {
        "ok": True,
        "design": mechanism.design,
        "design_name": design_name(mechanism.design),
        "k": mechanism.k,
        "epsilon": None if infinite else eps,
        "epsilon_infinite": infinite,
        "epsilon_text": epsilon_text(eps),
        "truth_probability": mechanism.truth_probability,
        "yes_probability": getattr(mechanism, "yes_probability", None),
        "parameters": mechanism.parameters,
        "set_by": set_by,
        "derived": _derived(mechanism, set_by),
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


def error_json(error: DomainError, params: Mapping[str, Any], detail: str | None = None) -> dict[str, Any]:
    """A refused preview as JSON: the error (the precise words of the spec's checks), its status and
    path, the input it belongs to, and ``message``: what the builder shows, in plain words
    (:func:`plain_message`)."""
    design = DESIGNS.get(str(params.get("design") or ""))
    level = design.level.field if design is not None else "truth_probability"
    set_by = str(params.get("set_by") or "")
    if set_by not in (EPSILON.name, level):
        set_by = EPSILON.name if not validation.is_blank(params.get(EPSILON.name)) else level
    return {
        "ok": False,
        "field": input_for(error.path, design, set_by),
        "message": plain_message(error, design, params),
        **error.to_json(detail=detail),
    }
