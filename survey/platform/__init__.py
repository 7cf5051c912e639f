"""What the app runs on: configuration, extensions, database connections, logging, rate limits,
security headers and error pages, the health check, the schema runner, the CLI and the WSGI entry.

Nothing here knows what a survey is beyond calling :mod:`survey.domain`; nothing in the domain
imports from here. :func:`init_app` attaches all of it to an app whose configuration is loaded
(:func:`survey.platform.config.load`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask

#: Alembic's directory (it stays at survey/migrations, where Flask-Migrate's tooling expects it).
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def wrap_wsgi(app: Flask, middleware: Callable[[Any], Any]) -> None:
    """Put ``middleware`` around the app's WSGI callable, inside the proxy fix when there is one, so
    that it sees the client's address and scheme as Flask does."""
    from werkzeug.middleware.proxy_fix import ProxyFix

    outer = app.wsgi_app
    if isinstance(outer, ProxyFix):
        outer.app = middleware(outer.app)
    else:
        app.wsgi_app = middleware(outer)  # type: ignore[method-assign]


def init_app(app: Flask) -> None:
    """Request bodies bounded whatever their framing, proxies, the database (connections checked
    before use, outages noted) and its migrations, translations, CSRF, sign-in sessions, the health check, rate
    limits, gzip for respondents' pages, security headers and error pages, static files under hashed
    names, log scrubbing and the CLI commands."""
    from . import assets, cli, compression, connections, logs, request_translations, security
    from .bodies import BoundedRequest
    from .extensions import babel, csrf, db, login_manager, migrate
    from .health import bp as health_bp
    from .limits import limiter
    from .session_cookie import CachedSignerSessionInterface
    from .templates import IndentationFreeLoader

    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    if app.template_folder:
        app.jinja_loader = IndentationFreeLoader(Path(app.root_path, app.template_folder))
    app.request_class = BoundedRequest  # a body too long is refused, with or without a Content-Length
    app.session_interface = CachedSignerSessionInterface()
    if app.config.get("TRUSTED_PROXIES"):
        from werkzeug.middleware.proxy_fix import ProxyFix

        # Behind N proxies, the client's address (for the rate limits) and scheme come from their
        # X-Forwarded-* headers; without this every respondent would share the proxy's address.
        hops = int(app.config["TRUSTED_PROXIES"])
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)  # type: ignore[method-assign]

    db.init_app(app)
    connections.end_sessions_through_outages(app, db.session)
    migrate.init_app(app, db, directory=str(MIGRATIONS))
    with app.app_context():
        connections.create_private_sqlite_file(db.engine.url)
        connections.check_connections_before_use(db.engine, connections.outage_of(app))
        connections.wait_for_sqlite_writers(db.engine)
        connections.no_jit_on_postgresql(db.engine, pooled=bool(app.config["DATABASE_TRANSACTION_POOLING"]))
        connections.erase_deleted_sqlite_rows(db.engine)
    app.config.setdefault("BABEL_DEFAULT_LOCALE", "en")
    babel.init_app(app)
    request_translations.install(app)
    csrf.init_app(app)
    login_manager.init_app(app)
    app.register_blueprint(health_bp)
    limiter.init_app(app)
    compression.init_app(app)  # (after-request hooks run last first: this one after the headers')
    security.init_app(app)
    assets.init_app(app)
    logs.init_app(app)
    cli.register(app)
