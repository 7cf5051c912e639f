"""Signing in: a password check that takes the same work whether or not the user exists, and
sign-in sessions that the server can end.

Flask-Login keeps whatever ``User.get_id()`` returns in the session cookie. Here that is a random
token naming one sign-in session (Flask-Login's "alternative id" pattern), not the user's id, and
the database keeps a row per session holding a SHA-256 hash of the token, the user and the day it
began. Deleting the row ends the session: a copy of the cookie saved before signing out, or before
the password was changed elsewhere, names a session that no longer exists. The token itself is never
stored, so a copy of the database signs nobody in.

The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from survey.domain.errors import DomainError
from survey.domain.models import LoginSession, User, today

from . import passwords

TOKEN_BYTES = 32
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 200
#: A session older than this is not honoured (and is deleted at the user's next sign-in), even if
#: its browser was never closed.
MAX_SESSION_DAYS = 30


def check_new_password(password: str | None, path: tuple[str, ...] = ("new_password",)) -> None:
    """Refuse a new password that is too short or too long (the one rule for every way of setting one)."""
    if not MIN_PASSWORD_LENGTH <= len(password or "") <= MAX_PASSWORD_LENGTH:
        raise DomainError("password.length", path=path, least=MIN_PASSWORD_LENGTH, most=MAX_PASSWORD_LENGTH)


def authenticate(session: Session, username: str, password: str) -> User | None:
    """The user if ``password`` is theirs, else None; the same hashing work either way, so the time
    a refusal takes does not tell whether the username exists. A disabled user is returned too (the
    caller refuses them, saying why): only someone who knows the password learns it is disabled."""
    user = session.scalar(select(User).where(User.username == username))
    # an account whose owner has not set a password yet is checked like an unknown one: same work
    stored = user.password_hash if user is not None and user.has_password else None
    matches = passwords.check_password(stored or passwords.dummy_hash(), password)
    return user if stored is not None and matches else None


def digest(token: str) -> str:
    """The SHA-256 hash under which a token (of a session or a link) is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def _oldest_honoured() -> dt.date:
    return today() - dt.timedelta(days=MAX_SESSION_DAYS)


def start_session(session: Session, user: User) -> str:
    """A new sign-in session for ``user``; returns its token, which is also set as the user's id for
    Flask-Login. The user's sessions too old to be honoured are deleted on the way."""
    session.execute(
        delete(LoginSession).where(LoginSession.user_id == user.id, LoginSession.created_on < _oldest_honoured())
    )
    token = secrets.token_urlsafe(TOKEN_BYTES)
    session.add(LoginSession(user_id=user.id, token_hash=digest(token), created_on=today()))
    user.session_token = token
    return token


def user_for_token(session: Session, token: str | None) -> User | None:
    """The user of the live sign-in session ``token`` names (one query), or None (also for a disabled user)."""
    if not token or len(token) > 200:
        return None
    user = session.scalar(
        select(User)
        .join(LoginSession, LoginSession.user_id == User.id)
        .where(
            LoginSession.token_hash == digest(token),
            LoginSession.created_on >= _oldest_honoured(),
            User.disabled.is_(False),
        )
    )
    if user is not None:
        user.session_token = token
    return user


def end_session(session: Session, token: str | None) -> None:
    """End the sign-in session ``token`` names (signing out)."""
    if token:
        session.execute(delete(LoginSession).where(LoginSession.token_hash == digest(token)))


def end_other_sessions(session: Session, user: User, keep_token: str | None) -> None:
    """End every sign-in session of ``user`` but the one ``keep_token`` names (after a password
    change: whoever had the old password, or a copied cookie, is signed out everywhere else)."""
    statement = delete(LoginSession).where(LoginSession.user_id == user.id)
    if keep_token:
        statement = statement.where(LoginSession.token_hash != digest(keep_token))
    session.execute(statement)
