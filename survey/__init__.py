"""Survey system for sensitive questions: randomized in the browser, debiased with honest intervals.

``create_app()`` is the application factory: it loads the configuration, attaches the platform
(:mod:`survey.platform`), configures the domain (:mod:`survey.domain`) and registers the web
interface (:mod:`survey.web`). The privacy mathematics lives in ``survey.privacy`` and imports
nothing from here, so ``from survey.privacy import ...`` works in a notebook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def create_app(test_config: dict[str, Any] | None = None):
    """Build the Flask application: configuration, platform, domain settings, web."""
    from flask import Flask

    from . import platform, web
    from .domain.accounts import passwords
    from .platform import config

    app = Flask(
        __name__,
        instance_path=str(ROOT / "instance"),
        instance_relative_config=True,
        template_folder=str(ROOT / "templates"),
        static_folder=str(ROOT / "static"),
    )
    config.load(app, test_config)
    platform.init_app(app)
    passwords.configure(app.config["PASSWORD_HASH_METHOD"])
    web.init_app(app)
    return app
