"""How passwords are hashed: Werkzeug's scrypt with a random salt, unless the app says otherwise.

The method is the app's setting ``PASSWORD_HASH_METHOD`` (survey.platform.config), handed to
:func:`configure` by the application factory, so the domain needs no Flask to read it. Production
keeps scrypt, which is slow on purpose; the tests use a cheap method, because a suite that signs in
hundreds of users otherwise spends most of its time hashing (a test checks that an app built without
test configuration still uses scrypt). A stored hash names its own method, so a check works
whatever the setting is now.
"""

from __future__ import annotations

import functools
import secrets

from werkzeug.security import check_password_hash, generate_password_hash

DEFAULT_METHOD = "scrypt"
_method = DEFAULT_METHOD


def configure(method: str | None) -> None:
    """Hash new passwords with ``method`` (a Werkzeug method string, e.g. ``"pbkdf2:sha256:1"``)
    from now on, in this process."""
    global _method
    _method = method or DEFAULT_METHOD


def method() -> str:
    return _method


def hash_password(password: str) -> str:
    return generate_password_hash(password, method=_method)


def check_password(password_hash: str, password: str) -> bool:
    return check_password_hash(password_hash, password)


@functools.cache
def _dummy_hash(method: str) -> str:
    return generate_password_hash(secrets.token_urlsafe(16), method=method)


def dummy_hash() -> str:
    """A hash of a random password made like every new one (same method, same cost), for usernames
    that do not exist: checking against it costs what checking a real password costs."""
    return _dummy_hash(_method)
