"""Logging that carries no respondent data.

Werkzeug's request log starts every line with the client's address and the exact time, and its
request line holds the query string, where an invitation code travels (``/s/<slug>?code=...``).
Next to a survey URL any of these is enough to line a respondent up with their submission. The
filter keeps the method, path and status, and drops the rest.
"""

from __future__ import annotations

import logging
import re

_ADDRESS_AND_TIME = re.compile(r"^\S+ - - \[[^\]]*\] ")
_QUERY = re.compile(r'("[A-Z]+ [^ ?"]*)\?[^ "]*')


def scrub(message: str) -> str:
    return _QUERY.sub(r"\1", _ADDRESS_AND_TIME.sub("", message))


class DropClientAddress(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def init_app() -> None:
    logger = logging.getLogger("werkzeug")
    if not any(isinstance(f, DropClientAddress) for f in logger.filters):
        logger.addFilter(DropClientAddress())
