"""One code, one submission, even when several arrive at the same moment.

A real server (werkzeug, one thread per request) on a real database file or PostgreSQL server,
and real HTTP clients in threads released together by a barrier: the conditional UPDATE that
claims the code, in the submission's transaction, must let exactly one of them through and store
exactly one submission. Concurrent submissions with *different* codes must all succeed, so the
guard is not bought by refusing honest respondents who happen to answer at the same time.
"""

from __future__ import annotations

import http.client
import json
import threading

import pytest
from sqlalchemy import func, select

from survey.domain.models import Answer, HeldSubmission, RespondentCode, Submission, Survey
from survey.domain.responses.codes import generate_codes
from survey.platform.extensions import db

from .databases import BACKENDS
from .servers import served_small_survey

CLIENTS = 8
ROUNDS = 4
ANSWERS = {"drugs": 1, "mirror": 0, "often": 3, "age": 1}
PATH = "/api/surveys/small-test/responses"


@pytest.fixture(params=BACKENDS)
def live(request, tmp_path):
    """The app served on 127.0.0.1 at a free port, with an invitation-only survey; yields (app, port)."""
    yield from served_small_survey(request, tmp_path, access="invitation")


def new_codes(app, n: int) -> list[str]:
    with app.app_context():
        survey = db.session.scalar(select(Survey))
        codes = generate_codes(db.session, survey, n)
        db.session.commit()
        return codes


def fire(port: int, codes: list[str]) -> list[tuple[int, dict]]:
    """POST one submission per code, all released at once; the (status, body) of each."""
    barrier = threading.Barrier(len(codes))
    results: list[tuple[int, dict] | BaseException | None] = [None] * len(codes)

    def submit(i: int, code: str) -> None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.connect()  # connected before the barrier: only the requests race
            body = json.dumps({"answers": ANSWERS, "invitation": code})
            barrier.wait(timeout=10)
            conn.request("POST", PATH, body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            results[i] = (response.status, json.loads(response.read() or b"{}"))
            conn.close()
        except BaseException as error:  # reported by the test, not lost in a thread
            results[i] = error

    threads = [threading.Thread(target=submit, args=(i, code)) for i, code in enumerate(codes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    for result in results:
        if not isinstance(result, tuple):
            raise AssertionError(f"a client failed: {result!r}")
    return results  # type: ignore[return-value]


def counts(app) -> tuple[int, int, int]:
    """Submissions and answers stored (held ones waiting for their batch included) and codes used."""
    with app.app_context():
        held = db.session.scalars(select(HeldSubmission.answers)).all()
        return (
            db.session.scalar(select(func.count()).select_from(Submission)) + len(held),
            db.session.scalar(select(func.count()).select_from(Answer)) + sum(len(a) for a in held),
            db.session.scalar(select(func.count()).select_from(RespondentCode).where(RespondentCode.used.is_(True))),
        )


def test_racing_submissions_with_one_code_store_exactly_one(live):
    app, port = live
    for round_ in range(1, ROUNDS + 1):
        (code,) = new_codes(app, 1)
        results = fire(port, [code] * CLIENTS)
        statuses = sorted(status for status, _ in results)
        assert statuses.count(201) == 1, f"round {round_}: {statuses}"
        refused = [body for status, body in results if status != 201]
        assert all(400 <= body["status"] < 500 for body in refused), f"round {round_}: {statuses}"
        assert all("already been used" in body["error"] for body in refused), refused
        assert counts(app) == (round_, round_ * len(ANSWERS), round_)


def test_racing_submissions_with_different_codes_all_succeed(live):
    app, port = live
    codes = new_codes(app, CLIENTS)
    results = fire(port, codes)
    assert [status for status, _ in results] == [201] * CLIENTS
    assert counts(app) == (CLIENTS, CLIENTS * len(ANSWERS), CLIENTS)
    # and each code is now spent
    again = fire(port, codes[:2])
    assert [status for status, _ in again] == [403, 403]
    assert counts(app) == (CLIENTS, CLIENTS * len(ANSWERS), CLIENTS)
