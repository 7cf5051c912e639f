"""Accounts and sharing: who else works on a survey, and a user's own password.

A survey has one owner (whoever created it) and any number of members: co-organizers, who may do
everything the owner does except be removed, and researchers, who see results and downloads only.
The rules are deliberately flat, because a survey team is small and its members trust each other:

- the owner and co-organizers add members, change their role and remove them;
- nobody can remove the owner or hand the owner a membership (they already have every right);
- nobody changes their own role (a co-organizer demoting themselves by mistake would lock
  themselves out); they may leave the survey by removing themselves;
- a role is an offer until the invited user accepts it (``Membership.pending``): until then it
  grants nothing and the survey stays out of their list. Otherwise anyone could push a survey,
  and with it texts and files of their making (a poisoned CSV), in front of any other user;
- someone without an account is invited by e-mail address or by name (:func:`share_with`): they
  make an account through a single-use link (survey.domain.links), then accept the role like anyone.

The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from . import links
from .access import ORGANIZER, OWNER, RESEARCHER, allowed, role_of
from .accounts import check_new_password, end_other_sessions
from .errors import DomainError, NotFound
from .models import ROLES, AccountLink, Membership, Survey, User, today

USERNAME = ("username",)

ROLE_LABELS = {OWNER: "owner", ORGANIZER: "co-organizer", RESEARCHER: "researcher"}
ROLE_DESCRIPTIONS = {
    ORGANIZER: "Co-organizer: builds, runs and shares the survey, like its owner",
    RESEARCHER: "Researcher: sees the results and downloads only",
}


def members(survey: Survey) -> list[Membership]:
    """The survey's members, co-organizers first, then by username."""
    order = {role: i for i, role in enumerate(ROLES)}
    return sorted(survey.memberships, key=lambda m: (order.get(m.role, len(order)), m.user.username.lower()))


@dataclass(frozen=True)
class Offer:
    """What sharing a survey with someone did: a role offered to (or changed for) a user, or an
    invitation for someone without an account, with its link's token (to be sent or shown once)."""

    membership: Membership | None = None
    invitation: AccountLink | None = None
    token: str | None = None


def _check_sharing(survey: Survey, actor: User, role: str) -> None:
    if not allowed(actor, survey, "edit"):
        raise NotFound("Only the owner and co-organizers can share this survey.")
    if role not in ROLES:
        raise DomainError(f"Choose one of: {', '.join(ROLE_LABELS[r] for r in ROLES)}.", path=("role",))


def share_with(session: Session, survey: Survey, actor: User, who: str, role: str) -> Offer:
    """Offer ``role`` on ``survey`` to ``who``: a username or an e-mail address of a user (the role
    is offered as by :func:`add_member`), or else an e-mail address or a name of someone without an
    account, who gets an invitation to make one (:func:`survey.domain.links.invite`)."""
    _check_sharing(survey, actor, role)
    who = (who or "").strip()
    if not who:
        raise DomainError("Give a username, an e-mail address or a name.", path=USERNAME)
    user = links.find_user(session, who)
    if user is not None:
        return Offer(membership=add_member(session, survey, actor, user.username, role))
    invitation, token = links.invite(session, survey, actor, who, role)
    return Offer(invitation=invitation, token=token)


def add_member(session: Session, survey: Survey, actor: User, username: str, role: str) -> Membership:
    """Offer ``username`` the ``role`` on ``survey`` (pending until they accept), or change the role
    of an existing member (an accepted member stays accepted, an offer stays an offer)."""
    _check_sharing(survey, actor, role)
    username = (username or "").strip()
    user = session.scalar(select(User).where(User.username == username)) if username else None
    if user is None:
        raise DomainError(f"There is no user called “{username}”.", path=USERNAME)
    if user.id == survey.owner_id:
        raise DomainError(f"{user.username} owns this survey and already has every right to it.", path=USERNAME)
    if user.id == actor.id:
        raise DomainError("You cannot change your own role; ask another organizer to do it.", path=USERNAME)
    for membership in survey.memberships:
        if membership.user_id == user.id:
            membership.role = role
            return membership
    membership = Membership(user=user, role=role, pending=True)
    survey.memberships.append(membership)
    return membership


def invitations_for(session: Session, user: User) -> list[Membership]:
    """The roles offered to ``user`` and not yet accepted, newest survey first."""
    return list(
        session.scalars(
            select(Membership)
            .join(Survey, Survey.id == Membership.survey_id)
            .where(Membership.user_id == user.id, Membership.pending.is_(True))
            .order_by(Survey.id.desc())
        )
    )


def _offer(session: Session, user: User, slug: str) -> Membership:
    membership = session.scalar(
        select(Membership)
        .join(Survey, Survey.id == Membership.survey_id)
        .where(Survey.slug == slug, Membership.user_id == user.id, Membership.pending.is_(True))
    )
    if membership is None:  # no offer to this user: as far as they can tell, no such survey
        raise NotFound("There is no invitation to this survey.")
    return membership


def accept_invitation(session: Session, user: User, slug: str) -> Membership:
    """``user`` accepts the role offered on survey ``slug``: from now on it grants its rights."""
    membership = _offer(session, user, slug)
    membership.pending = False
    return membership


def decline_invitation(session: Session, user: User, slug: str) -> Membership:
    """``user`` turns the offer down; it is deleted (the survey's organizers may offer again)."""
    membership = _offer(session, user, slug)
    session.delete(membership)
    return membership


def remove_member(session: Session, survey: Survey, actor: User, user_id: int) -> Membership:
    """Take a member's rights to ``survey`` away (a member may also remove themselves: leaving)."""
    if not allowed(actor, survey, "edit"):
        raise NotFound("Only the owner and co-organizers can share this survey.")
    if user_id == survey.owner_id:
        raise DomainError("The owner of a survey cannot be removed from it.", path=("user_id",))
    for membership in survey.memberships:
        if membership.user_id == user_id:
            survey.memberships.remove(membership)
            session.delete(membership)
            return membership
    raise NotFound("That user is not a member of this survey (any more).", path=("user_id",))


def copy_team(source: Survey, copy: Survey) -> None:
    """Offer ``copy`` to the team of ``source``: its members, and its owner if ``copy`` has another owner.

    Used when a co-organizer duplicates a survey: the copy belongs to them, and the people who work
    on the original are invited to work on the copy too, with the same roles. Invited, not added:
    agreeing to work on one survey is not agreeing to every survey a teammate makes from it (the
    copy's texts can be changed before anyone else looks), so each of them accepts the copy or not,
    like any other offer. Offers on the original that were never accepted are not repeated.
    """
    team = {m.user_id: (m.user, m.role) for m in source.memberships if not m.pending}
    if source.owner is not None:
        team[source.owner.id] = (source.owner, ORGANIZER)
    for user_id, (user, role) in team.items():
        if copy.owner is not None and user_id == copy.owner.id:
            continue
        copy.memberships.append(Membership(user=user, role=role, pending=True))


def change_password(session: Session, user: User, current: str, new: str, *, keep_token: str | None) -> None:
    """Set ``user``'s password to ``new`` if ``current`` is their password now, and end every other
    sign-in session of theirs (the one ``keep_token`` names, where the change was made, stays): a
    password is changed because someone else may know it, and they may be signed in already."""
    if not user.check_password(current or ""):
        raise DomainError("This is not your current password.", path=("current_password",))
    check_new_password(new)
    if new == current:
        raise DomainError("The new password is the same as the current one.", path=("new_password",))
    user.set_password(new)
    end_other_sessions(session, user, keep_token)


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
