"""Survey system for sensitive questions: randomized in the browser, debiased with honest intervals.

``create_app()`` is the application factory. The privacy mathematics lives in ``survey.privacy`` and
imports nothing from here, so ``from survey.privacy import ...`` works in a notebook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def create_app(test_config: dict[str, Any] | None = None):
    """Build the Flask application: config, extensions, blueprints, CLI commands."""
    from flask import Flask

    from . import cli, config, connections, logs, security
    from .auth import bp as auth_bp
    from .extensions import csrf, db, login_manager, migrate
    from .health import bp as health_bp
    from .limits import limiter
    from .models import User
    from .organize import bp as organize_bp
    from .respond import bp as respond_bp
    from .results import bp as results_bp

    app = Flask(
        __name__,
        instance_path=str(ROOT / "instance"),
        instance_relative_config=True,
        template_folder=str(ROOT / "templates"),
        static_folder=str(ROOT / "static"),
    )
    app.config.from_mapping(config.defaults(app.instance_path))
    if test_config is None:
        app.config.from_pyfile("config.py", silent=True)
        app.config.from_mapping(config.from_environment())
        if config.is_production():
            app.config.from_mapping(config.production_settings(dict(app.config)))
    else:
        app.config.from_mapping(test_config)
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    if app.config.get("TRUSTED_PROXIES"):
        from werkzeug.middleware.proxy_fix import ProxyFix

        # Behind N proxies, the client's address (for the rate limits) and scheme come from their
        # X-Forwarded-* headers; without this every respondent would share the proxy's address.
        hops = int(app.config["TRUSTED_PROXIES"])
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)  # type: ignore[method-assign]

    db.init_app(app)
    migrate.init_app(app, db, directory=str(MIGRATIONS))
    with app.app_context():
        connections.ping_idle_connections(db.engine)
    csrf.init_app(app)
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.login_message = "Please sign in to see results."

    @login_manager.user_loader
    def load_user(user_id: str) -> User | None:
        return db.session.get(User, int(user_id))

    app.register_blueprint(health_bp)
    app.register_blueprint(auth_bp)
    app.register_blueprint(respond_bp)
    app.register_blueprint(results_bp)
    app.register_blueprint(organize_bp)
    limiter.init_app(app)
    security.init_app(app)
    logs.init_app()
    cli.register(app)
    return app
