"""The signed session cookie, with its signer made once per key instead of once per request.

Flask's :class:`~flask.sessions.SecureCookieSessionInterface` builds a new ``URLSafeTimedSerializer``
(and its signer) for every request to read the cookie, and again to write it, although it depends
on nothing but the keys: for a respondent's submission, which carries no cookie at all, that was
the largest single cost among the request's hooks. Nothing else changes: the same salt, digest,
key derivation and ``SECRET_KEY_FALLBACKS`` (tests/test_serving.py reads a cookie signed by
Flask's own interface and the other way round).
"""

from __future__ import annotations

from flask import Flask
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface
from itsdangerous import URLSafeTimedSerializer
from werkzeug.wrappers import Request


class CachedSignerSessionInterface(SecureCookieSessionInterface):
    def __init__(self) -> None:
        # (keys, signer), replaced whole: two threads meeting a new key at once each make one, harmlessly
        self._made: tuple[tuple, URLSafeTimedSerializer | None] | None = None

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        keys = (app.secret_key, *(app.config.get("SECRET_KEY_FALLBACKS") or ()))
        made = self._made
        if made is not None and made[0] == keys:
            return made[1]
        serializer = super().get_signing_serializer(app)
        self._made = (keys, serializer)
        return serializer

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        if app.secret_key and not request.cookies.get(self.get_cookie_name(app)):
            return self.session_class()  # what Flask returns then, without making the signer
        return super().open_session(app, request)
