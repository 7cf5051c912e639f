"""A real SMTP server for the tests (aiosmtpd), on 127.0.0.1 at a free port, keeping what it receives.

The app sends through it exactly as through any server (survey.platform.mail, smtplib); a message is
in ``Mailbox.messages`` by the time the request that sent it has answered, because the server
stores it before it replies 250 and smtplib waits for that reply.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from email import message_from_bytes, policy
from email.message import EmailMessage

from aiosmtpd.controller import Controller

from .servers import free_port

LINK = re.compile(r"https?://[^\s\"']+/auth/link\?token=[A-Za-z0-9_-]+")


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.port = 0

    async def handle_DATA(self, server, session, envelope) -> str:
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))  # type: ignore[arg-type]
        return "250 Message accepted for delivery"

    def config(self) -> dict:
        """The app's settings for sending through this server."""
        return {"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": self.port, "MAIL_FROM": "surveys@example.org"}

    def body(self, index: int = -1) -> str:
        return self.messages[index].get_body(("plain",)).get_content()  # type: ignore[union-attr]

    def link(self, index: int = -1) -> str:
        found = LINK.findall(self.body(index))
        assert len(found) == 1, self.body(index)
        return found[0]


@contextlib.contextmanager
def smtp_server() -> Iterator[Mailbox]:
    mailbox = Mailbox()
    mailbox.port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=mailbox.port)
    controller.start()
    try:
        yield mailbox
    finally:
        controller.stop()
