"""Passing on account links and role offers: by e-mail when a mail server is configured, or else
shown on the page for the person who made them to copy and send (survey.platform.mail).

Shared by the organizer's sharing page and the administrator's users page. A link's token is in the
answer to the request that made it and nowhere else: it is not stored, flashed or logged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flask import current_app, url_for

from survey.domain.links import LIFETIMES
from survey.domain.models import AccountLink, User
from survey.domain.sharing import ROLE_LABELS
from survey.platform import mail

SITE_NAME = "Private Survey"
ROLE_WORDS = {
    "organizer": "a co-organizer (you would build, run and share it)",
    "researcher": "a researcher (you would see its results and downloads)",
}


@dataclass(frozen=True)
class Delivery:
    """What became of one link: e-mailed to ``sent_to``, or to be copied from the page. ``reason``
    is ``sent``, ``failed`` (``error`` says why), ``no-address`` or ``no-server``."""

    url: str
    addressee: str
    expires: str
    reason: str
    sent_to: str | None = None
    error: str | None = None

    @property
    def sent(self) -> bool:
        return self.reason == "sent"


def expires_text(link: AccountLink) -> str:
    """When the link dies, in words: "for 7 days, until 2026-03-09 14:05 UTC"."""
    lifetime = LIFETIMES[link.purpose]
    hours = int(lifetime.total_seconds() // 3600)
    span = f"{hours // 24} days" if hours >= 48 else ("1 hour" if hours == 1 else f"{hours} hours")
    return f"for {span}, until {link.expires_at:%Y-%m-%d %H:%M} UTC"


def _send(to: str, subject: str, body: str) -> str | None:
    """Send one message; None if it went, else why not (for the page)."""
    try:
        mail.send(current_app.config, to, subject, body)
    except mail.MailError as error:
        return str(error)
    return None


def deliver(link: AccountLink, token: str, subject: str, body: Callable[[str, str], str]) -> Delivery:
    """E-mail ``link`` to its address when there is one and a mail server is configured; otherwise
    (or when sending fails) the page shows it. ``body(url, expires)`` writes the message."""
    url = url_for("auth.link", token=token, _external=True)
    expires = expires_text(link)
    if not link.email:
        return Delivery(url, link.addressee, expires, "no-address")
    if not mail.configured(current_app.config):
        return Delivery(url, link.addressee, expires, "no-server")
    error = _send(link.email, subject, body(url, expires))
    if error:
        return Delivery(url, link.addressee, expires, "failed", error=error)
    return Delivery(url, link.addressee, expires, "sent", sent_to=link.email)


def _closing(expires: str) -> str:
    return (
        f"The link works once, {expires}. If you did not expect this message, ignore it: nothing happens without you.\n"
    )


def deliver_invitation(link: AccountLink, token: str, inviter: User) -> Delivery:
    survey = link.survey
    title = survey.title if survey is not None else SITE_NAME
    role = ROLE_WORDS.get(link.role or "", ROLE_LABELS.get(link.role or "", "a member"))

    def body(url: str, expires: str) -> str:
        return (
            f"Hello,\n\n{inviter.username} invites you to work on the survey “{title}” in {SITE_NAME}, as {role}.\n\n"
            f"To accept, open this link, choose a username and a password, then accept the role:\n\n{url}\n\n"
            + _closing(expires)
        )

    return deliver(link, token, f"{inviter.username} invites you to work on “{title}”", body)


def deliver_password_link(link: AccountLink, token: str, admin: User) -> Delivery:
    user = link.user
    username = user.username if user is not None else ""
    if link.purpose == "setup":
        subject = f"Your account on {SITE_NAME}"
        opening = f"{admin.username} made an account for you on {SITE_NAME}, with the username {username}."
        action = "To choose your password and sign in, open this link"
    else:
        subject = f"A new password for your account on {SITE_NAME}"
        opening = f"{admin.username} lets you choose a new password for your account {username} on {SITE_NAME}."
        action = "To choose it, open this link (your password stays as it is until you do)"

    def body(url: str, expires: str) -> str:
        return f"Hello,\n\n{opening}\n\n{action}:\n\n{url}\n\n" + _closing(expires)

    return deliver(link, token, subject, body)


def tell_about_offer(user: User, inviter: User, title: str, role: str) -> str | None:
    """E-mail ``user`` (if they have an address and mail is configured) that a role on survey
    ``title`` waits for them; returns the address it was sent to, or None."""
    if not user.email or not mail.configured(current_app.config):
        return None
    start = url_for("results.index", _external=True, _anchor="invitations")
    body = (
        f"Hello {user.username},\n\n{inviter.username} invites you to work on the survey “{title}” in {SITE_NAME}, "
        f"as {ROLE_WORDS.get(role, role)}.\n\nSign in to accept or decline it on your start page:\n\n{start}\n\n"
        "Until you accept, the role gives you nothing, and the survey is not in your list.\n"
    )
    return None if _send(user.email, f"{inviter.username} invites you to work on “{title}”", body) else user.email
