"""Sign-in and sign-out for organizers and researchers."""

from flask import Blueprint

bp = Blueprint("auth", __name__, url_prefix="/auth")

from . import routes  # noqa: E402, F401
