"""Public pages for respondents: the survey form, its JSON API, and the thank-you page."""

from flask import Blueprint

bp = Blueprint("respond", __name__)

from . import routes  # noqa: E402, F401
