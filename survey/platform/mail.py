"""Sending e-mail through the SMTP server the settings name (``MAIL_*``, survey.platform.config).

Only links for accounts are mailed: an invitation, a first password, a reset, a role offered.
Without ``MAIL_SERVER`` nothing is sent and the pages show the link for the person who made it to
pass on. The message is plain text; STARTTLS (``MAIL_USE_TLS``) or TLS from the start
(``MAIL_USE_SSL``) and a login (``MAIL_USERNAME``/``MAIL_PASSWORD``) are used when set.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

log = logging.getLogger(__name__)


class MailError(RuntimeError):
    """The message could not be handed to the SMTP server; the text says why, for the sender."""


def configured(config: Mapping[str, Any]) -> bool:
    return bool(config.get("MAIL_SERVER"))


def send(config: Mapping[str, Any], to: str, subject: str, body: str) -> None:
    """Hand one plain-text message to the configured SMTP server, or raise :class:`MailError`."""
    if not configured(config):
        raise MailError("no mail server is configured")
    sender = config.get("MAIL_FROM") or "private-survey@localhost"
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    message.set_content(body)
    host, port = config["MAIL_SERVER"], int(config.get("MAIL_PORT") or 25)
    timeout = float(config.get("MAIL_TIMEOUT") or 10)
    try:
        if config.get("MAIL_USE_SSL"):
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(host, port, timeout=timeout, context=ssl.create_default_context())
        else:
            smtp = smtplib.SMTP(host, port, timeout=timeout)
        with smtp:
            if config.get("MAIL_USE_TLS") and not config.get("MAIL_USE_SSL"):
                smtp.starttls(context=ssl.create_default_context())
            if config.get("MAIL_USERNAME"):
                smtp.login(config["MAIL_USERNAME"], config.get("MAIL_PASSWORD") or "")
            smtp.send_message(message)
    except (OSError, smtplib.SMTPException) as error:
        log.warning("mail to the SMTP server %s:%s failed: %s", host, port, type(error).__name__)
        raise MailError(f"the mail server refused or could not be reached ({type(error).__name__})") from error
