"""``GET /health``: whether this worker can reach its database and the schema is the newest.

For load balancers and process supervisors: 200 when both hold, 503 otherwise, with a few words in
JSON. It reads one row (the migration record) and says nothing about surveys or respondents.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from sqlalchemy.exc import SQLAlchemyError

from .connections import current_outage
from .schema import current_revision, head_revision

bp = Blueprint("health", __name__)


@bp.get("/health")
def health() -> tuple[Response, int]:
    try:
        current = current_revision()
    except SQLAlchemyError as error:
        current_outage().failed(error)  # logged once per outage, not once per probe
        body, status = {"status": "unavailable", "database": "unreachable"}, 503
    else:
        if current == head_revision():
            body, status = {"status": "ok", "database": "ok", "schema": "current"}, 200
        else:
            body, status = {"status": "unavailable", "database": "ok", "schema": "needs upgrade"}, 503
    response = jsonify(body)
    response.headers["Cache-Control"] = "no-store"
    return response, status
