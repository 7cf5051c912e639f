"""Pages and downloads for signed-in researchers: estimates, charts, microdata and codebook."""

from flask import Blueprint

bp = Blueprint("results", __name__)

from . import routes  # noqa: E402, F401
