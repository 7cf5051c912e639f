"""Pages and downloads for signed-in researchers: estimates, charts, microdata and codebook."""

from flask import Blueprint

bp = Blueprint("results", __name__)

from . import views  # noqa: E402, F401
