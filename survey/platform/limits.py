"""Rate limits: a bound on how many sign-in guesses, link tries and submissions one address can make.

Randomized response cannot stop a respondent who lies; what it can do is bound how many lies one
person adds, together with invitation codes. Counters are kept in this process's memory only: an
address is held for the length of a rate-limit window (and at most a second more), never written
to disk or to the database.

The counting is the ``limits`` library's (fixed windows, in-memory storage), the library under
Flask-Limiter. Flask-Limiter itself was used before and dropped: resolving which limits apply to a
request cost a quarter of the submission path's CPU time, for two limits on two known endpoints.
"""

from __future__ import annotations

import time

from flask import Flask, abort, request
from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage
from limits.strategies import FixedWindowRateLimiter

#: endpoint → the configuration key that holds its limit; only POSTs are counted, except at the
#: endpoints of :data:`EVERY_METHOD`. The key is also the counter's scope: the account page checks
#: the current password, so its posts and sign-in attempts draw on one budget per address (whoever
#: holds a signed-in browser cannot guess its password there faster than at the sign-in page).
LIMITED = {
    "auth.login": "LOGIN_RATE_LIMIT",
    "auth.account": "LOGIN_RATE_LIMIT",
    "auth.link": "TOKEN_RATE_LIMIT",
    "respond.submit_form": "SUBMISSION_RATE_LIMIT",
    "respond.submit_json": "SUBMISSION_RATE_LIMIT",
    "api.submit": "SUBMISSION_RATE_LIMIT",
}
#: Endpoints where opening the page is a try too: the page of an invitation or password link tells
#: whether its token is alive.
EVERY_METHOD = {"auth.link"}


class SweptMemoryStorage(MemoryStorage):
    """``limits``' in-memory storage, with expired counters swept inline instead of by a thread.

    The stock storage starts a ``threading.Timer`` after every hit whose previous timer has ended, so
    under steady load a worker starts a thread every other request, which cost a sync worker more
    than the rest of the submission path. Here the same sweep runs at most once a second, in the
    request that comes due (``get`` already drops a counter whose window has passed).
    """

    STORAGE_SCHEME = ["sweptmemory"]  # noqa: RUF012 - the attribute limits' registry reads
    SWEEP_SECONDS = 1.0
    _next_sweep = 0.0

    def _MemoryStorage__schedule_expiry(self) -> None:  # replaces the stock thread-starting method
        now = time.monotonic()
        if now >= self._next_sweep:
            self._next_sweep = now + self.SWEEP_SECONDS
            self._MemoryStorage__expire_events()  # type: ignore[attr-defined]


class RateLimits:
    """The process's counters, shared by every app in it (tests make many; ``reset`` clears them)."""

    def __init__(self) -> None:
        self.storage = SweptMemoryStorage("sweptmemory://")
        self.window = FixedWindowRateLimiter(self.storage)

    def reset(self) -> None:
        self.storage.reset()

    def _items(self, app: Flask, key: str) -> list[RateLimitItem]:
        """The limits configured under ``key``, parsed once per app."""
        parsed = app.extensions.setdefault("survey_rate_limits", {})
        if key not in parsed:
            parsed[key] = parse_many(app.config[key])
        return parsed[key]

    def token_allowed(self, app: Flask, token_id: int) -> bool:
        """Count one request made with the personal API token ``token_id`` (by its row's id, never
        the token); False when it is over ``API_TOKEN_RATE_LIMIT``. Always True with the limits off."""
        if not app.config.get("RATELIMIT_ENABLED", True):
            return True
        items = self._items(app, "API_TOKEN_RATE_LIMIT")
        return all([self.window.hit(item, "API_TOKEN_RATE_LIMIT", str(token_id)) for item in items])

    def bearer_guesses_left(self, app: Flask, address: str) -> bool:
        """Whether ``address`` may try a bearer token now: refused tokens draw on the same per-address
        budget as invitation and password links (``TOKEN_RATE_LIMIT``), counted by
        :meth:`bearer_refused`."""
        if not app.config.get("RATELIMIT_ENABLED", True):
            return True
        return all(self.window.test(item, "BEARER_REFUSED", address) for item in self._items(app, "TOKEN_RATE_LIMIT"))

    def bearer_refused(self, app: Flask, address: str) -> None:
        if app.config.get("RATELIMIT_ENABLED", True):
            for item in self._items(app, "TOKEN_RATE_LIMIT"):
                self.window.hit(item, "BEARER_REFUSED", address)

    def init_app(self, app: Flask) -> None:
        if not app.config.get("RATELIMIT_ENABLED", True):
            return
        limits: dict[str, list[RateLimitItem]] = {
            endpoint: parse_many(app.config[key]) for endpoint, key in LIMITED.items()
        }

        @app.before_request
        def count_attempt() -> None:
            if request.endpoint not in limits:
                return
            if request.method != "POST" and request.endpoint not in EVERY_METHOD:
                return
            address = request.remote_addr or "unknown"
            scope = LIMITED[request.endpoint]
            # every window is counted, even when an earlier one already refuses
            allowed = [self.window.hit(item, scope, address) for item in limits[request.endpoint]]
            if not all(allowed):
                abort(429)


limiter = RateLimits()
