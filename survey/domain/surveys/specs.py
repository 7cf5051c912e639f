"""The one way a survey comes into being: from a spec, a JSON document.

The CLI import, the demo, the web builder, the spec import page and duplicating a survey all call
:func:`create_survey_from_spec` (the builder one question at a time, through
:func:`question_from_spec`), so a survey can only exist in a shape this module validated. A spec
with any error is refused whole, with a :class:`~survey.domain.errors.DomainError` whose path and
words name the question and the field, and nothing is written.

What each design takes, and which question kinds it serves, is the registry's
(:data:`survey.privacy.designs.DESIGNS`); the rules for texts, names and numbers are
:mod:`survey.domain.validation`'s.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from survey.domain import validation
from survey.domain.errors import DomainError
from survey.domain.messages import message
from survey.domain.models import ACCESS_MODES, SPEC_STATUSES, Design, Option, Question, Survey, User
from survey.domain.surveys import content_translations
from survey.domain.surveys.arms import check_groups, parse_arm
from survey.domain.surveys.kinds import FIXED, KINDS, LISTED, Kind, kind_of
from survey.domain.surveys.planning import (
    EPSILON_CAP_RULE,
    MAX_RESPONDENTS,
    TARGET_MARGIN_RULE,
    epsilon_cap_ok,
    target_margin_ok,
)
from survey.domain.validation import TEXT_LIMITS, Place
from survey.privacy import Mechanism
from survey.privacy.designs import DESIGNS, designs_for
from survey.privacy.mechanisms import ParameterError
from survey.privacy.number_bins import check_edges
from survey.privacy.physical import physical_procedure

SURVEY_FIELDS = {
    "title",
    "slug",
    "introduction",
    "closing_message",
    "run_by",
    "contact",
    "ethics_statement",
    "status",
    "questions",
    "epsilon_cap",
    "expected_respondents",
    "target_margin",
    "access",
    "auto_close",
    "shared_devices",
    "translations",
}
QUESTION_FIELDS = {
    "key",
    "kind",
    "text",
    "help_text",
    "required",
    "options",
    "privacy",
    "simulated_truth",
    "minimum",
    "maximum",
    "bins",
    "decline",
    "arm",
}
#: The widest range a number question may have (the answers table holds 32-bit integers).
NUMBER_LIMIT = 1_000_000_000
#: Microdata columns that precede the question columns (survey.domain.results.microdata.MICRODATA_FIXED_COLUMNS).
RESERVED_KEYS = frozenset({"submission", "submitted_on"})
MAX_QUESTIONS = 200
MAX_OPTIONS = 50
YES_NO_LABELS = list(kind_of("yes_no").labels)
SURVEY = Place((), message("place.survey"))
#: A question's privacy object on its own (the builder's preview): paths from "privacy", no words.
ALONE = Place()
#: Flags the spec's privacy object may hold besides the design's own parameters.
PRIVACY_FLAGS = {"design", "allow_one_sided", "own_coin"}


def _unknown(fields: Mapping[str, Any], allowed: set[str] | frozenset[str], place: Place, *within: str) -> None:
    extra = sorted(set(fields) - allowed, key=str)
    if extra:
        error = place.error("spec.unknown_field", *within, field=extra[0], allowed=", ".join(sorted(allowed)))
        error.path = (*error.path, extra[0])
        raise error


def question_place(index: int, key: Any = None) -> Place:
    """Where question ``index`` (from 0) of a spec sits: its path, and "question 2 ('q2')" in words."""
    if isinstance(key, str):
        return Place(("questions", index), message("place.question_key", number=index + 1, key=key))
    return Place(("questions", index), message("place.question", number=index + 1))


def design_mechanism(
    kind: str, labels: list[str], privacy: Any, place: Place = ALONE, bounds: tuple[int, int] | None = None
) -> Mechanism:
    """The mechanism a question's privacy object describes, refused as the spec refuses it, except for
    the explicit consent a one-sided design needs (:func:`build_mechanism` adds that). The builder's
    live preview calls this too, so what it shows and what saving does cannot disagree: the same
    message, at the same path below ``place``. A randomized number gives its range as ``bounds``
    (its design is then a design of numbers, built on that range)."""
    if not isinstance(privacy, Mapping):
        raise place.error("spec.privacy_missing", "privacy", kind=kind)
    design = DESIGNS.get(privacy.get("design")) if isinstance(privacy.get("design"), str) else None
    if design is None or kind not in design.kinds:
        allowed = ", ".join(d.id for d in designs_for(kind))
        raise place.error("spec.design_unknown", "privacy", "design", allowed=allowed, design=privacy.get("design"))
    _unknown(privacy, design.spec_fields | PRIVACY_FLAGS, place, "privacy")
    required = [p.name for p in design.others]
    if design.epsilon_in_spec:
        if ("epsilon" in privacy) == (design.level.name in privacy):
            raise place.error("spec.level_twice", "privacy", level=design.level.name)
    else:
        required.append(design.level.name)
    for name in sorted(required):
        if name not in privacy:
            raise place.error("spec.parameter_missing", "privacy", name)
    for name in sorted(design.spec_fields & set(privacy)):
        value = privacy[name]
        parameter = design.parameter(name)
        if parameter is not None and parameter.text:
            if not isinstance(value, str) or not value.strip():
                raise place.error("spec.not_text", "privacy", name, value=value)
            continue
        if parameter is not None and parameter.per_option:
            if not isinstance(value, list) or len(value) != len(labels):
                raise place.error("spec.probabilities_count", "privacy", name, count=len(labels))
            for i, item in enumerate(value):
                if not validation.is_number(item):
                    raise place.error("spec.not_number", "privacy", name, i, value=item)
        elif not validation.is_number(value):
            raise place.error("spec.not_number", "privacy", name, value=value)
    try:
        mechanism = design.mechanism(
            {k: v for k, v in privacy.items() if k not in PRIVACY_FLAGS}, labels, bounds=bounds
        )
    except ParameterError as error:
        index = () if error.index is None else (error.index,)
        raise place.error("design.invalid", "privacy", error.parameter, *index, reason=str(error)) from None
    except ValueError as error:  # about the design as a whole (a singular matrix, ...)
        raise place.error("design.invalid", "privacy", reason=str(error)) from None
    if getattr(mechanism, "reveals_everything", False):
        raise place.error("spec.reveals_everything", "privacy")
    return mechanism


def build_mechanism(
    kind: str, labels: list[str], privacy: Any, place: Place = ALONE, bounds: tuple[int, int] | None = None
) -> Mechanism:
    """The mechanism of a question's privacy object, with the consent an ε = ∞ design needs."""
    mechanism = design_mechanism(kind, labels, privacy, place, bounds)
    if math.isinf(mechanism.epsilon) and privacy.get("allow_one_sided") is not True:
        raise place.error("spec.one_sided", "privacy", "allow_one_sided")
    return mechanism


def question_from_spec(raw: Any, index: int, seen_keys: set[str]) -> Question:
    """One validated question, not yet added to any survey; ``seen_keys`` are the keys taken so far
    (the key is added to them). The spec import and the builder both make questions here."""
    place = question_place(index)
    if not isinstance(raw, Mapping):
        raise place.error("spec.not_object")
    place = question_place(index, raw.get("key"))
    _unknown(raw, QUESTION_FIELDS, place)
    key = raw.get("key", f"q{index + 1}")
    if not validation.is_key(key):
        raise place.error(
            "spec.key_malformed",
            "key",
        )
    if key in RESERVED_KEYS:
        raise place.error("spec.key_reserved", "key", key=key)
    if key in seen_keys:
        raise place.error("spec.key_repeated", "key", key=key)
    seen_keys.add(key)
    kind = raw.get("kind")
    if kind not in KINDS:
        raise place.error("spec.kind_unknown", "kind", kinds=", ".join(KINDS), kind=kind)
    entry = kind_of(kind)
    text = validation.text(raw.get("text"), place, "text", limit=TEXT_LIMITS["text"])
    help_text = validation.text(
        raw.get("help_text"), place, "help_text", limit=TEXT_LIMITS["help_text"], required=False
    )
    required = raw.get("required", True)
    if not isinstance(required, bool):
        raise place.error("spec.not_boolean", "required")

    decline = raw.get("decline", False)
    if not isinstance(decline, bool):
        raise place.error("spec.not_boolean", "decline")
    if decline and not entry.randomized:
        raise place.error("spec.decline_not_randomized", "decline", kind=kind)

    arm = parse_arm(raw.get("arm"), place)

    if entry.ranged:
        question = _ranged_question(raw, place, index, entry, key, text, help_text, required)
        question.decline = decline
        question.arm_group, question.arm_share = arm or (None, None)
        return question
    for field in ("minimum", "maximum", "bins"):
        if field in raw:
            raise place.error("spec.range_not_number", field)
    options = raw.get("options")
    if entry.options == FIXED:
        if options is not None and options != list(entry.labels):
            raise place.error("spec.options_fixed", "options", kind=kind, labels=" and ".join(entry.labels))
        labels = list(entry.labels)
    else:
        if not isinstance(options, list) or not 2 <= len(options) <= MAX_OPTIONS:
            raise place.error("spec.options_count", "options", kind=kind, most=MAX_OPTIONS)
        labels = [validation.text(o, place, "options", i, limit=TEXT_LIMITS["option"]) for i, o in enumerate(options)]
        if len(set(labels)) != len(labels):
            raise place.error("spec.options_repeated", "options")

    question = Question(
        position=index,
        key=key,
        kind=kind,
        text=text,
        help_text=help_text,
        required=required,
        decline=decline,
        own_coin=False,
        options=[Option(code=code, label=label) for code, label in enumerate(labels)],
    )
    question.arm_group, question.arm_share = arm or (None, None)
    if not entry.randomized:
        if raw.get("privacy") is not None:
            raise place.error("spec.privacy_not_randomized", "privacy", kind=kind)
    else:
        privacy = raw.get("privacy")
        mechanism = build_mechanism(kind, labels, privacy, place)
        question.design = Design.from_mechanism(mechanism, dict(privacy))
        question.own_coin = _own_coin(privacy, mechanism, place)

    truth = raw.get("simulated_truth")
    if truth is not None:
        valid = (
            isinstance(truth, list)
            and len(truth) == len(labels)
            and all(validation.is_number(x) and 0 <= x <= 1 for x in truth)
            and abs(sum(truth) - 1) < 1e-9
        )
        if not valid:
            raise place.error("spec.simulated_truth_invalid", "simulated_truth")
        question.simulated_truth = [float(x) for x in truth]
    return question


#: The fields a number question has none of, and the error each one is refused with (a randomized
#: number has privacy settings: :data:`NOT_FOR_RANDOMIZED_NUMBERS`).
NOT_FOR_NUMBERS = {
    "options": "spec.number_has_no_options",
    "privacy": "spec.number_has_no_privacy",
    "simulated_truth": "spec.number_has_no_simulated_truth",
}
NOT_FOR_RANDOMIZED_NUMBERS = {k: v for k, v in NOT_FOR_NUMBERS.items() if k != "privacy"}


def number_range(raw: Mapping[str, Any], place: Place = ALONE, *, decimal: bool = False) -> tuple[float, float]:
    """A ranged question's ``minimum`` and ``maximum``: whole numbers within ±NUMBER_LIMIT (or, with
    ``decimal``, for a randomized number whose answer travels as a report code, any numbers there),
    the maximum above the minimum (the builder's live preview checks a range with this too)."""
    if "minimum" not in raw or "maximum" not in raw:
        raise place.error("spec.range_missing", "minimum" if "minimum" not in raw else "maximum")
    if decimal:
        low, high = (_range_end(raw[name], place, name) for name in ("minimum", "maximum"))
    else:
        low = validation.whole_number(raw["minimum"], place, "minimum", low=-NUMBER_LIMIT, high=NUMBER_LIMIT)
        high = validation.whole_number(raw["maximum"], place, "maximum", low=-NUMBER_LIMIT, high=NUMBER_LIMIT)
    if high <= low:
        raise place.error("spec.range_reversed", "maximum", low=low)
    return low, high


def _range_end(value: Any, place: Place, name: str) -> float:
    """A decimal range end: a finite number within ±NUMBER_LIMIT, whole ones kept whole."""
    if not validation.is_number(value) or not math.isfinite(value) or not -NUMBER_LIMIT <= value <= NUMBER_LIMIT:
        raise place.error("spec.range_end_invalid", name, most=NUMBER_LIMIT)
    return int(value) if float(value).is_integer() else float(value)


def number_bins(raw: Any, low: float, high: float, place: Place = ALONE) -> list[float] | None:
    """A number question's ``bins``: its edges, numbers strictly inside the range and increasing
    (:func:`survey.privacy.number_bins.check_edges`), or None where it has none."""
    if raw is None or raw == []:
        return None
    if not isinstance(raw, list):
        raise place.error("spec.bins_invalid", "bins", reason="must be a list of numbers")
    try:
        edges = check_edges(raw, low, high)
    except ValueError as e:
        raise place.error("spec.bins_invalid", "bins", reason=str(e)) from None
    return [int(e) if e.is_integer() else e for e in edges]


def _own_coin(privacy: Mapping[str, Any], mechanism: Mechanism, place: Place) -> bool:
    """Whether the respondent randomizes by hand (``"own_coin": true``), which only a forced response
    whose chances two coins or a die can make allows (:func:`survey.privacy.physical.physical_procedure`)."""
    own = privacy.get("own_coin", False)
    if not isinstance(own, bool):
        raise place.error("spec.not_boolean", "privacy", "own_coin")
    if own and (DESIGNS[mechanism.design].combined or physical_procedure(mechanism) is None):
        raise place.error("spec.own_coin_impossible", "privacy", "own_coin", design=mechanism.design)
    return own


def _ranged_question(
    raw: Mapping[str, Any], place: Place, index: int, kind: Kind, key: str, text: str, help_text: str, required: bool
) -> Question:
    """A question answered by a number from ``minimum`` to ``maximum``: asked directly (a whole
    number), or randomized in the browser by a design of numbers on that range (its privacy object
    names the design and its ε)."""
    refused = NOT_FOR_RANDOMIZED_NUMBERS if kind.randomized else NOT_FOR_NUMBERS
    for field, code in refused.items():
        if raw.get(field) is not None:
            raise place.error(code, field)
    low, high = number_range(raw, place, decimal=kind.randomized)
    question = Question(
        position=index,
        key=key,
        kind=kind.id,
        text=text,
        help_text=help_text,
        required=required,
        minimum=low,
        maximum=high,
        bins=number_bins(raw.get("bins"), low, high, place),
        own_coin=False,
        options=[],
    )
    if kind.randomized:
        privacy = raw.get("privacy")
        mechanism = build_mechanism(kind.id, [], privacy, place, bounds=(low, high))
        if isinstance(privacy, Mapping) and privacy.get("own_coin"):
            raise place.error("spec.own_coin_impossible", "privacy", "own_coin", design=mechanism.design)
        question.design = Design.from_mechanism(mechanism, dict(privacy))
    return question


def _slug(session: Session, title: str) -> str:
    """An address made from the title: the title itself where it is free, otherwise with a random
    suffix (the organizer may choose another while the survey is a draft)."""
    base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:50].strip("-") or "survey"
    if validation.is_slug(base) and session.scalar(select(Survey.id).where(Survey.slug == base)) is None:
        return base
    while True:
        slug = f"{base}-{secrets.token_hex(3)}"
        if session.scalar(select(Survey.id).where(Survey.slug == slug)) is None:
            return slug


#: The survey's own texts, besides its title: all optional, each with its limit (TEXT_LIMITS).
#: ``run_by``, ``contact`` and ``ethics_statement`` say who is asking, on every respondent page.
OPTIONAL_TEXTS = ("introduction", "closing_message", "run_by", "contact", "ethics_statement")


def survey_texts(spec: Mapping[str, Any]) -> dict[str, str]:
    """The survey's own texts, validated: the title (required), the introduction, the closing message
    and who is asking (who runs it, a contact, the consent or ethics statement)."""
    texts = {"title": validation.text(spec.get("title"), SURVEY, "title", limit=TEXT_LIMITS["title"])}
    for name in OPTIONAL_TEXTS:
        texts[name] = validation.text(spec.get(name), SURVEY, name, limit=TEXT_LIMITS[name], required=False)
    return texts


def create_survey_from_spec(session: Session, spec: Any, owner: User | None = None) -> Survey:
    """Validate ``spec`` whole, then add the survey with its questions, options and frozen designs.

    The caller commits. Raises :class:`DomainError` and adds nothing if any part is invalid.
    """
    if not isinstance(spec, Mapping):
        raise DomainError("spec.not_survey")
    _unknown(spec, SURVEY_FIELDS, SURVEY)
    texts = survey_texts(spec)
    status = spec.get("status", "open")
    if status not in SPEC_STATUSES:
        raise SURVEY.error("spec.status_unknown", "status", statuses=", ".join(SPEC_STATUSES))
    raw_questions = spec.get("questions", [] if status == "draft" else None)
    least = 0 if status == "draft" else 1
    if not isinstance(raw_questions, list) or not least <= len(raw_questions) <= MAX_QUESTIONS:
        raise SURVEY.error("spec.questions_count", "questions", least=least, most=MAX_QUESTIONS)
    planning = parse_planning(spec)
    seen: set[str] = set()
    questions = [question_from_spec(raw, i, seen) for i, raw in enumerate(raw_questions)]
    check_groups(questions, question_place)
    slug = spec.get("slug")
    if slug is not None:
        if not validation.is_slug(slug):
            raise SURVEY.error("spec.slug_malformed", "slug")
        if session.scalar(select(Survey.id).where(Survey.slug == slug)) is not None:
            raise SURVEY.error("spec.slug_taken", "slug", slug=slug)
    else:
        slug = _slug(session, texts["title"])
    survey = Survey(
        slug=slug,
        **texts,
        status=status,
        owner=owner,
        questions=questions,
        is_simulated=any(q.simulated_truth is not None for q in questions),
        **planning,
    )
    # the texts in the survey's other languages, checked against the texts above
    survey.translations = content_translations.rows_from_spec(spec.get("translations"), survey)
    session.add(survey)
    return survey


def parse_planning(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The survey-level planning and access fields of a spec, validated (absent ones are left out)."""
    values: dict[str, Any] = {}
    cap = spec.get("epsilon_cap")
    if cap is not None:
        values["epsilon_cap"] = validation.number(cap, SURVEY, "epsilon_cap", rule=EPSILON_CAP_RULE, ok=epsilon_cap_ok)
    if "expected_respondents" in spec:
        values["expected_respondents"] = validation.whole_number(
            spec["expected_respondents"], SURVEY, "expected_respondents", low=1, high=MAX_RESPONDENTS
        )
    if "target_margin" in spec:
        values["target_margin"] = validation.number(
            spec["target_margin"], SURVEY, "target_margin", rule=TARGET_MARGIN_RULE, ok=target_margin_ok
        )
    if "access" in spec:
        if spec["access"] not in ACCESS_MODES:
            raise SURVEY.error("spec.access_unknown", "access", modes=", ".join(ACCESS_MODES))
        values["access"] = spec["access"]
    for flag in ("auto_close", "shared_devices"):
        if flag in spec:
            if not isinstance(spec[flag], bool):
                raise SURVEY.error("spec.not_boolean", flag)
            values[flag] = spec[flag]
    return values


def question_to_spec(question: Question) -> dict[str, Any]:
    """The spec of one question: what :func:`question_from_spec` re-creates it from."""
    item: dict[str, Any] = {"key": question.key, "kind": question.kind, "text": question.text}
    if question.help_text:
        item["help_text"] = question.help_text
    item["required"] = question.required
    if question.decline:
        item["decline"] = True
    if question.arm_group is not None:
        item["arm"] = {"group": question.arm_group, "share": question.arm_share}
    entry = question.kind_entry
    if entry.ranged:
        item["minimum"], item["maximum"] = question.minimum, question.maximum
        if question.bins:
            item["bins"] = list(question.bins)
    elif entry.options == LISTED:
        item["options"] = question.labels
    if question.design is not None:
        # as the organizer set it: by ε where they gave ε, otherwise by the design's parameters
        item["privacy"] = {
            "design": question.design.mechanism_name,
            **(question.design.given or question.design.parameters),
        }
        if question.design.epsilon is None:
            item["privacy"]["allow_one_sided"] = True
        if question.own_coin:
            item["privacy"]["own_coin"] = True
    return item


def survey_to_spec(survey: Survey) -> dict[str, Any]:
    """The spec that would re-create ``survey`` (same questions, same designs)."""
    spec: dict[str, Any] = {
        "title": survey.title,
        "introduction": survey.introduction,
        "closing_message": survey.closing_message,
        "run_by": survey.run_by,
        "contact": survey.contact,
        "ethics_statement": survey.ethics_statement,
        "expected_respondents": survey.expected_respondents,
        "target_margin": survey.target_margin,
        "access": survey.access,
        "auto_close": survey.auto_close,
        "shared_devices": survey.shared_devices,
        "questions": [question_to_spec(q) for q in survey.questions],
    }
    if survey.epsilon_cap is not None:
        spec["epsilon_cap"] = survey.epsilon_cap
    translations = content_translations.to_spec(survey)
    if translations:
        spec["translations"] = translations
    return spec
