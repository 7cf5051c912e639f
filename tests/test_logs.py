"""The logs of real requests carry no address, no time of day, no user agent and no invitation code."""

from __future__ import annotations

import http.client
import json
import logging
import re

from sqlalchemy import select

from survey import create_app
from survey.domain.models import Survey
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database

from .live import log_lines, serve
from .surveys import GOOD, SMALL_SPEC


def test_a_real_submission_leaves_nothing_identifying_in_the_logs(tmp_path):
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'logs.sqlite'}", "RATELIMIT_ENABLED": False})
    with app.app_context():
        upgrade_database()
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "access": "invitation"})
        db.session.flush()
        code = generate_codes(db.session, db.session.scalar(select(Survey)), 1)[0]
        slug = survey.slug
        db.session.commit()
    logging.getLogger("werkzeug").setLevel(logging.DEBUG)
    with log_lines("", logging.DEBUG) as lines, serve(app) as port:
        agent = {"User-Agent": "Secret-Agent/7.1 (respondent device)"}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", f"/s/{slug}?code={code}", headers=agent)
        assert conn.getresponse().read() and True
        conn.request(
            "POST",
            f"/api/surveys/{slug}/responses",
            json.dumps({"answers": GOOD, "invitation": code}),
            {"Content-Type": "application/json", **agent},
        )
        response = conn.getresponse()
        assert response.status == 201, response.read()
        conn.close()
    text = "\n".join(lines)
    assert "/responses" in text and "201" in text  # the request was logged ...
    assert "127.0.0.1" not in text  # ... without the address,
    assert code not in text and "code=" not in text  # the invitation code,
    assert "Secret-Agent" not in text  # the user agent,
    assert not re.search(r"\d{2}:\d{2}:\d{2}", text)  # or a time of day
