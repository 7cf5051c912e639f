"""The stored data: surveys, their questions and frozen designs, submissions and reported answers.

What is *not* here matters as much: a submission has no IP address, no user agent, no time of day
and no link to whoever or whatever admitted it; an answer row holds only the reported (randomized)
category code. The true answer to a randomized question never reaches the server at all.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship, validates
from sqlalchemy.types import TypeDecorator

from survey.domain.accounts import passwords
from survey.domain.accounts.usernames import username_digest

# the registry's lists of kinds, still imported from here by older callers
from survey.domain.surveys.arms import composed
from survey.domain.surveys.kinds import DIRECT_KINDS as DIRECT_KINDS
from survey.domain.surveys.kinds import KINDS as KINDS
from survey.domain.surveys.kinds import Kind, kind_of
from survey.domain.surveys.planning import DEFAULT_RESPONDENTS, DEFAULT_TARGET_MARGIN
from survey.privacy import Mechanism, Randomizer, mechanism_from_dict, total_epsilon
from survey.privacy.designs import DESIGNS

from .base import Base
from .errors import Conflict

STATUSES = ("draft", "open", "closed", "archived")
#: The states a spec may ask for (a survey is archived by its owner, never created so).
SPEC_STATUSES = ("draft", "open", "closed")
ACCESS_MODES = ("link", "invitation")
#: The stored value of a declined answer (a respondent chose "prefer not to say" on a question that
#: allows it). Only randomized questions may allow it, and their stored values (option or report
#: codes) are never negative, so this value cannot be mistaken for an answer.
DECLINED = -1
#: What the respondent's browser sends for a declined question, instead of a randomized report.
DECLINED_MARKER = "declined"
ROLES = ("organizer", "researcher")
#: What a single-use account link is for: making an account (an invitation), setting the first
#: password of an account an administrator made, or resetting a password (survey.domain.accounts.account_links).
LINK_PURPOSES = ("role_offer", "setup", "reset")
#: What a personal API token may be used for (survey.domain.accounts.api_tokens): reading results
#: and exports, managing surveys, submitting imports.
API_SCOPES = ("results", "manage", "imports")
#: The password hash of an account whose owner has not set a password yet: no password matches it.
NO_PASSWORD = "!"


def today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def refusal_on(status: str, opens_on: dt.date | None, closes_on: dt.date | None, day: dt.date) -> Conflict | None:
    """Why a survey in this state refuses a submission made on ``day`` (None when it accepts it)."""
    if status == "draft":
        return Conflict("survey.not_published")
    if status in ("closed", "archived"):
        return Conflict("survey.closed")
    if opens_on is not None and day < opens_on:
        return Conflict("survey.not_open_yet", opens_on=opens_on.isoformat())
    if closes_on is not None and day > closes_on:
        return Conflict("survey.closed_on", closes_on=closes_on.isoformat())
    return None


def accepting_on(status: str, opens_on: dt.date | None, closes_on: dt.date | None, day: dt.date) -> tuple[bool, str]:
    """Whether a survey in this state accepts a submission made on ``day``, and if not, why (in words)."""
    refusal = refusal_on(status, opens_on, closes_on, day)
    return refusal is None, refusal.message if refusal is not None else ""


class User(Base):
    """Someone who signs in: an organizer or researcher (respondents never have an account).

    It offers what Flask-Login asks of a user object (``is_authenticated``, ``is_active``,
    ``is_anonymous``, ``get_id``) itself, so that the model needs no Flask. An administrator
    (``is_admin``) manages the users; a disabled user cannot sign in and has no sign-in session.
    """

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(80), unique=True)
    #: What no two usernames may share (survey.domain.accounts.usernames): a SHA-256 hash of the confusable
    #: skeleton of the normalized name, set with the name. Empty only for a look-alike of an older
    #: account, made before the rule existed.
    username_key: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    created_on: Mapped[dt.date] = mapped_column(Date, default=today)
    #: Where invitations and password links are sent (lower case); optional.
    email: Mapped[str | None] = mapped_column(String(254), unique=True, nullable=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    surveys: Mapped[list[Survey]] = relationship(back_populates="owner")
    memberships: Mapped[list[Membership]] = relationship(back_populates="user", cascade="all, delete-orphan")
    login_sessions: Mapped[list[LoginSession]] = relationship(back_populates="user", cascade="all, delete-orphan")
    api_tokens: Mapped[list[ApiToken]] = relationship(back_populates="user", cascade="all, delete-orphan")

    #: The token of the sign-in session this object was loaded for (see survey.domain.accounts.sign_in); not stored.
    session_token = None
    #: A user object is only ever made for someone who signed in.
    is_authenticated = True
    is_anonymous = False

    @property
    def is_active(self) -> bool:
        return not self.disabled

    @property
    def has_password(self) -> bool:
        """False for an account made by an administrator whose owner has not used its link yet."""
        return self.password_hash != NO_PASSWORD

    def get_id(self) -> str:
        """Flask-Login's "alternative id": the cookie names one sign-in session by its random token,
        not the user by their id, so that the server can end that session (survey.domain.accounts.sign_in)."""
        if not self.session_token:
            raise RuntimeError(
                "sign users in with survey.domain.accounts.sign_in.start_session, which gives the session a token"
            )
        return self.session_token

    @validates("username")
    def _keep_the_key(self, _: str, name: str) -> str:
        self.username_key = username_digest(name) if name else None
        return name

    def set_password(self, password: str) -> None:
        """Scrypt with a random salt, or the method the app configured (:mod:`survey.domain.accounts.passwords`)."""
        self.password_hash = passwords.hash_password(password)

    def check_password(self, password: str) -> bool:
        return self.has_password and passwords.check_password(self.password_hash, password)


class Survey(Base):
    __tablename__ = "surveys"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(80), unique=True)
    title: Mapped[str] = mapped_column(String(200))
    introduction: Mapped[str] = mapped_column(Text, default="")
    closing_message: Mapped[str] = mapped_column(Text, default="")
    #: Who is asking, shown to respondents on the survey, privacy and thank-you pages: who runs the
    #: survey, how to reach them, and the consent or ethics statement (an approval, a reference).
    run_by: Mapped[str] = mapped_column(String(200), default="", server_default=text("''"))
    contact: Mapped[str] = mapped_column(String(300), default="", server_default=text("''"))
    ethics_statement: Mapped[str] = mapped_column(Text, default="", server_default=text("''"))
    status: Mapped[str] = mapped_column(String(10), default="open")
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_on: Mapped[dt.date] = mapped_column(Date, default=today)
    #: Simulated surveys (the demo) know the true shares among their simulated respondents.
    is_simulated: Mapped[bool] = mapped_column(Boolean, default=False)
    #: Optional first and last day on which an open survey accepts submissions.
    opens_on: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    closes_on: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    #: The most total ε a respondent may spend; a survey over it cannot be opened.
    epsilon_cap: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: Planning figures the organizer works with (margins shown at this many respondents).
    expected_respondents: Mapped[int] = mapped_column(Integer, default=DEFAULT_RESPONDENTS)
    target_margin: Mapped[float] = mapped_column(Float, default=DEFAULT_TARGET_MARGIN)
    #: "link": anyone with the link may answer; "invitation": a single-use code is needed.
    access: Mapped[str] = mapped_column(String(12), default="link")
    #: Close the survey once every randomized question's live interval is within the target margin
    #: (survey.domain.results.live); off unless the organizer turns it on.
    auto_close: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: With ``auto_close``: the number of stored submissions at which precision is next checked. The
    #: submission's own statement compares the survey's count with it, so a submission that is not
    #: due costs no check (survey.domain.results.live.close_if_precise sets the next one).
    auto_close_due: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: Answered on shared devices (a computer lab, a tablet passed around): the respondent's page then
    #: draws every report afresh, keeps nothing in the browser and clears itself for the next person,
    #: since a per-browser memo would be shared by everyone at the device (SECURITY.md, section 2).
    shared_devices: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    owner: Mapped[User | None] = relationship(back_populates="surveys")
    questions: Mapped[list[Question]] = relationship(
        back_populates="survey", order_by="Question.position", cascade="all, delete-orphan"
    )
    memberships: Mapped[list[Membership]] = relationship(back_populates="survey", cascade="all, delete-orphan")
    respondent_codes: Mapped[list[RespondentCode]] = relationship(back_populates="survey", cascade="all, delete-orphan")
    account_links: Mapped[list[AccountLink]] = relationship(back_populates="survey", cascade="all, delete-orphan")
    #: The API tokens restricted to this survey (deleting the survey deletes their rows of it).
    api_tokens: Mapped[list[ApiToken]] = relationship(secondary="api_token_surveys", back_populates="surveys")
    #: Its texts in the languages the organizer added (:mod:`survey.domain.surveys.content_translations`);
    #: read only where they are shown (a respondent's page reads its one language with a query of its own).
    translations: Mapped[list[SurveyTranslation]] = relationship(
        back_populates="survey", cascade="all, delete-orphan", passive_deletes=True
    )

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    @property
    def is_draft(self) -> bool:
        return self.status == "draft"

    @property
    def is_archived(self) -> bool:
        return self.status == "archived"

    def accepting_on(self, day: dt.date) -> tuple[bool, str]:
        """Whether a submission made on ``day`` is accepted, and if not, why (in words)."""
        return accepting_on(self.status, self.opens_on, self.closes_on, day)

    @property
    def randomized_questions(self) -> list[Question]:
        return [q for q in self.questions if q.is_randomized]

    @property
    def randomized_option_questions(self) -> list[Question]:
        """The randomized questions answered by an option (a design's matrix): what live intervals,
        anytime tests, comparisons and the logistic regression read (a randomized number's mean is
        on the results page and in the exports)."""
        return [q for q in self.questions if q.is_randomized_option]

    @property
    def direct_questions(self) -> list[Question]:
        return [q for q in self.questions if not q.is_randomized]

    def total_epsilon(self) -> float:
        """What one respondent spends across the randomized questions (basic composition; direct
        questions are not protected and not part of it; a split ballot counts its worst arm, since a
        respondent answers one): a property of the designs alone."""
        return total_epsilon(composed((q.arm_group, q.mechanism().epsilon) for q in self.randomized_questions))


class SurveyTranslation(Base):
    """One of a survey's own texts in a language besides its first (English): the title, a question's
    text, an option's label, ... named by ``path`` ("title", "q:<key>:text", "q:<key>:option:<code>";
    :mod:`survey.domain.surveys.content_translations` lists them). The organizer's content only: the
    language a respondent answered in is stored nowhere.

    A language the organizer added has at least its ``title`` row (empty until translated): the
    survey's languages are the ones its rows name.
    """

    __tablename__ = "survey_translations"

    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), primary_key=True)
    language: Mapped[str] = mapped_column(String(8), primary_key=True)
    path: Mapped[str] = mapped_column(String(80), primary_key=True)
    text: Mapped[str] = mapped_column(Text, default="")
    #: The English the translation was made from: when the English changes (an option's label, a
    #: question's text), the translation is stale until the organizer looks at it again, and a draft
    #: with a stale one is not published (an option's label must say what the option is).
    source: Mapped[str] = mapped_column(Text, default="")

    survey: Mapped[Survey] = relationship(back_populates="translations")


class Membership(Base):
    """A user's role on a survey they do not own: co-organizer, or researcher (results only).

    A membership offered by someone else is ``pending`` until the invited user accepts it: until then
    it grants nothing (survey.domain.accounts.access ignores it) and the survey is not in the invitee's list, so nobody
    can put a survey (and its texts and files) in front of another user without their consent.
    """

    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("survey_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(12))
    pending: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    survey: Mapped[Survey] = relationship(back_populates="memberships")
    #: Read with the membership (one statement for a survey's whole team, not one per member).
    user: Mapped[User] = relationship(back_populates="memberships", lazy="joined")


class LoginSession(Base):
    """One signed-in session: what a session cookie's token refers to, so the server can end it.

    Only a SHA-256 hash of the random token is kept (a copy of the database does not let anyone sign
    in), with the day the session began; no address, no browser, no time of day.
    """

    __tablename__ = "login_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_on: Mapped[dt.date] = mapped_column(Date, default=today)

    user: Mapped[User] = relationship(back_populates="login_sessions")


class AccountLink(Base):
    """A single-use, expiring link that lets someone make an account or set a password.

    ``purpose`` is one of :data:`LINK_PURPOSES`. An invitation names whom it was sent to (``email``
    and/or ``name``, the suggested username) and, when an organizer sent it, the survey and the role
    offered; the others name their ``user``. Only a SHA-256 hash of the link's random token is kept,
    like a sign-in session's: a copy of the database opens no link. A link is dead once ``used``,
    after ``expires_at`` (UTC), or when a newer link of the same kind replaces it.
    """

    __tablename__ = "account_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    purpose: Mapped[str] = mapped_column(String(12))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    email: Mapped[str | None] = mapped_column(String(254))
    name: Mapped[str | None] = mapped_column(String(80))
    survey_id: Mapped[int | None] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), index=True)
    role: Mapped[str | None] = mapped_column(String(12))
    invited_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_on: Mapped[dt.date] = mapped_column(Date, default=today)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)
    used: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: The link reached its address by e-mail (and was shown to nobody): whoever opens it reads that
    #: mailbox, so the account it makes may carry the address (survey.domain.accounts.account_links).
    mailed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    user: Mapped[User | None] = relationship(foreign_keys=[user_id])
    invited_by: Mapped[User | None] = relationship(foreign_keys=[invited_by_id])
    survey: Mapped[Survey | None] = relationship(back_populates="account_links")

    @property
    def addressee(self) -> str:
        """Whom the link is for, in words: the e-mail address, the name, or the user."""
        return self.email or self.name or (self.user.username if self.user else "")


class ApiToken(Base):
    """A personal API token: a signed-in user's named, scoped, expiring credential for scripts
    (survey.domain.accounts.api_tokens).

    Only a SHA-256 hash of the random token is kept, like a sign-in session's: a copy of the database
    calls nothing. ``scope`` is one of :data:`API_SCOPES`; with ``restricted`` the token reaches only
    the surveys listed in ``api_token_surveys`` (none left: none at all). It works through
    ``expires_on`` (UTC), until ``revoked``, and only while its user is enabled and has the role.
    ``last_used_on`` is a day, not a time (survey.domain.accounts.api_tokens says why).
    """

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    scope: Mapped[str] = mapped_column(String(12))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    restricted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_on: Mapped[dt.date] = mapped_column(Date, default=today)
    expires_on: Mapped[dt.date] = mapped_column(Date)
    last_used_on: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    user: Mapped[User] = relationship(back_populates="api_tokens")
    surveys: Mapped[list[Survey]] = relationship(
        secondary="api_token_surveys", order_by="Survey.id", back_populates="api_tokens"
    )


class ApiTokenSurvey(Base):
    """A survey an :class:`ApiToken` with ``restricted`` may reach. Deleting the survey deletes the row
    (and its id is never reused while a row names it); the token stays restricted."""

    __tablename__ = "api_token_surveys"

    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), primary_key=True)
    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), primary_key=True, index=True)


class SiteSettings(Base):
    """What an administrator decides for the whole site, on the users page: one row (``id`` 1), or
    none, which means every default.

    ``members_invite_accounts``: whether users who are not administrators may invite someone without
    an account to make one (survey.domain.accounts.site). Off by default: every account is then made by an
    administrator, and ordinary users share surveys with accounts that exist.
    """

    __tablename__ = "site_settings"

    id: Mapped[int] = mapped_column(primary_key=True)
    members_invite_accounts: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class SendQuota(Base):
    """How many invitations and e-mails one user made in one slice of time (survey.domain.accounts.quota).

    Counted in the database, the one store every worker process shares, so that several workers do
    not each allow the limit; only the rows of the slices still counted are kept per user.
    """

    __tablename__ = "send_quotas"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    #: the slice's number: seconds since the epoch divided by a twelfth of the window's length
    #: (survey.domain.accounts.quota.slice_number)
    window_number: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    used: Mapped[int] = mapped_column(Integer)


class RespondentCode(Base):
    """A respondent code: a single-use code that admits one submission to a survey whose access is
    by code.

    Its older name, "invitation", stays wherever it is stored or public, for compatibility: the
    table (``invitations``), the access mode (``Survey.access == "invitation"``, in specs and the
    API too), the submission's field that carries the code (``invitation``), and the management
    page's URLs. In the code it is a respondent code, never an invitation (an invitation to take a
    role on a survey is a role offer: :class:`AccountLink`).

    It records only *that* it was used: not when, and not which submission it admitted (the
    submission row has no reference to it either), so codes cannot be lined up with responses.
    A code the organizers revoked is ``revoked`` and also ``used``, so that the one conditional
    UPDATE that claims a code (``... AND used = false``) refuses it without knowing of revoking.
    """

    __tablename__ = "invitations"

    id: Mapped[int] = mapped_column(primary_key=True)
    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), index=True)
    code: Mapped[str] = mapped_column(String(40), unique=True)
    used: Mapped[bool] = mapped_column(Boolean, default=False)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    survey: Mapped[Survey] = relationship(back_populates="respondent_codes")


class RangeEnd(TypeDecorator):
    """A range's end, stored as a float and read back as an int where it is whole: a direct number's
    range is whole numbers, and the pages, messages and files write ``5``, not ``5.0``."""

    impl = Float
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Any) -> int | float | None:
        if value is None:
            return None
        return int(value) if float(value).is_integer() else float(value)


class Question(Base):
    __tablename__ = "questions"
    __table_args__ = (UniqueConstraint("survey_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    #: A short stable name, used in the API, the exports and the form field names.
    key: Mapped[str] = mapped_column(String(40))
    kind: Mapped[str] = mapped_column(String(10))
    text: Mapped[str] = mapped_column(Text)
    help_text: Mapped[str] = mapped_column(Text, default="")
    required: Mapped[bool] = mapped_column(Boolean, default=True)
    #: Whether a respondent may decline this (randomized) question with an explicit "prefer not to
    #: say": then the marker :data:`DECLINED_MARKER` is sent instead of a report, and stored as
    #: :data:`DECLINED`. Declining is not hidden: the decline itself is what the answer reveals.
    decline: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: A number question's range: the smallest and the largest number it accepts (else None); whole
    #: for a number asked directly, possibly decimal for a randomized one (0.5 to 2.5 hours).
    minimum: Mapped[float | None] = mapped_column(RangeEnd, nullable=True)
    maximum: Mapped[float | None] = mapped_column(RangeEnd, nullable=True)
    #: A number question's bin edges, strictly inside its range (else None): the results show the
    #: share of answers in each bin (:mod:`survey.privacy.number_bins`).
    bins: Mapped[list[float] | None] = mapped_column(JSON, nullable=True)
    #: For a simulated survey (the demo) only: the true shares among its simulated respondents (a spec
    #: gives the rates to draw them from; the simulation replaces them by the shares it drew); for a
    #: randomized number, ``[the true mean among them]`` (set by the simulation only).
    simulated_truth: Mapped[list[float] | None] = mapped_column(JSON, nullable=True)
    #: The split ballot this question is an arm of (None: an ordinary question), and the probability
    #: that a respondent's browser assigns them this arm. Each respondent answers one arm of a group;
    #: the arms are consecutive questions asking the same thing in different ways (asked directly, or
    #: randomized by different designs): :mod:`survey.domain.surveys.arms`.
    arm_group: Mapped[str | None] = mapped_column(String(40), nullable=True)
    arm_share: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: Whether the respondent randomizes with their own coins or die, as the page tells them
    #: (:mod:`survey.privacy.physical`), and reports what they say: the page draws nothing and sends
    #: the answer given, which is already the report. Same matrix, same estimates, same ε.
    own_coin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    survey: Mapped[Survey] = relationship(back_populates="questions")
    # "selectin": a survey's questions arrive with their options and designs in three queries in
    # all, instead of two more per question.
    options: Mapped[list[Option]] = relationship(
        back_populates="question", order_by="Option.code", cascade="all, delete-orphan", lazy="selectin"
    )
    design: Mapped[Design | None] = relationship(
        back_populates="question", uselist=False, cascade="all, delete-orphan", lazy="selectin"
    )

    @property
    def kind_entry(self) -> Kind:
        """Its kind's entry in the registry (:mod:`survey.domain.surveys.kinds`): what the rest of the app asks
        of a question's kind, instead of comparing its name."""
        return kind_of(self.kind)

    @property
    def is_randomized(self) -> bool:
        return self.kind_entry.randomized

    @property
    def is_randomized_option(self) -> bool:
        """Randomized, and answered by an option: its mechanism is a matrix over its options (not a
        randomized number, whose mechanism reports codes on a grid)."""
        return self.kind_entry.randomized and self.kind_entry.has_options

    @property
    def is_number(self) -> bool:
        """A number in a range: asked directly (its answer's value is the number itself) or
        randomized (its answer is a report code); either way its result is a mean, tallied per value."""
        return self.kind_entry.ranged

    @property
    def labels(self) -> list[str]:
        return [o.label for o in self.options]

    def mechanism(self) -> Mechanism | Randomizer | None:
        """The frozen mechanism, rebuilt from (and checked against) the stored matrix; for a
        randomized number, its number mechanism (:mod:`survey.privacy.numeric`)."""
        return None if self.design is None else self.design.mechanism()


class Option(Base):
    __tablename__ = "options"
    __table_args__ = (UniqueConstraint("question_id", "code"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"))
    #: The value reported and stored: 0..k-1, the row/column of the design's matrix.
    code: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(200))

    question: Mapped[Question] = relationship(back_populates="options")


class Design(Base):
    """A randomized question's mechanism, frozen when the survey was created open.

    Both the parameters and the matrix are stored: the parameters to show and to re-create the
    design, the matrix because it is what respondents' browsers sampled from. Loading checks that
    the two still agree.

    A randomized *number* (a design of numbers, :mod:`survey.privacy.numeric`) has no matrix: its
    mechanism is its design (``mechanism_name``), its ε (``epsilon``, also in ``parameters``) and
    the question's range, all stored, and it is rebuilt from them. Its ``matrix`` is an empty list:
    the column is NOT NULL for the matrix designs, and an empty list says "no matrix" without a
    migration; nothing reads it for a number (``mechanism()`` asks the question's kind first).
    """

    __tablename__ = "designs"

    id: Mapped[int] = mapped_column(primary_key=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"), unique=True)
    mechanism_name: Mapped[str] = mapped_column(String(40))
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON)
    matrix: Mapped[list[list[float]]] = mapped_column(JSON)
    #: None when ε is infinite (one-sided deniability).
    epsilon: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: The privacy level as the organizer gave it, when that is not ``parameters``: a design set by
    #: its ε (``{"epsilon": 1.5}``) is built, stored and estimated from the parameters that ε gives,
    #: and exported in the spec as it was set. None otherwise.
    given: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)

    question: Mapped[Question] = relationship(back_populates="design")

    @classmethod
    def from_mechanism(cls, mechanism: Mechanism, privacy: dict[str, Any] | None = None) -> Design:
        """The stored design of ``mechanism``; ``privacy`` (the spec's object it was made from) is kept
        as :attr:`given` when it set the level by ε, which only designs that accept ε in a spec can."""
        spec = mechanism.to_dict()
        if "matrix" not in spec:  # a design of numbers: its ε (the range is the question's)
            return cls(
                mechanism_name=mechanism.design,
                parameters={"epsilon": float(mechanism.epsilon)},
                matrix=[],
                epsilon=float(mechanism.epsilon),
                given={"epsilon": float(mechanism.epsilon)},
            )
        design = cls(
            mechanism_name=mechanism.design,
            parameters={k: v for k, v in spec.items() if k not in ("design", "labels", "matrix", "epsilon")},
            matrix=spec["matrix"],
            epsilon=spec["epsilon"],
        )
        if privacy is not None and "epsilon" in privacy:
            design.given = {k: v for k, v in privacy.items() if k not in ("design", "allow_one_sided", "own_coin")}
            design.given["epsilon"] = float(design.given["epsilon"])
        return design

    def mechanism(self) -> Mechanism | Randomizer:
        """The mechanism, rebuilt from the parameters and checked against the stored matrix once per
        process: a 50-option design costs about a millisecond to rebuild and check, and a page of a
        200-question survey needs every one (:data:`MECHANISMS_KEPT`). A design of numbers is
        rebuilt from its design, its ε and the question's range (a few constants: nothing to keep)."""
        if self.question.kind_entry.randomized_number:
            return DESIGNS[self.mechanism_name].mechanism(
                {"epsilon": self.epsilon}, bounds=(self.question.minimum, self.question.maximum)
            )
        labels = tuple(self.question.labels)
        matrix = self.matrix
        # the parameters make the matrix (the first build checks the whole stored matrix against them);
        # its size and first and last rows are in the key as well
        key = (
            self.mechanism_name,
            json.dumps(self.parameters, sort_keys=True),
            labels,
            len(matrix),
            tuple(matrix[0]),
            tuple(matrix[-1]),
        )
        with _mechanisms_lock:
            found = _mechanisms.get(key)
        if found is None:
            found = mechanism_from_dict(
                {"design": self.mechanism_name, **self.parameters, "labels": list(labels), "matrix": matrix}
            )
            with _mechanisms_lock:
                _mechanisms[key] = found
                while len(_mechanisms) > MECHANISMS_KEPT:
                    del _mechanisms[next(iter(_mechanisms))]
        return found


#: How many rebuilt mechanisms a process keeps (a 50-option one holds about 60 KB of matrices):
#: enough for the largest survey's designs. A mechanism never changes once built.
MECHANISMS_KEPT = 256
_mechanisms: dict[tuple, Mechanism] = {}
_mechanisms_lock = threading.Lock()


class Submission(Base):
    """One respondent's submission: which survey and on what day. Nothing else, on purpose."""

    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(primary_key=True)
    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), index=True)
    submitted_on: Mapped[dt.date] = mapped_column(Date, default=today)
    #: The upload it came in with (:mod:`survey.domain.responses.imports`), None for a web submission.
    #: It groups the rows of one upload of the researcher's own data, nothing more (SECURITY.md §2).
    import_id: Mapped[int | None] = mapped_column(ForeignKey("imports.id", ondelete="CASCADE"), default=None)

    answers: Mapped[list[Answer]] = relationship(back_populates="submission", cascade="all, delete-orphan")


class ResponseImport(Base):
    """One upload of responses collected elsewhere (paper, telephone, another tool): when, by whom,
    how many rows, and the SHA-256 of its normalized rows, so that the same rows uploaded twice are
    added once (:mod:`survey.domain.responses.imports`)."""

    __tablename__ = "imports"
    __table_args__ = (UniqueConstraint("survey_id", "sha256"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), index=True)
    sha256: Mapped[str] = mapped_column(String(64))
    rows: Mapped[int] = mapped_column(Integer)
    imported_on: Mapped[dt.date] = mapped_column(Date, default=today)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), default=None)


class Answer(Base):
    """A reported value: for a randomized question, the browser's random draw, never the truth."""

    __tablename__ = "answers"
    __table_args__ = (
        UniqueConstraint("submission_id", "question_id"),
        # a question's answers in submission order with their values, from the index alone: the join
        # of a regression (survey/migrations/versions/0016_analysis_answers_by_question.py)
        Index("ix_answers_question_submission", "question_id", "submission_id", "value"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    question_id: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"))
    value: Mapped[int] = mapped_column(Integer)

    submission: Mapped[Submission] = relationship(back_populates="answers")


class HeldSubmission(Base):
    """A submission to a survey by invitation, stored but not yet released into ``submissions``.

    Claiming a code and storing what it admitted happen in one transaction, and on PostgreSQL every
    row a transaction writes carries its id (``xmin``) and lands in the table's physical order
    (``ctid``) at that moment; sequences hand out ids in the same order. Written straight into
    ``submissions``, each answer could be joined to its code through any of those. So a coded
    submission waits here, and :mod:`survey.domain.responses.mixing` releases a whole batch at once, in a
    random order, with one date: every released row then shares its batch's transaction, and its
    place, id and date say nothing about which of the batch's codes admitted it. The held row
    itself is deleted by the release.
    """

    __tablename__ = "held_submissions"

    id: Mapped[int] = mapped_column(primary_key=True)
    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), index=True)
    held_on: Mapped[dt.date] = mapped_column(Date)
    #: ``[[question id, reported value], ...]`` in question-id order.
    answers: Mapped[list[list[int]]] = mapped_column(JSON)


class SubmissionReceipt(Base):
    """That a submission carrying this key was stored: so that a resend is answered "already received"
    and stored once. The key is 128 random bits the respondent's page made; only its SHA-256 hash is
    kept, with the day, for a few days (:mod:`survey.domain.responses.receipts`). It refers to no submission."""

    __tablename__ = "submission_receipts"

    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    received_on: Mapped[dt.date] = mapped_column(Date, index=True)


#: Running tallies are split over this many rows per counted cell. Concurrent submissions add to a
#: randomly chosen shard, so on PostgreSQL two of them wait for each other's row lock only when they
#: pick the same shard; readers sum the shards (at most SHARDS × cells rows, whatever the number of
#: respondents).
TALLY_SHARDS = 16


class AnswerTally(Base):
    """How many times a question's reported value was stored: a running count for the estimates.

    Added to by the fold a moment after the answers are stored (:mod:`survey.domain.responses.pending`),
    and read with the answers of the submissions still listed for it, in one statement: so what a
    reader sees is exactly the GROUP BY count of the answers at every commit;
    :mod:`survey.domain.responses.tallies` can recount and compare. Like an answer, a row holds no
    trace of who reported what or when.
    """

    __tablename__ = "answer_tallies"

    question_id: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger)


class SubmissionTally(Base):
    """How many submissions a survey has stored: the running count beside :class:`AnswerTally`."""

    __tablename__ = "submission_tallies"

    survey_id: Mapped[int] = mapped_column(ForeignKey("surveys.id", ondelete="CASCADE"), primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger)


class PairTally(Base):
    """How many submissions reported one pair of values to two questions of a survey, one of them
    randomized: the counts a comparison by a question asked directly, or of two randomized questions,
    reads (:mod:`survey.domain.results.analysis`), so it costs the same for ten respondents or ten million.

    Kept like :class:`AnswerTally`, by the fold; ``question_id`` is the lower
    question id of the pair. A number asked directly is not paired (a comparison by it is refused); a
    randomized number is paired with the questions asked directly only (its mean by group).
    """

    __tablename__ = "pair_tallies"

    question_id: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, primary_key=True)
    other_id: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"), primary_key=True)
    other_value: Mapped[int] = mapped_column(Integer, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger)


class PendingSubmission(Base):
    """A submission that the answer, day and pair tallies do not count yet: the work list of the
    fold (:mod:`survey.domain.responses.pending`).

    A submission's 45 pair cells, 10 answer cells and 10 day cells (ten questions) were most of what
    PostgreSQL did for it; written into the tallies later, a batch of hundreds at a time, they cost
    a fraction of that (benchmarks/scale.md, benchmarks/scale_ingest.md). Every reader of those
    tallies adds the submissions listed here, read in the same snapshot, so a count is exact at
    every moment: a submission is either listed here or counted in the tallies, never both (the fold
    deletes its row and adds it in one transaction). A row holds a submission's id and nothing else; no
    foreign key, since a row whose submission is gone adds nothing and the fold drops it.
    """

    __tablename__ = "pending_submissions"

    submission_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)


class DayTally(Base):
    """How many submissions of each day reported each value of a randomized question: the counts of a
    comparison by week and of the estimates over time. A day, never a time: a submission stores no more."""

    __tablename__ = "day_tallies"

    question_id: Mapped[int] = mapped_column(ForeignKey("questions.id", ondelete="CASCADE"), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger)
