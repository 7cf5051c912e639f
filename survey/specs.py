"""The one way a survey comes into being: from a spec, a JSON document.

The CLI import, the demo and (later) the web builder and the API all call
:func:`create_survey_from_spec`, so a survey can only exist in a shape this module validated. A spec
with any error is refused whole, with a message naming the question and the field, and nothing is
written.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from survey.privacy import Mechanism, mechanism_from_dict

from .models import ACCESS_MODES, KINDS, STATUSES, Design, Option, Question, Survey, User
from .text import text_problem

SURVEY_FIELDS = {
    "title",
    "slug",
    "introduction",
    "closing_message",
    "status",
    "questions",
    "epsilon_cap",
    "expected_respondents",
    "target_margin",
    "access",
}
QUESTION_FIELDS = {"key", "kind", "text", "help_text", "required", "options", "privacy", "simulated_truth"}
DESIGNS_BY_KIND = {
    "yes_no": ("coin_flip", "warner", "unrelated_question", "grr"),
    "choice": ("grr", "forced_response"),
}
PRIVACY_FIELDS = {
    "coin_flip": {"truth_probability", "yes_probability"},
    "unrelated_question": {"sensitive_probability", "unrelated_yes_rate"},
    "warner": {"p"},
    "grr": {"epsilon", "truth_probability"},
    "forced_response": {"forced"},
}
KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{2,79}$")
#: Microdata columns that precede the question columns (survey.exports.MICRODATA_FIXED_COLUMNS).
RESERVED_KEYS = frozenset({"submission", "submitted_on"})
MAX_QUESTIONS = 200
MAX_OPTIONS = 50


class SpecError(ValueError):
    """A survey spec that cannot be created; the message says where and why."""


def _text(value: Any, where: str, *, required: bool = True, limit: int = 10_000) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise SpecError(f"{where}: must be a non-empty text" if required else f"{where}: must be a text")
    if len(value) > limit:
        raise SpecError(f"{where}: is longer than {limit} characters")
    problem = text_problem(value)
    if problem:
        raise SpecError(f"{where}: {problem}")
    return value.strip()


def _unknown(fields: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(fields) - allowed)
    if extra:
        raise SpecError(f"{where}: unknown field {extra[0]!r} (allowed: {', '.join(sorted(allowed))})")


def build_mechanism(kind: str, labels: list[str], privacy: Any, where: str) -> Mechanism:
    """The mechanism a question's privacy settings describe, or a SpecError naming the field."""
    if not isinstance(privacy, Mapping):
        raise SpecError(f"{where}, field 'privacy': a {kind} question is randomized and needs privacy settings")
    design = privacy.get("design")
    allowed = DESIGNS_BY_KIND[kind]
    if design not in allowed:
        raise SpecError(f"{where}, field 'privacy.design': must be one of {', '.join(allowed)}, got {design!r}")
    _unknown(privacy, PRIVACY_FIELDS[design] | {"design", "allow_one_sided"}, f"{where}, field 'privacy'")
    if design == "grr" and ("epsilon" in privacy) == ("truth_probability" in privacy):
        raise SpecError(f"{where}, field 'privacy': give exactly one of 'epsilon' and 'truth_probability'")
    needed = PRIVACY_FIELDS[design] - {"epsilon", "truth_probability"} if design == "grr" else PRIVACY_FIELDS[design]
    for name in sorted(needed):
        if name not in privacy:
            raise SpecError(f"{where}, field 'privacy.{name}': is missing")
    for name, value in privacy.items():
        if name in ("design", "allow_one_sided", "forced"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{where}, field 'privacy.{name}': must be a number, got {value!r}")
    if design == "forced_response":
        forced = privacy["forced"]
        if not isinstance(forced, list) or len(forced) != len(labels):
            raise SpecError(f"{where}, field 'privacy.forced': needs one probability per option ({len(labels)})")
    try:
        mechanism = mechanism_from_dict({**privacy, "labels": labels})
    except ValueError as error:
        field = next((n for n in PRIVACY_FIELDS[design] if n in str(error)), None)
        at = f"field 'privacy.{field}'" if field else "field 'privacy'"
        raise SpecError(f"{where}, {at}: {error}") from None
    if mechanism.is_identity or bool(((mechanism.matrix == 0) | (mechanism.matrix == 1)).all()):
        raise SpecError(
            f"{where}, field 'privacy': this design always sends the true answer and protects nothing; "
            "ask the question with kind 'direct' instead"
        )
    if math.isinf(mechanism.epsilon) and privacy.get("allow_one_sided") is not True:
        raise SpecError(
            f"{where}, field 'privacy': this design has ε = ∞: some reports reveal the true answer, so only "
            "one answer is deniable. Set 'allow_one_sided': true to accept that explicitly"
        )
    return mechanism


def parse_question(raw: Any, index: int, seen_keys: set[str]) -> Question:
    """One validated question (not yet added to any survey); the builder uses it too."""
    return _question(raw, index, seen_keys)


def _question(raw: Any, index: int, seen_keys: set[str]) -> Question:
    where = f"question {index + 1}"
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: must be an object")
    if isinstance(raw.get("key"), str):
        where = f"question {index + 1} ({raw['key']!r})"
    _unknown(raw, QUESTION_FIELDS, where)
    key = raw.get("key", f"q{index + 1}")
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise SpecError(
            f"{where}, field 'key': must start with a lowercase letter and use only a-z, 0-9 and _ (up to 40)"
        )
    if key in RESERVED_KEYS:
        raise SpecError(f"{where}, field 'key': {key!r} is reserved for a column of the microdata export")
    if key in seen_keys:
        raise SpecError(f"{where}, field 'key': {key!r} is used by an earlier question")
    seen_keys.add(key)
    kind = raw.get("kind")
    if kind not in KINDS:
        raise SpecError(f"{where}, field 'kind': must be one of {', '.join(KINDS)}, got {kind!r}")
    text = _text(raw.get("text"), f"{where}, field 'text'", limit=2000)
    help_text = _text(raw.get("help_text"), f"{where}, field 'help_text'", required=False, limit=2000)
    required = raw.get("required", True)
    if not isinstance(required, bool):
        raise SpecError(f"{where}, field 'required': must be true or false")

    options = raw.get("options")
    if kind == "yes_no":
        if options is not None and options != ["yes", "no"]:
            raise SpecError(f"{where}, field 'options': a yes_no question has the options yes and no; leave it out")
        labels = ["yes", "no"]
    else:
        if not isinstance(options, list) or not 2 <= len(options) <= MAX_OPTIONS:
            raise SpecError(f"{where}, field 'options': a {kind} question needs a list of 2 to {MAX_OPTIONS} options")
        labels = [_text(o, f"{where}, field 'options[{i}]'", limit=200) for i, o in enumerate(options)]
        if len(set(labels)) != len(labels):
            raise SpecError(f"{where}, field 'options': options must be distinct")

    question = Question(
        position=index,
        key=key,
        kind=kind,
        text=text,
        help_text=help_text,
        required=required,
        options=[Option(code=code, label=label) for code, label in enumerate(labels)],
    )
    if kind == "direct":
        if raw.get("privacy") is not None:
            raise SpecError(f"{where}, field 'privacy': a direct question is asked plainly and has no privacy settings")
    else:
        question.design = Design.from_mechanism(build_mechanism(kind, labels, raw.get("privacy"), where))

    truth = raw.get("simulated_truth")
    if truth is not None:
        valid = (
            isinstance(truth, list)
            and len(truth) == len(labels)
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1 for x in truth)
            and abs(sum(truth) - 1) < 1e-9
        )
        if not valid:
            raise SpecError(f"{where}, field 'simulated_truth': needs one share per option, summing to 1")
        question.simulated_truth = [float(x) for x in truth]
    return question


def _slug(session: Session, title: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:50] or "survey"
    while True:
        slug = f"{base}-{secrets.token_hex(3)}"
        if session.scalar(select(Survey.id).where(Survey.slug == slug)) is None:
            return slug


def create_survey_from_spec(session: Session, spec: Any, owner: User | None = None) -> Survey:
    """Validate ``spec`` whole, then add the survey with its questions, options and frozen designs.

    The caller commits. Raises :class:`SpecError` and adds nothing if any part is invalid.
    """
    if not isinstance(spec, Mapping):
        raise SpecError("the spec must be a JSON object with a title and questions")
    _unknown(spec, SURVEY_FIELDS, "survey")
    title = _text(spec.get("title"), "survey, field 'title'", limit=200)
    introduction = _text(spec.get("introduction"), "survey, field 'introduction'", required=False)
    closing = _text(spec.get("closing_message"), "survey, field 'closing_message'", required=False)
    status = spec.get("status", "open")
    if status not in STATUSES:
        raise SpecError(f"survey, field 'status': must be one of {', '.join(STATUSES)}")
    raw_questions = spec.get("questions", [] if status == "draft" else None)
    least = 0 if status == "draft" else 1
    if not isinstance(raw_questions, list) or not least <= len(raw_questions) <= MAX_QUESTIONS:
        raise SpecError(f"survey, field 'questions': needs a list of {least} to {MAX_QUESTIONS} questions")
    planning = parse_planning(spec)
    seen: set[str] = set()
    questions = [_question(raw, i, seen) for i, raw in enumerate(raw_questions)]
    slug = spec.get("slug")
    if slug is not None:
        if not isinstance(slug, str) or not SLUG_PATTERN.fullmatch(slug):
            raise SpecError("survey, field 'slug': use 3 to 80 characters from a-z, 0-9 and -")
        if session.scalar(select(Survey.id).where(Survey.slug == slug)) is not None:
            raise SpecError(f"survey, field 'slug': {slug!r} is already taken")
    else:
        slug = _slug(session, title)
    survey = Survey(
        slug=slug,
        title=title,
        introduction=introduction,
        closing_message=closing,
        status=status,
        owner=owner,
        questions=questions,
        is_simulated=any(q.simulated_truth is not None for q in questions),
        **planning,
    )
    session.add(survey)
    return survey


def parse_planning(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The survey-level planning and access fields of a spec, validated (absent ones are left out)."""
    values: dict[str, Any] = {}
    cap = spec.get("epsilon_cap")
    if cap is not None:
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 < cap < 1e6:
            raise SpecError("survey, field 'epsilon_cap': must be a number greater than 0, or left out for no cap")
        values["epsilon_cap"] = float(cap)
    if "expected_respondents" in spec:
        n = spec["expected_respondents"]
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100_000_000:
            raise SpecError("survey, field 'expected_respondents': must be a whole number from 1 to 100,000,000")
        values["expected_respondents"] = n
    if "target_margin" in spec:
        m = spec["target_margin"]
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not 0.001 <= m < 1:
            raise SpecError(
                "survey, field 'target_margin': must be a share between 0 and 1, at least 0.001 "
                "(0.1 percentage points), such as 0.05"
            )
        values["target_margin"] = float(m)
    if "access" in spec:
        if spec["access"] not in ACCESS_MODES:
            raise SpecError(f"survey, field 'access': must be one of {', '.join(ACCESS_MODES)}")
        values["access"] = spec["access"]
    return values


def survey_to_spec(survey: Survey) -> dict[str, Any]:
    """The spec that would re-create ``survey`` (same questions, same designs)."""
    questions = []
    for q in survey.questions:
        item: dict[str, Any] = {"key": q.key, "kind": q.kind, "text": q.text, "required": q.required}
        if q.help_text:
            item["help_text"] = q.help_text
        if q.kind != "yes_no":
            item["options"] = q.labels
        if q.design is not None:
            item["privacy"] = {"design": q.design.mechanism_name, **q.design.parameters}
            if q.design.epsilon is None:
                item["privacy"]["allow_one_sided"] = True
        questions.append(item)
    spec: dict[str, Any] = {
        "title": survey.title,
        "introduction": survey.introduction,
        "closing_message": survey.closing_message,
        "expected_respondents": survey.expected_respondents,
        "target_margin": survey.target_margin,
        "access": survey.access,
        "questions": questions,
    }
    if survey.epsilon_cap is not None:
        spec["epsilon_cap"] = survey.epsilon_cap
    return spec
