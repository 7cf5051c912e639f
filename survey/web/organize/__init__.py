"""The organizer's workspace: building surveys, choosing privacy per question, running and sharing them.

One blueprint, its views in a module per room: ``builder_views`` the survey and question editor and
the privacy preview; ``lifecycle_views`` the management page and the survey's state, address, dates,
access and spec; ``codes_views`` the respondent codes; ``team_views`` sharing and role offers;
``translations_views`` the survey's texts in other languages. ``manage_page`` is the management
page they all answer with. (One's own account page lives with the accounts, in survey.web.auth.)
"""

from flask import Blueprint

bp = Blueprint("organize", __name__)

from . import (  # noqa: E402, F401
    builder_views,
    codes_views,
    imports_views,
    lifecycle_views,
    team_views,
    translations_views,
)
