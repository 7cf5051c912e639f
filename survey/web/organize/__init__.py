"""The organizer's workspace: building surveys, choosing privacy per question, running and sharing them.

``builder_views`` holds the survey and question editor and the privacy preview; ``manage_views``
the lifecycle, access and invitations, sharing, spec import/export and the account page.
"""

from flask import Blueprint

bp = Blueprint("organize", __name__)

from . import builder_views, manage_views  # noqa: E402, F401
