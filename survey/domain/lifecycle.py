"""A survey's life: draft → open → closed (and reopened), plus duplicating and dates.

Opening freezes the designs: from then on respondents' reports exist under each question's
matrix, and estimates must never mix reports made under different matrices. Texts may still be
corrected; to change a design, duplicate the survey.
"""

from __future__ import annotations

import datetime as dt
import math

from sqlalchemy.orm import Session

from .errors import Conflict, DomainError
from .models import ACCESS_MODES, Survey, User
from .sharing import copy_team
from .specs import create_survey_from_spec, survey_to_spec
from .validation import parse_json, within_cap


def publish(survey: Survey) -> None:
    """Open a draft for submissions, freezing every design."""
    if survey.status != "draft":
        raise Conflict(f"Only a draft can be published; this survey is {survey.status}.")
    if not survey.questions:
        raise Conflict("Add at least one question before publishing.")
    total = survey.total_epsilon()
    if not within_cap(total, survey.epsilon_cap):
        shown = "∞" if math.isinf(total) else f"{total:.2f}"
        raise Conflict(
            f"The survey's total ε is {shown}, above its cap of {survey.epsilon_cap:.2f}. "
            "Lower some questions' ε, remove a question, or raise the cap."
        )
    survey.status = "open"


def close(survey: Survey) -> None:
    if survey.status != "open":
        raise Conflict(f"Only an open survey can be closed; this survey is {survey.status}.")
    survey.status = "closed"


def reopen(survey: Survey) -> None:
    if survey.status != "closed":
        raise Conflict(f"Only a closed survey can be reopened; this survey is {survey.status}.")
    survey.status = "open"


def set_dates(survey: Survey, opens_on: dt.date | None, closes_on: dt.date | None) -> None:
    if opens_on and closes_on and closes_on < opens_on:
        raise DomainError("The closing date must not be before the opening date.", path=("closes_on",))
    survey.opens_on, survey.closes_on = opens_on, closes_on


def set_access(survey: Survey, mode: str) -> None:
    """Who may answer: anyone with the link, or only holders of single-use invitation codes.

    Allowed in every state, so an organizer can tighten or loosen access while a survey runs;
    codes already used stay used.
    """
    if mode not in ACCESS_MODES:
        raise DomainError(f"Access must be one of: {', '.join(ACCESS_MODES)}.", path=("access",))
    survey.access = mode


def duplicate(session: Session, survey: Survey, owner: User, *, keep_team: bool = False) -> Survey:
    """A new draft with the same questions, options and designs: the way to change a frozen design.

    With ``keep_team`` the copy is shared with the original's owner and members (see
    :func:`survey.domain.sharing.copy_team`), so duplicating does not lock the rest of the team out.
    A survey stored before today's rules might not pass them: that is a :class:`Conflict`.
    """
    spec = survey_to_spec(survey)
    spec["title"] = f"{survey.title} (copy)"[:200]
    spec["status"] = "draft"
    try:
        copy = create_survey_from_spec(session, spec, owner=owner)
    except DomainError as error:
        raise Conflict(f"This survey cannot be copied: {error}") from None
    if keep_team:
        copy_team(survey, copy)
    return copy


def import_draft(session: Session, document: str | bytes, owner: User) -> Survey:
    """A new draft from a JSON spec document, read strictly (:func:`survey.domain.validation.parse_json`)
    and validated whole by :func:`create_survey_from_spec`.

    Whatever ``status`` the document names, the survey starts as a draft: its owner reviews it in
    the builder before publishing freezes the designs. The caller commits; on a
    :class:`DomainError` nothing was added.
    """
    if not (document.strip() if isinstance(document, str) else document.strip(b" \t\r\n")):
        raise DomainError("the spec is empty")
    spec = parse_json(document, "the spec")
    if isinstance(spec, dict):
        spec = {**spec, "status": "draft"}
    return create_survey_from_spec(session, spec, owner=owner)
