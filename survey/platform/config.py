"""Configuration: defaults here, then ``instance/config.py``, then environment variables."""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Flask
from sqlalchemy.engine import make_url

ENVIRONMENT_KEYS = ("SECRET_KEY", "DATABASE_URL", "SURVEY_ENV")
#: The key development once signed cookies with: public, so refused in production. Development now
#: makes a random key of its own in instance/ (survey.platform.secret_key).
DEV_SECRET = "dev-only-change-me"
#: Mail settings read from the environment as they are (MAIL_PORT, MAIL_TIMEOUT and the two TLS flags are parsed).
MAIL_TEXT_KEYS = ("MAIL_SERVER", "MAIL_USERNAME", "MAIL_PASSWORD", "MAIL_FROM")


def is_production() -> bool:
    return os.environ.get("SURVEY_ENV", "development").lower() == "production"


def defaults(instance_path: str) -> dict[str, Any]:
    return {
        # None: production refuses to start; development makes one in instance/ (see load()).
        "SECRET_KEY": None,
        "SQLALCHEMY_DATABASE_URI": "sqlite:///" + str(Path(instance_path) / "survey.sqlite"),
        # A submission is a few hundred bytes; anything far larger is not a submission.
        "MAX_CONTENT_LENGTH": 64 * 1024,
        # The JSON submission API's common case answered before Flask's request handling, for two
        # thirds of the CPU (survey.web.direct_submissions); off, Flask answers every submission.
        "DIRECT_SUBMISSIONS": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_HTTPONLY": True,
        "WTF_CSRF_TIME_LIMIT": None,
        # Rate limits (survey.platform.limits). Submissions are limited per address generously: people
        # behind one school or office router share an address.
        "RATELIMIT_ENABLED": True,
        # Where the rate limits count: unset, in this process's memory (one process: `make run`); a
        # Redis URL such as redis://127.0.0.1:6379/0 for one count across workers and hosts, which
        # production needs to run several workers (check_shared_limits). Keys begin with the prefix.
        "RATELIMIT_STORAGE_URL": None,
        "RATELIMIT_KEY_PREFIX": "survey",
        "LOGIN_RATE_LIMIT": "10 per minute",
        "SUBMISSION_RATE_LIMIT": "600 per minute",
        # The app's PostgreSQL connections go through a pooler in transaction mode (PgBouncer's
        # pool_mode = transaction), which hands a server connection to another client between
        # transactions: nothing may be left on one (through_transaction_pooler).
        "DATABASE_TRANSACTION_POOLING": False,
        # How many reverse proxies in front of the app set X-Forwarded-For/-Proto/-Host (0: none).
        "TRUSTED_PROXIES": 0,
        # The Strict-Transport-Security header; production_settings() sets it, development sends none.
        "STRICT_TRANSPORT_SECURITY": None,
        # How new passwords are hashed (survey.domain.accounts.passwords): Werkzeug's scrypt. The tests set a
        # cheap method; production keeps this default (a test checks that it does).
        "PASSWORD_HASH_METHOD": "scrypt",
        # Invitation and password links (survey.web.links) are tried once per address this often:
        # every request to a link counts, so that nobody can try tokens faster than this.
        "TOKEN_RATE_LIMIT": "30 per minute",
        # Requests with one personal API token (survey.web.auth.bearer), whatever address they come
        # from; refused bearer tokens draw on TOKEN_RATE_LIMIT, per address.
        "API_TOKEN_RATE_LIMIT": "120 per minute",
        # E-mail (survey.platform.mail): without MAIL_SERVER nothing is sent, and the pages show the
        # link to pass on. MAIL_USE_TLS: STARTTLS; MAIL_USE_SSL: TLS from the start (port 465).
        "MAIL_SERVER": None,
        "MAIL_PORT": 25,
        "MAIL_USE_TLS": False,
        "MAIL_USE_SSL": False,
        "MAIL_USERNAME": None,
        "MAIL_PASSWORD": None,
        "MAIL_FROM": None,
        "MAIL_TIMEOUT": 10,
        # Submissions admitted by an invitation code are released into the results this many at a
        # time, each in a random place with one date (survey.domain.responses.mixing): nothing in the database
        # then ties a code to its answers better than one chance in this many.
        "ANONYMITY_BATCH": 10,
        # Seconds between two folds of the listed submissions into the deferred tallies started by one
        # process after storing submissions (survey.platform.folding); 0: never (the tests).
        "FOLD_SECONDS": 1.0,
        # The memory each process may give to the questions' HTML it keeps for the respondent's page,
        # keyed on their content (survey.web.respond.fragments), in bytes; 0: none kept, every page
        # makes every question.
        "RESPONDENT_FRAGMENTS_BYTES": 8_000_000,
        # The site's public address, e.g. "https://surveys.example.org" (a path after the host if the
        # site is served under one). Every link to an account (in an e-mail, or shown to copy) is built
        # from it, never from the request's Host header, which whoever sends the request chooses
        # (survey.web.mailing). Unset in development: http://127.0.0.1 at the port the server listens
        # on. Unset in production: no account link or e-mail is made (the page says why), and a
        # warning is logged when the app starts.
        "PUBLIC_URL": None,
        "PUBLIC_URL_REQUIRED": False,
        # How many invitations and e-mails one account may make (survey.domain.accounts.quota), counted in the
        # database so that every worker process shares one count.
        "INVITATION_RATE_LIMIT": "30 per hour",
    }


#: Sent in production only (SURVEY_ENV=production): browsers then use HTTPS for this host for a year,
#: so a network attacker cannot downgrade a respondent or an organizer to plain HTTP.
DEFAULT_HSTS = "max-age=31536000; includeSubDomains"


def production_settings(values: dict[str, Any]) -> dict[str, Any]:
    """SURVEY_ENV=production: cookies only over HTTPS, HSTS, and a real SECRET_KEY or no start at all.

    ``STRICT_TRANSPORT_SECURITY`` may be set in ``instance/config.py`` (for example without
    ``includeSubDomains`` when other sites under this host still serve plain HTTP)."""
    if not values.get("SECRET_KEY") or values["SECRET_KEY"] == DEV_SECRET:
        raise RuntimeError(
            "SURVEY_ENV=production needs SECRET_KEY set in the environment (a long random value, e.g. "
            'python -c "import secrets; print(secrets.token_hex(32))")'
        )
    if not str(values.get("PASSWORD_HASH_METHOD", "scrypt")).startswith("scrypt"):
        # the tests' cheap hash must never reach a server: a leaked table would be cracked in minutes
        raise RuntimeError("SURVEY_ENV=production hashes passwords with scrypt; remove PASSWORD_HASH_METHOD")
    if not values.get("PUBLIC_URL"):
        logging.getLogger(__name__).warning(
            "PUBLIC_URL is not set: no invitation, password link or e-mail can be made until it is "
            "(set it to the address people open the site at, e.g. https://surveys.example.org)"
        )
    check_shared_limits(values)
    return {
        "SESSION_COOKIE_SECURE": True,
        "REMEMBER_COOKIE_SECURE": True,
        "PREFERRED_URL_SCHEME": "https",
        "STRICT_TRANSPORT_SECURITY": values.get("STRICT_TRANSPORT_SECURITY") or DEFAULT_HSTS,
        "PUBLIC_URL_REQUIRED": True,
    }


#: Set by gunicorn's master (survey.platform.gunicorn_conf) to the number of worker processes it runs.
WORKERS_VARIABLE = "SURVEY_WORKER_PROCESSES"
#: ``RATELIMIT_STORAGE_URL`` values that keep counting in each process's memory.
MEMORY_URLS = ("memory://", "sweptmemory://")


def worker_processes() -> int:
    """The worker processes gunicorn's master runs on this host (:data:`WORKERS_VARIABLE`); 1 elsewhere
    (``flask run``, a command, the tests) or when the variable is not a whole number above 0."""
    try:
        return max(1, int(os.environ.get(WORKERS_VARIABLE) or 1))
    except ValueError:
        return 1


def check_shared_limits(values: dict[str, Any]) -> None:
    """Production with several worker processes counts rate limits in a shared store, or says plainly
    what the limits then mean.

    With counters in each process's memory, W workers each let an address through the whole limit:
    "10 sign-in guesses a minute" became 20 with 2 workers, and 40 with 2 hosts of 2 (measured in
    benchmarks/hosts_limit.md). So several workers and no ``RATELIMIT_STORAGE_URL`` refuse to start;
    ``RATELIMIT_STORAGE_URL=memory://`` is the explicit choice of per-process counting, logged as a
    warning with the limit it really gives. One worker on one host needs no store."""
    if not values.get("RATELIMIT_ENABLED", True):
        return
    workers = worker_processes()
    url = values.get("RATELIMIT_STORAGE_URL")
    if workers <= 1 or (url and not url.startswith(MEMORY_URLS)):
        return
    if not url:
        raise RuntimeError(
            f"{workers} worker processes count rate limits apart, each allowing the whole limit: set "
            "RATELIMIT_STORAGE_URL to a Redis server shared by every worker and host (e.g. "
            "redis://127.0.0.1:6379/0), or RATELIMIT_STORAGE_URL=memory:// to accept per-process limits "
            "(docs/deploy.md)"
        )
    logging.getLogger(__name__).warning(
        "RATELIMIT_STORAGE_URL=%s: rate limits are counted in each of the %d worker processes apart, so "
        "one address may make up to %d times each limit (LOGIN_RATE_LIMIT %s: up to %d × that), and "
        "that many times again on every other host; set a Redis URL for one shared count",
        url,
        workers,
        workers,
        values.get("LOGIN_RATE_LIMIT"),
        workers,
    )


def from_environment() -> dict[str, Any]:
    """``DATABASE_URL``, ``SECRET_KEY``, the rate limits, the proxies and the mail settings from the
    environment, where set."""
    values: dict[str, Any] = {}
    if os.environ.get("SECRET_KEY"):
        values["SECRET_KEY"] = os.environ["SECRET_KEY"]
    for key in (
        "LOGIN_RATE_LIMIT",
        "SUBMISSION_RATE_LIMIT",
        "TOKEN_RATE_LIMIT",
        "API_TOKEN_RATE_LIMIT",
        "INVITATION_RATE_LIMIT",
        "RATELIMIT_STORAGE_URL",
        "RATELIMIT_KEY_PREFIX",
        "PUBLIC_URL",
        *MAIL_TEXT_KEYS,
    ):
        if os.environ.get(key):
            values[key] = os.environ[key]
    for key in ("MAIL_PORT", "MAIL_TIMEOUT"):
        if os.environ.get(key):
            try:
                values[key] = int(os.environ[key])
            except ValueError:
                raise RuntimeError(f"{key} must be a whole number") from None
    for key in ("MAIL_USE_TLS", "MAIL_USE_SSL", "DIRECT_SUBMISSIONS", "DATABASE_TRANSACTION_POOLING"):
        if os.environ.get(key):
            values[key] = _flag(key, os.environ[key])
    # (PAIR_FOLD_SECONDS: its name while the fold added the pair tallies alone, still read)
    fold_key = next((k for k in ("FOLD_SECONDS", "PAIR_FOLD_SECONDS") if os.environ.get(k)), None)
    if fold_key:
        try:
            values["FOLD_SECONDS"] = float(os.environ[fold_key])
        except ValueError:
            raise RuntimeError(f"{fold_key} must be a number of seconds (0: no fold)") from None
    if os.environ.get("TRUSTED_PROXIES"):
        try:
            values["TRUSTED_PROXIES"] = int(os.environ["TRUSTED_PROXIES"])
        except ValueError:
            raise RuntimeError("TRUSTED_PROXIES must be a whole number: how many proxies set X-Forwarded-*") from None
    url = os.environ.get("DATABASE_URL")
    if url:
        values["SQLALCHEMY_DATABASE_URI"] = normalize_database_url(url)
    return values


#: Connections each worker process keeps to PostgreSQL (``DATABASE_POOL_SIZE``), and the most it opens.
DEFAULT_POOL_SIZE = 15


def pool_without_churn(config: dict[str, Any]) -> None:
    """On PostgreSQL, a pool of ``DATABASE_POOL_SIZE`` connections (15) and no overflow, unless
    ``SQLALCHEMY_ENGINE_OPTIONS`` says otherwise (``instance/config.py``).

    SQLAlchemy's default is 5 kept and 10 more opened when needed, each closed again as soon as it is
    returned: under a load that keeps six or more requests of one worker at the database, every
    submission beyond the fifth paid for a new connection (a PostgreSQL backend started, and the
    worker's CPU to connect: 4% of a worker's samples in a profile under the ingest benchmark's load,
    benchmarks/scale.md). Keeping all 15 opens
    no more connections than before at the peak (``workers × 15``, docs/deploy.md) and none per request.
    A thread that finds every connection in use waits for one (``pool_timeout``, 30 s), as it did at
    15 before."""
    url = str(config.get("SQLALCHEMY_DATABASE_URI") or "")
    if not url.startswith("postgresql") or config.get("SQLALCHEMY_ENGINE_OPTIONS"):
        return
    text = os.environ.get("DATABASE_POOL_SIZE", "").strip()
    try:
        size = int(text) if text else DEFAULT_POOL_SIZE
    except ValueError:
        size = 0
    if size < 1:
        raise RuntimeError(f"DATABASE_POOL_SIZE must be a whole number above 0, not {text!r}")
    config["SQLALCHEMY_ENGINE_OPTIONS"] = {"pool_size": size, "max_overflow": 0}


def through_transaction_pooler(config: dict[str, Any]) -> None:
    """With ``DATABASE_TRANSACTION_POOLING`` on PostgreSQL, psycopg prepares no statement, whatever
    else ``SQLALCHEMY_ENGINE_OPTIONS`` holds (the pool's size is kept).

    psycopg 3 prepares a statement on the server after its fifth run and then calls it by name on the
    same client connection; behind a pooler in transaction mode that name reaches whichever server
    connection the pooler lends next, where it is missing or is another client's (``prepared
    statement "_pg3_0" already exists``: tests/test_transaction_pooling.py shows it through PgBouncer).
    The connections' other setting, JIT off, is then the database's to make
    (survey.platform.connections.no_jit_on_postgresql)."""
    url = str(config.get("SQLALCHEMY_DATABASE_URI") or "")
    if not config.get("DATABASE_TRANSACTION_POOLING") or not url.startswith("postgresql"):
        return
    if make_url(url).get_driver_name() != "psycopg":
        raise RuntimeError("DATABASE_TRANSACTION_POOLING needs the psycopg driver (postgresql+psycopg://)")
    options = dict(config.get("SQLALCHEMY_ENGINE_OPTIONS") or {})
    options["connect_args"] = {**(options.get("connect_args") or {}), "prepare_threshold": None}
    config["SQLALCHEMY_ENGINE_OPTIONS"] = options


def _flag(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise RuntimeError(f"{key} must be true or false, not {text!r}")


def load(app: Flask, test_config: dict[str, Any] | None = None) -> None:
    """Defaults, then ``instance/config.py`` and the environment (with production's rules when
    ``SURVEY_ENV=production``); or, for tests, the defaults and ``test_config`` only."""
    app.config.from_mapping(defaults(app.instance_path))
    if test_config is None:
        app.config.from_pyfile("config.py", silent=True)
        app.config.from_mapping(from_environment())
        if is_production():
            app.config.from_mapping(production_settings(dict(app.config)))
        pool_without_churn(app.config)
    else:
        app.config.from_mapping(test_config)
    through_transaction_pooler(app.config)
    if not app.config.get("SECRET_KEY"):
        # Development: a random key made on the first run and kept in instance/; an app built for a
        # test without one gets a random key of its own, and writes nothing.
        from .secret_key import instance_secret_key

        key = instance_secret_key(app.instance_path) if test_config is None else secrets.token_hex(32)
        app.config["SECRET_KEY"] = key
    app.config["PUBLIC_URL"] = check_public_url(app.config.get("PUBLIC_URL"))


def check_public_url(url: str | None) -> str | None:
    """``PUBLIC_URL`` without a trailing slash, or a refusal to start: links built from a malformed
    address would reach nobody, and that should show at start, not in an invitee's mailbox."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise RuntimeError(f"PUBLIC_URL must look like https://surveys.example.org, not {url!r}")
    return url.strip().rstrip("/")


def normalize_database_url(url: str) -> str:
    """Route ``postgres://`` and ``postgresql://`` URLs to the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url
