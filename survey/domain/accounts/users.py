"""What an administrator does with users: make an account, disable or enable it, let its owner set a
new password, and name other administrators.

An administrator never chooses or sees anyone's password: a new account, and a reset, come with a
single-use link (survey.domain.accounts.account_links) through which the user sets their own.

There is always at least one enabled administrator (the first is made by
``flask --app survey create-user --admin`` or is the demo user). An administrator cannot disable
their own account or take their own role away, and nobody can disable or demote the last one. That
rule is a count, and two administrators demoting each other at the same moment would each count
two: so a change that takes an administrator away first locks every enabled administrator's row
(``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite the write lock, taken before anything is read),
then counts, then writes. The second of two racing changes waits for the first, counts again, and
is refused (its own maker may no longer be an administrator by then, which it checks too).

Everything here answers a non-administrator with :class:`NotFound`, as if there were no such page.
The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from survey.domain.accounts.account_links import check_username, normalize_email, password_link, revoke_password_links
from survey.domain.accounts.api_tokens import revoke_all as revoke_all_tokens
from survey.domain.accounts.quota import SendLimit, spend
from survey.domain.accounts.site import set_members_invite_accounts, settings
from survey.domain.base import begin_writing
from survey.domain.errors import Conflict, DomainError, NotFound
from survey.domain.models import NO_PASSWORD, AccountLink, LoginSession, User


def is_admin(user: User | None) -> bool:
    return bool(user is not None and getattr(user, "is_authenticated", False) and user.is_admin and not user.disabled)


def require_admin(user: User | None) -> None:
    if not is_admin(user):
        raise NotFound("page.nothing_here")


def all_users(session: Session, actor: User) -> list[User]:
    require_admin(actor)
    return list(session.scalars(select(User).order_by(func.lower(User.username), User.id)))


def _user(session: Session, actor: User, user_id: int | None) -> User:
    require_admin(actor)
    user = session.get(User, user_id) if user_id is not None else None
    if user is None:
        raise NotFound("user.not_found", path=("user_id",))
    return user


def create_user(
    session: Session, actor: User, username: str, email: str | None, admin: bool = False, quota: SendLimit | None = None
) -> tuple[User, AccountLink, str]:
    """A new account without a password, and the link (7 days) through which its owner sets one
    (a unit of ``actor``'s budget of invitations and e-mails: survey.domain.accounts.quota)."""
    require_admin(actor)
    name = check_username(session, username)
    address = normalize_email(email)
    if address and session.scalar(select(User.id).where(User.email == address)) is not None:
        raise DomainError("user.email_taken", path=("email",), address=address)
    spend(session, actor, quota)
    user = User(username=name, email=address, is_admin=bool(admin), password_hash=NO_PASSWORD)
    session.add(user)
    session.flush()
    link, token = password_link(session, user, actor)
    return user, link, token


def _keep_an_administrator(session: Session, actor: User, user: User) -> None:
    """Refuse to take ``user``'s administrator's power away if no other enabled administrator would
    be left; run under a lock on every administrator's row, so that racing changes are counted one
    after the other (see the module's docstring)."""
    begin_writing(session)
    administrators = session.scalars(
        select(User)
        .where(User.is_admin.is_(True), User.disabled.is_(False))
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    if actor not in administrators:  # demoted or disabled by someone else a moment ago
        raise NotFound("page.nothing_here")
    if user in administrators and len(administrators) <= 1:
        raise Conflict("user.last_administrator", path=("user_id",))


def set_disabled(session: Session, actor: User, user_id: int | None, disabled: bool) -> User:
    """Disable an account (it cannot sign in; its sign-in sessions, API tokens and password links end at once)
    or enable it again. Nothing of its surveys or roles is deleted."""
    user = _user(session, actor, user_id)
    if user.id == actor.id and disabled:
        raise Conflict("user.disable_self", path=("user_id",))
    if disabled:
        _keep_an_administrator(session, actor, user)
    user.disabled = disabled
    if disabled:
        session.execute(delete(LoginSession).where(LoginSession.user_id == user.id))
        revoke_all_tokens(session, user)  # for good: enabling the account again does not bring them back
        revoke_password_links(session, user)
        # the links they made die with their rights (survey.domain.accounts.account_links.minter_may): deleted, so
        # that enabling the account again does not bring them back
        session.execute(
            delete(AccountLink)
            .where(AccountLink.invited_by_id == user.id, AccountLink.used.is_(False))
            .execution_options(synchronize_session=False)
        )
    return user


def set_admin(session: Session, actor: User, user_id: int | None, admin: bool) -> User:
    user = _user(session, actor, user_id)
    if user.id == actor.id and not admin:
        raise Conflict("user.demote_self")
    if not admin:
        _keep_an_administrator(session, actor, user)
    user.is_admin = admin
    return user


def reset_link(
    session: Session, actor: User, user_id: int | None, quota: SendLimit | None = None
) -> tuple[User, AccountLink, str]:
    """A link for the user to choose a new password (1 hour), or their first one (7 days) if they
    never set one. Their password stays what it is until the link is used."""
    user = _user(session, actor, user_id)
    if user.disabled:
        raise Conflict("user.disabled", path=("user_id",), username=user.username)
    spend(session, actor, quota)
    link, token = password_link(session, user, actor)
    return user, link, token


def members_invite_accounts(session: Session, actor: User) -> bool:
    """Whether users who are not administrators may invite people to make accounts (survey.domain.accounts.site)."""
    require_admin(actor)
    return bool(settings(session).members_invite_accounts)


def set_members_invite_accounts_by(session: Session, actor: User, allowed: bool) -> bool:
    """An administrator allows users who are not administrators to invite people to make accounts,
    or stops them (their invitations already made can no longer make accounts either)."""
    require_admin(actor)
    set_members_invite_accounts(session, allowed)
    return bool(allowed)
