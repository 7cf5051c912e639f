"""Personal API tokens: what a script or a notebook sends instead of a browser's sign-in.

A signed-in user makes a named token with one scope (:data:`~survey.domain.models.API_SCOPES`:
reading results and exports, managing surveys, submitting imports), optionally limited to some of
the surveys they can see, for a number of days. The token is shown once (:func:`create_token`
returns it) and only its SHA-256 digest is stored (:func:`survey.domain.accounts.sign_in.digest`,
the one that keeps sign-in sessions and account links): a copy of the database calls nothing. It
starts with :data:`PREFIX`, so that a secret scanner, a log reviewer or its owner knows one when
they see it.

A token grants nothing of its own: :func:`authenticate` gives back its user and its limits
(:class:`Grant`), and the caller then asks the same rules as for that user in a browser
(:mod:`survey.domain.accounts.access`), so a role removed is a right removed at the next request.
A token is refused when it is unknown, expired, revoked, or its user is disabled; disabling an
account revokes its tokens for good (:func:`revoke_all`), and deleting it deletes them.

``last_used_on`` is a day, not a time. A time of each use would be a record of when a researcher
read which results, kept for no purpose of theirs, and it would make every read a write (SQLite
has one writer at a time). A day answers the question the list is for ("is this token still in
use?"), is written at most once a day per token, and so makes the first request of a day the only
one that takes longer: the timing difference tells the token's holder, and nobody else, that this
was the token's first use today.

The functions change the session and return; the caller commits.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from survey.domain.errors import DomainError, NotFound
from survey.domain.models import API_SCOPES, ApiToken, Survey, User, today

from .access import visible_surveys
from .sign_in import TOKEN_BYTES, digest

#: What every token starts with ("randomized-response survey token").
PREFIX = "rrs_"
#: How long a token may last, in days; the account page offers a few of these.
MIN_DAYS, MAX_DAYS = 1, 365
EXPIRY_CHOICES = (7, 30, 90, 365)
#: A token's name (which the user chooses: "laptop R script").
MAX_NAME_LENGTH = 80
#: Live (not revoked, not expired) tokens one user may hold.
MAX_LIVE_TOKENS = 20
#: A bearer value longer than this is no token of ours; it is refused without hashing.
MAX_TOKEN_LENGTH = 200


@dataclass(frozen=True)
class Grant:
    """What an authenticated token lets its request do: act as ``user`` within ``scope`` and, when
    ``survey_ids`` is not None, only on those surveys; the user's current role still decides."""

    user: User
    token_id: int
    scope: str
    survey_ids: frozenset[int] | None

    def reaches(self, survey: Survey) -> bool:
        return self.survey_ids is None or survey.id in self.survey_ids

    def require_scope(self, *scopes: str) -> None:
        """Refuse (403 ``token.scope``) unless the token's scope is one of ``scopes``."""
        if self.scope not in scopes:
            raise DomainError("token.scope", scope=self.scope, needed=" or ".join(scopes))


def _live(user: User):
    return (ApiToken.user_id == user.id) & ApiToken.revoked.is_(False) & (ApiToken.expires_on >= today())


def create_token(
    session: Session,
    user: User,
    name: str | None,
    scope: str | None,
    days: int | None,
    survey_ids: Iterable[int] | None = None,
) -> tuple[ApiToken, str]:
    """A new token of ``user``'s: its row, and the token itself (shown once, never stored).

    ``survey_ids`` (None or empty: every survey the user may reach) must be surveys the user can see
    now. Refused: an empty or long name, an unknown scope, days out of range, too many live tokens.
    """
    name = (name or "").strip()
    if not name:
        raise DomainError("text.required", path=("name",))
    if len(name) > MAX_NAME_LENGTH:
        raise DomainError("text.too_long", path=("name",), limit=MAX_NAME_LENGTH)
    if scope not in API_SCOPES:
        raise DomainError("token.scope_unknown", path=("scope",), scopes=", ".join(API_SCOPES))
    if not isinstance(days, int) or not MIN_DAYS <= days <= MAX_DAYS:
        raise DomainError("token.expiry_out_of_range", path=("days",), least=MIN_DAYS, most=MAX_DAYS)
    chosen = set(survey_ids or ())
    surveys: list[Survey] = []
    if chosen:
        visible = {s.id: s for s in [*visible_surveys(session, user), *visible_surveys(session, user, archived=True)]}
        if not chosen <= visible.keys():
            raise DomainError("token.survey_not_visible", path=("surveys",))
        surveys = [visible[i] for i in sorted(chosen)]
    live = session.scalar(select(func.count()).select_from(ApiToken).where(_live(user)))
    if live >= MAX_LIVE_TOKENS:
        raise DomainError("token.too_many", most=MAX_LIVE_TOKENS)
    token = PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    row = ApiToken(
        user_id=user.id,
        name=name,
        scope=scope,
        token_hash=digest(token),
        restricted=bool(surveys),
        created_on=today(),
        expires_on=today() + dt.timedelta(days=days),
        surveys=surveys,
    )
    session.add(row)
    session.flush()
    return row, token


def tokens_of(session: Session, user: User) -> list[ApiToken]:
    """``user``'s tokens, live ones first, newest first; revoked and expired ones are listed too."""
    rows = session.scalars(select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.id.desc()))
    return sorted(rows, key=lambda t: not is_live(t))


def is_live(token: ApiToken) -> bool:
    return not token.revoked and token.expires_on >= today()


def revoke_token(session: Session, user: User, token_id: int | None) -> ApiToken:
    """Revoke one of ``user``'s tokens (at once: its next request is refused). Someone else's token,
    or none, is a 404, so that ids leak nothing."""
    row = session.get(ApiToken, token_id) if isinstance(token_id, int) else None
    if row is None or row.user_id != user.id:
        raise NotFound("page.nothing_here")
    row.revoked = True
    return row


def revoke_all(session: Session, user: User) -> None:
    """Revoke every token of ``user`` (their account is being disabled: enabling it again does not
    bring the tokens back)."""
    session.execute(
        update(ApiToken)
        .where(ApiToken.user_id == user.id, ApiToken.revoked.is_(False))
        .values(revoked=True)
        .execution_options(synchronize_session=False)
    )


def authenticate(session: Session, bearer: str | None) -> Grant:
    """The grant of the token ``bearer``, or a :class:`DomainError` (401) with a stable code:
    ``token.unknown``, ``token.expired``, ``token.revoked``, ``token.user_disabled``. One query by
    the token's digest (an index lookup: its time does not depend on how close a guess was). The
    day of last use is set when it changes (the caller commits)."""
    if not bearer or len(bearer) > MAX_TOKEN_LENGTH or not bearer.startswith(PREFIX):
        raise DomainError("token.unknown")
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest(bearer)))
    if row is None:
        raise DomainError("token.unknown")
    if row.revoked:
        raise DomainError("token.revoked")
    if row.expires_on < today():
        raise DomainError("token.expired", last_day=row.expires_on.isoformat())
    user = row.user
    if user.disabled:
        raise DomainError("token.user_disabled")
    if row.last_used_on != today():
        row.last_used_on = today()
    survey_ids = frozenset(s.id for s in row.surveys) if row.restricted else None
    return Grant(user=user, token_id=row.id, scope=row.scope, survey_ids=survey_ids)
