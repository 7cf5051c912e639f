"""Each rule about input, written once: texts and their limits, keys and slugs, numbers, strict JSON,
and the tolerance of the ε cap.

The spec import (:mod:`survey.domain.surveys.specs`), the builder (:mod:`survey.domain.surveys.builder`), the
privacy preview (:mod:`survey.domain.surveys.preview`), the lifecycle and the submission API all call these
functions, so the same input is refused the same way, with the same message, wherever it arrives.
Each raises :class:`~survey.domain.errors.DomainError` with the path of the input at fault.

What counts as text: no NUL characters (PostgreSQL cannot store them) and nothing that is not valid
Unicode (a lone surrogate from JSON's ``\\ud800`` cannot be encoded to UTF-8). Input that fails is
refused with a 4xx before it reaches the database.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import DomainError, Path
from .messages import message

# -- where an input sits ----------------------------------------------------------------------------


def dotted(field: Path) -> str:
    """``("privacy", "forced", 1)`` → ``privacy.forced[1]``: a field path as a spec's reader writes it."""
    text = ""
    for part in field:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


@dataclass(frozen=True)
class Place:
    """Where a group of inputs sits: its path, and its name in words ("question 2 ('q2')", or None
    where the reader knows it already, as in the builder's form)."""

    path: Path = ()
    words: str | None = None

    def error(self, code: str, /, *field: str | int, status: int | None = None, **params: Any) -> DomainError:
        """The error ``code`` (filled with ``params``) about ``field`` of this place (the place itself
        when no field is given)."""
        where = self.words
        if where is not None and field:
            where = message("place.field", place=where, field=dotted(field))
        return DomainError(code, status=status, path=(*self.path, *field), where=where, **params)

    def within(self, *field: str | int, words: str | None = None) -> Place:
        """A place inside this one (a question inside the survey)."""
        return Place((*self.path, *field), words if words is not None else self.words)


# -- texts ---------------------------------------------------------------------------------------------

#: How long each text may be, by field (characters).
TEXT_LIMITS = {
    "title": 200,
    "introduction": 10_000,
    "closing_message": 10_000,
    "run_by": 200,
    "contact": 300,
    "ethics_statement": 10_000,
    "text": 2_000,
    "help_text": 2_000,
    "option": 200,
}


def text_problem(value: str) -> str | None:
    """The code of the reason ``value`` is not storable text ("text.nul", "text.not_unicode"), or
    None when it is fine."""
    if "\x00" in value:
        return "text.nul"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "text.not_unicode"
    return None


def text(value: Any, place: Place, *field: str | int, limit: int, required: bool = True) -> str:
    """``value`` stripped, if it is text within ``limit`` characters (and not blank when ``required``);
    an absent optional text is empty."""
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise place.error("text.required" if required else "text.not_text", *field)
    if len(value) > limit:
        raise place.error("text.too_long", *field, limit=limit)
    problem = text_problem(value)
    if problem:
        raise place.error(problem, *field)
    return value.strip()


# -- names ---------------------------------------------------------------------------------------------

KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{2,79}$")


def is_key(value: Any) -> bool:
    """A question key: a lowercase letter, then up to 39 of ``a-z 0-9 _`` (``fullmatch``: no newline)."""
    return isinstance(value, str) and KEY_PATTERN.fullmatch(value) is not None


def is_slug(value: Any) -> bool:
    """A survey slug: 3 to 80 of ``a-z 0-9 -``, not starting with ``-``."""
    return isinstance(value, str) and SLUG_PATTERN.fullmatch(value) is not None


# -- numbers -------------------------------------------------------------------------------------------


def is_number(value: Any) -> bool:
    """A JSON number (an int or a float, not a boolean)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: Any, place: Place, *field: str | int, rule: str, ok: Callable[[float], bool]) -> float:
    """``value`` as a float if it is a number for which ``ok`` holds; otherwise "must be ``rule``"."""
    if not is_number(value) or not ok(value):
        raise place.error("number.invalid", *field, rule=rule)
    return float(value)


def whole_number(value: Any, place: Place, *field: str | int, low: int, high: int) -> int:
    """``value`` if it is a whole number (an int, not a float) from ``low`` to ``high``."""
    if not is_number(value) or not isinstance(value, int) or not low <= value <= high:
        raise place.error("number.out_of_range", *field, low=low, high=high)
    return value


def loose_number(typed: str | None) -> Any:
    """A typed number as int or float, or the text itself, so that the rule it breaks can say why."""
    typed = (typed or "").strip()
    for convert in (int, float):
        try:
            return convert(typed)
        except ValueError:
            pass
    return typed


def is_blank(typed: Any) -> bool:
    return typed is None or (isinstance(typed, str) and not typed.strip())


def finite_number(typed: Any, place: Place, *field: str | int, name: str, what: str) -> float:
    """A number typed into input ``name`` (text) as a float: blank asks for ``what``, anything else
    must be a finite number."""
    if is_blank(typed):
        raise place.error("number.blank", *field, what=what)
    try:
        value = float(typed)
    except (TypeError, ValueError, OverflowError):
        raise place.error("number.not_number", *field, name=name, typed=typed) from None
    if not math.isfinite(value):
        raise place.error("number.not_finite", *field, name=name, typed=typed)
    return value


# -- strict JSON ---------------------------------------------------------------------------------------


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise DomainError("json.duplicate_key", key=key)
        seen[key] = value
    return seen


def parse_json(document: str | bytes, subject: str) -> Any:
    """A JSON document read strictly, or a :class:`DomainError` (400) naming ``subject`` ("the body",
    "the spec") that says why not: not UTF-8, not JSON, a key given twice in one object (Python would
    keep the last silently), nested too deep to parse (RecursionError) or a number too long for
    Python to convert (over 4,300 digits). The submission API and the spec import both read JSON
    through here."""
    if isinstance(document, bytes):
        try:
            document = document.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise DomainError("json.not_utf8", subject=subject) from None
    try:
        return json.loads(document, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise DomainError(
            "json.invalid", subject=subject, msg=error.msg, lineno=error.lineno, colno=error.colno
        ) from None
    except RecursionError:
        raise DomainError("json.too_deep", subject=subject) from None
    except DomainError:  # a key given twice (before ValueError: it is one)
        raise
    except ValueError:  # e.g. an integer of thousands of digits
        raise DomainError("json.number_too_long", subject=subject) from None


# -- the ε cap -----------------------------------------------------------------------------------------

#: A total ε equal to the cap up to rounding counts as within it (the sum of floats is not exact).
CAP_TOLERANCE = 1e-12


def within_cap(total: float, cap: float | None) -> bool:
    """Whether a survey with total ε ``total`` may be opened under ``cap`` (no cap: always)."""
    return cap is None or total <= cap + CAP_TOLERANCE
