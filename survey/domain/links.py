"""Single-use links for accounts: an invitation to make one, and a link to set or reset a password.

Three kinds (``AccountLink.purpose``):

- ``invitation``: an organizer shares a survey with someone who has no account yet, by e-mail
  address or by name. Whoever opens the link chooses a username (the name or the address's first
  part is suggested) and a password; the account is made, and the role offered waits on their start
  page for them to accept it, like any other offer (survey.domain.sharing). Valid for 7 days.
- ``setup``: an administrator made an account (survey.domain.users); its owner sets the first
  password through the link. Valid for 7 days.
- ``reset``: an administrator lets a user choose a new password. Valid for 1 hour; using it ends
  every sign-in session of the user, like a password change.

A link carries a random token of 256 bits; only its SHA-256 hash is stored (as for sign-in
sessions), so a copy of the database opens no link. A link works once: it is claimed by one
``UPDATE ... WHERE used = false``, so two requests racing with the same link cannot both use it. It
is dead after it expires, when a newer link of the same kind replaces it, when its user is disabled,
or when it is withdrawn. Every refusal of a link says the same thing, whether it never existed,
expired or was used: the token is the only secret, and the answer should not help anyone guess.

The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import unicodedata

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from .accounts import TOKEN_BYTES, check_new_password, digest, end_other_sessions
from .errors import DomainError, NotFound
from .models import ROLES, AccountLink, Membership, Survey, User

LIFETIMES = {
    "invitation": dt.timedelta(days=7),
    "setup": dt.timedelta(days=7),
    "reset": dt.timedelta(hours=1),
}
DEAD_LINK = (
    "This link does not work (any more): links work once, and only for a while. Ask whoever sent it for a new one."
)
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
    if len(email) > MAX_EMAIL_LENGTH or not _EMAIL.fullmatch(email):
        raise DomainError("This is not an e-mail address (like name@example.org).", path=path)
    return email


def check_username(session: Session, username: str | None, path: tuple[str, ...] = ("username",)) -> str:
    """A new username, stripped, if it follows the rule and nobody has it (in any case); else an error."""
    name = (username or "").strip()
    if not name:
        raise DomainError("Choose a username.", path=path)
    if len(name) > MAX_USERNAME_LENGTH or not _USERNAME.fullmatch(name):
        raise DomainError(
            f"Use up to {MAX_USERNAME_LENGTH} letters and digits, with dots, dashes or underscores between them.",
            path=path,
        )
    if session.scalar(select(User.id).where(func.lower(User.username) == name.lower())) is not None:
        raise DomainError(f"The username “{name}” is taken; choose another.", path=path)
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


def invite(session: Session, survey: Survey, actor: User, who: str, role: str) -> tuple[AccountLink, str]:
    """An invitation for someone without an account, named by e-mail address or by name, to make one
    and be offered ``role`` on ``survey``; returns the link and its token (shown or sent once, never
    stored). An earlier invitation of the same person to the same survey is replaced. The caller
    checks that ``actor`` may share ``survey`` and that ``who`` names no user."""
    if role not in ROLES:
        raise DomainError("Choose a role.", path=("role",))
    who = (who or "").strip()
    if "@" in who:
        email, name = normalize_email(who, path=("username",)), None
    else:
        email, name = None, who
        if not name:
            raise DomainError("Give a username, an e-mail address or a name.", path=("username",))
        if len(name) > MAX_USERNAME_LENGTH or not suggested_username(name):
            raise DomainError(
                f"Give a name of up to {MAX_USERNAME_LENGTH} characters, with letters or digits.", path=("username",)
            )
    same_person = AccountLink.email == email if email else func.lower(AccountLink.name) == name.lower()
    session.execute(
        delete(AccountLink).where(
            AccountLink.purpose == "invitation",
            AccountLink.survey_id == survey.id,
            AccountLink.used.is_(False),
            same_person,
        )
    )
    session.expire(survey, ["account_links"])
    return _issue(session, "invitation", email=email, name=name, survey=survey, role=role, invited_by=actor)


def password_link(session: Session, user: User, actor: User | None = None) -> tuple[AccountLink, str]:
    """A link for ``user`` to set a password: the first one (``setup``, 7 days) if they have none,
    else a new one (``reset``, 1 hour). Their earlier unused password links die."""
    revoke_password_links(session, user)
    purpose = "reset" if user.has_password else "setup"
    return _issue(session, purpose, user=user, email=user.email, invited_by=actor)


def revoke_password_links(session: Session, user: User) -> None:
    session.execute(
        delete(AccountLink).where(
            AccountLink.user_id == user.id, AccountLink.purpose.in_(("setup", "reset")), AccountLink.used.is_(False)
        )
    )


def open_invitations(session: Session, survey: Survey) -> list[AccountLink]:
    """The invitations to ``survey`` not used yet and not expired, oldest first."""
    return list(
        session.scalars(
            select(AccountLink)
            .where(
                AccountLink.survey_id == survey.id,
                AccountLink.purpose == "invitation",
                AccountLink.used.is_(False),
                AccountLink.expires_at > now(),
            )
            .order_by(AccountLink.id)
        )
    )


def withdraw_invitation(session: Session, survey: Survey, link_id: int | None) -> AccountLink:
    """Delete an invitation to ``survey`` (its link stops working). The caller checks the rights."""
    link = session.get(AccountLink, link_id) if link_id is not None else None
    if link is None or link.survey_id != survey.id or link.purpose != "invitation" or link.used:
        raise NotFound("That invitation was used or withdrawn already.", path=("link_id",))
    session.delete(link)
    return link


# -- using links -----------------------------------------------------------------------------------


def live_link(session: Session, token: str | None) -> AccountLink | None:
    """The link ``token`` opens, if it is unused, unexpired and its user (if any) is not disabled."""
    if not token or len(token) > 200:
        return None
    link = session.scalar(
        select(AccountLink).where(
            AccountLink.token_hash == digest(token), AccountLink.used.is_(False), AccountLink.expires_at > now()
        )
    )
    if link is None or (link.user is not None and link.user.disabled):
        return None
    if link.purpose == "invitation" and link.survey_id is not None and link.survey is None:
        return None
    return link


def _claim(session: Session, token: str, purposes: tuple[str, ...]) -> AccountLink:
    """Mark the link used, in one statement that only one request can win; NotFound if it is dead."""
    link = live_link(session, token)
    if link is None or link.purpose not in purposes:
        raise NotFound(DEAD_LINK)
    claimed = session.execute(
        update(AccountLink)
        .where(AccountLink.id == link.id, AccountLink.used.is_(False), AccountLink.expires_at > now())
        .values(used=True)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:
        raise NotFound(DEAD_LINK)
    link.used = True
    return link


def accept_account_invitation(session: Session, token: str, username: str, password: str) -> User:
    """Make the account an invitation offers: ``username`` (checked and free) with ``password``, and
    the invited e-mail address. Every live invitation to the same address (from other surveys too)
    becomes a role offered to the new user, waiting for them to accept it; those links die."""
    link = live_link(session, token)
    if link is None or link.purpose != "invitation":
        raise NotFound(DEAD_LINK)
    name = check_username(session, username)
    check_new_password(password, path=("password",))
    if link.email and session.scalar(select(User.id).where(User.email == link.email)) is not None:
        raise DomainError(
            f"An account with the address {link.email} exists already: sign in with it, or ask for a new invitation.",
            path=("username",),
        )
    link = _claim(session, token, ("invitation",))
    user = User(username=name, email=link.email)
    user.set_password(password)
    session.add(user)
    session.flush()
    offers = [link]
    if link.email:
        others = session.scalars(
            select(AccountLink).where(
                AccountLink.purpose == "invitation",
                AccountLink.email == link.email,
                AccountLink.used.is_(False),
                AccountLink.expires_at > now(),
                AccountLink.id != link.id,
            )
        ).all()
        for other in others:
            other.used = True
            offers.append(other)
    offered: set[int] = set()
    for offer in offers:
        if offer.survey is None or offer.role not in ROLES or offer.survey_id in offered:
            continue
        if offer.survey.owner_id == user.id:
            continue
        offered.add(offer.survey.id)
        offer.survey.memberships.append(Membership(user=user, role=offer.role, pending=True))
    return user


def set_password_with_link(session: Session, token: str, password: str) -> User:
    """Set the password of the user a ``setup`` or ``reset`` link names; every sign-in session of
    theirs ends (whoever had the old password is signed out)."""
    link = live_link(session, token)
    if link is None or link.purpose not in ("setup", "reset") or link.user is None:
        raise NotFound(DEAD_LINK)
    check_new_password(password, path=("password",))
    link = _claim(session, token, ("setup", "reset"))
    user = link.user
    assert user is not None
    user.set_password(password)
    end_other_sessions(session, user, None)
    return user
