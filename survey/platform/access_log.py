"""gunicorn's access log, writing only the five fields it is configured with.

gunicorn's own logger builds, for every request, a dictionary of every request header, every
response header and every WSGI environment variable (and formats the time of day) before it formats
a line that uses five of them: a sixth of the worker's CPU per submission went there under load
(benchmarks/scale_ingest.md). This logger writes the same line (the method, the path without the
query string, the status, the size and the duration: ``access_log_format`` in
:mod:`survey.platform.gunicorn_conf`) from those five values alone. No client address, no time of
day, no user agent and no header can reach it, since it never reads them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from gunicorn.glogging import Logger


class AccessLog(Logger):
    """gunicorn's logger, with an access line of ``<method> <path> <status> <bytes> <ms>ms``."""

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: dt.timedelta) -> None:
        if not self.access_log_enabled:
            return
        status = resp.status
        if isinstance(status, str):
            status = status.split(None, 1)[0]
        sent = getattr(resp, "sent", None)
        milliseconds = request_time.seconds * 1000 + request_time.microseconds // 1000
        self.access_log.info(
            "%s %s %s %s %sms",
            environ.get("REQUEST_METHOD"),
            environ.get("PATH_INFO"),
            status,
            "-" if sent is None else sent,
            milliseconds,
        )
