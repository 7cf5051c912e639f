"""The live pieces the browser tests and the ε audit share: a served app, its log, and Debian's Chromium.

One place for them, because the copies had drifted (one browser suite mapped an insecure host, the
others did not; each live server disposed of its engine differently). ``conftest.py`` builds its
fixtures on these; ``benchmarks/epsilon_audit.py`` imports them directly, since a benchmark has no
fixtures. Playwright cannot download browsers here, so Chromium is Debian's (``make chromium``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from werkzeug.serving import make_server

CHROMIUM = "/usr/bin/chromium"
#: A host name that is not localhost: pages served from it over http are not a secure context.
INSECURE_HOST = "insecure.test"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    f"--host-resolver-rules=MAP {INSECURE_HOST} 127.0.0.1",
]
PHONE = {"width": 390, "height": 844}
#: Werkzeug's PBKDF2 at one iteration, for every app the tests build: the suite creates and signs in
#: hundreds of users, and scrypt, slow on purpose, was about 44% of the non-browser suite's time.
#: Production keeps scrypt (tests/test_auth.py checks that an app without this setting does, and that
#: production refuses any other method).
CHEAP_PASSWORD_HASH = "pbkdf2:sha256:1"


@contextlib.contextmanager
def serve(app) -> Iterator[int]:
    """Serve ``app`` on 127.0.0.1 at a free port, one thread per request; yields the port."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        thread.join(timeout=5)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextlib.contextmanager
def log_lines(name: str = "werkzeug", level: int = logging.DEBUG) -> Iterator[list[str]]:
    """Every line logged to the logger ``name`` (``""``: the root) while the block runs, as a log file
    would get it (the message, and a traceback if any), with the logger set to ``level`` meanwhile."""
    handler = _Lines()
    logger = logging.getLogger(name)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


@contextlib.contextmanager
def live_site(folder: Path, secret: str, setup: Callable, **config) -> Iterator[tuple]:
    """A fresh migrated SQLite app in ``folder``, filled by ``setup(session)``, served on a free port;
    ``config`` adds settings (a mail server, say).

    Yields ``(app, base_url)``. The rate limiter's in-memory counters are process-wide, so they
    start from none; the engine is disposed of afterwards so the file is closed.
    """
    from survey import create_app
    from survey.platform.extensions import db
    from survey.platform.limits import limiter
    from survey.platform.schema import upgrade_database

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder / 'live.sqlite'}",
            "SECRET_KEY": secret,
            "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH,
            **config,
        }
    )
    with app.app_context():
        upgrade_database()
        setup(db.session)
        db.session.commit()
        limiter.reset()
    try:
        with serve(app) as port:
            yield app, f"http://127.0.0.1:{port}"
    finally:
        with app.app_context():
            db.engine.dispose()


@contextlib.contextmanager
def chromium() -> Iterator:
    """Debian's Chromium, headless, driven by Playwright; yields the browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
