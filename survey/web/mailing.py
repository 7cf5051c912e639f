"""Passing on invitations and account links: by e-mail when a mail server is configured, or else
shown on the page for the person who made them to copy and send (survey.platform.mail).

Shared by the organizer's sharing page, the administrator's users page and the sign-in page's
"Forgot password?" (:func:`forgotten_password`, whose link is made and mailed after the response,
so that the answer tells nothing). Three rules:

- Every link is built from ``PUBLIC_URL`` (:func:`public_url`), never from the request: the Host
  header is whatever the sender of the request wrote, and a link to their host, mailed under this
  site's name, would hand them the token. Development without the setting uses http://127.0.0.1 at
  the port the server listens on (from the server's socket, not the header); production without it
  makes no link at all, and says so, before anything is saved.
- A message is written before anything is saved and sent after (:func:`prepare_role_offer`, then
  :func:`deliver`): if it cannot be written, nothing is saved; if it cannot be sent, whoever made
  the link sees it on the page to pass on. Nobody is ever left with an invitation whose link they
  never saw.
- A link's token is in the answer to the request that made it (or the e-mail) and nowhere else: it
  is not stored, flashed or logged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import urlencode, urlsplit

from flask import current_app, render_template, request, url_for
from limits import parse

from survey.domain.accounts.account_links import (
    LIFETIMES,
    forgotten_password_link,
    mark_mailed,
    revoke_password_links,
)
from survey.domain.accounts.quota import SendLimit
from survey.domain.accounts.sharing import ROLE_LABELS, Offer
from survey.domain.errors import DomainError
from survey.domain.models import AccountLink, User
from survey.platform import background, mail
from survey.platform.extensions import db

from .common import say

log = logging.getLogger(__name__)

SITE_NAME = "Private Survey"
#: A role as an invitation's e-mail says it (catalog phrases).
ROLE_WORDS = {"organizer": "mail.role_organizer", "researcher": "mail.role_researcher"}


def public_url(endpoint: str, **values) -> str:
    """The absolute URL of ``endpoint`` at the site's public address (``PUBLIC_URL``), whatever
    host the request named; :class:`DomainError` (503) in production when the address is not set."""
    base = current_app.config.get("PUBLIC_URL")
    if not base:
        if current_app.config.get("PUBLIC_URL_REQUIRED"):
            raise DomainError("mail.no_public_url")
        base = f"http://127.0.0.1:{request.environ.get('SERVER_PORT') or 5000}"
    parts = urlsplit(base)
    adapter = current_app.url_map.bind(parts.netloc, script_name=parts.path or "/", url_scheme=parts.scheme)
    anchor = values.pop("_anchor", None)
    url = adapter.build(endpoint, values, force_external=True)
    return f"{url}#{anchor}" if anchor else url


def respondent_url(endpoint: str, **values) -> str:
    """A respondent's link as the organizer is shown it (the survey's address, a code's link): at
    ``PUBLIC_URL`` when it is set, never at a Host header someone else chose; without it, at the
    address the organizer is using (development, a site on a local network)."""
    if current_app.config.get("PUBLIC_URL"):
        return public_url(endpoint, **values)
    return url_for(endpoint, **values, _external=True)


def send_limit() -> SendLimit | None:
    """``INVITATION_RATE_LIMIT`` ("30 per hour") as the domain's :class:`SendLimit`; None when the
    rate limits are off (the tests' default)."""
    if not current_app.config.get("RATELIMIT_ENABLED", True):
        return None
    item = parse(current_app.config["INVITATION_RATE_LIMIT"])
    return SendLimit(amount=item.amount, seconds=item.get_expiry())


@dataclass(frozen=True)
class Delivery:
    """What became of one invitation or link. With a link to show (``url``): ``sent`` (e-mailed to
    ``sent_to``), ``failed`` (``error`` says why), ``no-address`` or ``no-server``. Without one (the
    inviter may not invite people to make accounts): ``told`` (a message went to the address),
    ``not-told`` (it could not be sent) or ``quiet`` (no address, or no mail server)."""

    url: str | None
    addressee: str
    expires: str
    reason: str
    sent_to: str | None = None
    error: str | None = None

    @property
    def sent(self) -> bool:
        return self.reason == "sent"


@dataclass(frozen=True)
class Outgoing:
    """A link and its message, written before the link is saved and sent after (:func:`deliver`)."""

    link: AccountLink
    url: str | None
    addressee: str
    expires: str
    to: str | None = None
    message: EmailMessage | None = None


def expires_text(link: AccountLink) -> str:
    """When the link dies, in words: "for 7 days, until 2026-03-09 14:05 UTC"."""
    lifetime = LIFETIMES[link.purpose]
    hours = int(lifetime.total_seconds() // 3600)
    until = f"{link.expires_at:%Y-%m-%d %H:%M}"
    if hours >= 48:
        return say("link.expires_days", days=hours // 24, until=until)
    return say("link.expires_hour", until=until) if hours == 1 else say("link.expires_hours", hours=hours, until=until)


def _compose(to: str, subject: str, body: str) -> EmailMessage:
    try:
        return mail.compose(current_app.config, to, subject, body)
    except mail.MailError as error:
        raise DomainError("mail.not_written", reason=str(error)) from error


def _written(template: str, **values: str) -> tuple[str, str]:
    """The subject and the body of the message ``templates/mail/<template>.txt`` writes: its first
    line is the subject, and the body follows the blank line after it (plain text, not escaped)."""
    text = render_template(f"mail/{template}.txt", site=SITE_NAME, **values)
    subject, _, body = text.partition("\n\n")
    return subject, body + "\n"


def prepare_role_offer(offer: Offer, inviter: User, may_make_accounts: bool) -> Outgoing:
    """The invitation's link and message, before anything is saved. The link is passed on (mailed,
    or else shown) only when ``inviter`` may invite people to make accounts; otherwise the offer
    reaches an account only on its start page, and the address typed (if any) is told how to find
    it. Nothing here depends on whether the name or address belongs to an account."""
    link, token = offer.link, offer.token
    assert link is not None and token is not None
    title = mail.one_line(link.survey.title if link.survey is not None else SITE_NAME)
    role = (
        say(ROLE_WORDS[link.role])
        if link.role in ROLE_WORDS
        else ROLE_LABELS.get(link.role or "") or say("mail.role_member")
    )
    expires = expires_text(link)
    to = link.email if mail.configured(current_app.config) else None
    words = {"inviter": inviter.username, "title": title, "role": role, "expires": expires}
    if may_make_accounts:
        url = public_url("auth.link", token=token)
        subject, body = _written("invitation_link", url=url, **words)
        message = _compose(to, subject, body) if to else None
        return Outgoing(link, url, link.addressee, expires, to, message)
    if not to:
        return Outgoing(link, None, link.addressee, expires)
    start = public_url("results.index", _anchor="invitations")
    subject, body = _written("invitation_offer", start=start, **words)
    return Outgoing(link, None, link.addressee, expires, to, _compose(to, subject, body))


def prepare_password_link(link: AccountLink, token: str, admin: User) -> Outgoing:
    user = link.user
    username = user.username if user is not None else ""
    url = public_url("auth.link", token=token)
    expires = expires_text(link)
    template = "account_setup" if link.purpose == "setup" else "account_reset"
    subject, body = _written(template, admin=admin.username, username=username, url=url, expires=expires)
    to = link.email if mail.configured(current_app.config) else None
    return Outgoing(link, url, link.addressee, expires, to, _compose(to, subject, body) if to else None)


def forgotten_password(who: str) -> None:
    """Queue the answer to "Forgot password?" for ``who`` (a username or an e-mail address): after
    the response, :func:`mail_forgotten_password` mails a reset link to the address of the account
    ``who`` names, if there is one that may have it. The request does nothing else, so that it
    answers the same way, in the same time, whether or not such an account exists; the link is
    built at ``PUBLIC_URL`` here, where the request is known (:func:`public_url` raises, before
    anything is queued, when production has no public address)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    background.run_later(app, mail_forgotten_password, who, public_url("auth.link"))


def mail_forgotten_password(who: str, link_address: str) -> None:
    """Make a reset link for the account ``who`` names (survey.domain.accounts.account_links:
    none for an unknown, disabled or address-less account, or one sent a link minutes ago) and mail
    it to the address on the account; runs in the background (survey.platform.background). A link
    that cannot be written or sent is not kept: nobody could use it."""
    found = forgotten_password_link(db.session, who)
    if found is None:
        db.session.rollback()
        return
    link, token = found
    user, to = link.user, link.email
    assert user is not None and to is not None
    url = f"{link_address}?{urlencode({'token': token})}"
    subject, body = _written("password_forgotten", username=user.username, url=url, expires=expires_text(link))
    try:
        message = mail.compose(current_app.config, to, subject, body)
    except mail.MailError as error:  # nothing is saved: the earlier links stay as they were
        db.session.rollback()
        log.warning("a forgotten-password message could not be written: %s", error)
        return
    db.session.commit()
    try:
        mail.send(current_app.config, message)
    except Exception as error:  # anything at all: a link nobody received is deleted
        revoke_password_links(db.session, user)
        db.session.commit()
        log.warning("a forgotten-password link was not sent (%s); it was deleted", type(error).__name__)


def deliver(outgoing: Outgoing) -> Delivery:
    """Send what :func:`prepare_role_offer` or :func:`prepare_password_link` wrote, after the link
    was saved. Never raises: whatever goes wrong, a link that was not e-mailed is shown."""
    link, url = outgoing.link, outgoing.url
    common = {"addressee": outgoing.addressee, "expires": outgoing.expires}
    if outgoing.message is None or outgoing.to is None:
        if url is None:
            return Delivery(None, reason="quiet", **common)
        return Delivery(url, reason="no-address" if not link.email else "no-server", **common)
    try:
        mail.send(current_app.config, outgoing.message)
    except Exception as error:  # anything at all: the link must reach the page then
        reason = (
            str(error) if isinstance(error, mail.MailError) else f"the message was not sent ({type(error).__name__})"
        )
        return Delivery(url, reason="failed" if url else "not-told", error=reason, **common)
    if url is not None:
        try:
            mark_mailed(db.session, link)
            db.session.commit()
        except Exception:  # the link went out; its account will just not get the address
            db.session.rollback()
    return Delivery(url, reason="sent" if url else "told", sent_to=outgoing.to, **common)


def invited_words(delivery: Delivery, offer: Offer) -> str:
    """What the inviter is told when no link is shown: the same words whether or not an account has
    the name or address they typed (only what they typed and what the mail server said are in it)."""
    link = offer.link
    assert link is not None
    who, role = delivery.addressee, ROLE_LABELS.get(link.role or "", link.role or "")
    waits = say("invited.waits", who=who, role=role, expires=delivery.expires)
    if delivery.reason == "told":
        return say("invited.told", waits=waits, sent_to=delivery.sent_to)
    if delivery.reason == "not-told":
        return say("invited.not_told", waits=waits, who=who, error=delivery.error)
    return waits
