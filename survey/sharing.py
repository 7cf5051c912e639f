"""Accounts and sharing: who else works on a survey, and a user's own password.

A survey has one owner (whoever created it) and any number of members: co-organizers, who may do
everything the owner does except be removed, and researchers, who see results and downloads only.
The rules are deliberately flat, because a survey team is small and its members trust each other:

- the owner and co-organizers add members, change their role and remove them;
- nobody can remove the owner or hand the owner a membership (they already have every right);
- nobody changes their own role (a co-organizer demoting themselves by mistake would lock
  themselves out); they may leave the survey by removing themselves.

The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from .models import ROLES, Membership, Survey, User, today
from .rights import ORGANIZER, OWNER, RESEARCHER, allowed, role_of

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 200

ROLE_LABELS = {OWNER: "owner", ORGANIZER: "co-organizer", RESEARCHER: "researcher"}
ROLE_DESCRIPTIONS = {
    ORGANIZER: "Co-organizer: builds, runs and shares the survey, like its owner",
    RESEARCHER: "Researcher: sees the results and downloads only",
}


class SharingError(ValueError):
    """A refused change; ``field`` names the form field the message belongs next to."""

    def __init__(self, message: str, field: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status


def members(survey: Survey) -> list[Membership]:
    """The survey's members, co-organizers first, then by username."""
    order = {role: i for i, role in enumerate(ROLES)}
    return sorted(survey.memberships, key=lambda m: (order.get(m.role, len(order)), m.user.username.lower()))


def add_member(session: Session, survey: Survey, actor: User, username: str, role: str) -> Membership:
    """Give ``username`` the ``role`` on ``survey``, or change the role of an existing member."""
    if not allowed(actor, survey, "edit"):
        raise SharingError("Only the owner and co-organizers can share this survey.", status=404)
    if role not in ROLES:
        raise SharingError(f"Choose one of: {', '.join(ROLE_LABELS[r] for r in ROLES)}.", field="role")
    username = (username or "").strip()
    user = session.scalar(select(User).where(User.username == username)) if username else None
    if user is None:
        raise SharingError(f"There is no user called “{username}”. Users are created by an administrator.", "username")
    if user.id == survey.owner_id:
        raise SharingError(f"{user.username} owns this survey and already has every right to it.", "username")
    if user.id == actor.id:
        raise SharingError("You cannot change your own role; ask another organizer to do it.", "username")
    for membership in survey.memberships:
        if membership.user_id == user.id:
            membership.role = role
            return membership
    membership = Membership(user=user, role=role)
    survey.memberships.append(membership)
    return membership


def remove_member(session: Session, survey: Survey, actor: User, user_id: int) -> Membership:
    """Take a member's rights to ``survey`` away (a member may also remove themselves: leaving)."""
    if not allowed(actor, survey, "edit"):
        raise SharingError("Only the owner and co-organizers can share this survey.", status=404)
    if user_id == survey.owner_id:
        raise SharingError("The owner of a survey cannot be removed from it.")
    for membership in survey.memberships:
        if membership.user_id == user_id:
            survey.memberships.remove(membership)
            session.delete(membership)
            return membership
    raise SharingError("That user is not a member of this survey (any more).", status=404)


def copy_team(source: Survey, copy: Survey) -> None:
    """Give ``copy`` the team of ``source``: its members, and its owner if ``copy`` has another owner.

    Used when a co-organizer duplicates a survey: the copy belongs to them, but the people who
    could work on the original can work on the copy too.
    """
    team = {m.user_id: (m.user, m.role) for m in source.memberships}
    if source.owner is not None:
        team[source.owner.id] = (source.owner, ORGANIZER)
    for user_id, (user, role) in team.items():
        if copy.owner is not None and user_id == copy.owner.id:
            continue
        copy.memberships.append(Membership(user=user, role=role))


def change_password(user: User, current: str, new: str) -> None:
    """Set ``user``'s password to ``new`` if ``current`` is their password now."""
    if not user.check_password(current or ""):
        raise SharingError("This is not your current password.", field="current_password")
    if not MIN_PASSWORD_LENGTH <= len(new or "") <= MAX_PASSWORD_LENGTH:
        raise SharingError(f"Use {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters.", field="new_password")
    if new == current:
        raise SharingError("The new password is the same as the current one.", field="new_password")
    user.set_password(new)


@dataclass(frozen=True)
class SurveyAccess:
    """What one user may do with one survey, and its state in words: one line of the survey list."""

    role: str | None
    can_manage: bool
    can_see_results: bool
    state: str

    @property
    def role_label(self) -> str:
        return ROLE_LABELS.get(self.role or "", "")


def state_text(survey: Survey) -> str:
    """The state as the organizer needs it: "open" is qualified when dates keep the survey shut today."""
    if survey.status != "open":
        return survey.status
    accepting, _ = survey.accepting_on(today())
    if accepting:
        return "open" if survey.closes_on is None else f"open until {survey.closes_on.isoformat()}"
    if survey.opens_on is not None and today() < survey.opens_on:
        return f"open from {survey.opens_on.isoformat()}"
    return f"open, but past its closing date {survey.closes_on.isoformat() if survey.closes_on else ''}".strip()


def survey_access(user: User | None, survey: Survey) -> SurveyAccess:
    role = role_of(user, survey)
    return SurveyAccess(
        role=role,
        can_manage=allowed(user, survey, "edit"),
        can_see_results=allowed(user, survey, "results"),
        state=state_text(survey),
    )
