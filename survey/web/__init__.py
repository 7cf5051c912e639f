"""The web interface: one package per blueprint, views and forms side by side.

- ``respond``: the respondent's pages and the submission API (public);
- ``organize``: the organizer's workspace (builder, privacy preview, lifecycle, sharing, account);
- ``results``: the survey list, the estimates page and the downloads;
- ``auth``: sign-in and sign-out, and the pages of invitation and password links;
- ``admin``: the administrator's users page;
- ``api``: the versioned API, /api/v1, and its OpenAPI description.

The submission API's common case is answered before Flask's request handling
(:mod:`survey.web.direct_submissions`), through the same functions as its views.

Blueprints do not import one another; what more than one of them needs lives in this package
itself (:mod:`survey.web.common`).
"""

from __future__ import annotations

from flask import Flask


def init_app(app: Flask) -> None:
    """Register every blueprint, and what they share (:func:`survey.web.common.init_app`)."""
    from . import auth, common, direct_submissions, ids, languages
    from .admin import bp as admin_bp
    from .api import bp as api_bp
    from .organize import bp as organize_bp
    from .respond import bp as respond_bp
    from .results import bp as results_bp

    ids.init_app(app)
    languages.init_app(app)
    auth.init_app(app)
    app.register_blueprint(respond_bp)
    app.register_blueprint(results_bp)
    app.register_blueprint(organize_bp)
    app.register_blueprint(admin_bp)
    app.register_blueprint(api_bp)
    common.init_app(app)
    direct_submissions.init_app(app)
