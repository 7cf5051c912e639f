"""Accounts for the tests that go through the app's own pages: one way to make a user, one way to
sign in with the test client (the browser's way is in tests/pages.py)."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from survey.domain.models import User
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
