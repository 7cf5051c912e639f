"""Who may do what with a survey.

The owner and co-organizers build, run and share it; researchers see its results and downloads
only. Anyone else, signed in or not, is told the survey does not exist (404), so that a slug leaks
nothing about what surveys there are.
"""

from __future__ import annotations

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from survey.domain.errors import NotFound
from survey.domain.models import Membership, Survey, User
from survey.domain.responses.mixing import release_if_closed

OWNER = "owner"
ORGANIZER = "organizer"
RESEARCHER = "researcher"

#: What each need requires: the roles that satisfy it.
NEEDS = {
    "results": {OWNER, ORGANIZER, RESEARCHER},
    "edit": {OWNER, ORGANIZER},
}


def role_of(user: User | None, survey: Survey) -> str | None:
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    if survey.owner_id == user.id:
        return OWNER
    for membership in survey.memberships:
        if membership.user_id == user.id and not membership.pending:  # offered, not accepted: nothing yet
            return membership.role
    return None


def allowed(user: User | None, survey: Survey, need: str) -> bool:
    return role_of(user, survey) in NEEDS[need]


def survey_for(session: Session, user: User | None, slug: str, need: str) -> Survey:
    """The survey ``slug`` if ``user`` has ``need`` on it; otherwise :class:`NotFound` (404), the same
    whether the survey does not exist or is not theirs, so that a slug leaks nothing."""
    survey = session.scalar(select(Survey).where(Survey.slug == slug))
    if survey is None or not allowed(user, survey, need):
        raise NotFound("page.nothing_here")
    # A survey that no longer accepts answers can fill no batch: what it holds is released now,
    # before anyone with rights looks at its results (survey/domain/responses/mixing.py).
    release_if_closed(session, survey)
    return survey


def visible_surveys(session: Session, user: User, *, archived: bool = False) -> list[Survey]:
    """Surveys the user owns or has an accepted role on, newest first (pending invitations are not
    theirs): those in use, or with ``archived`` the archived ones."""
    member_of = select(Membership.survey_id).where(Membership.user_id == user.id, Membership.pending.is_(False))
    in_archive = Survey.status == "archived"
    query = (
        select(Survey)
        .where(or_(Survey.owner_id == user.id, Survey.id.in_(member_of)), in_archive if archived else ~in_archive)
        .order_by(Survey.id.desc())
    )
    return list(session.scalars(query))
