"""Logging that carries no respondent data.

Werkzeug's request log starts every line with the client's address and the exact time, and its
request line holds the query string, where an invitation code travels (``/s/<slug>?code=...``).
Next to a survey URL any of these is enough to line a respondent up with their submission. The
filter keeps the method, path and status, and drops the rest.

The scrubbing does not rely on the line's exact shape: werkzeug wraps the request line of every
answer but a 200 in colour escape codes, a malformed request is logged as whatever the client sent
(any method, an absolute URL, ``HTTP/2.0``, spaces inside the target, extra words) and its error
message quotes that line again. So colour codes are removed, and every query string goes: from a
``?`` to the HTTP version that ends the request line, to the quote that closes it, or to the end
of the line, wherever it stands.
"""

from __future__ import annotations

import logging
import re

from flask import Flask

_ADDRESS_AND_TIME = re.compile(r"^\S+ - - \[[^\]]*\] ")
#: ANSI escape sequences (CSI ... final byte), which werkzeug uses for colours.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
#: From a ``?`` to the HTTP version, to a quote that closes the request line (a quote inside the
#: query does not end it), or to the end of the line.
_QUERY = re.compile(r"""\?[^\n]*?(?=\s+HTTP/|["'](?:\s|\)|$)|$)""", re.MULTILINE)


def scrub(message: str) -> str:
    """``message`` without the client address, the time, colour codes and any query string."""
    return _QUERY.sub("", _ADDRESS_AND_TIME.sub("", _ANSI.sub("", message)))


class DropClientAddress(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def init_app(app: Flask) -> None:
    logger = logging.getLogger("werkzeug")
    if not any(isinstance(f, DropClientAddress) for f in logger.filters):
        logger.addFilter(DropClientAddress())
    # Flask gives the app's logger ("survey") its handler when first asked for it; the database's
    # outage lines (survey.platform.connections, logger "survey.database") go out through it.
    app.logger.debug("logging through %s", app.logger.name)
