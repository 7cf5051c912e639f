"""Configuration: defaults here, then ``instance/config.py``, then environment variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ENVIRONMENT_KEYS = ("SECRET_KEY", "DATABASE_URL")


def defaults(instance_path: str) -> dict[str, Any]:
    return {
        "SECRET_KEY": "dev-only-change-me",
        "SQLALCHEMY_DATABASE_URI": "sqlite:///" + str(Path(instance_path) / "survey.sqlite"),
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True},
        # A submission is a few hundred bytes; anything far larger is not a submission.
        "MAX_CONTENT_LENGTH": 64 * 1024,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_HTTPONLY": True,
        "WTF_CSRF_TIME_LIMIT": None,
    }


def from_environment() -> dict[str, Any]:
    """``DATABASE_URL`` and ``SECRET_KEY`` from the environment, where set."""
    values: dict[str, Any] = {}
    if os.environ.get("SECRET_KEY"):
        values["SECRET_KEY"] = os.environ["SECRET_KEY"]
    url = os.environ.get("DATABASE_URL")
    if url:
        values["SQLALCHEMY_DATABASE_URI"] = normalize_database_url(url)
    return values


def normalize_database_url(url: str) -> str:
    """Route ``postgres://`` and ``postgresql://`` URLs to the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url
