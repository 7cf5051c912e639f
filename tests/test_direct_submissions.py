"""The submission API answered beneath Flask (survey.web.direct_submissions) answers as Flask does.

Each scenario is sent to two apps on fresh databases, one with ``DIRECT_SUBMISSIONS`` on (the
default) and one with it off (Flask answers every request): the statuses, headers and bodies must be
equal, and so must what was stored. Flask's ``request_started`` signal tells which requests the
direct path answered on its own, so that a scenario cannot pass by both apps being Flask.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from flask import request_started
from sqlalchemy import func, select

from survey import create_app
from survey.domain.models import Answer, HeldSubmission, RespondentCode, Submission, SubmissionReceipt, Survey, User
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.platform.limits import limiter

from .accounts import make_user
from .databases import make_config
from .surveys import SMALL_SPEC

GOOD = {"drugs": 1, "mirror": 0, "often": 3, "age": 1}
KEYED = {"answers": GOOD, "submission_key": "first-try-of-this-one"}
HEADER_KEY = "key-in-the-header-1"
URL = "/api/surveys/small-test/responses"
#: A cookie's expiry, a second later on the second app (the language cookie of ``?lang=``).
EXPIRES = re.compile(r"Expires=[^;]*; ")
V1 = "/api/v1/surveys/small-test/responses"


def post(path: str = URL, body: object = None, *, raw: bytes | None = None, **headers: str) -> dict:
    """A request of a scenario: JSON ``body`` (or ``raw`` bytes), with ``headers`` (``_`` for ``-``)."""
    data = raw if raw is not None else json.dumps({"answers": GOOD} if body is None else body).encode()
    sent = {"Content-Type": "application/json", **{name.replace("_", "-"): value for name, value in headers.items()}}
    return {"method": "POST", "path": path, "data": data, "headers": sent}


#: name → (how the survey is set up, the requests, the indexes of the requests the direct path answers alone)
SCENARIOS: dict[str, tuple[str, list[dict], set[int]]] = {
    "stored": ("link", [post(), post(V1)], {0, 1}),
    # (the server decodes the path: what the app sees is small-test)
    "percent-encoded": ("link", [post("/api/surveys/small%2Dtest/responses")], {0}),
    "charset": ("link", [post(Content_Type="application/json; charset=utf-8")], {0}),
    "same origin": ("link", [post(Origin="http://localhost")], {0}),
    # Werkzeug's host_url drops a default port and lowercases: the same origin to both paths
    "same origin, host written out": ("link", [post(Host="LOCALHOST:80", Origin="http://localhost")], {0}),
    "origin with its default port": ("link", [post(Host="localhost:80", Origin="http://localhost:80")], set()),
    "resent with a key": (
        "link",
        [post(body=KEYED), post(body=KEYED)],
        {0, 1},
    ),
    "key in the header": ("link", [post(Idempotency_Key=f'"{HEADER_KEY}"'), post(Idempotency_Key=HEADER_KEY)], {0, 1}),
    "answers refused": (
        "link",
        [
            post(body={"answers": {**GOOD, "drugs": 7}}),
            post(body={"answers": {"nope": 1}}),
            post(body={"answers": GOOD, "extra": 1}),
            post(body=[1, 2]),
            post(body={"answers": GOOD, "invitation": 5}),
            post(body={"answers": GOOD, "submission_key": 5}),
            post(body={"answers": GOOD, "submission_key": "short"}),
            post(raw=b'{"answers": '),
            post(raw=b'{"answers": {}, "answers": {}}'),
            post(raw=b"\xff\xfe"),
        ],
        set(),
    ),
    "not for this path": (
        "link",
        [
            post(Content_Type="text/plain"),
            post(Content_Type="application/merge-patch+json"),
            post(Origin="https://elsewhere.example"),
            post(f"{URL}?lang=es", body={"answers": {"nope": 1}}),
            post(Authorization="Bearer nonsense"),
            post("/api/surveys/no-such-survey/responses"),
            post("/api/surveys/small.test/responses"),
            post(raw=b" " * (64 * 1024 + 1)),
            post(Transfer_Encoding="chunked"),
            {"method": "GET", "path": URL, "data": b"", "headers": {}},
        ],
        set(),
    ),
    "in another language": ("link", [post(body={"answers": {"nope": 1}}, Accept_Language="es")], set()),
    "closed": ("closed", [post(), post(V1)], set()),
    "by invitation": (
        "invitation",
        [
            post(),
            post(body={"answers": GOOD, "invitation": "CODE-0"}),
            post(body={"answers": GOOD, "invitation": "CODE-0"}),
        ],
        {1},
    ),
}


@contextmanager
def app_for(backend: str, tmp_path, request, setup: str, direct: bool, **config) -> Iterator:
    """An app on a fresh database with SMALL_SPEC set up as ``setup`` says; its invitation codes in
    ``app.codes`` (made in the same order on both apps, so CODE-n is the same code by position)."""
    folder = tmp_path / ("direct" if direct else "flask")
    folder.mkdir()
    app = create_app({**make_config(backend, folder, request), "DIRECT_SUBMISSIONS": direct, **config})
    make_user(app, "alice")
    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == "alice"))
        survey = create_survey_from_spec(db.session, SMALL_SPEC, owner=owner)
        app.codes = []
        if setup == "closed":
            survey.status = "closed"
        elif setup == "invitation":
            survey.access = "invitation"
            db.session.flush()
            app.codes = generate_codes(db.session, survey, 2)
        db.session.commit()
    try:
        yield app
    finally:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()


def stored_state(app) -> dict[str, object]:
    with app.app_context():
        count = lambda model: db.session.scalar(select(func.count()).select_from(model))  # noqa: E731
        return {
            "submissions": count(Submission),
            "answers": sorted(db.session.execute(select(Answer.question_id, Answer.value)).all()),
            "held": count(HeldSubmission),
            "receipts": count(SubmissionReceipt),
            "codes used": db.session.scalar(select(func.count()).where(RespondentCode.used.is_(True))),
            "status": db.session.scalar(select(Survey.status)),
        }


def run(app, requests: list[dict]) -> tuple[list[tuple], list[bool], dict]:
    """Each request's (status, headers, body), whether Flask's request handling ran for it, and what
    was stored at the end."""
    flask_ran: list[bool] = []
    started = lambda sender, **extra: flask_ran.__setitem__(-1, True)  # noqa: E731
    answers = []
    client = app.test_client()
    with request_started.connected_to(started, app):
        for one in requests:
            data = one["data"]
            for number, code in enumerate(app.codes):
                data = data.replace(f"CODE-{number}".encode(), code.encode())
            flask_ran.append(False)
            response = client.open(one["path"], method=one["method"], data=data, headers=one["headers"])
            body = response.get_data()
            try:
                body = json.loads(body)
            except ValueError:
                pass
            headers = sorted((name.lower(), EXPIRES.sub("", value)) for name, value in response.headers.items())
            answers.append((response.status_code, headers, body))
    return answers, flask_ran, stored_state(app)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_direct_path_answers_and_stores_what_flask_does(backend, scenario, tmp_path, request):
    setup, requests, direct_alone = SCENARIOS[scenario]
    with app_for(backend, tmp_path, request, setup, direct=False) as app:
        expected, flask_ran, expected_state = run(app, requests)
    assert all(flask_ran)
    with app_for(backend, tmp_path, request, setup, direct=True) as app:
        answers, flask_ran, state = run(app, requests)
    for number, (got, wanted) in enumerate(zip(answers, expected, strict=True)):
        if number in direct_alone:
            # Flask-Login's after-request hook reads the session on every request, so Flask adds "Vary:
            # Cookie"; the direct path reads no cookie, so its answer varies with none (and no cache
            # keeps it either way: no-store). The one difference allowed.
            wanted = (wanted[0], [header for header in wanted[1] if header != ("vary", "Cookie")], wanted[2])
        assert got == wanted, (number, set(got[1]) ^ set(wanted[1]))
    assert state == expected_state
    assert {n for n, ran in enumerate(flask_ran) if not ran} == direct_alone


def test_a_stored_submission_says_no_cache_keeps_it_on_both_paths(tmp_path, request):
    for direct in (False, True):
        with app_for("sqlite", tmp_path, request, "link", direct=direct) as app:
            (status, headers, _), *_ = run(app, [post()])[0]
            assert status == 201 and ("cache-control", "private, no-store") in headers
            assert ("x-content-type-options", "nosniff") in headers


def test_a_signed_in_sender_gets_no_cookie_and_its_session_is_not_read(tmp_path, request):
    """A submission is stored without its sender's session: the organizer trying their own survey
    is answered without a cookie, as anyone."""
    with app_for("sqlite", tmp_path, request, "link", direct=True) as app:
        client = app.test_client()
        signed = client.post("/auth/login", data={"username": "alice", "password": "correct horse battery"})
        assert signed.status_code == 302
        response = client.post(URL, json={"answers": GOOD})
        assert response.status_code == 201
        assert "Set-Cookie" not in response.headers and "Vary" not in response.headers
        assert response.headers["Cache-Control"] == "private, no-store"


@pytest.mark.parametrize("direct", [False, True])
def test_the_rate_limit_counts_each_submission_once(direct, tmp_path, request):
    """Three a minute: the fourth is refused (429), on both paths; a count made twice would refuse
    the second. The direct path counts, and Flask (answering the refusal) does not count again."""
    config = {"RATELIMIT_ENABLED": True, "SUBMISSION_RATE_LIMIT": "3 per minute"}
    config["RATELIMIT_KEY_PREFIX"] = f"direct-{direct}"
    with app_for("sqlite", tmp_path, request, "link", direct=direct, **config) as app:
        limiter.reset(app)
        answers, flask_ran, state = run(app, [post(), post(V1), post(body={"answers": {"nope": 1}}), post(), post()])
        limiter.reset(app)
    assert [status for status, _, _ in answers] == [201, 201, 400, 429, 429]
    assert state["submissions"] == 2
    assert flask_ran == ([False, False, True, True, True] if direct else [True] * 5)


def test_the_settings_are_read_per_request_as_flask_reads_them(tmp_path, request):
    """Turned off, or a smaller body limit, after the app was made: Flask answers, as it would."""
    with app_for("sqlite", tmp_path, request, "link", direct=True) as app:
        app.config["DIRECT_SUBMISSIONS"] = False
        answers, flask_ran, _ = run(app, [post()])
        assert answers[0][0] == 201 and flask_ran == [True]
        app.config.update(DIRECT_SUBMISSIONS=True, MAX_CONTENT_LENGTH=10)
        answers, flask_ran, _ = run(app, [post()])
        assert answers[0][0] == 413 and flask_ran == [True]
        app.config.update(MAX_CONTENT_LENGTH=64 * 1024, TRUSTED_HOSTS=["localhost"])
        answers, flask_ran, _ = run(app, [post()])
        assert answers[0][0] == 201 and flask_ran == [True]
        app.config.update(TRUSTED_HOSTS=None)
        answers, flask_ran, state = run(app, [post()])
        assert answers[0][0] == 201 and flask_ran == [False] and state["submissions"] == 3
