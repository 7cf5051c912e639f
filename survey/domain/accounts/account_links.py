"""Single-use links for accounts (account links): a role offer, a link to take a role on a survey;
and a password link, to set or reset a password.

Three kinds (``AccountLink.purpose``):

- ``role_offer`` (stored as ``invitation`` before migration 0014): an organizer shares a survey
  with someone, named by e-mail address or by name (survey.domain.accounts.sharing). The link
  offers that one role on that one survey, and nothing else.
  Whoever opens it may take the role with the account they are signed in with, or make an account
  (a username and a password) if the inviter may invite people to make accounts
  (survey.domain.accounts.site); the role then waits on the new account's start page, like any other offer.
  When the name or address typed belonged to an account, that account's start page shows the
  offer too (``AccountLink.user``). Valid for 7 days.
- ``setup``: an administrator made an account (survey.domain.accounts.users); its owner sets the first
  password through the link. Valid for 7 days.
- ``reset``: an administrator lets a user choose a new password, or a user who forgot theirs asks
  for one on the sign-in page (:func:`forgotten_password_link`: then the user is its own maker, and
  the link only ever goes to the address on the account). Valid for 1 hour; using it ends every
  sign-in session of the user, like a password change. Every unused password link of a user dies
  when their password changes, by a link or on their account page.

A role reaches only whoever holds its own link (or the account it was offered to): making an
account through one role offer takes up that offer and no other, whatever address they share.
An account made through a role offer carries the invited address only when the link reached that
address by e-mail (``AccountLink.mailed``); a link shown to its inviter proves nothing about who
reads the mailbox, and an address on an account is where offers and password links go.

A link carries a random token of 256 bits; only its SHA-256 hash is stored (as for sign-in
sessions), so a copy of the database opens no link. A link works once: it is claimed by one
``UPDATE ... WHERE used = false``, so two requests racing with the same link cannot both use it. It
is dead after it expires, when a newer link of the same kind replaces it, when it is withdrawn, when
the user it sets a password for is disabled, and when its maker could no longer make it (disabled,
no longer an administrator, no longer sharing the survey: :func:`minter_may`). Every refusal of a
link says the same thing, whether it never existed, expired or was used: the token is the only
secret, and the answer should not help anyone guess.

The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import unicodedata

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from survey.domain.accounts.access import allowed
from survey.domain.accounts.sign_in import TOKEN_BYTES, check_new_password, digest, end_other_sessions
from survey.domain.accounts.site import may_invite_accounts
from survey.domain.accounts.usernames import has_invisible, username_digest
from survey.domain.errors import Conflict, DomainError, Forbidden, NotFound
from survey.domain.models import ROLES, AccountLink, Membership, Survey, User

LIFETIMES = {
    "role_offer": dt.timedelta(days=7),
    "setup": dt.timedelta(days=7),
    "reset": dt.timedelta(hours=1),
}
#: A user who forgot their password is sent at most one link in this time, however many addresses
#: ask: the sign-in page's rate limit counts per address, and this bounds the mail one mailbox gets.
FORGOTTEN_PASSWORD_INTERVAL = dt.timedelta(minutes=5)
MAX_EMAIL_LENGTH = 254
MAX_USERNAME_LENGTH = 80
_USERNAME = re.compile(r"[^\W_][\w.-]*")
_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")


def now() -> dt.datetime:
    """The time in UTC, without a zone (how ``expires_at`` is stored on SQLite and PostgreSQL alike)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


# -- the rules for names and addresses -------------------------------------------------------------


def normalize_email(text: str | None, path: tuple[str, ...] = ("email",)) -> str | None:
    """An e-mail address in lower case, None for an empty one; refuses what cannot be an address."""
    email = (text or "").strip().lower()
    if not email:
        return None
    # control and format characters (a newline among them) would end up in a mail header
    invisible = any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in email)
    if len(email) > MAX_EMAIL_LENGTH or invisible or not _EMAIL.fullmatch(email):
        raise DomainError("email.invalid", path=path)
    return email


def check_username(session: Session, username: str | None, path: tuple[str, ...] = ("username",)) -> str:
    """A new username, stripped, if it follows the rule and no account has it or one a reader could
    take it for (the same letters in another case, another script or another width: ``dеmo`` with a
    Cyrillic е beside ``demo``; survey.domain.accounts.usernames); else an error. Every way of making an
    account, and any future renaming, goes through here; ``users.username_key`` (unique) holds the
    rule in the database too, when two requests race."""
    name = (username or "").strip()
    if not name:
        raise DomainError("username.required", path=path)
    if len(name) > MAX_USERNAME_LENGTH or not _USERNAME.fullmatch(name) or has_invisible(name):
        raise DomainError(
            "username.malformed",
            path=path,
            most=MAX_USERNAME_LENGTH,
        )
    same = or_(func.lower(User.username) == name.lower(), User.username_key == username_digest(name))
    if session.scalar(select(User.id).where(same).limit(1)) is not None:
        raise DomainError("username.taken", path=path, name=name)
    return name


def suggested_username(addressee: str) -> str:
    """A username to offer someone invited as ``addressee``: the part of an address before the @, or
    the name, in lower case with the characters a username cannot have dropped or made dots."""
    base = addressee.split("@", 1)[0] if "@" in addressee else addressee
    base = unicodedata.normalize("NFKC", base).strip().lower()
    base = re.sub(r"\s+", ".", base)
    base = re.sub(r"[^\w.-]", "", base).strip("._-")
    return base[:MAX_USERNAME_LENGTH]


def find_user(session: Session, who: str) -> User | None:
    """The user whose username is ``who``, or else whose e-mail address it is."""
    who = (who or "").strip()
    if not who:
        return None
    user = session.scalar(select(User).where(User.username == who))
    if user is None and "@" in who:
        user = session.scalar(select(User).where(User.email == who.lower()))
    return user


# -- making links ----------------------------------------------------------------------------------


def _issue(session: Session, purpose: str, **fields) -> tuple[AccountLink, str]:
    token = secrets.token_urlsafe(TOKEN_BYTES)
    link = AccountLink(token_hash=digest(token), purpose=purpose, expires_at=now() + LIFETIMES[purpose], **fields)
    session.add(link)
    session.flush()
    return link, token


def addressee_of(who: str | None) -> tuple[str | None, str | None]:
    """``(email, name)`` of whom a role offer is for, as typed on the sharing form: an e-mail address
    (normalized) or a name or username; refuses what can be neither. Checked before anything is
    looked up, so that the answer is the same whether or not an account has it."""
    who = (who or "").strip()
    if "@" in who:
        return normalize_email(who, path=("username",)), None
    if not who:
        raise DomainError("addressee.required", path=("username",))
    if len(who) > MAX_USERNAME_LENGTH or not suggested_username(who) or has_invisible(who):
        raise DomainError("addressee.malformed", path=("username",), most=MAX_USERNAME_LENGTH)
    return None, who


def offer_role(
    session: Session, survey: Survey, actor: User, who: str, role: str, account: User | None = None
) -> tuple[AccountLink, str]:
    """A role offer to ``who`` (an e-mail address or a name) to take ``role`` on ``survey``; returns
    the link and its token (sent or shown once, never stored). ``account`` is the existing account
    that ``who`` names, if any: its owner then also finds the offer on their start page. Whoever
    holds the link may take the role, with an account they have or (if its inviter may invite
    people to make accounts) one they make. An earlier role offer to the same ``who`` to the same
    survey is replaced. The caller checks that ``actor`` may share ``survey``."""
    if role not in ROLES:
        raise DomainError("role.required", path=("role",))
    email, name = addressee_of(who)
    same_person = AccountLink.email == email if email else func.lower(AccountLink.name) == name.lower()
    session.execute(
        delete(AccountLink).where(
            AccountLink.purpose == "role_offer",
            AccountLink.survey_id == survey.id,
            AccountLink.used.is_(False),
            same_person,
        )
    )
    session.expire(survey, ["account_links"])
    return _issue(
        session, "role_offer", email=email, name=name, survey=survey, role=role, invited_by=actor, user=account
    )


def password_link(session: Session, user: User, actor: User | None = None) -> tuple[AccountLink, str]:
    """A link for ``user`` to set a password: the first one (``setup``, 7 days) if they have none,
    else a new one (``reset``, 1 hour). Their earlier unused password links die."""
    revoke_password_links(session, user)
    purpose = "reset" if user.has_password else "setup"
    return _issue(session, purpose, user=user, email=user.email, invited_by=actor)


def forgotten_password_link(session: Session, who: str) -> tuple[AccountLink, str] | None:
    """A ``reset`` link for the account ``who`` names (its username, or its e-mail address), asked
    for by someone who says they own it, to be mailed to the address on the account and nowhere
    else. None, and nothing written, when no account has that name or address, or it has no
    address, no password yet (its administrator's setup link is the way in), is disabled, or was
    sent such a link less than :data:`FORGOTTEN_PASSWORD_INTERVAL` ago (whatever the answer, whoever
    asked is told the same thing: survey.web.mailing). The user is the link's maker, so that it
    dies with their account like any other (:func:`minter_may`); their earlier password links die."""
    user = find_user(session, who)
    if user is None or user.disabled or not user.email or not user.has_password:
        return None
    recent = now() + LIFETIMES["reset"] - FORGOTTEN_PASSWORD_INTERVAL
    asked_lately = session.scalar(
        select(AccountLink.id)
        .where(
            AccountLink.user_id == user.id,
            AccountLink.invited_by_id == user.id,
            AccountLink.purpose == "reset",
            AccountLink.used.is_(False),
            AccountLink.expires_at > recent,
        )
        .limit(1)
    )
    if asked_lately is not None:
        return None
    revoke_password_links(session, user)
    return _issue(session, "reset", user=user, email=user.email, invited_by=user)


def revoke_password_links(session: Session, user: User) -> None:
    """Kill every unused ``setup`` and ``reset`` link of ``user`` (a newer one replaces them, or
    their password changed: a link mailed before the change must not undo it)."""
    session.execute(
        delete(AccountLink).where(
            AccountLink.user_id == user.id, AccountLink.purpose.in_(("setup", "reset")), AccountLink.used.is_(False)
        )
    )


def mark_mailed(session: Session, link: AccountLink) -> None:
    """Record that ``link`` reached its address by e-mail and was shown to nobody (``mailed``)."""
    session.execute(
        update(AccountLink)
        .where(AccountLink.id == link.id)
        .values(mailed=True)
        .execution_options(synchronize_session=False)
    )


def open_role_offers(session: Session, survey: Survey) -> list[AccountLink]:
    """The role offers of ``survey`` not used yet, not expired and whose maker still shares it, oldest
    first. Whether one names an existing account is not shown (the survey's organizers see whom
    they typed, never the account behind it, until its owner accepts)."""
    found = list(
        session.scalars(
            select(AccountLink)
            .where(
                AccountLink.survey_id == survey.id,
                AccountLink.purpose == "role_offer",
                AccountLink.used.is_(False),
                AccountLink.expires_at > now(),
            )
            .order_by(AccountLink.id)
        )
    )
    return [link for link in found if minter_may(link)]


def withdraw_role_offer(session: Session, survey: Survey, link_id: int | None) -> AccountLink:
    """Delete a role offer of ``survey`` (its link stops working). The caller checks the rights."""
    link = session.get(AccountLink, link_id) if link_id is not None else None
    if link is None or link.survey_id != survey.id or link.purpose != "role_offer" or link.used:
        raise NotFound("role_invitation.gone", path=("link_id",))
    session.delete(link)
    return link


# -- using links -----------------------------------------------------------------------------------


def minter_may(link: AccountLink) -> bool:
    """Whether whoever made ``link`` could still make it: an enabled user who (for a password link)
    is an administrator or (for a role offer) still shares its survey. A link dies with its
    maker's rights: disabling an account, taking away an administrator's role or a co-organizer's
    place on a survey ends every link they made."""
    maker = link.invited_by
    if maker is None or maker.disabled:
        return False
    if link.purpose == "role_offer":
        return link.survey is not None and allowed(maker, link.survey, "edit")
    # a reset link its user asked for (a forgotten password) is theirs to make
    return bool(maker.is_admin) or (link.purpose == "reset" and link.user_id == maker.id)


def live_link(session: Session, token: str | None) -> AccountLink | None:
    """The link ``token`` opens, if it is unused, unexpired, its user (if any) is not disabled and
    its maker still could make it (:func:`minter_may`)."""
    if not token or len(token) > 200:
        return None
    link = session.scalar(
        select(AccountLink).where(
            AccountLink.token_hash == digest(token), AccountLink.used.is_(False), AccountLink.expires_at > now()
        )
    )
    if link is None or (link.purpose != "role_offer" and link.user is not None and link.user.disabled):
        return None
    if link.purpose == "role_offer" and link.survey_id is not None and link.survey is None:
        return None
    if not minter_may(link):
        return None
    return link


def _claim(session: Session, token: str, purposes: tuple[str, ...]) -> AccountLink:
    """Mark the link used, in one statement that only one request can win; NotFound if it is dead."""
    link = live_link(session, token)
    if link is None or link.purpose not in purposes:
        raise NotFound("account_link.dead")
    claimed = session.execute(
        update(AccountLink)
        .where(AccountLink.id == link.id, AccountLink.used.is_(False), AccountLink.expires_at > now())
        .values(used=True)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:
        raise NotFound("account_link.dead")
    link.used = True
    return link


def may_make_accounts(session: Session, link: AccountLink) -> bool:
    """Whether ``link`` (a role offer) may make a new account now: its inviter may invite people
    to make accounts (an administrator, or anyone while the site allows it: survey.domain.accounts.site)."""
    return may_invite_accounts(session, link.invited_by)


def _offer_to(session: Session, link: AccountLink, user: User, *, pending: bool) -> Membership:
    """The role ``link`` offers, given to ``user`` (waiting for their answer when ``pending``); a role
    they were offered earlier on the same survey becomes this one."""
    survey = link.survey
    assert survey is not None and link.role in ROLES
    for membership in survey.memberships:
        if membership.user_id == user.id:
            membership.role = link.role
            membership.pending = membership.pending and pending
            return membership
    membership = Membership(user=user, role=link.role, pending=pending)
    survey.memberships.append(membership)
    return membership


def make_account_for_offer(session: Session, token: str, username: str, password: str) -> User:
    """Make the account a role offer allows: ``username`` (checked and free) with ``password``; the
    role this link offers (and no other) waits on the new account's start page for them to accept.

    The account gets the invited address only when the link reached it by e-mail and no account has
    it yet (``AccountLink.mailed``): a link shown to its inviter proves nothing about who reads the
    mailbox, and an address on an account is where password links and role offers go. Role offers
    to the same address from other surveys stay as they were: each reaches its survey only through
    its own link (or, once an account holds the address, as an offer its owner sees on the start page)."""
    link = live_link(session, token)
    if link is None or link.purpose != "role_offer":
        raise NotFound("account_link.dead")
    if not may_make_accounts(session, link):
        raise Forbidden("account_link.accounts_by_administrators")
    name = check_username(session, username)
    check_new_password(password, path=("password",))
    link = _claim(session, token, ("role_offer",))
    email = link.email if link.mailed else None
    if email and session.scalar(select(User.id).where(User.email == email)) is not None:
        email = None
    user = User(username=name, email=email)
    user.set_password(password)
    session.add(user)
    session.flush()
    if link.survey is not None and link.role in ROLES and link.survey.owner_id != user.id:
        _offer_to(session, link, user, pending=True)
    return user


def take_role_offer(session: Session, token: str, user: User) -> Membership:
    """``user``, signed in, takes up the role a role offer's link offers, with the account they have:
    the link is theirs to use (they hold it), and pressing the button on its page is their consent."""
    link = live_link(session, token)
    if link is None or link.purpose != "role_offer" or link.survey is None or link.role not in ROLES:
        raise NotFound("account_link.dead")
    _check_taker(link.survey, user)
    link = _claim(session, token, ("role_offer",))
    _retire_other_offers(session, link, user)
    return _offer_to(session, link, user, pending=False)


def _check_taker(survey: Survey, user: User) -> None:
    if survey.owner_id == user.id:
        raise Conflict("role_invitation.owner")
    for membership in survey.memberships:
        if membership.user_id == user.id and not membership.pending:
            raise Conflict("role_invitation.member_already")


def _retire_other_offers(session: Session, link: AccountLink, user: User) -> None:
    """Offers of the same survey to the same account are answered with this one."""
    session.execute(
        update(AccountLink)
        .where(
            AccountLink.purpose == "role_offer",
            AccountLink.survey_id == link.survey_id,
            AccountLink.user_id == user.id,
            AccountLink.used.is_(False),
            AccountLink.id != link.id,
        )
        .values(used=True)
        .execution_options(synchronize_session=False)
    )


def offers_for(session: Session, user: User) -> list[AccountLink]:
    """The live role offers that name ``user``'s account (made while they had it): the offers their
    start page shows, newest first."""
    found = session.scalars(
        select(AccountLink)
        .where(
            AccountLink.purpose == "role_offer",
            AccountLink.user_id == user.id,
            AccountLink.used.is_(False),
            AccountLink.expires_at > now(),
        )
        .order_by(AccountLink.id.desc())
    )
    return [link for link in found if link.survey is not None and minter_may(link)]


def answer_offer(session: Session, link: AccountLink, user: User, accept: bool) -> Membership | None:
    """``user`` accepts (the role is theirs from now on) or declines an offer from :func:`offers_for`.

    Declining does not delete the role offer: it stops naming the account and stays in the survey's
    list until it expires or is withdrawn, exactly like a role offer to an address that has no
    account, so that the organizers cannot tell from the list whether anyone was there to decline."""
    if not accept:
        link.user = None
        return None
    _check_taker(link.survey, user)  # type: ignore[arg-type]
    claimed = session.execute(
        update(AccountLink)
        .where(AccountLink.id == link.id, AccountLink.used.is_(False), AccountLink.expires_at > now())
        .values(used=True)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:
        raise NotFound("role_invitation.not_found")
    link.used = True
    _retire_other_offers(session, link, user)
    return _offer_to(session, link, user, pending=False)


def set_password_with_link(session: Session, token: str, password: str) -> User:
    """Set the password of the user a ``setup`` or ``reset`` link names; every sign-in session of
    theirs ends (whoever had the old password is signed out)."""
    link = live_link(session, token)
    if link is None or link.purpose not in ("setup", "reset") or link.user is None:
        raise NotFound("account_link.dead")
    check_new_password(password, path=("password",))
    link = _claim(session, token, ("setup", "reset"))
    user = link.user
    assert user is not None
    user.set_password(password)
    end_other_sessions(session, user, None)
    revoke_password_links(session, user)
    return user
