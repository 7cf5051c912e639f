"""Accounts and sharing: who else works on a survey, and a user's own password.

A survey has one owner (whoever created it) and any number of members: co-organizers, who may do
everything the owner does except be removed, and researchers, who see results and downloads only.
The rules are deliberately flat, because a survey team is small and its members trust each other:

- the owner and co-organizers add members, change their role and remove them;
- nobody can remove the owner or hand the owner a membership (they already have every right);
- nobody changes their own role (a co-organizer demoting themselves by mistake would lock
  themselves out); they may leave the survey by removing themselves;
- a role is an offer until the invited user accepts it: until then it grants nothing and the
  survey stays out of their list. Otherwise anyone could push a survey, and with it texts and
  files of their making (a poisoned CSV), in front of any other user;
- someone new to the survey is invited by username, e-mail address or name (:func:`share_with`):
  an invitation with a single-use link (survey.domain.accounts.account_links), which the account the name or address
  belongs to (if any) also finds on its start page. The sharing form answers the same whether or
  not an account has that name or address, and the survey's page lists the invitation as typed,
  never the account behind it: sharing is not a way to find out who has an account here.

The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from survey.domain.accounts import account_links as links
from survey.domain.accounts.access import ORGANIZER, OWNER, RESEARCHER, allowed, role_of
from survey.domain.accounts.quota import SendLimit, spend
from survey.domain.accounts.sign_in import check_new_password, end_other_sessions
from survey.domain.errors import DomainError, NotFound
from survey.domain.models import ROLES, AccountLink, Membership, Survey, User, today

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
    """What sharing a survey with someone did: the role of a member changed (``membership``), or an
    role offer's link made (``link``, its ``token`` to be sent or shown once). Whether the
    link names an existing account is not part of it: the caller has no use for it, and
    whatever it answers cannot depend on it."""

    membership: Membership | None = None
    link: AccountLink | None = None
    token: str | None = None


def _check_sharing(survey: Survey, actor: User, role: str) -> None:
    if not allowed(actor, survey, "edit"):
        raise NotFound("sharing.not_allowed")
    if role not in ROLES:
        raise DomainError("role.unknown", path=("role",), roles=", ".join(ROLE_LABELS[r] for r in ROLES))


def share_with(
    session: Session, survey: Survey, actor: User, who: str, role: str, quota: SendLimit | None = None
) -> Offer:
    """Offer ``role`` on ``survey`` to ``who``: a username, an e-mail address or a name.

    The username of someone on the team (listed on the survey's page) changes their role. Anyone
    else gets an invitation (:func:`survey.domain.accounts.account_links.offer_role`), which spends one unit of
    ``actor``'s budget of invitations and e-mails (survey.domain.accounts.quota), whatever happens to it
    next. What the inviter sees is the same whether or not an account has the name or address
    typed: the same answer, the same row on the survey's page (what they typed), the same budget
    spent. The account, if there is one, finds the offer on its start page; it is not told apart
    from a name no account has, so that sharing cannot be used to look up accounts."""
    _check_sharing(survey, actor, role)
    who = (who or "").strip()
    if not who:
        raise DomainError("addressee.required", path=USERNAME)
    if survey.owner is not None and who == survey.owner.username:
        raise DomainError("sharing.owner_has_every_right", path=USERNAME, who=who)
    for membership in survey.memberships:
        if membership.user.username == who:
            if membership.user_id == actor.id:
                raise DomainError("sharing.own_role", path=USERNAME)
            membership.role = role  # an accepted member stays accepted, an offer stays an offer
            return Offer(membership=membership)
    if who == actor.username:
        raise DomainError("sharing.own_role", path=USERNAME)
    links.addressee_of(who)  # refuse what is neither a name nor an address before looking anything up
    spend(session, actor, quota)
    account = links.find_user(session, who)
    on_team = {m.user_id for m in survey.memberships} | {survey.owner_id, actor.id}
    if account is not None and (account.disabled or account.id in on_team):
        account = None  # nothing to offer them: the invitation is kept like one to nobody
    link, token = links.offer_role(session, survey, actor, who, role, account=account)
    return Offer(link=link, token=token)


def role_offers_for(session: Session, user: User) -> list[Membership | AccountLink]:
    """The roles offered to ``user`` and not yet accepted, newest survey first: invitations naming
    their account, and memberships offered to them (the team of a duplicated survey, offers made
    before invitations named accounts). Each has ``survey`` and ``role``."""
    pending = list(
        session.scalars(
            select(Membership)
            .join(Survey, Survey.id == Membership.survey_id)
            .where(Membership.user_id == user.id, Membership.pending.is_(True))
        )
    )
    seen = {m.survey_id for m in pending}
    offers: list[Membership | AccountLink] = [*pending]
    for link in links.offers_for(session, user):
        if link.survey_id not in seen:
            seen.add(link.survey_id)
            offers.append(link)
    return sorted(offers, key=lambda offer: -(offer.survey_id or 0))


def _offer(session: Session, user: User, slug: str) -> Membership | AccountLink:
    membership = session.scalar(
        select(Membership)
        .join(Survey, Survey.id == Membership.survey_id)
        .where(Survey.slug == slug, Membership.user_id == user.id, Membership.pending.is_(True))
    )
    if membership is not None:
        return membership
    for link in links.offers_for(session, user):  # newest first
        if link.survey is not None and link.survey.slug == slug:
            return link
    raise NotFound("role_invitation.not_found")  # as far as they can tell, no such survey


def accept_role_offer(session: Session, user: User, slug: str) -> Membership:
    """``user`` accepts the role offered on survey ``slug``: from now on it grants its rights."""
    offer = _offer(session, user, slug)
    if isinstance(offer, AccountLink):
        membership = links.answer_offer(session, offer, user, accept=True)
        assert membership is not None
        return membership
    offer.pending = False
    return offer


def decline_role_offer(session: Session, user: User, slug: str) -> Membership | AccountLink:
    """``user`` turns the offer down: a membership offered is deleted, an invitation stops naming
    their account (survey.domain.accounts.account_links.answer_offer); the survey's organizers may offer again."""
    offer = _offer(session, user, slug)
    if isinstance(offer, AccountLink):
        links.answer_offer(session, offer, user, accept=False)
        return offer
    session.delete(offer)
    return offer


def remove_member(session: Session, survey: Survey, actor: User, user_id: int) -> Membership:
    """Take a member's rights to ``survey`` away (a member may also remove themselves: leaving)."""
    if not allowed(actor, survey, "edit"):
        raise NotFound("sharing.not_allowed")
    if user_id == survey.owner_id:
        raise DomainError("sharing.owner_not_removable", path=("user_id",))
    for membership in survey.memberships:
        if membership.user_id == user_id:
            survey.memberships.remove(membership)
            session.delete(membership)
            return membership
    raise NotFound("sharing.not_a_member", path=("user_id",))


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
    password is changed because someone else may know it, and they may be signed in already.
    Every unused password link of theirs dies too."""
    if not user.check_password(current or ""):
        raise DomainError("password.wrong_current", path=("current_password",))
    check_new_password(new)
    if new == current:
        raise DomainError("password.unchanged", path=("new_password",))
    user.set_password(new)
    end_other_sessions(session, user, keep_token)
    links.revoke_password_links(session, user)  # a reset link mailed before must not undo the change


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
