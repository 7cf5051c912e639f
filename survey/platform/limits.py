"""Rate limits: a bound on how many sign-in guesses, link tries and submissions one address can make.

Randomized response cannot stop a respondent who lies; what it can do is bound how many lies one
person adds, together with invitation codes. The counting is the ``limits`` library's (fixed
windows), the library under Flask-Limiter, used through its public storage API only. Flask-Limiter
itself was used before and dropped: resolving which limits apply to a request cost a quarter of the
submission path's CPU time, for a few limits on known endpoints.

**Where the counters live** (``RATELIMIT_STORAGE_URL``):

- ``redis://host:6379/0`` (any URL ``limits.storage.storage_from_string`` knows): one count shared
  by every worker of every host, which is what a limit means once the site runs on more than one
  process. The keys carry ``RATELIMIT_KEY_PREFIX`` and expire with their window; an address is never
  written anywhere else. Without one, each of W workers on H hosts counted on its own, and a limit
  of 10 sign-in guesses a minute let through up to 10 × W × H (benchmarks/hosts_limit.md). Each
  counted request costs one round trip to Redis (benchmarks/rate_limit_storage.md).
- unset (``make run``, one process): this process's memory (:class:`SweptMemoryStorage`), counters
  held for their window and at most a second more. Production refuses to start several workers on
  it (survey.platform.config.check_shared_limits) unless ``RATELIMIT_STORAGE_URL=memory://`` says
  so, and then logs what the limit means.

**When the store fails** (Redis down or unreachable): what guards a secret fails closed, what carries
a respondent's work fails open, both logged (SECURITY.md, "Rate limits on more than one host"). Sign-in,
the account page's password check, invitation and password links and refused bearer tokens are
answered 503 (nobody can guess faster while the counter is away); submissions and requests with a
valid API token are let through. Either way an error is logged, at most once a minute per scope and
worker (the first failure always).
"""

from __future__ import annotations

import logging
import threading
import time

from flask import Flask, abort, request
from limits import RateLimitItem, parse_many
from limits.errors import StorageError
from limits.storage import Storage, storage_from_string
from limits.strategies import FixedWindowRateLimiter

log = logging.getLogger(__name__)

#: endpoint → the configuration key that holds its limit; only POSTs are counted, except at the
#: endpoints of :data:`EVERY_METHOD`. The key is also the counter's scope: the account page checks
#: the current password, so its posts and sign-in attempts draw on one budget per address (whoever
#: holds a signed-in browser cannot guess its password there faster than at the sign-in page).
LIMITED = {
    "auth.login": "LOGIN_RATE_LIMIT",
    "auth.account": "LOGIN_RATE_LIMIT",
    "auth.forgot_password": "LOGIN_RATE_LIMIT",
    "auth.link": "TOKEN_RATE_LIMIT",
    "respond.submit_form": "SUBMISSION_RATE_LIMIT",
    "respond.submit_json": "SUBMISSION_RATE_LIMIT",
    "api.submit": "SUBMISSION_RATE_LIMIT",
}
#: Endpoints where opening the page is a try too: the page of an invitation or password link tells
#: whether its token is alive.
EVERY_METHOD = {"auth.link"}
#: Scopes that guard a secret (a password, a link's token, a bearer token): with the store away a
#: request is refused (503), not let through uncounted.
FAIL_CLOSED = frozenset({"LOGIN_RATE_LIMIT", "TOKEN_RATE_LIMIT", "BEARER_REFUSED"})
#: The WSGI environment's key under which a request already counted says whether it was allowed
#: (survey.web.direct_submissions counts a submission before Flask sees it; Flask then counts it
#: no second time).
COUNTED = "survey.rate_limit.allowed"
#: The in-memory store's URL, when ``RATELIMIT_STORAGE_URL`` is unset.
MEMORY_URL = "sweptmemory://"
#: What a request refused because the store is down says (503).
STORE_DOWN = (
    "Attempts cannot be counted at the moment, so none are accepted: try again in a minute. Nothing was changed."
)
#: A rate-limit store that does not answer within this many seconds is taken as down.
STORE_TIMEOUT_SECONDS = 1.0
#: How often one worker logs that the store fails (the first failure always).
FAILURE_LOG_SECONDS = 60.0


class SweptMemoryStorage(Storage):
    """Fixed-window counters in this process's memory, expired ones swept inline, at most once a second.

    A :class:`limits.storage.Storage` of its own, through the base class ``limits`` documents for
    custom storages, rather than ``limits``' ``MemoryStorage``: that one (5.8.0, the newest) starts a
    ``threading.Timer`` after every hit whose previous timer has ended, so under steady load a worker
    starts a thread at nearly every request (0.71 threads a hit, hits 12 ms apart), and
    ``Thread.start`` waits for the thread to run, which on a busy machine is a wait for a core: 0.27 ms
    a hit against 0.07 ms here, at the median (benchmarks/rate_limit_storage.md).
    Only the fixed window is needed (:class:`~limits.strategies.FixedWindowRateLimiter`).
    """

    STORAGE_SCHEME = ["sweptmemory"]  # noqa: RUF012 - the attribute limits' registry reads
    SWEEP_SECONDS = 1.0

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options: float | str | bool) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.counts: dict[str, int] = {}
        self.expiries: dict[str, float] = {}
        self.lock = threading.Lock()
        self.next_sweep = 0.0

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ValueError

    def _sweep(self, now: float) -> None:
        """Forget the counters whose window has passed (under the lock, at most once a second)."""
        if now < self.next_sweep:
            return
        self.next_sweep = now + self.SWEEP_SECONDS
        for key in [key for key, expiry in self.expiries.items() if expiry <= now]:
            del self.expiries[key]
            self.counts.pop(key, None)

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = time.time()
        with self.lock:
            self._sweep(now)
            if self.expiries.get(key, 0.0) <= now:
                self.counts[key] = 0
                self.expiries[key] = now + expiry
            self.counts[key] += amount
            return self.counts[key]

    def get(self, key: str) -> int:
        with self.lock:
            if self.expiries.get(key, 0.0) <= time.time():
                return 0
            return self.counts.get(key, 0)

    def get_expiry(self, key: str) -> float:
        with self.lock:
            return self.expiries.get(key, time.time())

    def check(self) -> bool:
        return True

    def reset(self) -> int | None:
        with self.lock:
            count = len(self.counts)
            self.counts.clear()
            self.expiries.clear()
            return count

    def clear(self, key: str) -> None:
        with self.lock:
            self.counts.pop(key, None)
            self.expiries.pop(key, None)


class StoreDown(Exception):
    """The rate-limit store failed on a scope of :data:`FAIL_CLOSED`."""


class RateLimits:
    """The process's counters: one store per ``RATELIMIT_STORAGE_URL`` and key prefix, shared by every
    app in the process that names it (tests make many; ``reset`` clears them)."""

    def __init__(self) -> None:
        self.stores: dict[tuple[str, str], FixedWindowRateLimiter] = {}
        self.lock = threading.Lock()
        self.last_failure_log: dict[str, float] = {}

    def window(self, app: Flask) -> FixedWindowRateLimiter:
        """The limiter over the store ``app`` counts in, made on first use (a Redis connection pool
        is opened only when a counter is first written)."""
        url = app.config.get("RATELIMIT_STORAGE_URL") or MEMORY_URL
        if url == "memory://":  # the name people know for in-memory; the stock one starts threads
            url = MEMORY_URL
        prefix = app.config.get("RATELIMIT_KEY_PREFIX") or "survey"
        key = (url, prefix)
        found = self.stores.get(key)
        if found is None:
            with self.lock:
                found = self.stores.get(key)
                if found is None:
                    found = FixedWindowRateLimiter(self._storage(url, prefix))
                    self.stores[key] = found
        return found

    @staticmethod
    def _storage(url: str, prefix: str) -> Storage:
        if url == MEMORY_URL:
            return SweptMemoryStorage(url)
        options: dict[str, float | str | bool] = {"wrap_exceptions": True}
        if url.split(":", 1)[0] in ("redis", "rediss", "redis+unix", "valkey", "valkeys", "valkey+unix"):
            # a store that hangs must not hang every request with it
            options.update(
                key_prefix=prefix,
                socket_timeout=STORE_TIMEOUT_SECONDS,
                socket_connect_timeout=STORE_TIMEOUT_SECONDS,
            )
        return storage_from_string(url, **options)

    def reset(self, app: Flask | None = None) -> None:
        """Clear the counters of ``app``'s store, or of every store this process has used (in Redis,
        only the keys under each store's prefix)."""
        if app is not None:
            self.window(app).storage.reset()
            return
        for key, window in list(self.stores.items()):
            try:
                window.storage.reset()
            except StorageError:
                # a store that cannot be reached holds nothing to clear from here; forgotten, so
                # that the next app naming it starts afresh (the tests point one at a closed port)
                with self.lock:
                    self.stores.pop(key, None)

    def _items(self, app: Flask, key: str) -> list[RateLimitItem]:
        """The limits configured under ``key``, parsed once per app."""
        parsed = app.extensions.setdefault("survey_rate_limits", {})
        if key not in parsed:
            parsed[key] = parse_many(app.config[key])
        return parsed[key]

    def _count(self, app: Flask, scope: str, items: list[RateLimitItem], key: str, *, test: bool = False) -> bool:
        """Hit (or with ``test``, only look at) every window of ``items`` for ``key``; whether all still
                allow it. Every window is counted, even when an earlier one already refuses. When the store
                fails: :class:`StoreDown` for a scope of :data:`FAIL_CLOSED`, else True; logged either way (once
        a minute per scope)."""
        window = self.window(app)
        try:
            if test:
                return all(window.test(item, scope, key) for item in items)
            return all([window.hit(item, scope, key) for item in items])
        except StorageError as error:
            closed = scope in FAIL_CLOSED
            now = time.monotonic()
            if now - self.last_failure_log.get(scope, -FAILURE_LOG_SECONDS) >= FAILURE_LOG_SECONDS:
                self.last_failure_log[scope] = now
                log.error(
                    "rate-limit store unavailable (%s: %s): %s requests counted under %s",
                    type(error.storage_error).__name__,
                    error.storage_error,
                    "refusing (503)" if closed else "letting through uncounted",
                    scope,
                )
            if closed:
                raise StoreDown(scope) from error
            return True

    def token_allowed(self, app: Flask, token_id: int) -> bool:
        """Count one request made with the personal API token ``token_id`` (by its row's id, never
        the token); False when it is over ``API_TOKEN_RATE_LIMIT``. Always True with the limits off."""
        if not app.config.get("RATELIMIT_ENABLED", True):
            return True
        return self._count(app, "API_TOKEN_RATE_LIMIT", self._items(app, "API_TOKEN_RATE_LIMIT"), str(token_id))

    def bearer_guesses_left(self, app: Flask, address: str) -> bool:
        """Whether ``address`` may try a bearer token now: refused tokens draw on the same per-address
        budget as invitation and password links (``TOKEN_RATE_LIMIT``), counted by
        :meth:`bearer_refused`. Answers 503 when the store is down."""
        if not app.config.get("RATELIMIT_ENABLED", True):
            return True
        try:
            return self._count(app, "BEARER_REFUSED", self._items(app, "TOKEN_RATE_LIMIT"), address, test=True)
        except StoreDown:
            abort(503, description=STORE_DOWN)

    def bearer_refused(self, app: Flask, address: str) -> None:
        if app.config.get("RATELIMIT_ENABLED", True):
            try:
                self._count(app, "BEARER_REFUSED", self._items(app, "TOKEN_RATE_LIMIT"), address)
            except StoreDown:
                abort(503, description=STORE_DOWN)

    def attempt_allowed(self, app: Flask, endpoint: str, address: str) -> bool:
        """Count a try at ``endpoint`` (one of :data:`LIMITED`) from ``address``; whether it is
        within the limit. Always True with the limits off. Raises :class:`StoreDown` when the store
        fails on a scope that fails closed."""
        if not app.config.get("RATELIMIT_ENABLED", True):
            return True
        scope = LIMITED[endpoint]
        return self._count(app, scope, self._items(app, scope), address)

    def init_app(self, app: Flask) -> None:
        if not app.config.get("RATELIMIT_ENABLED", True):
            return
        for scope in set(LIMITED.values()):
            self._items(app, scope)  # a limit that does not parse stops the app at start, not a request

        @app.before_request
        def count_attempt() -> None:
            if request.endpoint not in LIMITED:
                return
            if request.method != "POST" and request.endpoint not in EVERY_METHOD:
                return
            allowed = request.environ.get(COUNTED)
            if allowed is None:
                try:
                    allowed = self.attempt_allowed(app, request.endpoint, request.remote_addr or "unknown")
                except StoreDown:
                    abort(503, description=STORE_DOWN)
            if not allowed:
                abort(429)


limiter = RateLimits()
