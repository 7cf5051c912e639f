"""Sending again is safe: a resend of a stored submission is answered "already received" and stored once.

The fault run behind this: after a database crash or a killed worker, submissions answered with an
error had in fact been stored; a respondent who sent again added a second copy on an open link, and
with an invitation code was told their code "has already been used" by their own answers. The page
(and any API client) sends a key with each filling of the form (survey/domain/responses/receipts.py).
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import re
import socket
import threading

import pytest
from sqlalchemy import func, select

from survey.domain.models import HeldSubmission, Submission, SubmissionReceipt, Survey
from survey.domain.responses import receipts
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.lifecycle import close
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

from .databases import BACKENDS, statements
from .servers import served_small_survey
from .surveys import SMALL_SPEC

GOOD = {"drugs": 1, "mirror": 0, "often": 3, "age": 1}
KEY = "0123456789abcdef0123456789abcdef"
API = "/api/surveys/small-test/responses"


def stored(app) -> int:
    """Submissions stored, those held for their batch (surveys by invitation) included."""
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission)) + db.session.scalar(
            select(func.count()).select_from(HeldSubmission)
        )


def add_survey(app, **changes) -> list[str]:
    """SMALL_SPEC with ``changes``; returns three invitation codes if it is by invitation."""
    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, **changes})
        db.session.flush()
        codes = generate_codes(db.session, survey, 3) if survey.access == "invitation" else []
        db.session.commit()
        return codes


def test_an_api_resend_on_an_open_link_is_stored_once(app, client):
    add_survey(app)
    first = client.post(API, json={"answers": GOOD, "submission_key": KEY})
    again = client.post(API, json={"answers": GOOD, "submission_key": KEY})
    assert first.status_code == 201 and first.json["status"] == "stored"
    assert again.status_code == 200 and again.json["status"] == "already received"
    assert "stored once" in again.json["message"]
    assert stored(app) == 1
    # another filling (another key) is another submission
    assert client.post(API, json={"answers": GOOD, "submission_key": KEY[::-1]}).status_code == 201
    assert stored(app) == 2


def test_the_idempotency_key_header_works_like_the_field(app, client):
    add_survey(app)
    headers = {"Idempotency-Key": f'"{KEY}"'}  # the IETF draft quotes it
    assert client.post(API, json={"answers": GOOD}, headers=headers).status_code == 201
    assert client.post(API, json={"answers": GOOD}, headers={"Idempotency-Key": KEY}).status_code == 200
    assert stored(app) == 1


def test_a_form_resend_leads_to_the_thanks_page_saying_so(app, client):
    add_survey(app)
    form = {f"q_{k}": str(v) for k, v in GOOD.items()} | {"submission_key": KEY}
    first = client.post("/s/small-test", data=form)
    again = client.post("/s/small-test", data=form)
    assert first.status_code == again.status_code == 303
    assert "again" not in first.headers["Location"] and "again=1" in again.headers["Location"]
    page = client.get(again.headers["Location"]).get_data(as_text=True)
    assert "already reached us" in page
    assert stored(app) == 1


def test_a_resend_with_a_code_is_received_not_refused_as_used(app, client):
    codes = add_survey(app, access="invitation")
    body = {"answers": GOOD, "invitation": codes[0], "submission_key": KEY}
    assert client.post(API, json=body).status_code == 201
    again = client.post(API, json=body)
    assert again.status_code == 200 and again.json["status"] == "already received"
    # the form post too: the thanks page, not "this code has already been used"
    form = {f"q_{k}": str(v) for k, v in GOOD.items()} | {"submission_key": KEY, "invitation": codes[0]}
    assert "again=1" in client.post("/s/small-test", data=form).headers["Location"]
    assert stored(app) == 1
    # the code is still single-use: a different filling with it is refused
    other = client.post(API, json={**body, "submission_key": KEY[::-1]})
    assert other.status_code == 403 and "already been used" in other.json["error"]
    assert stored(app) == 1


def test_a_resend_after_the_survey_closed_is_still_received(app, client):
    add_survey(app)
    assert client.post(API, json={"answers": GOOD, "submission_key": KEY}).status_code == 201
    with app.app_context():
        close(db.session.scalar(select(Survey)))
        db.session.commit()
    assert client.post(API, json={"answers": GOOD, "submission_key": KEY}).status_code == 200
    late = client.post(API, json={"answers": GOOD, "submission_key": KEY[::-1]})
    assert late.status_code == 409
    assert stored(app) == 1


@pytest.mark.parametrize("key", ["short", "x" * 65, "no spaces allowed here!", "ключ-ключ-ключ-ключ"])
def test_a_malformed_key_is_refused_and_nothing_is_written(app, client, key):
    add_survey(app)
    refused = client.post(API, json={"answers": GOOD, "submission_key": key})
    assert refused.status_code == 400 and refused.json["path"] == ["submission_key"]
    assert "16 to 64" in refused.json["error"]
    assert client.post(API, json={"answers": GOOD, "submission_key": 12345}).status_code == 400
    assert stored(app) == 0
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(SubmissionReceipt)) == 0


def test_a_refused_submission_leaves_no_receipt(app, client):
    """A refusal writes nothing, the receipt included: the corrected resend is stored."""
    add_survey(app)
    bad = client.post(API, json={"answers": {**GOOD, "often": 9}, "submission_key": KEY})
    assert bad.status_code == 400
    assert client.post(API, json={"answers": GOOD, "submission_key": KEY}).status_code == 201
    assert stored(app) == 1


def test_the_receipt_keeps_a_hash_and_a_day_only(app, client):
    add_survey(app)
    client.post(API, json={"answers": GOOD, "submission_key": KEY})
    with app.app_context():
        (receipt,) = db.session.scalars(select(SubmissionReceipt)).all()
        assert receipt.key_hash != KEY and re.fullmatch(r"[0-9a-f]{64}", receipt.key_hash)
        assert {c.name for c in SubmissionReceipt.__table__.columns} == {"survey_id", "key_hash", "received_on"}
        assert {fk.column.table.name for fk in SubmissionReceipt.__table__.foreign_keys} == {"surveys"}


def test_old_receipts_are_purged(app, client):
    add_survey(app)
    client.post(API, json={"answers": GOOD, "submission_key": KEY})
    with app.app_context():
        receipt = db.session.scalar(select(SubmissionReceipt))
        later = receipt.received_on + dt.timedelta(days=receipts.RECEIPT_DAYS)
        assert receipts.purge_old_receipts(db.session, later, force=True) == 0  # still within the days
        assert receipts.purge_old_receipts(db.session, later + dt.timedelta(days=1), force=True) == 1


def test_a_keyed_submission_still_costs_one_statement_on_postgresql(app, client):
    add_survey(app)
    with app.app_context():
        if db.engine.dialect.name != "postgresql":
            pytest.skip("the single-statement write is PostgreSQL's")
    client.post(API, json={"answers": GOOD, "submission_key": KEY[::-1]})  # warm up (and the daily purge)
    with statements(app) as seen:
        assert client.post(API, json={"answers": GOOD, "submission_key": KEY}).status_code == 201
    assert len(seen) == 1, seen


# -- against a real server ---------------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def live(request, tmp_path):
    yield from served_small_survey(request, tmp_path)


def post(port: int, body: bytes) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("POST", API, body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    result = (response.status, json.loads(response.read() or b"{}"))
    conn.close()
    return result


def test_racing_resends_with_one_key_store_exactly_one(live):
    app, port = live
    body = json.dumps({"answers": GOOD, "submission_key": KEY}).encode()
    clients = 8
    barrier = threading.Barrier(clients)
    results: list = [None] * clients

    def send(i: int) -> None:
        try:
            barrier.wait(timeout=20)
            results[i] = post(port, body)
        except BaseException as error:
            results[i] = error

    threads = [threading.Thread(target=send, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(isinstance(r, tuple) for r in results), results
    assert sorted(status for status, _ in results) == [200] * (clients - 1) + [201]
    assert stored(app) == 1


def lost_reply_proxy(port: int, replies: list[bytes]) -> tuple[int, threading.Thread]:
    """A proxy that passes one request to the server, reads the whole reply, and hangs up on the
    client without passing it on: the answers are stored, the respondent is never told."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(20)

    def run() -> None:
        client, _ = listener.accept()
        with client, socket.create_connection(("127.0.0.1", port), timeout=20) as upstream:
            request = b""
            while b"\r\n\r\n" not in request:
                request += client.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))
            while len(body) < length:
                body += client.recv(65536)
            upstream.sendall(head + b"\r\nConnection: close\r\n\r\n" + body)
            reply = b""
            while chunk := upstream.recv(65536):
                reply += chunk
            replies.append(reply)
        listener.close()

    thread = threading.Thread(target=run)
    thread.start()
    return listener.getsockname()[1], thread


def test_a_reply_lost_after_storing_is_answered_already_received_on_retry(live):
    app, port = live
    body = json.dumps({"answers": GOOD, "submission_key": KEY}).encode()
    replies: list[bytes] = []
    proxy, thread = lost_reply_proxy(port, replies)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        post(proxy, body)
    thread.join(timeout=30)
    assert replies and b" 201 " in replies[0].split(b"\r\n", 1)[0]  # the server stored it and said so
    assert stored(app) == 1
    status, answer = post(port, body)  # the respondent presses Send again
    assert status == 200 and answer["status"] == "already received"
    assert stored(app) == 1
