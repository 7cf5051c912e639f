"""Public pages for respondents: the survey form, its JSON API, the thank-you page, and the page that
explains what is and is not protected."""

from flask import Blueprint

bp = Blueprint("respond", __name__)

from . import views  # noqa: E402, F401
