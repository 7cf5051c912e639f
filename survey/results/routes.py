from __future__ import annotations

from flask import render_template
from flask_login import current_user
from sqlalchemy import select

from ..extensions import db
from ..models import Survey
from . import bp


@bp.get("/")
def index():
    surveys = []
    if current_user.is_authenticated:
        surveys = db.session.scalars(select(Survey).order_by(Survey.id)).all()
    return render_template("results/index.html", surveys=surveys)
