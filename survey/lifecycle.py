"""A survey's life: draft → open → closed (and reopened), plus duplicating and dates.

Opening freezes the designs: from then on respondents' reports exist under each question's
matrix, and estimates must never mix reports made under different matrices. Texts may still be
corrected; to change a design, duplicate the survey.
"""

from __future__ import annotations

import datetime as dt
import math

from sqlalchemy.orm import Session

from .models import Survey, User
from .specs import create_survey_from_spec, survey_to_spec
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


def duplicate(session: Session, survey: Survey, owner: User) -> Survey:
    """A new draft with the same questions, options and designs: the way to change a frozen design."""
    spec = survey_to_spec(survey)
    spec["title"] = f"{survey.title} (copy)"[:200]
    spec["status"] = "draft"
    return create_survey_from_spec(session, spec, owner=owner)
