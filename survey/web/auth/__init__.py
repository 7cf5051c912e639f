"""Accounts on the web: sign-in and sign-out, account links (role offers and password links), and
one's own account page.

The blueprint has no URL prefix of its own: sign-in and the links live under ``/auth/``, the
account page at ``/account``, where it has always been.
"""

from __future__ import annotations

from flask import Blueprint, Flask

bp = Blueprint("auth", __name__)

from . import account_views, bearer, views  # noqa: E402, F401


def init_app(app: Flask) -> None:
    """Where Flask-Login sends anonymous visitors, and how a session cookie finds its user."""
    from survey.domain.accounts.sign_in import user_for_token
    from survey.domain.models import User
    from survey.platform.extensions import db, login_manager

    login_manager.login_view = "auth.login"
    login_manager.login_message = "Please sign in to see results."

    @login_manager.user_loader
    def load_user(token: str) -> User | None:
        # The cookie carries a sign-in session's token, not a user id: see survey.domain.accounts.sign_in.
        return user_for_token(db.session, token)

    app.register_blueprint(bp)
    bearer.init_app(app)
