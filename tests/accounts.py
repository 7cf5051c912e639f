"""Accounts for the tests that go through the app's own pages: one way to make a user, one way to
sign in with the test client (the browser's way is in tests/pages.py), and one way to make a
personal API token and call with it (tests/test_api_tokens.py, tests/test_api_v1.py)."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from survey.domain.accounts.api_tokens import create_token
from survey.domain.models import Survey, User
from survey.platform.extensions import db

#: The password of the ``user`` fixture (alice) and the default of :func:`make_user`.
PASSWORD = "correct horse battery"


def make_user(app, name: str, password: str = PASSWORD, **attributes) -> int:
    """Create the user ``name`` (with ``attributes``: ``email``, ``is_admin``...); returns its id."""
    with app.app_context():
        user = User(username=name, **attributes)
        user.set_password(password)
        db.session.add(user)
        db.session.commit()
        return user.id


def make_admin(app, name: str, email: str | None = None) -> int:
    """Create the administrator ``name`` (password :data:`PASSWORD`); returns its id."""
    return make_user(app, name, is_admin=True, email=email)


def sign_in(app_or_client: Flask | FlaskClient, name: str, password: str = PASSWORD) -> FlaskClient:
    """Sign ``name`` in through the login form and return the signed-in test client.

    Given an app, a new client (cookies of its own); given a client, that client, so that a test can
    switch the user of a client it already holds. Fails the test if the login is refused.
    """
    client = app_or_client.test_client() if isinstance(app_or_client, Flask) else app_or_client
    response = client.post("/auth/login", data={"username": name, "password": password})
    assert response.status_code == 302, f"{name} could not sign in"
    return client


# -- personal API tokens ---------------------------------------------------------------------------


def make_token(app, username: str, scope: str = "results", days: int = 30, slugs: list[str] | None = None) -> str:
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == username))
        ids = [db.session.scalar(select(Survey.id).where(Survey.slug == s)) for s in slugs or []]
        _, token = create_token(db.session, user, "script", scope, days, survey_ids=ids)
        db.session.commit()
        return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def get(client, path: str, token: str | None = None):
    """GET ``path`` (with ``token``), its body read and the response closed (a streamed download
    keeps its request context until then)."""
    response = client.get(path, headers=bearer(token) if token is not None else {})
    response.get_data()
    response.close()
    return response


def assert_problem(response, status: int, code: str | None = None) -> None:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    assert response.json["status"] == status
    if code:
        assert response.json["code"] == code
