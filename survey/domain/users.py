"""What an administrator does with users: make an account, disable or enable it, let its owner set a
new password, and name other administrators.

An administrator never chooses or sees anyone's password: a new account, and a reset, come with a
single-use link (survey.domain.links) through which the user sets their own. An administrator cannot
disable their own account or take their own administrator's role away, so there is always at least
one administrator who can sign in (the first is made by ``flask --app survey create-user --admin``
or is the demo user).

Everything here answers a non-administrator with :class:`NotFound`, as if there were no such page.
The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from .errors import Conflict, DomainError, NotFound
from .links import check_username, normalize_email, password_link, revoke_password_links
from .models import NO_PASSWORD, AccountLink, LoginSession, User


def is_admin(user: User | None) -> bool:
    return bool(user is not None and getattr(user, "is_authenticated", False) and user.is_admin and not user.disabled)


def require_admin(user: User | None) -> None:
    if not is_admin(user):
        raise NotFound("There is nothing here.")


def all_users(session: Session, actor: User) -> list[User]:
    require_admin(actor)
    return list(session.scalars(select(User).order_by(func.lower(User.username), User.id)))


def _user(session: Session, actor: User, user_id: int | None) -> User:
    require_admin(actor)
    user = session.get(User, user_id) if user_id is not None else None
    if user is None:
        raise NotFound("There is no such user.", path=("user_id",))
    return user


def create_user(
    session: Session, actor: User, username: str, email: str | None, admin: bool = False
) -> tuple[User, AccountLink, str]:
    """A new account without a password, and the link (7 days) through which its owner sets one."""
    require_admin(actor)
    name = check_username(session, username)
    address = normalize_email(email)
    if address and session.scalar(select(User.id).where(User.email == address)) is not None:
        raise DomainError(f"Another user has the address {address}.", path=("email",))
    user = User(username=name, email=address, is_admin=bool(admin), password_hash=NO_PASSWORD)
    session.add(user)
    session.flush()
    link, token = password_link(session, user, actor)
    return user, link, token


def set_disabled(session: Session, actor: User, user_id: int | None, disabled: bool) -> User:
    """Disable an account (it cannot sign in; its sign-in sessions and password links end at once)
    or enable it again. Nothing of its surveys or roles is deleted."""
    user = _user(session, actor, user_id)
    if user.id == actor.id and disabled:
        raise Conflict("You cannot disable your own account.", path=("user_id",))
    user.disabled = disabled
    if disabled:
        session.execute(delete(LoginSession).where(LoginSession.user_id == user.id))
        revoke_password_links(session, user)
    return user


def set_admin(session: Session, actor: User, user_id: int | None, admin: bool) -> User:
    user = _user(session, actor, user_id)
    if user.id == actor.id and not admin:
        raise Conflict("You cannot take away your own administrator's role; ask another administrator.")
    user.is_admin = admin
    return user


def reset_link(session: Session, actor: User, user_id: int | None) -> tuple[User, AccountLink, str]:
    """A link for the user to choose a new password (1 hour), or their first one (7 days) if they
    never set one. Their password stays what it is until the link is used."""
    user = _user(session, actor, user_id)
    if user.disabled:
        raise Conflict(f"{user.username}'s account is disabled: enable it first.", path=("user_id",))
    link, token = password_link(session, user, actor)
    return user, link, token
