"""Sign-in, sign-out, and what needs a signed-in user."""

import re

from survey.domain.models import User
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database

from .accounts import make_user
from .live import CHEAP_PASSWORD_HASH


def test_sign_in_and_out(client, user):
    page = client.get("/auth/login")
    assert page.status_code == 200 and "<label" in page.get_data(as_text=True)
    wrong = client.post("/auth/login", data={"username": "alice", "password": "nope"})
    assert wrong.status_code == 401 and "Wrong username or password" in wrong.get_data(as_text=True)
    ok = client.post("/auth/login", data={"username": "alice", "password": "correct horse battery"})
    assert ok.status_code == 302
    assert "Signed in as alice" in client.get("/").get_data(as_text=True)
    out = client.post("/auth/logout")
    assert out.status_code == 302
    assert "Sign in" in client.get("/").get_data(as_text=True)


def test_next_only_redirects_within_the_site(client, user):
    data = {"username": "alice", "password": "correct horse battery"}
    evil = client.post("/auth/login?next=https://evil.example/phish", data=data)
    assert evil.headers["Location"] == "/"
    client.post("/auth/logout")
    evil2 = client.post("/auth/login?next=//evil.example", data=data)
    assert evil2.headers["Location"] == "/"
    client.post("/auth/logout")
    fine = client.post("/auth/login?next=/surveys/x/results", data=data)
    assert fine.headers["Location"] == "/surveys/x/results"


def test_passwords_are_hashed(app, user):
    with app.app_context():
        stored = db.session.get(User, user)
        assert "correct horse" not in stored.password_hash
        assert stored.password_hash.startswith(CHEAP_PASSWORD_HASH + "$")  # the tests' cheap method


def test_an_app_without_test_configuration_hashes_with_scrypt(tmp_path):
    from werkzeug.security import generate_password_hash

    from survey import create_app
    from survey.domain.accounts import passwords

    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'p.sqlite'}", "SECRET_KEY": "k"})
    with app.app_context():
        upgrade_database()
        user = User(username="carol")
        user.set_password("correct horse battery")
        assert passwords.method() == "scrypt"
        assert user.password_hash.startswith("scrypt:") and user.check_password("correct horse battery")
        # a hash names its method: one made by the tests' cheap setting still checks after the switch
        old = User(username="dave", password_hash=generate_password_hash("pw", CHEAP_PASSWORD_HASH))
        assert old.check_password("pw") and not old.check_password("wrong")
        db.engine.dispose()


def test_production_refuses_a_cheap_password_hash(monkeypatch, tmp_path):
    import pytest

    from survey import create_app

    monkeypatch.setenv("SURVEY_ENV", "production")
    monkeypatch.setenv("SECRET_KEY", "a" * 64)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'prod.sqlite'}")
    from survey.platform.config import production_settings

    with pytest.raises(RuntimeError, match="scrypt"):  # as instance/config.py might set it
        production_settings({"SECRET_KEY": "a" * 64, "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH})
    assert create_app().config["PASSWORD_HASH_METHOD"] == "scrypt"


def test_login_form_needs_csrf(csrf_app):
    make_user(csrf_app, "alice", "correct horse battery")
    client = csrf_app.test_client()
    refused = client.post("/auth/login", data={"username": "alice", "password": "correct horse battery"})
    assert refused.status_code == 400
    token = re.search(
        r'name="csrf_token" type="hidden" value="([^"]+)"', client.get("/auth/login").get_data(as_text=True)
    )
    assert token
    ok = client.post(
        "/auth/login", data={"username": "alice", "password": "correct horse battery", "csrf_token": token.group(1)}
    )
    assert ok.status_code == 302


def test_security_headers(client):
    response = client.get("/")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["Referrer-Policy"] == "no-referrer"


def test_sign_in_is_rate_limited_in_memory(tmp_path):
    from survey import create_app
    from survey.platform.limits import limiter

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'limit.sqlite'}",
            "WTF_CSRF_ENABLED": False,
            "LOGIN_RATE_LIMIT": "3 per minute",
            "RATELIMIT_ENABLED": True,
        }
    )
    with app.app_context():
        upgrade_database()
    limiter.reset(app)
    client = app.test_client()
    statuses = [client.post("/auth/login", data={"username": "x", "password": "y"}).status_code for _ in range(5)]
    assert statuses == [401, 401, 401, 429, 429]
    page = client.post("/auth/login", data={"username": "x", "password": "y"})
    assert "Too many attempts" in page.get_data(as_text=True)
    assert client.get("/auth/login").status_code == 200  # reading the form is not limited
    from survey.platform.limits import SweptMemoryStorage

    # without RATELIMIT_STORAGE_URL (make run): counters in this process's memory only
    assert type(limiter.window(app).storage) is SweptMemoryStorage
    limiter.reset(app)


def test_production_needs_a_secret_key_and_secure_cookies(monkeypatch):
    import pytest

    from survey import create_app

    monkeypatch.setenv("SURVEY_ENV", "production")
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setenv("DATABASE_URL", "sqlite://")
    with pytest.raises(RuntimeError, match="needs SECRET_KEY"):
        create_app()
    monkeypatch.setenv("SECRET_KEY", "a" * 64)
    app = create_app()
    assert app.config["SESSION_COOKIE_SECURE"] and app.config["REMEMBER_COOKIE_SECURE"]
    monkeypatch.setenv("SURVEY_ENV", "development")
    assert not create_app().config.get("SESSION_COOKIE_SECURE")
