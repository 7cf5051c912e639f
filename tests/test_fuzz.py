"""Bad input, generated: the submission API, the form posts, the spec import and the builder's forms.

Hypothesis generates arbitrary JSON values, mutated valid submissions (wrong types, unknown questions,
codes outside the domain, missing required answers, keys written twice in the raw JSON text, invalid
UTF-8, bodies over the request-size limit, wrong content types), arbitrary form posts (random and
repeated fields), arbitrary spec documents (to ``create_survey_from_spec`` and to the import page)
and random builder form posts, against open, closed, expired, draft and invitation-only surveys with
used, unknown and fresh codes. The properties, for every case:

* the status is never 5xx;
* a refused request (4xx) carries a readable message (a JSON ``error`` or an alert on the page,
  non-empty, no traceback), and the row counts of every table (and the number of used invitation
  codes, and for the builder the survey's whole spec) are what they were before;
* a case built to be valid is accepted (201, or a 303 redirect) and what was stored is what was sent;
  a case built to be invalid is refused with a 4xx.

Each property runs on SQLite and, with ``TEST_DATABASE_URL``, on PostgreSQL (fewer examples there).
The number of cases run is printed in the terminal summary ("fuzz cases"). Under the default
Hypothesis profile (``ci``, in conftest.py) the cases are derandomized, so that a run of the suite is
the same every time; ``HYPOTHESIS_PROFILE=fuzz`` (benchmarks/fuzz.py) explores twenty times as many
cases at random. Every bug these properties found has a regression test at the end of this file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from sqlalchemy import MetaData, func, select, text
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from survey.domain.errors import DomainError
from survey.domain.models import HeldSubmission, RespondentCode, Submission, Survey, User, today
from survey.domain.responses.codes import new_code
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.platform.schema import VERSION_TABLE

from .hypothesis_profiles import DEFAULT_EXAMPLES
from .surveys import SMALL_SPEC

# -- bookkeeping: how many cases ran, and the bugs found ----------------------------------------------

CASES: Counter[str] = Counter()

#: Bugs this file found (all fixed), each pinned by a regression test at the end.
BUGS = {
    "deep-json": "JSON nested ~1000 deep raises RecursionError in the submission API (500, not 400)",
    "long-integer": "an integer of more than 4300 digits (JSON number or digit string) raises ValueError (500)",
    "huge-number": "an integer beyond the float range in a spec or planning form raises OverflowError (500)",
    "unicode-digit": "a str.isdigit() answer int() cannot read, such as '²', raises ValueError (500)",
    "lone-surrogate": "a lone surrogate (JSON \\ud800) reaching the database raises UnicodeEncodeError (500)",
    "nul-postgresql": "a NUL character reaching PostgreSQL text raises DataError (500, PostgreSQL only)",
    "trailing-newline": "a slug or question key ending in a newline passes the spec's ^...$ pattern and is stored",
    "huge-epsilon": "a coin flip set by ε ≥ 710 overflows math.expm1 in CoinFlip.from_epsilon (OverflowError, 500)",
    "tiny-margin": "a target margin below ~1e-154 is stored, then every builder page of the survey fails (500)",
    "tiny-epsilon": "a coin flip set by ε = 2.81e-230 with a forced-yes chance of 2.81e-230 divides by 0 (500)",
}


class _Summary:
    """Prints how many cases ran at the end of the session (registered as a plugin by a fixture)."""

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not CASES:
            return
        terminalreporter.write_sep("-", "fuzz cases")
        for line in summary_lines():
            terminalreporter.write_line(line)


def summary_lines() -> list[str]:
    return [f"{sum(CASES.values())} generated cases: " + ", ".join(f"{k} {v}" for k, v in sorted(CASES.items()))]


@pytest.fixture(scope="module", autouse=True)
def _count_cases(request):
    manager = request.config.pluginmanager
    if not manager.has_plugin("fuzz-summary"):
        manager.register(_Summary(), "fuzz-summary")
    yield
    print("\n" + "\n".join(summary_lines()))


# -- the world every property runs against -------------------------------------------------------------

GOOD = {"drugs": 1, "mirror": 0, "often": 3, "age": 1}
QUESTIONS = {q["key"]: (len(q.get("options", ["yes", "no"])), q.get("required", True)) for q in SMALL_SPEC["questions"]}
USED_CODE = "USEDUSEDUSED"
OTHER_SURVEY_CODE = "OTHERSURVEY2"
#: Every table a request could write to: every table the models declare, read from their metadata so
#: that a table added later is watched without anyone remembering to list it here
#: (``test_the_snapshot_watches_every_table_the_migrations_make`` holds it to the migrated schema).
TABLES = tuple(t.name for t in db.metadata.sorted_tables if t.name != VERSION_TABLE)
LIMIT = 64 * 1024  # the app's request-size limit (survey.platform.config)
IMPORT_LIMIT = 1024 * 1024  # the import page's own limit


def _spec(slug: str, **fields: Any) -> dict[str, Any]:
    return {**SMALL_SPEC, "slug": slug, **fields}


@pytest.fixture
def world(app, user):
    """Surveys in every state a request can meet; alice (the ``user`` fixture) owns all but bob's draft."""
    with app.app_context():
        alice = db.session.get(User, user)
        bob = User(username="bob")
        bob.password_hash = "!"  # bob never signs in (and a real hash costs time)
        db.session.add(bob)
        create_survey_from_spec(db.session, SMALL_SPEC, owner=alice)  # small-test: open, open link
        create_survey_from_spec(db.session, _spec("closed-test", status="closed"), owner=alice)
        expired = create_survey_from_spec(db.session, _spec("expired-test"), owner=alice)
        expired.closes_on = today() - dt.timedelta(days=1)
        future = create_survey_from_spec(db.session, _spec("future-test"), owner=alice)
        future.opens_on = today() + dt.timedelta(days=1)
        invite = create_survey_from_spec(db.session, _spec("invite-test", access="invitation"), owner=alice)
        closed_invite = create_survey_from_spec(
            db.session, _spec("closed-invite", access="invitation", status="closed"), owner=alice
        )
        create_survey_from_spec(db.session, _spec("draft-test", status="draft"), owner=alice)
        create_survey_from_spec(db.session, _spec("bobs-draft", status="draft"), owner=bob)
        db.session.flush()
        db.session.add(RespondentCode(survey_id=invite.id, code=USED_CODE, used=True))
        db.session.add(RespondentCode(survey_id=closed_invite.id, code=OTHER_SURVEY_CODE))
        db.session.commit()
    # coded submissions stay held (survey/domain/responses/mixing.py), so each is checked in its own held row
    app.config["ANONYMITY_BATCH"] = 10**9
    return app


@dataclass(frozen=True)
class Snapshot:
    """Every row of every table (as a digest per table), their counts, and the used invitation codes.

    Equal snapshots mean nothing was written: no row added or removed, and none changed (a running
    tally counted up, a code marked used, a survey's title edited all change a digest).
    """

    counts: dict[str, int]
    digests: dict[str, str]
    used_codes: int

    def changed(self, other: Snapshot) -> list[str]:
        return [t for t in TABLES if (self.counts[t], self.digests[t]) != (other.counts[t], other.digests[t])]


def snapshot(app) -> Snapshot:
    """What every table holds now, read in one transaction."""
    counts, digests = {}, {}
    with app.app_context():
        for name in TABLES:
            table = db.metadata.tables[name]
            rows = db.session.execute(select(table).order_by(*table.primary_key.columns)).all()
            counts[name] = len(rows)
            digests[name] = hashlib.sha256(repr([tuple(row) for row in rows]).encode()).hexdigest()
        used = db.session.scalar(select(func.count()).select_from(RespondentCode).where(RespondentCode.used.is_(True)))
        db.session.rollback()
    return Snapshot(counts, digests, used)


def survey_state(app, slug: str) -> Any:
    """Everything the builder may change on one survey (None if there is no such survey)."""
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        if survey is None:
            return None
        return json.dumps(
            [survey.status, survey.epsilon_cap, survey_to_spec(survey)], sort_keys=True, default=str, allow_nan=True
        )


def fresh_code(app, slug: str = "invite-test") -> str:
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        code = new_code()
        db.session.add(RespondentCode(survey_id=survey.id, code=code))
        db.session.commit()
        return code


def backend(app) -> str:
    return "sqlite" if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite") else "postgresql"


def run_property(app, name: str, strategy: st.SearchStrategy, check: Callable[[Any], None], examples: int) -> None:
    """Run ``check`` on ``examples`` cases from ``strategy`` (fewer on PostgreSQL), counting them.

    ``examples`` is for the default profile; a profile with more ``max_examples`` (``fuzz``) scales it.
    """
    count = examples if backend(app) == "sqlite" else max(20, examples * 2 // 5)
    count = max(1, round(count * settings.default.max_examples / DEFAULT_EXAMPLES))

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
    )
    @given(strategy)
    def inner(case):
        CASES[f"{name}[{backend(app)}]"] += 1
        check(case)

    inner()


def test_the_snapshot_watches_every_table_the_migrations_make(app):
    """A refusal must write nothing anywhere: the snapshot reads every table the database has."""
    with app.app_context():
        reflected = MetaData()
        reflected.reflect(db.engine)
    made = set(reflected.tables) - {VERSION_TABLE}
    assert {"pair_tallies", "day_tallies", "account_links"} <= made
    assert sorted(TABLES) == sorted(made)


def test_the_snapshot_sees_a_changed_row_as_well_as_a_new_one(world, client):
    """A write that adds no row (a tally counted up in place, a code marked used) is a write too."""
    app = world
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 201
    before = snapshot(app)
    with app.app_context():
        db.session.execute(text("UPDATE submission_tallies SET count = count + 1"))
        db.session.commit()
    after = snapshot(app)
    assert after.counts == before.counts and before.changed(after) == ["submission_tallies"]
    fresh_code(app)
    before = snapshot(app)
    with app.app_context():
        db.session.execute(text("UPDATE invitations SET used = :yes WHERE used = :no"), {"yes": True, "no": False})
        db.session.commit()
    assert before.changed(snapshot(app)) == ["invitations"]


# -- what a refusal must look like ---------------------------------------------------------------------

ALERT = re.compile(r'role="alert"[^>]*>(.*?)</(?:p|div)>', re.DOTALL)
FIELD_ERROR = re.compile(r'class="field-error"[^>]*>(.*?)</p>', re.DOTALL)
ERROR_PAGE = re.compile(r"<h1>(.*?)</h1>\s*<p class=\"muted\">Error \d{3}\.", re.DOTALL)
TAG = re.compile(r"<[^>]+>")


def readable_message(response) -> str:
    """The message a refused request carries: the JSON ``error``, or the page's alert or field errors."""
    if response.is_json:
        body = response.get_json()
        assert isinstance(body, dict), body
        message = body.get("error")
        assert isinstance(message, str), body
        return message
    page = response.get_data(as_text=True)
    found = ALERT.findall(page) + FIELD_ERROR.findall(page) + ERROR_PAGE.findall(page)
    texts = [" ".join(html.unescape(TAG.sub(" ", f)).split()) for f in found]
    return " ".join(t for t in texts if t)


def assert_refused(response, before: tuple[int, ...], after: tuple[int, ...]) -> None:
    body = response.get_data(as_text=True)
    assert "Traceback" not in body and 'File "' not in body
    message = readable_message(response)
    assert message.strip(), f"{response.status_code} without a readable message: {body[:500]}"
    assert after == before, f"{response.status_code} but it wrote to {before.changed(after)}"


# -- strategies shared by every property ---------------------------------------------------------------

ANY_CHARACTER = st.characters(exclude_categories=())  # surrogates and control characters included
NASTY_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfff",
    "²",
    "١",
    "٣",
    "𝟙",
    "1" * 5000,
    "9" * 30,
    " 1 ",
    "+1",
    "-0",
    "0x1",
    "1e0",
    "1.0",
    "01",
    "\n1",
    "1\n",
    "\t",
    "drugs\n",
    "DRUGS",
    "q_drugs",
    "<script>alert(1)</script>",
    "'; DROP TABLE answers; --",
    "é" * 300,
    "\u202e",
    "\ufeff",
    "NaN",
    "Infinity",
    "null",
]
NASTY_NUMBERS = [
    0,
    -1,
    1,
    2,
    3,
    4,
    50,
    2**31,
    2**63,
    -(2**63),
    2**64,
    10**400,
    -(10**400),
    0.5,
    1.0,
    -0.0,
    1e-320,
    1e308,
    math.nan,
    math.inf,
    -math.inf,
    True,
    False,
]
texts = st.sampled_from(NASTY_TEXT) | st.text(ANY_CHARACTER, max_size=20)
numbers = st.sampled_from(NASTY_NUMBERS) | st.integers() | st.floats()
scalars = st.none() | st.booleans() | numbers | texts
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)
JSON_TYPES = ["application/json", "application/json; charset=utf-8", "application/problem+json"]
OTHER_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/json", ""]


class Obj:
    """A JSON object as a list of pairs, so that a key can be written twice in the raw text."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        self.pairs = pairs

    def __repr__(self) -> str:
        return f"Obj({self.pairs!r})"


def encode(value: Any) -> str:
    if isinstance(value, Obj):
        return "{" + ", ".join(f"{json.dumps(k)}: {encode(v)}" for k, v in value.pairs) + "}"
    return json.dumps(value)


def accepts_as_code(value: Any, k: int) -> bool | None:
    """Whether the server must accept ``value`` as an option code of a k-option question.

    None when either answer is acceptable: an absent value (None, ""), or a digit string other than
    a few ASCII digits ("١", "²", thousands of digits), which the server may read or refuse, but must
    never fail on.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0 <= value < k
    if isinstance(value, str) and value.strip().isdigit():
        if re.fullmatch(r"[0-9]{1,9}", value.strip()):
            return 0 <= int(value.strip()) < k
        return None
    return False


def expectation(verdict: bool | None) -> str:
    return "either" if verdict is None else "valid" if verdict else "invalid"


# -- 1. the submission API -----------------------------------------------------------------------------


@dataclass
class ApiCase:
    slug: str
    content_type: str
    body: Any  # an Obj, a JSON value, or raw bytes
    expect: str  # "valid", "invalid" or "either"
    mutation: str
    invitation: str = "none"  # for invitation-only surveys: which code to send
    answers: dict[str, Any] = field(default_factory=dict)


UNSET = object()
SLUGS_CLOSED = ["closed-test", "expired-test", "future-test", "draft-test", "no-such-survey", "closed-invite"]


@st.composite
def api_cases(draw) -> ApiCase:
    slug = draw(st.sampled_from(["small-test"] * 8 + ["invite-test"] * 3 + SLUGS_CLOSED))
    answers: list[tuple[str, Any]] = [(key, draw(st.integers(0, k - 1))) for key, (k, _) in QUESTIONS.items()]
    top: list[tuple[str, Any]] = []
    expect = "valid"
    mutation = draw(
        st.sampled_from(
            [
                "none",
                "drop-optional",
                "string-codes",
                "null-optional",
                "unknown-question",
                "out-of-domain",
                "wrong-type",
                "digit-string",
                "missing-required",
                "duplicate-key",
                "duplicate-top-key",
                "extra-field",
                "answers-not-object",
                "body-not-object",
                "arbitrary-json",
                "content-type",
                "oversized",
                "invalid-utf8",
                "not-json",
                "deep",
            ]
        )
    )
    content_type = draw(st.sampled_from(JSON_TYPES))
    body: Any = UNSET
    if mutation == "drop-optional":
        answers = [(k, v) for k, v in answers if QUESTIONS[k][1]]
    elif mutation == "string-codes":
        answers = [
            (k, draw(st.sampled_from(["", " ", "0"])) + str(v) + draw(st.sampled_from(["", " "]))) for k, v in answers
        ]
        expect = "either"
    elif mutation == "null-optional":
        answers = [(k, draw(st.sampled_from([None, ""])) if not QUESTIONS[k][1] else v) for k, v in answers]
        expect = "either"
    elif mutation == "unknown-question":
        name = draw(texts.filter(lambda s: s not in QUESTIONS))
        answers.insert(draw(st.integers(0, len(answers))), (name, draw(json_values)))
        expect = "invalid"
    elif mutation in ("out-of-domain", "wrong-type", "digit-string"):
        i = draw(st.integers(0, len(answers) - 1))
        key, k = answers[i][0], QUESTIONS[answers[i][0]][0]
        if mutation == "out-of-domain":
            value = draw(st.integers().filter(lambda v: not 0 <= v < k) | st.sampled_from([True, False, 10**400]))
        elif mutation == "wrong-type":
            value = draw(json_values.filter(lambda v: accepts_as_code(v, k) is False))
            if isinstance(value, str) and value.strip().isdigit():
                value = "x" + value
        else:
            value = draw(
                st.sampled_from(["²", "١", "٣", "𝟙", "1" * 5000, "0" * 5000, "00", "9" * 30])
                | st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=4)
            )
        answers[i] = (key, value)
        verdict = accepts_as_code(value, k)
        expect = expectation(verdict)
    elif mutation == "missing-required":
        required = [i for i, (k, _) in enumerate(answers) if QUESTIONS[k][1]]
        i = draw(st.sampled_from(required))
        how = draw(st.sampled_from(["drop", None, ""]))
        if how == "drop":
            del answers[i]
        else:
            answers[i] = (answers[i][0], how)
        expect = "invalid"
    elif mutation == "duplicate-key":
        i = draw(st.integers(0, len(answers) - 1))
        answers.insert(draw(st.integers(0, len(answers))), (answers[i][0], draw(json_values)))
        expect = "invalid"
    elif mutation == "duplicate-top-key":
        top.append(("answers", Obj(list(answers))))
        expect = "invalid"
    elif mutation == "extra-field":
        top.append((draw(texts.filter(lambda s: s not in ("answers", "invitation"))), draw(json_values)))
        expect = "invalid"
    elif mutation == "answers-not-object":
        body = Obj([("answers", draw(json_values.filter(lambda v: not isinstance(v, dict))))])
        expect = "invalid"
    elif mutation == "body-not-object":
        body = draw(json_values.filter(lambda v: not isinstance(v, dict)))
        expect = "invalid"
    elif mutation == "arbitrary-json":
        body = draw(json_values)
        expect = "either"
    elif mutation == "content-type":
        content_type = draw(st.sampled_from(OTHER_TYPES))
        expect = "invalid"
    elif mutation == "oversized":
        top.append(("padding", "x" * draw(st.integers(LIMIT, 3 * LIMIT))))
        expect = "invalid"
    elif mutation == "invalid-utf8":
        raw = encode(Obj([("answers", Obj(answers))])).encode()
        cut = draw(st.integers(0, len(raw)))
        body = (
            raw[:cut]
            + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80", b"\xf8\x88\x80\x80\x80"]))
            + raw[cut:]
        )
        expect = "invalid"
    elif mutation == "not-json":
        raw = encode(Obj([("answers", Obj(answers))])).encode()
        body = draw(st.sampled_from([raw[: len(raw) // 2], raw + b"}", b"", b"{answers: 1}"]) | st.binary(max_size=200))
        expect = "either" if body == raw else "invalid"
    elif mutation == "deep":
        depth = draw(st.integers(50, 20_000))
        body = ("[" * depth + "]" * depth).encode()
        if draw(st.booleans()):
            body = b'{"answers": ' + body + b"}"
        expect = "invalid"
    if body is UNSET:
        body = Obj([("answers", Obj(answers)), *top])
    invitation = "none"
    if slug == "invite-test" or (slug == "small-test" and draw(st.booleans())):
        invitation = draw(st.sampled_from(["fresh", "fresh", "used", "unknown", "other-survey", "none", "wrong-type"]))
        if slug == "invite-test" and invitation != "fresh":
            expect = "invalid"
        if invitation == "wrong-type":
            expect = "invalid"
    if slug not in ("small-test", "invite-test"):
        expect = "invalid"
    if isinstance(body, Obj) and invitation != "none":
        body.pairs.append(("invitation", "{INVITATION}"))
    return ApiCase(slug, content_type, body, expect, mutation, invitation, dict(answers))


def invitation_value(app, case_invitation: str, slug: str) -> Any:
    return {
        "fresh": lambda: fresh_code(app) if slug == "invite-test" else new_code(),
        "used": lambda: USED_CODE.lower()[:4] + "-" + USED_CODE[4:],
        "unknown": lambda: new_code(),
        "other-survey": lambda: OTHER_SURVEY_CODE,
        "wrong-type": lambda: [1],
        "none": lambda: None,
    }[case_invitation]()


def latest_answers(app, slug: str = "small-test") -> dict[str, int]:
    """The answers of the latest submission (a coded one: the latest held one)."""
    with app.app_context():
        if slug == "invite-test":
            held = db.session.scalar(select(HeldSubmission).order_by(HeldSubmission.id.desc()))
            survey_id, answers = held.survey_id, [tuple(pair) for pair in held.answers]
        else:
            submission = db.session.scalar(select(Submission).order_by(Submission.id.desc()))
            survey_id, answers = submission.survey_id, [(a.question_id, a.value) for a in submission.answers]
        survey = db.session.get(Survey, survey_id)
        by_id = {q.id: q.key for q in survey.questions}
        return {by_id[q]: v for q, v in answers}


def stored_in(slug: str) -> str:
    """Where a submission to this survey is stored: coded ones are held first."""
    return "held_submissions" if slug == "invite-test" else "submissions"


def check_accepted_submission(app, case: ApiCase, before, after, sent: dict[str, Any]) -> None:
    stored = latest_answers(app, case.slug)
    expected = {k: int(v.strip()) if isinstance(v, str) else v for k, v in sent.items() if v is not None and v != ""}
    assert stored == expected
    table = stored_in(case.slug)
    assert after.counts[table] == before.counts[table] + 1
    if table == "submissions":
        assert after.counts["answers"] == before.counts["answers"] + len(expected)
    used = after.used_codes - before.used_codes
    assert used == (1 if case.slug == "invite-test" else 0)


def test_submission_api_never_fails_and_refusals_write_nothing(world, client):
    app = world

    def check(case: ApiCase) -> None:
        body = case.body
        if isinstance(body, Obj) and case.invitation != "none":
            code = invitation_value(app, case.invitation, case.slug)
            body = Obj([(k, code if v == "{INVITATION}" else v) for k, v in body.pairs])
        data = body if isinstance(body, bytes) else encode(body).encode("utf-8", "surrogatepass")
        note(f"{case.mutation} → {case.slug} [{case.content_type}] {data[:300]!r}")
        before = snapshot(app)
        response = client.post(f"/api/surveys/{case.slug}/responses", data=data, content_type=case.content_type)
        after = snapshot(app)
        status = response.status_code
        assert status < 500
        if status == 201:
            assert case.expect != "invalid", f"accepted an invalid case: {response.get_json()}"
            check_accepted_submission(app, case, before, after, case.answers)
        else:
            assert 400 <= status < 500, status
            assert case.expect != "valid", f"refused a valid case: {status} {response.get_data(as_text=True)[:300]}"
            assert_refused(response, before, after)
            assert response.is_json

    run_property(app, "api", api_cases(), check, examples=250)


# -- 2. the form post ----------------------------------------------------------------------------------


@dataclass
class FormCase:
    slug: str
    fields: list[tuple[str, str]]
    raw: bytes | None
    content_type: str
    expect: str
    mutation: str
    invitation: str = "none"


def decoded_form(raw: bytes) -> dict[str, str]:
    """What the server reads from a url-encoded body: the first value of each field, as Werkzeug decodes it."""
    environ = EnvironBuilder(method="POST", data=raw, content_type="application/x-www-form-urlencoded").get_environ()
    form = Request(environ).form
    return {name: form.getlist(name)[0] for name in form}


def form_value(draw, k: int) -> str:
    return draw(st.sampled_from([str(c) for c in range(k)]))


@st.composite
def form_cases(draw) -> FormCase:
    slug = draw(st.sampled_from(["small-test"] * 8 + ["invite-test"] * 3 + SLUGS_CLOSED))
    fields = [(f"q_{key}", form_value(draw, k)) for key, (k, _) in QUESTIONS.items()]
    expect = "valid"
    raw = None
    content_type = "application/x-www-form-urlencoded"
    mutation = draw(
        st.sampled_from(
            [
                "none",
                "drop-optional",
                "unexpected-field",
                "unknown-question",
                "out-of-domain",
                "wrong-value",
                "repeated",
                "missing-required",
                "empty-required",
                "arbitrary",
                "invalid-utf8",
                "oversized",
                "json-body",
                "multipart",
            ]
        )
    )
    if mutation == "drop-optional":
        fields = [(n, v) for n, v in fields if QUESTIONS[n[2:]][1]]
    elif mutation == "unexpected-field":
        name = draw(texts.filter(lambda s: not s.startswith("q_") and s not in ("csrf_token", "invitation")))
        fields.insert(draw(st.integers(0, len(fields))), (name, draw(texts)))
        expect = "invalid"
    elif mutation == "unknown-question":
        name = "q_" + draw(texts.filter(lambda s: s not in QUESTIONS))
        fields.append((name, draw(texts)))
        expect = "invalid"
    elif mutation in ("out-of-domain", "wrong-value"):
        i = draw(st.integers(0, len(fields) - 1))
        k = QUESTIONS[fields[i][0][2:]][0]
        if mutation == "out-of-domain":
            value = str(draw(st.integers().filter(lambda v: not 0 <= v < k)))
        else:
            value = draw(texts.filter(lambda s: s.strip() != ""))
        fields[i] = (fields[i][0], value)
        verdict = accepts_as_code(value, k)
        expect = expectation(verdict)
    elif mutation == "repeated":
        i = draw(st.integers(0, len(fields) - 1))
        fields.insert(draw(st.integers(0, len(fields))), (fields[i][0], draw(texts)))
        expect = "invalid"
    elif mutation in ("missing-required", "empty-required"):
        required = [i for i, (n, _) in enumerate(fields) if QUESTIONS[n[2:]][1]]
        i = draw(st.sampled_from(required))
        if mutation == "missing-required":
            del fields[i]
        else:
            fields[i] = (fields[i][0], draw(st.sampled_from(["", " ", "\t"])))
        expect = "invalid"
    elif mutation == "arbitrary":
        fields = draw(st.lists(st.tuples(texts | st.sampled_from([f"q_{k}" for k in QUESTIONS]), texts), max_size=8))
        expect = "either"
    elif mutation == "invalid-utf8":
        raw = "&".join(f"{quote(n)}={quote(v)}" for n, v in fields).encode()
        cut = draw(st.integers(0, len(raw)))
        raw = raw[:cut] + draw(st.sampled_from([b"\xff", b"%ff", b"%C3%28", b"%ED%A0%80", b"\x80"])) + raw[cut:]
        expect = "either"  # the byte may land in a value (refused) or in a place where it does no harm
    elif mutation == "oversized":
        fields.append(("q_padding", "x" * draw(st.integers(LIMIT, 3 * LIMIT))))
        expect = "invalid"
    elif mutation == "json-body":
        raw = json.dumps({"answers": GOOD}).encode()
        content_type = "application/json"
        expect = "invalid"
    elif mutation == "multipart":
        raw = draw(st.binary(max_size=300))
        content_type = "multipart/form-data; boundary=" + draw(st.sampled_from(["x", "----b", ""]))
        expect = "invalid"
    invitation = "none"
    if slug == "invite-test" or (slug == "small-test" and draw(st.booleans())):
        invitation = draw(st.sampled_from(["fresh", "fresh", "used", "unknown", "other-survey", "none"]))
        if slug == "invite-test" and invitation != "fresh":
            expect = "invalid"
    if slug not in ("small-test", "invite-test"):
        expect = "invalid"
    return FormCase(slug, fields, raw, content_type, expect, mutation, invitation)


def test_form_post_never_fails_and_refusals_write_nothing(world, client):
    app = world

    def check(case: FormCase) -> None:
        fields = list(case.fields)
        code = invitation_value(app, case.invitation, case.slug)
        if code is not None:
            fields.append(("invitation", code))
        raw = case.raw
        if raw is None:
            raw = "&".join(
                f"{quote(n, errors='surrogatepass')}={quote(v, errors='surrogatepass')}" for n, v in fields
            ).encode()
        note(f"{case.mutation} → {case.slug} {raw[:300]!r}")
        before = snapshot(app)
        response = client.post(f"/s/{case.slug}", data=raw, content_type=case.content_type)
        after = snapshot(app)
        status = response.status_code
        assert status < 500
        if status == 303:
            assert case.expect != "invalid", "accepted an invalid form post"
            assert response.headers["Location"].endswith(f"/s/{case.slug}/thanks")
            table = stored_in(case.slug)
            assert after.counts[table] == before.counts[table] + 1
            assert after.used_codes - before.used_codes == (1 if case.slug == "invite-test" else 0)
            if case.content_type.startswith("application/x-www-form-urlencoded"):
                sent = {n[2:]: v for n, v in decoded_form(raw).items() if n.startswith("q_") and v.strip()}
                assert latest_answers(app, case.slug) == {k: int(v.strip()) for k, v in sent.items()}
        else:
            assert 400 <= status < 500, status
            assert case.expect != "valid", f"refused a valid form: {status}"
            assert_refused(response, before, after)

    run_property(app, "form", form_cases(), check, examples=200)


# -- 3. spec documents: create_survey_from_spec and the import page -------------------------------------

KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
PROBABILITY = st.floats(0, 1) | st.sampled_from([0.5, 0.25, 0.75, 0.6, 0.3, 0.999, 0.001])
PARAMETER = PROBABILITY | numbers | st.sampled_from(["0.5", None, [0.5]])
DESIGN_PARAMETERS = {
    "coin_flip": ("truth_probability", "yes_probability"),
    "warner": ("p",),
    "unrelated_question": ("sensitive_probability", "unrelated_yes_rate"),
    "grr": ("epsilon",),
    "grr_p": ("truth_probability",),
}


@st.composite
def privacy_specs(draw, k: int) -> Any:
    design = draw(st.sampled_from([*DESIGN_PARAMETERS, "forced_response", "custom", "nope"]))
    if design == "forced_response":
        spec: dict[str, Any] = {
            "design": design,
            "forced": draw(st.lists(PROBABILITY.map(lambda x: x / 4) | PARAMETER, min_size=k - 1, max_size=k + 1)),
        }
    elif design in DESIGN_PARAMETERS:
        spec = {"design": design.removesuffix("_p")}
        for name in DESIGN_PARAMETERS[design]:
            spec[name] = draw(PROBABILITY | st.floats(0, 8) if name == "epsilon" else PARAMETER)
    else:
        spec = {"design": design, "matrix": draw(json_values)}
    if draw(st.integers(0, 9)) == 0:
        spec["allow_one_sided"] = draw(st.booleans() | scalars)
    return spec


@st.composite
def question_specs(draw) -> Any:
    kind = draw(st.sampled_from(["yes_no", "choice", "direct", "yes_no", "choice"]) | texts)
    k = draw(st.integers(2, 5))
    question: dict[str, Any] = {
        "key": draw(KEYS | texts),
        "kind": kind,
        "text": draw(st.sampled_from(["Have you?", "How often?"]) | texts),
    }
    if kind in ("choice", "direct") or draw(st.integers(0, 9)) == 0:
        question["options"] = draw(
            st.lists(
                st.sampled_from(["never", "sometimes", "often", "always", "rarely"]) | texts, min_size=k, max_size=k
            )
        )
    if kind in ("yes_no", "choice") or draw(st.integers(0, 9)) == 0:
        question["privacy"] = draw(privacy_specs(k))
    for name, values in (("required", st.booleans() | scalars), ("help_text", texts), ("simulated_truth", json_values)):
        if draw(st.integers(0, 5)) == 0:
            question[name] = draw(values)
    return question


def _mutate(draw, value: Any, depth: int = 0) -> Any:
    """Replace, drop or add one thing somewhere in a JSON document."""
    if isinstance(value, dict) and value and depth < 4 and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: _mutate(draw, value[key], depth + 1)}
    if isinstance(value, list) and value and depth < 4 and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        return [*value[:i], _mutate(draw, value[i], depth + 1), *value[i + 1 :]]
    how = draw(st.sampled_from(["replace", "drop", "add"]))
    if how == "drop" and isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        return {k: v for k, v in value.items() if k != key}
    if how == "add" and isinstance(value, dict):
        return {**value, draw(texts): draw(json_values)}
    return draw(json_values)


@st.composite
def spec_documents(draw) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    status = draw(st.sampled_from(["open", "draft", "closed", None]) | texts)
    spec: dict[str, Any] = {"title": draw(st.sampled_from(["A survey", "Work and health"]) | texts)}
    if status is not None:
        spec["status"] = status
    spec["questions"] = draw(st.lists(question_specs(), max_size=4))
    optional = {
        "slug": KEYS.map(lambda s: f"s-{s}") | texts,
        "introduction": texts,
        "closing_message": texts,
        "epsilon_cap": numbers | st.floats(0.1, 20),
        "expected_respondents": numbers | st.integers(1, 10**6),
        "target_margin": numbers | st.floats(0.001, 0.5),
        "access": st.sampled_from(["link", "invitation"]) | texts,
    }
    for name, values in optional.items():
        if draw(st.integers(0, 4)) == 0:
            spec[name] = draw(values)
    if draw(st.integers(0, 2)) == 0:
        spec = _mutate(draw, spec)
    return spec


def _valid_name(pattern: str, name: str) -> bool:
    return re.fullmatch(pattern, name) is not None


def _stored_correctly(app, slug: str, spec: dict[str, Any], status: str) -> None:
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        assert survey is not None and survey.status == status
        assert _valid_name(r"[a-z0-9][a-z0-9-]{2,79}", survey.slug)
        assert all(_valid_name(r"[a-z][a-z0-9_]{0,39}", q.key) for q in survey.questions)
        questions = spec.get("questions") or []
        assert [q.position for q in survey.questions] == list(range(len(questions)))
        for q, raw in zip(survey.questions, questions, strict=True):
            assert q.kind == raw["kind"] and q.text == raw["text"].strip()
            assert (q.design is None) == (raw["kind"] == "direct")
            if q.design is not None:  # the stored design is the one the spec describes
                stored = math.inf if q.design.epsilon is None else q.design.epsilon
                assert math.isclose(q.mechanism().epsilon, stored, rel_tol=1e-9)


def test_create_survey_from_spec_refuses_with_spec_error_and_adds_nothing(world):
    app = world

    def check(spec: Any) -> None:
        note(repr(spec)[:500])
        before = snapshot(app)
        with app.app_context():
            alice = db.session.scalar(select(User).where(User.username == "alice"))
            try:
                survey = create_survey_from_spec(db.session, spec, owner=alice)
            except DomainError as error:
                assert str(error).strip() and "Traceback" not in str(error)
                assert not db.session.new, f"DomainError but added {db.session.new}"
                db.session.rollback()
                survey = None
            if survey is not None:
                slug = survey.slug
                db.session.commit()
        after = snapshot(app)
        if survey is None:
            assert after == before
        else:
            _stored_correctly(app, slug, spec, spec.get("status", "open"))

    run_property(app, "spec", spec_documents(), check, examples=250)


@dataclass
class ImportCase:
    text: str | None  # pasted
    file: bytes | None  # uploaded
    expect: str
    mutation: str
    spec: Any = None


@st.composite
def import_cases(draw) -> ImportCase:
    spec = draw(spec_documents())
    document = json.dumps(spec, ensure_ascii=draw(st.booleans()))
    mutation = draw(
        st.sampled_from(
            [
                "as-is",
                "as-is",
                "file",
                "file-bom",
                "both",
                "neither",
                "truncated",
                "duplicate-key",
                "invalid-utf8-file",
                "oversized",
                "deep",
                "huge-digits",
                "whitespace",
            ]
        )
    )
    expect = "either"
    text, upload = document, None
    if mutation == "file":
        text, upload = None, document.encode("utf-8", "surrogatepass")
    elif mutation == "file-bom":
        text, upload = None, b"\xef\xbb\xbf" + document.encode("utf-8", "surrogatepass")
    elif mutation == "both":
        upload = document.encode("utf-8", "surrogatepass")
        expect = "invalid"
    elif mutation == "neither":
        text = draw(st.sampled_from(["", " ", "\n"]))
        expect = "invalid"
    elif mutation == "truncated":
        text = document[: draw(st.integers(0, max(0, len(document) - 1)))]
        expect = "invalid"
    elif mutation == "duplicate-key":
        text = '{"title": "One", "title": "Two", ' + document.lstrip("{") if document.startswith("{") else document
        expect = "invalid"
    elif mutation == "invalid-utf8-file":
        raw = document.encode("utf-8", "surrogatepass")
        cut = draw(st.integers(0, len(raw)))
        text, upload = None, raw[:cut] + b"\xff\xfe\x80" + raw[cut:]
        expect = "invalid"
    elif mutation == "oversized":
        text = json.dumps({"title": "Big", "introduction": "x" * draw(st.integers(IMPORT_LIMIT, IMPORT_LIMIT + 5000))})
        expect = "invalid"
    elif mutation == "deep":
        depth = draw(st.integers(100, 50_000))
        text = '{"title": "Deep", "questions": ' + "[" * depth + "]" * depth + "}"
        expect = "invalid"
    elif mutation == "huge-digits":
        text = '{"title": "Digits", "expected_respondents": ' + "1" * draw(st.integers(4000, 6000)) + "}"
        expect = "invalid"
    elif mutation == "whitespace":
        text = draw(st.sampled_from(["\ufeff", "\t\n"])) + document + "\n"
    return ImportCase(text, upload, expect, mutation, spec)


def test_spec_import_page_never_fails_and_refusals_write_nothing(world, signed_in):
    app, client = world, signed_in

    def check(case: ImportCase) -> None:
        data: dict[str, Any] = {}
        if case.text is not None:
            # A form field is UTF-8 on the wire: a lone surrogate arrives as bytes Werkzeug decodes to U+FFFD (the
            # surrogate itself reaches the server only as a JSON escape, which ensure_ascii=True cases send).
            data["text"] = case.text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        if case.file is not None:
            import io

            data["file"] = (io.BytesIO(case.file), "spec.json")
        note(f"{case.mutation}: {(case.text or '')[:300]!r} {(case.file or b'')[:300]!r}")
        before = snapshot(app)
        response = client.post("/surveys/import", data=data, content_type="multipart/form-data")
        after = snapshot(app)
        status = response.status_code
        assert status < 500
        if status == 303:
            assert case.expect != "invalid", "imported an invalid document"
            slug = re.search(r"/surveys/([^/]+)/", response.headers["Location"]).group(1)
            spec = case.spec if isinstance(case.spec, dict) else {}
            _stored_correctly(app, slug, spec, "draft")
            with app.app_context():
                survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
                assert survey.owner.username == "alice"
        else:
            assert 400 <= status < 500, status
            assert case.expect != "valid"
            assert_refused(response, before, after)

    run_property(app, "import", import_cases(), check, examples=150)


# -- 4. the builder's forms ----------------------------------------------------------------------------

NUMBER_TEXT = (
    st.sampled_from(["1", "0.5", "2", "0", "-1", "0.75", "0.25", "1e400", "nan", "inf", "", "abc", "1" + "0" * 400])
    | st.floats().map(repr)
    | st.integers().map(str)
    | texts
)


@dataclass
class BuilderCase:
    endpoint: str  # add, edit, details, planning
    slug: str
    question: int | str  # index into the survey's questions (edit), or a key that may not exist
    fields: list[tuple[str, str]]


@st.composite
def builder_cases(draw) -> BuilderCase:
    endpoint = draw(st.sampled_from(["add", "add", "edit", "edit", "details", "planning"]))
    slug = draw(st.sampled_from(["draft-test"] * 6 + ["small-test", "closed-test", "bobs-draft", "no-such-survey"]))
    question: int | str = draw(st.integers(0, 20) | texts)
    if endpoint in ("add", "edit"):
        kind = draw(st.sampled_from(["yes_no", "choice", "direct"]) | texts)
        candidates: dict[str, st.SearchStrategy] = {
            "kind": st.just(kind),
            "text": st.sampled_from(["Have you ever?", "How often?"]) | texts,
            "help_text": texts,
            "key": st.sampled_from(["", "drugs", "new_key", "q9"]) | KEYS | texts,
            "required": st.sampled_from(["y", ""]) | texts,
            "options": st.lists(st.sampled_from(["never", "often", "always"]) | texts, max_size=6).map("\n".join),
            "design": st.sampled_from(["coin_flip", "warner", "grr", "keep", "forced_response"]) | texts,
            "set_by": st.sampled_from(["epsilon", "truth_probability"]) | texts,
            "epsilon": NUMBER_TEXT,
            "truth_probability": NUMBER_TEXT,
            "yes_probability": NUMBER_TEXT,
            "allow_one_sided": st.sampled_from(["y", ""]) | texts,
        }
    elif endpoint == "details":
        candidates = {
            "title": st.sampled_from(["New title", ""]) | texts,
            "introduction": texts,
            "closing_message": texts,
        }
    else:
        candidates = {"epsilon_cap": NUMBER_TEXT, "expected_respondents": NUMBER_TEXT, "target_margin": NUMBER_TEXT}
    fields = [(name, draw(values)) for name, values in candidates.items() if draw(st.integers(0, 5)) > 0]
    if draw(st.integers(0, 7)) == 0 and fields:
        fields.append((fields[0][0], draw(texts)))  # a repeated field
    if draw(st.integers(0, 7)) == 0:
        fields.append((draw(texts), draw(texts)))  # a field the form does not have
    return BuilderCase(endpoint, slug, question, fields)


def test_builder_forms_never_fail_and_refusals_change_nothing(world, signed_in):
    app, client = world, signed_in

    def check(case: BuilderCase) -> None:
        with app.app_context():
            survey = db.session.scalar(select(Survey).where(Survey.slug == case.slug))
            keys = [q.key for q in survey.questions] if survey is not None else []
        key = keys[case.question % len(keys)] if isinstance(case.question, int) and keys else str(case.question)
        url = {
            "add": f"/surveys/{case.slug}/questions/new",
            "edit": f"/surveys/{case.slug}/questions/{quote(key, safe='', errors='surrogatepass')}/edit",
            "details": f"/surveys/{case.slug}/details",
            "planning": f"/surveys/{case.slug}/planning",
        }[case.endpoint]
        raw = "&".join(
            f"{quote(n, errors='surrogatepass')}={quote(v, errors='surrogatepass')}" for n, v in case.fields
        ).encode()
        note(f"{url} {raw[:400]!r}")
        before, state = snapshot(app), survey_state(app, case.slug)
        response = client.post(url, data=raw, content_type="application/x-www-form-urlencoded")
        after = snapshot(app)
        status = response.status_code
        assert status < 500
        if status in (301, 308):  # a redirect to the canonical URL (merged slashes): nothing happened
            assert after == before and survey_state(app, case.slug) == state
        elif status == 303:
            check_builder_saved(app, case, key, raw, before, after)
        else:
            assert 400 <= status < 500, status
            assert_refused(response, before, after)
            assert survey_state(app, case.slug) == state

    run_property(app, "builder", builder_cases(), check, examples=200)


def check_builder_saved(app, case: BuilderCase, key: str, raw: bytes, before, after) -> None:
    """A 303 from the builder: the change asked for is stored, and nothing else was added."""
    first = decoded_form(raw)
    assert case.slug in ("draft-test", "small-test", "closed-test")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == case.slug))
        if case.endpoint == "details":
            assert survey.title == first.get("title", "").strip()
            assert set(before.changed(after)) <= {"surveys"}
        elif case.endpoint == "planning":
            cap = first.get("epsilon_cap", "").strip()
            assert survey.epsilon_cap == (None if cap == "" else float(cap))
            assert set(before.changed(after)) <= {"surveys"}
        elif case.endpoint == "add":
            assert survey.is_draft
            assert after.counts["questions"] == before.counts["questions"] + 1
            assert survey.questions[-1].text == first.get("text", "").strip()
        else:
            question = next(q for q in survey.questions if q.key in (first.get("key", "").strip(), key))
            if "text" in first:  # an input that is not posted keeps its stored value
                assert question.text == first["text"].strip()
            assert after.counts["questions"] == before.counts["questions"]


# -- regression tests for the bugs found here ----------------------------------------------------------


def _bug(name: str, where: str, url: str, body: str, content_type: str = "form") -> Any:
    assert name in BUGS, name
    return pytest.param(where, url, body, content_type, id=f"{name}-{where}")


API = "/api/surveys/small-test/responses"
FORM = "application/x-www-form-urlencoded"
COIN_FLIP_AT_710 = "kind=yes_no&design=coin_flip&set_by=epsilon&epsilon=710&yes_probability=0.5"
COIN_FLIP_TINY = "kind=yes_no&design=coin_flip&set_by=epsilon&epsilon=2.81e-230&yes_probability=2.81e-230"
GRR_HUGE = {"key": "a", "kind": "yes_no", "text": "?", "privacy": {"design": "grr", "epsilon": 10**400}}
REGRESSIONS = [
    _bug("deep-json", "api", API, "[" * 5000 + "]" * 5000, "application/json"),
    _bug("long-integer", "api", API, '{"answers": {"drugs": ' + "1" * 5000 + ', "mirror": 0, "often": 1}}', "json"),
    _bug("long-integer", "form", "/s/small-test", f"q_drugs={'1' * 5000}&q_mirror=0&q_often=1"),
    _bug("long-integer", "import", "/surveys/import", '{"title": "T", "expected_respondents": ' + "1" * 5000 + "}"),
    _bug("unicode-digit", "form", "/s/small-test", "q_drugs=%C2%B2&q_mirror=0&q_often=1"),
    _bug("unicode-digit", "api", API, '{"answers": {"drugs": "\\u00b2", "mirror": 0, "often": 1}}', "json"),
    _bug(
        "lone-surrogate",
        "api",
        "/api/surveys/invite-test/responses",
        '{"answers": {"drugs": 1, "mirror": 0, "often": 1}, "invitation": "\\ud800"}',
        "json",
    ),
    _bug("lone-surrogate", "import", "/surveys/import", '{"title": "T\\ud800", "questions": []}'),
    _bug("huge-number", "import", "/surveys/import", '{"title": "T", "epsilon_cap": 1' + "0" * 400 + "}"),
    _bug("huge-number", "import-grr", "/surveys/import", json.dumps({"title": "T", "questions": [GRR_HUGE]})),
    _bug("huge-number", "planning", "/surveys/draft-test/planning", "epsilon_cap=1" + "0" * 400),
    _bug("huge-epsilon", "builder", "/surveys/draft-test/questions/new", f"text=Q&{COIN_FLIP_AT_710}"),
    _bug("tiny-epsilon", "builder", "/surveys/draft-test/questions/new", f"text=Q&{COIN_FLIP_TINY}"),
]


@pytest.mark.parametrize("where, url, body, content_type", REGRESSIONS)
def test_regressions_found_by_fuzzing(request, world, client, where, url, body, content_type):
    app = world
    if url.startswith("/surveys/"):
        client = request.getfixturevalue("signed_in")
    before = snapshot(app)
    if where.startswith("import"):
        response = client.post(url, data={"text": body}, content_type="multipart/form-data")
    elif content_type == "form":
        response = client.post(url, data=body.encode(), content_type="application/x-www-form-urlencoded")
    else:
        response = client.post(url, data=body.encode(), content_type="application/json")
    assert 400 <= response.status_code < 500
    assert_refused(response, before, snapshot(app))


NUL_CASES = [
    (
        "api",
        "/api/surveys/invite-test/responses",
        '{"answers": {"drugs": 1, "mirror": 0, "often": 1}, "invitation": "A\\u0000B"}',
    ),
    ("form", "/s/invite-test", "q_drugs=1&q_mirror=0&q_often=1&invitation=A%00B"),
    ("get", "/s/invite-test?code=A%00B", ""),
    ("import", "/surveys/import", '{"title": "T\\u0000", "questions": []}'),
    ("details", "/surveys/draft-test/details", "title=A%00B"),
]


@pytest.mark.parametrize("where, url, body", NUL_CASES, ids=[c[0] for c in NUL_CASES])
def test_nul_characters_are_refused_or_stored(request, world, client, where, url, body):
    """SQLite stores a NUL; PostgreSQL's text cannot hold one, so there it must be refused with a 4xx."""
    app = world
    if url.startswith("/surveys/"):
        client = request.getfixturevalue("signed_in")
    before = snapshot(app)
    if where == "get":
        response = client.get(url)
    elif where == "api":
        response = client.post(url, data=body.encode(), content_type="application/json")
    elif where == "import":
        response = client.post(url, data={"text": body}, content_type="multipart/form-data")
    else:
        response = client.post(url, data=body.encode(), content_type="application/x-www-form-urlencoded")
    assert response.status_code < 500
    if backend(app) == "postgresql":
        assert response.status_code >= 400
    if response.status_code >= 400:
        assert_refused(response, before, snapshot(app))


NEWLINE_SPECS = [
    {"title": "T", "slug": "trailing-newline\n", "questions": []},
    {
        "title": "T",
        "status": "draft",
        "questions": [{"key": "a\n", "kind": "direct", "text": "?", "options": ["x", "y"]}],
    },
]


@pytest.mark.parametrize("spec", NEWLINE_SPECS, ids=["slug", "key"])
def test_names_ending_in_a_newline_are_refused(app, spec):
    with app.app_context(), pytest.raises(DomainError):
        create_survey_from_spec(db.session, {**spec, "status": "draft"})


def test_privacy_preview_of_a_huge_epsilon_is_refused_or_shown(world, signed_in):
    response = signed_in.get(f"/api/privacy/preview?{COIN_FLIP_AT_710}")
    assert response.status_code in (200, 400)
    assert response.is_json and response.get_json()["ok"] == (response.status_code == 200)


@pytest.mark.parametrize("margin", ["1e-200", "1e-160"])
def test_a_tiny_target_margin_is_refused_or_planned_with(world, signed_in, margin):
    form = f"epsilon_cap=&expected_respondents=1000&target_margin={margin}"
    posted = signed_in.post("/surveys/draft-test/planning", data=form.encode(), content_type=FORM)
    assert posted.status_code in (303, 400)
    assert signed_in.get("/surveys/draft-test/build").status_code == 200
