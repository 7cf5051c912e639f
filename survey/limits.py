"""Rate limits: a bound on how many sign-in guesses, and how many submissions, one address can make.

Randomized response cannot stop a respondent who lies; what it can do is bound how many lies one
person adds, together with invitation codes. Counters are kept in memory only (see extensions).
"""

from __future__ import annotations

from flask import Flask, current_app

from .extensions import limiter

_applied = False


def _submission_limit() -> str:
    return current_app.config["SUBMISSION_RATE_LIMIT"]


def init_app(app: Flask) -> None:
    """Limit POSTs to the respondent blueprint (the form and the JSON API), once per process."""
    global _applied
    if _applied:
        return
    from .respond import bp as respond_bp

    limiter.limit(_submission_limit, methods=["POST"])(respond_bp)
    _applied = True
