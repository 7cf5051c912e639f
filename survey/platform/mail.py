"""Sending e-mail through the SMTP server the settings name (``MAIL_*``, survey.platform.config).

Only what concerns accounts is mailed: an invitation, a first password, a reset, a role offered.
Without ``MAIL_SERVER`` nothing is sent and the pages show the link for the person who made it to
pass on. The message is plain text; STARTTLS (``MAIL_USE_TLS``) or TLS from the start
(``MAIL_USE_SSL``) and a login (``MAIL_USERNAME``/``MAIL_PASSWORD``) are used when set.

Writing a message and sending it are two steps (:func:`compose`, then :func:`send`), so that a
caller can write it before it saves anything and send it after: a message that cannot be written
must not leave an invitation behind whose link nobody ever saw. Header values are made one line
here, whatever they quote (a survey title with a newline in it once made the whole request fail):
every control character and line or paragraph separator becomes a space, since the ``email``
package refuses a header value that any of them would split.
"""

from __future__ import annotations

import logging
import re
import smtplib
import ssl
import unicodedata
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import make_msgid, parseaddr
from typing import Any

log = logging.getLogger(__name__)

_SPACES = re.compile(r"\s+")


class MailError(RuntimeError):
    """The message could not be written or handed to the SMTP server; the text says why, for the sender."""


def configured(config: Mapping[str, Any]) -> bool:
    return bool(config.get("MAIL_SERVER"))


def one_line(text: str) -> str:
    """``text`` fit for a header (or any one line of a message): control characters (newlines among
    them), line and paragraph separators and runs of spaces become one space.

    >>> one_line("Drugs\\r\\nBcc: everyone@example.org\\u2028and more")
    'Drugs Bcc: everyone@example.org and more'
    """
    kept = "".join(" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in text)
    return _SPACES.sub(" ", kept).strip()


def compose(config: Mapping[str, Any], to: str, subject: str, body: str) -> EmailMessage:
    """One plain-text message from the configured sender, or :class:`MailError` if it cannot be written."""
    sender = config.get("MAIL_FROM") or "private-survey@localhost"
    domain = parseaddr(sender)[1].rpartition("@")[2] or None
    try:
        message = EmailMessage()
        message["From"] = one_line(sender)
        message["To"] = one_line(to)
        message["Subject"] = one_line(subject)
        message["Message-ID"] = make_msgid(domain=domain)
        message.set_content(body)
    except (ValueError, TypeError, LookupError) as error:
        raise MailError(f"the message could not be written ({type(error).__name__})") from error
    return message


def send(config: Mapping[str, Any], message: EmailMessage) -> None:
    """Hand a message from :func:`compose` to the configured SMTP server, or raise :class:`MailError`."""
    if not configured(config):
        raise MailError("no mail server is configured")
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
    except (OSError, smtplib.SMTPException, ValueError, UnicodeError) as error:
        log.warning("mail to the SMTP server %s:%s failed: %s", host, port, type(error).__name__)
        raise MailError(f"the mail server refused or could not be reached ({type(error).__name__})") from error
