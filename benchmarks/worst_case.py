"""Worst case: the costliest survey the spec accepts, through every results, builder and export route.

Issue 20 found that one signed-in user with a survey of their own could hold every worker: an
association of two 50-option questions ran for minutes, regressions on six 50-option covariates and
the build page of a 200-question draft were killed at the worker's timeout. This benchmark runs the
survey the spec allows to be costliest (``tests/worst.py``: 200 questions, 50 options each, every
text at its longest, the widest number range, the most demanding planning figures) through every
route of the ``results``, ``organize`` (builder, management, exports of the spec and the codes) and
``respond`` blueprints, and prints them slowest first.

The routes are read from the app's URL map: every endpoint of those blueprints and each of its
methods must have a case below (its worst input: the association of the two largest questions, the
regression on every covariate, the planning figures of 200 designs, 10,000 codes, ...), or the run
stops and says which one is missing, so a new route is never left out.

Each request runs in a fresh child process forked from the prepared one (so no cache a previous
request filled is warm, as for the first request a worker serves) and is killed after
``--timeout`` seconds (30, gunicorn's worker timeout in ``survey/platform/gunicorn_conf.py``).
Reported per case: the median and the largest wall time and the median CPU time over ``--repeats``
runs, the SQL statements it sent, the status and the size of the response. A state-changing case
(publishing, deleting, duplicating) gets a survey of its own.

Run with ``make bench``; the committed ``worst_case.md`` beside this file is its last output.
``--postgresql URL`` runs it on a new database on that server instead of SQLite.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import multiprocessing
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# as the production entry point (survey/platform/wsgi.py) runs the app: one numerical thread a process
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from sqlalchemy import event, select  # noqa: E402

from benchmarks.scratch import scratch_postgresql  # noqa: E402
from survey import create_app  # noqa: E402
from survey.domain.models import Membership, Survey, User  # noqa: E402
from survey.domain.responses.codes import MAX_CODES_PER_REQUEST, generate_codes  # noqa: E402
from survey.domain.responses.imports import MAX_BYTES as IMPORT_MAX_BYTES  # noqa: E402
from survey.domain.surveys import content_translations  # noqa: E402
from survey.domain.surveys.planning import MAX_RESPONDENTS, MIN_TARGET_MARGIN  # noqa: E402
from survey.domain.surveys.specs import MAX_OPTIONS, create_survey_from_spec  # noqa: E402
from survey.domain.validation import TEXT_LIMITS  # noqa: E402
from survey.platform.extensions import db  # noqa: E402
from survey.platform.schema import upgrade_database  # noqa: E402
from survey.web.organize.builder_forms import SurveyDetailsForm  # noqa: E402
from survey.web.organize.translations_forms import input_name  # noqa: E402
from tests.live import CHEAP_PASSWORD_HASH  # noqa: E402
from tests.worst import DIRECT, NUMBER, OUTCOME, YES_NO, analysis_answers, full_answers, worst_spec  # noqa: E402

#: The blueprints whose every route is run: the analyses and exports, the builder and management, and
#: what respondents load (the same survey, as big as it gets).
BLUEPRINTS = ("results", "organize", "respond")
PASSWORD = "worst-case password"
OPEN, DRAFT = "worst", "worst-draft"
#: The languages a translated survey has besides English: two, as the translations page's limit assumes.
LANGUAGES = content_translations.ADDABLE[:2]


@dataclass
class Case:
    """One request: an endpoint, its method, its URL values and its query string or form."""

    endpoint: str
    method: str
    label: str
    values: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    form: dict[str, Any] | None = None
    json: Any = None
    #: "draft" or "open": the case changes its survey, so it gets a fresh copy (its slug as ``slug``)
    fresh: str | None = None
    #: who sends it: "owner" (the survey's), or "invitee" (offered a role on the survey)
    user: str = "owner"
    files: dict[str, Any] | None = None


def _compare(question: str, by: str) -> dict[str, str]:
    return {"question": question, "by": by}


REGRESSION = {"outcome": OUTCOME, "covariates": [*DIRECT]}
WORST_PREVIEWS = [
    # the most options and the most private design (planning figures at the most respondents)
    {"design": "forced_response", "kind": "choice", "k": MAX_OPTIONS, "set_by": "epsilon", "epsilon": "0.001"},
    {"design": "grr", "kind": "yes_no", "k": 2, "set_by": "epsilon", "epsilon": "0.001"},
]


def cases(spec: dict[str, Any]) -> list[Case]:
    """The worst input of every route (see the module's docstring)."""
    first, second = [q["key"] for q in spec["questions"] if q["kind"] == "choice"][:2]
    new_question = {
        "kind": "choice",
        "text": spec["questions"][-1]["text"],
        "help_text": spec["questions"][-1]["help_text"],
        "options": "\n".join(spec["questions"][-1]["options"]),
        "design": "forced_response",
        "set_by": "epsilon",
        "epsilon": "0.001",
        "required": "y",
    }
    edited = {**new_question, "key": second}
    planning = {
        "epsilon_cap": "",
        "expected_respondents": str(MAX_RESPONDENTS),
        "target_margin": str(MIN_TARGET_MARGIN),
    }
    # the longest texts a form can carry: plain letters (the request limit counts encoded bytes)
    details = {name: "x" * TEXT_LIMITS[name] for name in SurveyDetailsForm.TEXTS}
    answers = full_answers(spec, random.Random(7))
    s = {"slug": OPEN}
    d = {"slug": DRAFT}
    out = [
        # -- results: pages, analyses, downloads
        Case("results.index", "GET", "every survey of the user"),
        Case("results.survey", "GET", "results page", s),
        Case("results.survey", "GET", "results page with an anytime test", s, {"test": first, "threshold": "10"}),
        Case("results.estimates_file", "GET", "estimates CSV", s),
        Case("results.estimates_api", "GET", "estimates JSON", s),
        Case("results.responses_file", "GET", "microdata CSV", s),
        Case("results.codebook_file", "GET", "codebook", s),
        Case("results.spss_responses_file", "GET", "SPSS microdata", s),
        Case("results.stata_responses_file", "GET", "Stata microdata", s),
        Case("results.r_script_file", "GET", "R script", s),
        Case("results.live_api", "GET", "live intervals of every question", s),
        Case("results.anytime_api", "GET", "anytime test", s, {"question": first, "threshold": "0.1"}),
    ]
    for endpoint, what in (("compare_page", "page"), ("compare_api", "JSON"), ("compare_file", "CSV")):
        out += [
            Case(f"results.{endpoint}", "GET", f"association, 50 × 50 options ({what})", s, _compare(first, second)),
            Case(f"results.{endpoint}", "GET", f"association, yes/no × yes/no ({what})", s, _compare(*YES_NO)),
            Case(f"results.{endpoint}", "GET", f"breakdown by 50 options ({what})", s, _compare(first, DIRECT[0])),
            Case(f"results.{endpoint}", "GET", f"breakdown by week ({what})", s, _compare(first, "week")),
        ]
    for endpoint, what in (("regression_page", "page"), ("regression_api", "JSON"), ("regression_file", "CSV")):
        out += [
            Case(f"results.{endpoint}", "GET", f"regression on 6 × 50-option covariates ({what})", s, REGRESSION),
            Case(
                f"results.{endpoint}",
                "GET",
                f"regression on a number and 5 × 50 options ({what})",
                s,
                {"outcome": OUTCOME, "covariates": [NUMBER, *DIRECT[:5]]},
            ),
            Case(f"results.{endpoint}", "GET", f"regression, the default choice ({what})", s),
        ]
    out += [
        # -- the builder
        Case("organize.new_survey", "GET", "new survey form"),
        Case("organize.new_survey", "POST", "a new draft with the longest texts", form=details),
        Case("organize.build", "GET", "build page of the 200-question draft", d),
        Case("organize.build", "GET", "build page of the open survey", s),
        Case("organize.details", "POST", "survey texts", d, form=details),
        Case("organize.planning", "POST", "planning figures", d, form=planning),
        Case(
            "organize.planning", "POST", "refused planning (the page again)", d, form={**planning, "target_margin": "2"}
        ),
        Case("organize.add_question", "GET", "new question form", d),
        Case("organize.add_question", "POST", "a 201st question", d, form=new_question),
        Case("organize.edit_question", "GET", "50-option forced response", {**d, "key": second}),
        Case("organize.edit_question", "POST", "50-option forced response", {**d, "key": second}, form=edited),
        Case("organize.edit_question", "POST", "texts of an open survey's question", {**s, "key": second}, form=edited),
        Case("organize.delete_question", "GET", "confirmation", {**d, "key": second}),
        Case("organize.delete_question", "POST", "delete a question", {"key": second}, fresh="draft"),
        Case("organize.move_question", "POST", "move a question", {**d, "key": second}, form={"direction": "down"}),
        Case("organize.question_planning", "GET", "planning figures, GRR at ε 0.001", {**d, "key": first}),
        Case("organize.question_planning", "GET", "planning figures, forced response", {**d, "key": second}),
        *(
            Case(
                "organize.preview", "GET", f"privacy preview, {p['design']} with {p['k']} options", query=p | planning_q
            )
            for p in WORST_PREVIEWS
            for planning_q in [{"n": str(MAX_RESPONDENTS), "margin": str(MIN_TARGET_MARGIN)}]
        ),
        # -- management
        Case("organize.share", "GET", "management page with 20,000 codes", s),
        Case("organize.publish", "GET", "publish checks of the draft", d),
        Case("organize.publish", "POST", "publish", fresh="draft"),
        Case("organize.close", "GET", "confirmation", s),
        Case("organize.close", "POST", "close", fresh="open"),
        Case("organize.reopen", "POST", "reopen a closed survey", fresh="closed"),
        Case("organize.archive", "GET", "confirmation", s),
        Case("organize.archive", "POST", "archive", fresh="closed"),
        Case("organize.unarchive", "POST", "unarchive", fresh="archived"),
        Case("organize.delete_survey", "GET", "confirmation", d),
        Case("organize.delete_survey", "POST", "delete the 200-question draft", fresh="draft"),
        Case("organize.address", "POST", "a new address", form={"slug": "{slug}-" + "x" * 50}, fresh="draft"),
        Case("organize.check_address", "GET", "is an address free", d, {"slug": "a" * 80}),
        Case("organize.duplicate", "POST", "duplicate the 200-question survey", s),
        Case(
            "organize.dates", "POST", "dates", form={"opens_on": "2020-01-01", "closes_on": "2099-12-31"}, fresh="open"
        ),
        Case("organize.auto_close", "POST", "closing by itself", form={"auto_close": "y"}, fresh="open"),
        Case("organize.access", "POST", "by invitation", form={"access": "invitation"}, fresh="open"),
        Case(
            "organize.invitations", "POST", f"{MAX_CODES_PER_REQUEST:,} codes", s, form={"count": MAX_CODES_PER_REQUEST}
        ),
        Case("organize.revoke_code", "GET", "confirmation", s, {"code": "ABCD-EFGH"}),
        Case("organize.revoke_code", "POST", "revoke one code", s, form={"code": "ABCD-EFGH"}),
        Case("organize.revoke_unused_codes", "GET", "confirmation", s),
        Case("organize.revoke_unused_codes", "POST", "revoke 10,000 unused codes", fresh="coded"),
        Case("organize.print_codes", "GET", "printable codes", s),
        Case("organize.invitations_csv", "GET", "every code's link", s),
        Case(
            "organize.add_member",
            "POST",
            "offer a role",
            form={"username": "invitee", "role": "researcher"},
            fresh="open",
        ),
        Case("organize.withdraw_account_invitation", "POST", "an unknown invitation", s, form={"link_id": 2**31 - 1}),
        Case("organize.accept_invitation", "POST", "accept a role", user="invitee", fresh="offered"),
        Case("organize.decline_invitation", "POST", "decline a role", user="invitee", fresh="offered"),
        Case("organize.remove_member", "POST", "an unknown member", s, form={"user_id": 2**31 - 1}),
        Case("organize.export_spec", "GET", "the spec of 200 questions", s),
        Case("organize.import_spec", "GET", "import form"),
        Case("organize.import_spec", "POST", "the largest spec the import takes", form="import"),
        Case("organize.translations", "GET", "translations page, every text in two more languages", fresh="translated"),
        Case(
            "organize.save_translations",
            "POST",
            "every text in two languages, the most the page takes",
            form="translations",
            fresh="translated",
        ),
        Case(
            "organize.add_translation_language",
            "POST",
            "add a language",
            form={"language": LANGUAGES[0]},
            fresh="draft",
        ),
        Case(
            "organize.remove_translation_language",
            "POST",
            "remove a translated language",
            form={"language": LANGUAGES[0]},
            fresh="translated",
        ),
        Case(
            "organize.import_responses",
            "POST",
            "the largest upload of responses the import takes",
            form="responses",
            fresh="open",
        ),
        Case("auth.account", "GET", "account page"),
        Case("auth.account", "POST", "a refused password change", form={"current_password": "wrong"}),
        # -- what respondents load
        Case("respond.show", "GET", "survey page, 200 questions", s),
        Case("respond.preview", "GET", "preview of the draft", d),
        Case("respond.privacy", "GET", "privacy page", s),
        Case("respond.thanks", "GET", "thank-you page", s),
        Case(
            "respond.submit_form",
            "POST",
            "every question answered (form)",
            s,
            form={f"q_{k}": v for k, v in answers.items()},
        ),
        Case("respond.submit_json", "POST", "every question answered (JSON)", s, json={"answers": answers}),
    ]
    return out


# -- the site ----------------------------------------------------------------------------------------


@dataclass
class Site:
    app: Any
    clients: dict[str, Any]
    spec: dict[str, Any]
    import_body: bytes
    #: the open survey's microdata CSV, its rows repeated up to the size the import of responses takes
    responses_body: bytes
    submissions: int


def _config(url: str) -> dict[str, Any]:
    return {
        "SQLALCHEMY_DATABASE_URI": url,
        "SECRET_KEY": "worst-case-benchmark",
        "WTF_CSRF_ENABLED": False,
        "RATELIMIT_ENABLED": False,
        "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH,
    }


def importable_spec(spec: dict[str, Any], limit: int) -> bytes:
    """The worst spec cut to the size the import page takes: every question and option, shorter texts."""
    from survey.web.organize.lifecycle_views import IMPORT_MAX_BYTES

    length = 200
    while True:
        shorter = json.loads(json.dumps(spec))
        shorter["slug"] = f"imported-{uuid.uuid4().hex[:6]}"
        for q in shorter["questions"]:
            q["text"], q["help_text"] = q["text"][:length], q["help_text"][:length]
            if "options" in q:
                q["options"] = [f"{i} {o[: length // 4]}" for i, o in enumerate(q["options"])]
        for name in ("introduction", "closing_message", "ethics_statement"):
            shorter[name] = shorter[name][:length]
        body = json.dumps(shorter, ensure_ascii=False).encode()
        if len(body) <= min(limit, IMPORT_MAX_BYTES) - 4096:
            return body
        length -= 10


def build_site(url: str, submissions: int, full: int, log: Callable[[str], None]) -> Site:
    """Migrate ``url``; add the owner, an invitee, the open survey (answered ``submissions`` times,
    ``full`` of them answering every question, with codes) and the draft."""
    app = create_app(_config(url))
    spec = worst_spec("open", OPEN)
    with app.app_context():
        upgrade_database()
        for name in ("owner", "invitee"):
            user = User(username=name)
            user.set_password(PASSWORD)
            db.session.add(user)
        db.session.flush()
        owner = db.session.scalar(select(User).where(User.username == "owner"))
        started = time.perf_counter()
        create_survey_from_spec(db.session, spec, owner=owner)
        create_survey_from_spec(db.session, worst_spec("draft", DRAFT), owner=owner)
        db.session.commit()
        log(f"two 200-question surveys made in {time.perf_counter() - started:.1f} s")
        survey = db.session.scalar(select(Survey).where(Survey.slug == OPEN))
        generate_codes(db.session, survey, MAX_CODES_PER_REQUEST)
        db.session.commit()
    client = app.test_client()
    rng = random.Random(20)
    started = time.perf_counter()
    for i in range(submissions):
        answers = full_answers(spec, rng) if i < full else analysis_answers(spec, rng)
        response = client.post(f"/api/surveys/{OPEN}/responses", json={"answers": answers})
        if response.status_code != 201:
            raise SystemExit(f"a submission was refused: {response.status_code} {response.get_data(as_text=True)}")
    log(f"{submissions:,} submissions ({full} answering all 200 questions) in {time.perf_counter() - started:.1f} s")
    clients = {}
    for name in ("owner", "invitee"):
        clients[name] = app.test_client()
        response = clients[name].post("/auth/login", data={"username": name, "password": PASSWORD})
        if response.status_code != 302:
            raise SystemExit(f"{name} could not sign in")
    from flask import url_for

    with app.test_request_context():
        export_path = url_for("results.responses_file", slug=OPEN)
    exported = clients["owner"].get(export_path)
    if exported.status_code != 200:
        raise SystemExit(f"the microdata export failed: {exported.status_code}")
    return Site(app, clients, spec, importable_spec(spec, 1 << 20), responses_upload(exported.data), submissions)


def responses_upload(csv_body: bytes) -> bytes:
    """An export's rows repeated (header once) up to the import's size limit, less room for the form."""
    header, _, rows = csv_body.partition(b"\n")
    room = IMPORT_MAX_BYTES - (64 << 10) - len(header) - 1
    body = rows * max(1, room // len(rows))
    body = body[: body.rfind(b"\n", 0, room) + 1]
    return header + b"\n" + body


def translated_texts(survey: Survey, longest: int | None = None) -> dict[str, dict[str, str]]:
    """Every text of ``survey`` in each of :data:`LANGUAGES`, each as long as its limit allows (and at
    most ``longest`` characters)."""
    return {
        language: {
            piece.path: "x" * min(piece.limit, longest or piece.limit) for piece in content_translations.pieces(survey)
        }
        for language in LANGUAGES
    }


def largest_translations(survey: Survey) -> dict[str, str]:
    """The translations page's form with every text of ``survey`` in :data:`LANGUAGES`, as long as
    the page's post limit allows (the texts at their limits in two languages are 5.7 MB of form,
    over the 4 MB it takes)."""
    from survey.web.organize.translations_views import TRANSLATIONS_MAX_BYTES

    def form(longest: int) -> dict[str, str]:
        texts = translated_texts(survey, longest)
        return {input_name(lang, path): text for lang, pieces in texts.items() for path, text in pieces.items()}

    low, high = 1, max(TEXT_LIMITS.values())
    while low < high:  # the longest cut whose form fits, with room for the multipart framing
        middle = (low + high + 1) // 2
        if len(urlencode(form(middle))) * 1.1 <= TRANSLATIONS_MAX_BYTES:
            low = middle
        else:
            high = middle - 1
    return form(low)


def fresh_survey(site: Site, kind: str) -> str:
    """A survey of its own for a case that changes it: a draft, an open, closed or archived survey,
    one with codes, or one on which the invitee has been offered a role."""
    slug = f"worst-{kind}-{uuid.uuid4().hex[:6]}"
    status = "draft" if kind in ("draft", "translated") else "open"
    with site.app.app_context():
        owner = db.session.scalar(select(User).where(User.username == "owner"))
        survey = create_survey_from_spec(db.session, worst_spec(status, slug), owner=owner)
        db.session.flush()
        if kind == "closed":
            survey.status = "closed"
        elif kind == "archived":
            survey.status = "archived"
        elif kind == "coded":
            generate_codes(db.session, survey, MAX_CODES_PER_REQUEST)
        elif kind == "translated":  # two more languages, every text translated at its longest
            for language in LANGUAGES:
                content_translations.add_language(survey, language)
            content_translations.save_texts(survey, translated_texts(survey))
        elif kind == "offered":
            invitee = db.session.scalar(select(User).where(User.username == "invitee"))
            db.session.add(Membership(survey=survey, user=invitee, role="researcher", pending=True))
        db.session.commit()
    return slug


# -- running one case --------------------------------------------------------------------------------


def _request(site: Site, case: Case, path: str) -> dict[str, Any]:
    """In the child: send the case's request, read the whole response, count what it cost."""
    statements = [0]
    with site.app.app_context():
        db.engine.dispose(close=False)  # the parent's connections are the parent's

        @event.listens_for(db.engine, "before_cursor_execute")
        def count(*_: Any) -> None:
            statements[0] += 1

    client = site.clients[case.user]
    kwargs: dict[str, Any] = {}
    if case.json is not None:
        kwargs["json"] = case.json
    elif case.form == "import":  # a slug of its own each time, or the second import is refused as taken
        body = site.import_body.replace(b'"slug": "imported', f'"slug": "i{uuid.uuid4().hex[:6]}'.encode(), 1)
        kwargs["data"] = {"file": (io.BytesIO(body), "spec.json")}
        kwargs["content_type"] = "multipart/form-data"
    elif case.form == "translations":  # every text of the survey in its languages, as long as the page takes
        slug = path.split("/")[2]
        with site.app.app_context():
            survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
            kwargs["data"] = largest_translations(survey)
    elif case.form == "responses":  # the open survey's microdata, rows repeated up to the import's limit
        kwargs["data"] = {"file": (io.BytesIO(site.responses_body), "responses.csv")}
        kwargs["content_type"] = "multipart/form-data"
    elif case.form is not None:
        # "{slug}" in a value: the survey's own (a fresh one's differs each time)
        kwargs["data"] = {
            k: v.replace("{slug}", path.split("/")[2]) if isinstance(v, str) and "{slug}" in v else v
            for k, v in case.form.items()
        }
    cpu, wall = time.process_time(), time.perf_counter()
    response = client.open(path, method=case.method, buffered=True, **kwargs)
    size = len(response.get_data())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"status": response.status_code, "wall": wall, "cpu": cpu, "bytes": size, "sql": statements[0]}


def _child(site: Site, case: Case, path: str, pipe: Any) -> None:
    try:
        pipe.send(_request(site, case, path))
    except BaseException as error:
        pipe.send({"error": f"{type(error).__name__}: {error}"})
    finally:
        pipe.close()


def run_once(site: Site, case: Case, path: str, timeout: float) -> dict[str, Any]:
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    started = time.perf_counter()
    child = context.Process(target=_child, args=(site, case, path, sending))
    child.start()
    sending.close()
    if receiving.poll(timeout):
        result = receiving.recv()
        child.join()
        return result
    child.kill()
    child.join()
    return {"killed": time.perf_counter() - started}


def path_of(site: Site, case: Case) -> str:
    from flask import url_for

    values = dict(case.values)
    if case.fresh is not None:
        values["slug"] = fresh_survey(site, case.fresh)
    with site.app.test_request_context():
        path = url_for(case.endpoint, **values)
    return path + ("?" + urlencode(case.query, doseq=True) if case.query else "")


# -- the report --------------------------------------------------------------------------------------


def check_coverage(app: Any, planned: list[Case]) -> None:
    """Every (endpoint, method) of the blueprints has a case, and every case a route."""
    routes = {
        (rule.endpoint, method)
        for rule in app.url_map.iter_rules()
        if rule.endpoint.split(".")[0] in BLUEPRINTS
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    every = {(rule.endpoint, method) for rule in app.url_map.iter_rules() for method in rule.methods}
    have = {(c.endpoint, c.method) for c in planned}
    missing, stale = sorted(routes - have), sorted(have - every)
    if missing or stale:
        raise SystemExit(
            "worst_case.py must have a case for every route: "
            + (f"no case for {', '.join(f'{m} {e}' for e, m in missing)}" if missing else "")
            + (f"; cases for no route: {', '.join(f'{m} {e}' for e, m in stale)}" if stale else "")
        )


def _seconds(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def measure(site: Site, planned: list[Case], repeats: int, timeout: float, log: Callable[[str], None]) -> list[dict]:
    rows = []
    for case in planned:
        runs = []
        for _ in range(repeats):
            path = path_of(site, case)
            result = run_once(site, case, path, timeout)
            runs.append(result)
            if "killed" in result or "error" in result:
                break
        row: dict[str, Any] = {"case": case, "path": path.split("?")[0]}
        done = [r for r in runs if "wall" in r]
        if len(done) < len(runs):
            bad = runs[-1]
            row["failed"] = f"killed after {bad['killed']:.0f} s" if "killed" in bad else bad["error"]
            row["wall"] = row["max"] = bad.get("killed", 0.0)
            row["cpu"], row["sql"], row["status"], row["bytes"] = None, None, "—", None
        else:
            row["wall"] = statistics.median(r["wall"] for r in done)
            row["max"] = max(r["wall"] for r in done)
            row["cpu"] = statistics.median(r["cpu"] for r in done)
            row["sql"] = statistics.median(r["sql"] for r in done)
            row["status"] = done[-1]["status"]
            row["bytes"] = done[-1]["bytes"]
        log(f"{_seconds(row['wall']):>9}  {row['status']}  {case.method} {case.endpoint}: {case.label}")
        rows.append(row)
    return rows


def report(rows: list[dict], site: Site, args: argparse.Namespace, seconds: float) -> list[str]:
    rows = sorted(rows, key=lambda r: r["wall"], reverse=True)
    slowest = rows[0]
    failed = [r for r in rows if "failed" in r]
    over = [r for r in rows if r["wall"] >= 1.0]
    backend = "PostgreSQL" if args.postgresql else "SQLite"
    questions = site.spec["questions"]
    lines = [
        "# Worst case: every route on the costliest survey the spec accepts",
        "",
        f"`python benchmarks/worst_case.py` ({dt.date.today().isoformat()}; {platform.machine()}, "
        f"{os.cpu_count()} cores; Python {platform.python_version()}; {backend}; {seconds / 60:.1f} min in all). "
        "The survey (`tests/worst.py`): "
        f"{len(questions)} questions, {MAX_OPTIONS} options each, every text at its longest, a number question from "
        f"{questions[len(DIRECT)]['minimum']:,} to {questions[len(DIRECT)]['maximum']:,}, planning for "
        f"{MAX_RESPONDENTS:,} respondents at a margin of {MIN_TARGET_MARGIN}, every randomized question a design of "
        f"its own; {site.submissions:,} submissions ({args.full} answering every question, the rest what the analyses "
        f"read, each its own covariate pattern) and {2 * MAX_CODES_PER_REQUEST:,} invitation codes.",
        "",
        "Each request ran in a fresh process forked from the prepared one (nothing a previous request computed is "
        f"cached), {args.repeats} times, and was killed after {args.timeout:g} s (gunicorn's worker timeout). "
        "*Wall*: the "
        "median and the largest; *CPU*: the median CPU time of the process; *SQL*: the statements it sent.",
        "",
        "## Summary",
        "",
        "| | |",
        "|---|---|",
        f"| routes and methods run | {len({(r['case'].endpoint, r['case'].method) for r in rows})} "
        f"({len(rows)} cases) |",
        f"| slowest | {slowest['case'].method} `{slowest['path']}` ({slowest['case'].label}): "
        f"{_seconds(slowest['wall'])} |",
        f"| cases over 1 s | {len(over)} |",
        f"| killed or failed | {len(failed)} |",
        "",
        "## Every case, slowest first",
        "",
        "| route | case | status | wall (median) | wall (max) | CPU | SQL | response |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        case = r["case"]
        status = r.get("failed", r["status"])
        cpu = "—" if r["cpu"] is None else _seconds(r["cpu"])
        sql = "—" if r["sql"] is None else f"{r['sql']:g}"
        size = "—" if r["bytes"] is None else f"{r['bytes'] / 1024:,.0f} KB"
        lines.append(
            f"| {case.method} `{r['path']}` | {case.label} | {status} | {_seconds(r['wall'])} | "
            f"{_seconds(r['max'])} | {cpu} | {sql} | {size} |"
        )
    return lines


# -- what the limits are derived from -------------------------------------------------------------------


def _in_child(work: Callable[[], Any], timeout: float) -> float | None:
    """The CPU seconds ``work`` takes in a forked child, or None if it was killed after ``timeout``."""
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)

    def child() -> None:
        started = time.process_time()
        try:
            work()
        except Exception as error:  # reported as a failure, not as a time
            sending.send(f"{type(error).__name__}: {error}")
            return
        sending.send(time.process_time() - started)

    process = context.Process(target=child)
    process.start()
    if receiving.poll(timeout):
        took = receiving.recv()
        process.join()
        if isinstance(took, str):
            raise RuntimeError(took)
        return took
    process.kill()
    process.join()
    return None


def _design(k: int, rng: Any) -> Any:
    from survey.privacy import CoinFlip, ForcedResponse, GeneralizedRR, Warner

    epsilon = float(np.exp(rng.uniform(np.log(0.05), np.log(6.0))))
    if k == 2:
        return [
            GeneralizedRR(2, epsilon=epsilon),
            CoinFlip.from_epsilon(min(epsilon, 5.0), 0.5),
            Warner.from_epsilon(epsilon),
        ][int(rng.integers(3))]
    if rng.random() < 0.5:
        return GeneralizedRR(k, epsilon=epsilon)
    return ForcedResponse(list(rng.dirichlet(np.ones(k)) * rng.uniform(0.05, 0.9)))


#: Table sizes the association sweep runs, with how many tables each (None: ``--tables``): beyond the
#: limit too, to show how the cost grows (the largest, fewer: each takes seconds).
ASSOCIATION_SHAPES = [
    (2, 2, None),
    (3, 3, None),
    (2, 9, None),
    (4, 4, None),
    (5, 5, None),
    (4, 9, None),
    (6, 6, None),
    (7, 7, None),
    (8, 8, None),
    (10, 10, None),
    (12, 12, 6),
    (15, 15, 4),
    (20, 20, 3),
]


def association_costs(tables: int, timeout: float, log: Callable[[str], None]) -> list[dict]:
    """The CPU time of an association (its page's work: every cell's interval, the 2 × 2 measures) per
    table size, over ``tables`` tables each: uniform, sparse, one cell, random, and the reports of a
    random population, with 1 to 100,000 respondents, through GRR, forced response, coin flips and
    Warner's design, each drawn from a seeded generator."""
    from survey.privacy import association

    out = []
    for ka, kb, count in ASSOCIATION_SHAPES:
        rng = np.random.default_rng(ka * 100 + kb)
        times, killed = [], 0
        count = tables if count is None else min(count, tables)
        for t in range(count):
            a, b = _design(ka, rng), _design(kb, rng)
            cells = ka * kb
            n = int(rng.choice([1, 5, 30, 200, 1000, 100_000]))
            kind = t % 5
            if kind == 0:
                p = np.full(cells, 1.0 / cells)
            elif kind == 1:
                p = rng.dirichlet(np.full(cells, 0.1))
            elif kind == 2:
                p = np.eye(cells)[int(rng.integers(cells))]
            elif kind == 3:
                p = rng.dirichlet(np.ones(cells))
            else:
                p = np.kron(a.matrix, b.matrix) @ rng.dirichlet(np.full(cells, 0.3))
            table = rng.multinomial(n, p / p.sum()).reshape(ka, kb)
            took = _in_child(lambda a=a, b=b, table=table: association(a, b, table).to_dict(), timeout)
            if took is None:
                killed += 1
            else:
                times.append(took)
        row = {"shape": f"{ka} × {kb}", "cells": ka * kb, "tables": count, "killed": killed}
        row["median"] = statistics.median(times) if times else None
        row["worst"] = max(times) if times else None
        log(f"association {row['shape']}: worst {row['worst']} s, {killed} killed")
        out.append(row)
    return out


#: Models at the regression's limit (patterns × coefficients = MAX_REGRESSION_CELLS): six 50-option
#: covariates, a number and five 5-option ones, one number.
REGRESSION_SHAPES = [(338, [50] * 6), (4545, [0] + [5] * 5), (50_000, [0])]


def regression_costs(timeout: float, log: Callable[[str], None]) -> list[dict]:
    """The CPU time of a fit at the regression's limit, for each shape of :data:`REGRESSION_SHAPES`,
    on reports simulated through the seed design (a fit that separates stops early, so the data are
    drawn from a model that fits)."""
    from survey.privacy import CoinFlip, rr_logistic

    out = []
    mechanism = CoinFlip(0.5, 0.5)
    for patterns, options in REGRESSION_SHAPES:
        rng = np.random.default_rng(patterns)
        columns = []
        for k in options:
            if k == 0:
                columns.append(rng.integers(0, 100, patterns)[:, None].astype(float))
            else:
                codes = rng.permutation(np.arange(patterns) % k)  # every option chosen: the model is identified
                columns.append(np.stack([codes == c for c in range(1, k)], axis=1).astype(float))
        x = np.hstack(columns)
        beta = rng.normal(0, 0.2, x.shape[1]) / np.maximum(x.max(axis=0), 1.0)
        truth = rng.random(patterns) < 1 / (1 + np.exp(-(x @ beta - 0.5)))
        reports = mechanism.randomize(np.where(truth, 0, 1), rng) == 0
        coefficients = x.shape[1] + 1

        def fit(x=x, reports=reports) -> None:
            rr_logistic(mechanism, x, reports.astype(float))

        took = _in_child(fit, timeout)
        out.append({"patterns": patterns, "coefficients": coefficients, "cpu": took})
        log(f"regression {patterns} × {coefficients}: {took} s")
    return out


def limits_report(associations: list[dict], regressions: list[dict], timeout: float) -> list[str]:
    from survey.domain.results.analysis import MAX_ASSOCIATION_CELLS, MAX_REGRESSION_CELLS

    def cpu(x: float | None) -> str:
        return f"killed at {timeout:g} s" if x is None else _seconds(x)

    lines = [
        "",
        "## What the limits are derived from",
        "",
        f"**Associations** (`MAX_ASSOCIATION_CELLS` = {MAX_ASSOCIATION_CELLS}): the CPU time of one association "
        "(every cell's profile-likelihood interval and, for 2 × 2, the measures) per table size, each table in a "
        "fresh process, over tables of every kind (uniform, sparse, one cell, random, a random population's reports; "
        "1 to 100,000 respondents; GRR, forced response, coin flips, Warner), from a seeded generator.",
        "",
        "| table | cells | tables | median CPU | slowest CPU | killed |",
        "|---|---|---|---|---|---|",
    ]
    for r in associations:
        lines.append(
            f"| {r['shape']} | {r['cells']} | {r['tables']} | {cpu(r['median'])} | {cpu(r['worst'])} | {r['killed']} |"
        )
    lines += [
        "",
        f"**Regressions** (`MAX_REGRESSION_CELLS` = {MAX_REGRESSION_CELLS:,} patterns × coefficients): the CPU time "
        "of one fit at the limit, one respondent per pattern.",
        "",
        "| patterns | coefficients | CPU |",
        "|---|---|---|",
    ]
    for r in regressions:
        lines.append(f"| {r['patterns']:,} | {r['coefficients']} | {cpu(r['cpu'])} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument("--postgresql", help="run on a new database on this PostgreSQL server (a URL)")
    parser.add_argument("--submissions", type=int, default=2000, help="submissions to the open survey")
    parser.add_argument("--full", type=int, default=20, help="of which answer every question")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--only", help="run only the cases whose endpoint contains this")
    parser.add_argument("--tables", type=int, default=30, help="tables per size in the association sweep")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f} s] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        if args.postgresql:
            url = stack.enter_context(scratch_postgresql(args.postgresql, "worst_case"))
        else:
            url = f"sqlite:///{Path(folder) / 'worst.sqlite'}"
        site = build_site(url, args.submissions, args.full, log)
        planned = cases(site.spec)
        check_coverage(site.app, planned)
        if args.only:
            planned = [c for c in planned if args.only in c.endpoint]
        rows = measure(site, planned, args.repeats, args.timeout, log)
        with site.app.app_context():
            db.engine.dispose()
    associations = association_costs(args.tables, args.timeout, log)
    regressions = regression_costs(args.timeout, log)
    lines = report(rows, site, args, time.perf_counter() - started) + limits_report(
        associations, regressions, args.timeout
    )
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
