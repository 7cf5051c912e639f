"""The administrator's pages: the users (make an account, disable or enable it, a new password link,
who else administers). Everything here is a 404 to anyone but an enabled administrator."""

from flask import Blueprint

bp = Blueprint("admin", __name__, url_prefix="/admin")

from . import views  # noqa: E402, F401
