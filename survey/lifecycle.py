"""A survey's life: draft → open → closed (and reopened), plus duplicating and dates.

Opening freezes the designs: from then on respondents' reports exist under each question's
matrix, and estimates must never mix reports made under different matrices. Texts may still be
corrected; to change a design, duplicate the survey.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from sqlalchemy.orm import Session

from .models import ACCESS_MODES, Survey, User
from .sharing import copy_team
from .specs import SpecError, create_survey_from_spec, survey_to_spec
from .tallies import survey_total_epsilon


class LifecycleError(ValueError):
    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def publish(survey: Survey) -> None:
    """Open a draft for submissions, freezing every design."""
    if survey.status != "draft":
        raise LifecycleError(f"Only a draft can be published; this survey is {survey.status}.")
    if not survey.questions:
        raise LifecycleError("Add at least one question before publishing.")
    total = survey_total_epsilon(survey)
    if survey.epsilon_cap is not None and total > survey.epsilon_cap + 1e-12:
        shown = "∞" if math.isinf(total) else f"{total:.2f}"
        raise LifecycleError(
            f"The survey's total ε is {shown}, above its cap of {survey.epsilon_cap:.2f}. "
            "Lower some questions' ε, remove a question, or raise the cap."
        )
    survey.status = "open"


def close(survey: Survey) -> None:
    if survey.status != "open":
        raise LifecycleError(f"Only an open survey can be closed; this survey is {survey.status}.")
    survey.status = "closed"


def reopen(survey: Survey) -> None:
    if survey.status != "closed":
        raise LifecycleError(f"Only a closed survey can be reopened; this survey is {survey.status}.")
    survey.status = "open"


def set_dates(survey: Survey, opens_on: dt.date | None, closes_on: dt.date | None) -> None:
    if opens_on and closes_on and closes_on < opens_on:
        raise LifecycleError("The closing date must not be before the opening date.", status=400)
    survey.opens_on, survey.closes_on = opens_on, closes_on


def set_access(survey: Survey, mode: str) -> None:
    """Who may answer: anyone with the link, or only holders of single-use invitation codes.

    Allowed in every state, so an organizer can tighten or loosen access while a survey runs;
    codes already used stay used.
    """
    if mode not in ACCESS_MODES:
        raise LifecycleError(f"Access must be one of: {', '.join(ACCESS_MODES)}.", status=400)
    survey.access = mode


def duplicate(session: Session, survey: Survey, owner: User, *, keep_team: bool = False) -> Survey:
    """A new draft with the same questions, options and designs: the way to change a frozen design.

    With ``keep_team`` the copy is shared with the original's owner and members (see
    :func:`survey.sharing.copy_team`), so duplicating does not lock the rest of the team out.
    """
    spec = survey_to_spec(survey)
    spec["title"] = f"{survey.title} (copy)"[:200]
    spec["status"] = "draft"
    copy = create_survey_from_spec(session, spec, owner=owner)
    if keep_team:
        copy_team(survey, copy)
    return copy


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise SpecError(f"the key {key!r} appears twice in one object; which one is meant is unclear")
        seen[key] = value
    return seen


def import_draft(session: Session, document: str | bytes, owner: User) -> Survey:
    """A new draft from a JSON spec document, validated whole by :func:`create_survey_from_spec`.

    Whatever ``status`` the document names, the survey starts as a draft: its owner reviews it in
    the builder before publishing freezes the designs. The caller commits; on a
    :class:`SpecError` nothing was added.
    """
    if isinstance(document, bytes):
        try:
            document = document.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SpecError("the file is not UTF-8 text; export the spec again or paste it") from None
    if not document.strip():
        raise SpecError("the spec is empty")
    try:
        spec = json.loads(document, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise SpecError(f"this is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}") from None
    except RecursionError:
        raise SpecError("the JSON is nested far deeper than any survey spec") from None
    except SpecError:  # a key given twice (before ValueError: it is one)
        raise
    except ValueError:  # e.g. an integer of thousands of digits
        raise SpecError("the JSON holds a number far too long for any field of a spec") from None
    if isinstance(spec, dict):
        spec = {**spec, "status": "draft"}
    return create_survey_from_spec(session, spec, owner=owner)
