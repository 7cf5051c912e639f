"""Logging that carries no respondent data.

Werkzeug's request log starts every line with the client's address and the exact time; next to a
survey URL that is enough to line a respondent up with their submission. The filter keeps the
request line and status and drops both.
"""

from __future__ import annotations

import logging
import re

_ADDRESS_AND_TIME = re.compile(r"^\S+ - - \[[^\]]*\] ")


class DropClientAddress(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = _ADDRESS_AND_TIME.sub("", message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def init_app() -> None:
    logger = logging.getLogger("werkzeug")
    if not any(isinstance(f, DropClientAddress) for f in logger.filters):
        logger.addFilter(DropClientAddress())
