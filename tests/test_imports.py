"""Responses collected elsewhere (survey/domain/responses/imports.py): a CSV or JSON upload in the
microdata export's shape, checked row by row as a web submission is, written in one transaction with
the tallies, idempotent, marked in the exports; on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json

import pyreadstat
import pytest
from sqlalchemy import func, select

from survey.domain.models import Membership, ResponseImport, Submission, Survey, User
from survey.domain.responses.imports import ImportRefused, import_responses
from survey.domain.responses.pending import listed
from survey.domain.responses.tallies import tally_mismatches
from survey.domain.results.exports import estimates_document, microdata_csv
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform import background, folding
from survey.platform.extensions import db

from .accounts import assert_problem, make_token, make_user
from .surveys import SMALL_SPEC, SUBMISSIONS, submit_answers

COPY = "small-copy"


def _copy(app) -> str:
    """SMALL_SPEC again, open, under another slug: the survey the reports are imported into."""
    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == "alice"))
        create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": COPY}, owner=owner)
        db.session.commit()
    return COPY


def _survey(slug: str) -> Survey:
    return db.session.scalar(select(Survey).where(Survey.slug == slug))


def _estimates(app, slug: str) -> list[dict]:
    with app.app_context():
        document = estimates_document(db.session, _survey(slug))
        return document["survey"]["submissions"], document["questions"]


def _export(app, slug: str) -> str:
    with app.app_context():
        return "".join(microdata_csv(db.session, _survey(slug)))


def _researcher_rows(day: str) -> list[dict]:
    """SUBMISSIONS (stored codes) as the export writes them: yes/no reversed, ``age`` may be empty."""
    rows = []
    for one in SUBMISSIONS:
        rows.append(
            {
                "submitted_on": day,
                "drugs": 1 - one["drugs"],
                "mirror": 1 - one["mirror"],
                "often": one["often"],
                "age": one.get("age", ""),
            }
        )
    return rows


def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _import(app, slug: str, data, file_format: str, **options):
    with app.app_context():
        result = import_responses(db.session, _survey(slug), data, file_format, **options)
        db.session.commit()
        return result


def _stored(app, slug: str) -> tuple[int, int]:
    with app.app_context():
        survey_id = _survey(slug).id
        submissions = db.session.scalar(select(func.count()).where(Submission.survey_id == survey_id))
        uploads = db.session.scalar(select(func.count()).where(ResponseImport.survey_id == survey_id))
        return submissions, uploads


def _clean(app, slug: str) -> None:
    with app.app_context():
        assert tally_mismatches(db.session, _survey(slug)) == []


def _today(app) -> str:
    from survey.domain.models import today

    with app.app_context():
        return today().isoformat()


@pytest.mark.parametrize("file_format", ["csv", "json"])
def test_imported_rows_are_tallied_as_the_same_rows_submitted_on_the_web(app, client, small_survey, file_format):
    submit_answers(client, small_survey, SUBMISSIONS)
    _copy(app)
    rows = _researcher_rows(_today(app))
    data = _csv(rows) if file_format == "csv" else json.dumps([{k: v for k, v in r.items() if v != ""} for r in rows])
    result = _import(app, COPY, data, file_format)
    assert (result.rows, result.already, result.dry_run) == (len(SUBMISSIONS), False, False)
    assert _estimates(app, COPY) == _estimates(app, small_survey)
    assert _stored(app, COPY) == (len(SUBMISSIONS), 1)
    _clean(app, COPY)


def test_an_export_re_imports_into_a_copy_with_the_same_estimates_and_is_marked(app, client, small_survey):
    submit_answers(client, small_survey, SUBMISSIONS)
    _copy(app)
    exported = _export(app, small_survey)
    assert exported.splitlines()[0] == "submission,submitted_on,drugs,mirror,often,age"  # no imports: as before
    _import(app, COPY, exported.encode(), "csv")
    assert _estimates(app, COPY) == _estimates(app, small_survey)
    _clean(app, COPY)
    # the copy's export marks its rows, and itself re-imports into a third copy (the column is ignored)
    again = _export(app, COPY)
    header, *lines = again.splitlines()
    assert header == "submission,submitted_on,drugs,mirror,often,age,imported"
    assert {line.rsplit(",", 1)[1] for line in lines} == {"1"} and len(lines) == len(SUBMISSIONS)
    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == "alice"))
        create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": "third"}, owner=owner)
        db.session.commit()
    _import(app, "third", again, "csv")
    assert _estimates(app, "third")[1] == _estimates(app, small_survey)[1]


def test_labels_are_taken_for_codes_and_web_rows_stay_unmarked(app, client, small_survey, tmp_path):
    submit_answers(client, small_survey, SUBMISSIONS[:3])
    day = _today(app)
    data = f"submitted_on,drugs,mirror,often,age\n{day},Yes,no,Always,old\n{day},0,1,0,\n"
    _import(app, small_survey, data, "csv")
    with app.app_context():
        survey = _survey(small_survey)
        document = estimates_document(db.session, survey)
    counts = {q["key"]: q for q in document["questions"]}
    assert document["survey"]["submissions"] == 5
    header, *lines = _export(app, small_survey).splitlines()
    assert header.endswith(",imported")
    assert [line.rsplit(",", 1)[1] for line in lines] == ["0", "0", "0", "1", "1"]
    assert lines[3].split(",")[2:6] == ["1", "0", "3", "1"]  # yes = 1, no = 0, always = 3, old = 1
    assert counts["drugs"]["key"] == "drugs"
    _clean(app, small_survey)
    # the files for SPSS and Stata carry the same column, labelled, and the same rows as the CSV
    from survey.domain.results.labelled import write_labelled

    for file_format, read in (("sav", pyreadstat.read_sav), ("dta", pyreadstat.read_dta)):
        path = tmp_path / f"responses.{file_format}"
        with app.app_context():
            write_labelled(db.session, _survey(small_survey), file_format, path)
        frame, meta = read(str(path))
        assert list(frame.columns)[-1] == "imported"
        assert frame["imported"].tolist() == [0, 0, 0, 1, 1]
        assert frame["drugs"].tolist()[3:] == [1, 0]
        assert meta.variable_value_labels["imported"] == {0: "submitted on the web", 1: "imported"}


def test_every_bad_row_is_named_by_row_and_column_and_nothing_is_written(app, small_survey):
    day = _today(app)
    data = (
        "submitted_on,drugs,mirror,often,age\n"
        f"{day},1,0,2,0\n"  # good
        f"{day},2,0,2,0\n"  # drugs out of range
        f"31/12/2025,1,0,,1\n"  # bad day, often is required
        f"2999-01-01,1,0,7,x\n"  # future, often out of range, age no option
    )
    with pytest.raises(ImportRefused) as refused:
        _import(app, small_survey, data, "csv")
    found = {(p.row, p.column, p.code) for p in refused.value.problems}
    assert found == {
        (2, "drugs", "answer.option_code_out_of_range"),
        (3, "submitted_on", "import.date_invalid"),
        (3, "often", "answer.required"),
        (4, "submitted_on", "import.date_in_future"),
        (4, "often", "answer.option_code_out_of_range"),
        (4, "age", "answer.option_code_not_whole"),
    }
    assert refused.value.params["count"] == 6
    assert _stored(app, small_survey) == (0, 0)
    with pytest.raises(ImportRefused) as refused:
        _import(app, small_survey, f"submitted_on,drugs,mirror,often,smoked\n{day},1,0,2,1\n", "csv")
    assert [(p.row, p.column, p.code) for p in refused.value.problems] == [(0, "smoked", "import.unknown_column")]
    with pytest.raises(ImportRefused) as refused:
        _import(app, small_survey, json.dumps([{"drugs": 1, "mirror": 0, "often": 1}]), "json")
    assert [(p.row, p.column, p.code) for p in refused.value.problems] == [(0, "submitted_on", "import.date_missing")]
    assert _stored(app, small_survey) == (0, 0)


def test_the_same_rows_twice_add_nothing_in_any_order_or_format(app, small_survey):
    day = _today(app)
    rows = _researcher_rows(day)[:10]
    first = _import(app, small_survey, _csv(rows), "csv")
    assert not first.already
    again = _import(app, small_survey, _csv(rows[::-1]), "csv")
    as_json = _import(app, small_survey, json.dumps([{k: str(v) for k, v in r.items()} for r in rows]), "json")
    assert again.already and as_json.already and again.import_id == first.import_id == as_json.import_id
    assert _stored(app, small_survey) == (10, 1)
    more = _import(app, small_survey, _csv(rows[:9]), "csv")  # other rows: another upload
    assert not more.already and _stored(app, small_survey) == (19, 2)
    _clean(app, small_survey)


def test_dry_run_checks_and_writes_nothing_and_a_draft_takes_no_import(app, small_survey):
    day = _today(app)
    result = _import(app, small_survey, _csv(_researcher_rows(day)), "csv", dry_run=True)
    assert result.dry_run and result.rows == len(SUBMISSIONS)
    assert _stored(app, small_survey) == (0, 0)
    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == "alice"))
        create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": "drafted", "status": "draft"}, owner=owner)
        survey = _survey("drafted")
        survey.status = "draft"
        db.session.commit()
    with app.app_context(), pytest.raises(Exception) as refused:
        import_responses(db.session, _survey("drafted"), _csv(_researcher_rows(day)), "csv")
    assert getattr(refused.value, "code", None) == "import.draft"


def test_imported_days_feed_the_day_tallies_and_the_recount_agrees(app, small_survey):
    rows = _researcher_rows("2026-01-05")[:5] + _researcher_rows("2026-02-10")[5:12]
    _import(app, small_survey, _csv(rows), "csv")
    with app.app_context():
        from survey.domain.responses.tallies import day_tally_counts

        days = day_tally_counts(db.session, _survey(small_survey))
    assert {str(day) for _, _, day in days} == {"2026-01-05", "2026-02-10"}
    _clean(app, small_survey)


# -- the command -----------------------------------------------------------------------------------


def test_the_command_imports_checks_dry_runs_and_recounts_clean(app, small_survey, runner, tmp_path):
    day = _today(app)
    good = tmp_path / "paper.csv"
    good.write_text(_csv(_researcher_rows(day)))
    result = runner.invoke(args=["import-responses", small_survey, str(good), "--dry-run"])
    assert result.exit_code == 0 and "40 rows are valid" in result.output, result.output
    assert _stored(app, small_survey) == (0, 0)
    result = runner.invoke(args=["import-responses", small_survey, str(good), "--user", "alice"])
    assert result.exit_code == 0 and "40 rows imported" in result.output, result.output
    result = runner.invoke(args=["import-responses", small_survey, str(good)])
    assert result.exit_code == 0 and "nothing added" in result.output
    assert _stored(app, small_survey) == (40, 1)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"submitted_on": day, "drugs": 5, "mirror": 0, "often": 1}]))
    result = runner.invoke(args=["import-responses", small_survey, str(bad)])
    assert result.exit_code != 0 and "row 1, column 'drugs'" in result.output
    assert _stored(app, small_survey) == (40, 1)
    with app.app_context():
        assert listed(db.session) == 0  # the command folded the pairs its rows were listed for
    result = runner.invoke(args=["recount", small_survey])
    assert result.exit_code == 0 and "tallies agree" in result.output
    with app.app_context():
        (upload,) = db.session.scalars(select(ResponseImport)).all()
        assert upload.user_id == db.session.scalar(select(User.id).where(User.username == "alice"))
        assert upload.rows == 40 and len(upload.sha256) == 64


def test_an_upload_lists_its_rows_for_the_fold_and_the_site_starts_one_at_once(app, client, small_survey, monkeypatch):
    """The pairs of an upload's rows are not added in its request (70,000 rows of a 200-question survey
    took over a minute there): its rows are listed, every reader counts them meanwhile, and the upload
    starts a fold in the background at once, whatever the interval since the last one."""
    day = _today(app)
    rows = _researcher_rows(day)
    _import(app, small_survey, _csv(rows[:10]), "csv")
    with app.app_context():
        assert listed(db.session) == 10
        _clean(app, small_survey)  # the readers count the listed rows: tallies and recount agree
    folding.clock(app).next_at = float("inf")  # as if a fold had just started: no interval frees one
    app.config["FOLD_SECONDS"] = 3600.0
    started = []
    monkeypatch.setattr(background, "run_later", lambda *a, real=background.run_later: started.append(a) or real(*a))
    token = make_token(app, "alice", "imports")
    response = client.post(
        f"/api/v1/surveys/{small_survey}/imports",
        data=_csv(rows[10:20]),
        content_type="text/csv",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    assert background.settle(30) and len(started) == 1
    with app.app_context():
        assert listed(db.session) == 0  # both uploads' rows folded
    _clean(app, small_survey)


# -- the API ---------------------------------------------------------------------------------------


def _member(app, slug: str, username: str, role: str) -> None:
    with app.app_context():
        survey = _survey(slug)
        user = db.session.scalar(select(User).where(User.username == username))
        survey.memberships.append(Membership(user_id=user.id, role=role))
        db.session.commit()


def test_the_api_takes_an_imports_token_of_an_owner_or_organizer_only(app, client, small_survey):
    day = _today(app)
    body = _csv(_researcher_rows(day)[:4])
    url = f"/api/v1/surveys/{small_survey}/imports"

    def post(token: str, data=body, content_type="text/csv"):
        return client.post(url, data=data, content_type=content_type, headers={"Authorization": f"Bearer {token}"})

    assert_problem(post(make_token(app, "alice", "results")), 403, "token.scope")
    assert_problem(post(make_token(app, "alice", "manage")), 403, "token.scope")
    make_user(app, "bob")
    _member(app, small_survey, "bob", "researcher")
    assert_problem(post(make_token(app, "bob", "imports")), 403, "import.not_organizer")
    make_user(app, "dave")
    assert_problem(post(make_token(app, "dave", "imports")), 404)
    assert _stored(app, small_survey) == (0, 0)
    owner = make_token(app, "alice", "imports")
    response = post(owner)
    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.json["added"] == 4 and response.json["already_imported"] is False
    response = post(owner)
    assert response.status_code == 200 and response.json["added"] == 0 and response.json["already_imported"]
    make_user(app, "erin")
    _member(app, small_survey, "erin", "organizer")
    as_json = json.dumps([{"submitted_on": day, "drugs": "1", "mirror": "0", "often": "2"}])
    response = post(make_token(app, "erin", "imports"), as_json, "application/json")
    assert response.status_code == 201 and response.json["added"] == 1
    bad = f"submitted_on,drugs,mirror,often\n{day},1,0,9\nyesterday,1,0,1\n"
    response = post(owner, bad)
    assert_problem(response, 400, "import.rows_invalid")
    assert [(e["row"], e["column"]) for e in response.json["errors"]] == [(1, "often"), (2, "submitted_on")]
    assert _stored(app, small_survey) == (5, 2)
    _clean(app, small_survey)


# -- numbers ---------------------------------------------------------------------------------------

NUMBERS_SPEC = {
    "title": "Drinks",
    "slug": "drinks",
    "questions": [
        {
            "key": "drinks",
            "kind": "rr_number",
            "text": "How many drinks did you have last week?",
            "minimum": 0,
            "maximum": 30,
            "privacy": {"design": "hybrid", "epsilon": 1},
        },
        {"key": "age", "kind": "number", "text": "How old are you?", "minimum": 16, "maximum": 99, "required": False},
    ],
}


def test_randomized_numbers_and_numbers_round_trip_and_a_report_off_the_grid_is_refused(app, client, user):
    import numpy as np

    with app.app_context():
        owner = db.session.get(User, user)
        for slug in ("drinks", "drinks-copy"):
            create_survey_from_spec(db.session, {**NUMBERS_SPEC, "slug": slug}, owner=owner)
        db.session.commit()
        mechanism = _survey("drinks").questions[0].mechanism()
        rng = np.random.default_rng(11)
        codes = [int(c) for c in mechanism.randomize(rng.integers(0, 31, 30).astype(float), rng)]
    ages = [int(a) for a in np.random.default_rng(12).integers(16, 100, 30)]
    submit_answers(client, "drinks", [{"drinks": c, "age": a} for c, a in zip(codes, ages, strict=True)])
    exported = _export(app, "drinks")
    _import(app, "drinks-copy", exported, "csv")
    assert _estimates(app, "drinks-copy") == _estimates(app, "drinks")
    _clean(app, "drinks-copy")
    day = _today(app)
    with pytest.raises(ImportRefused) as refused:
        _import(app, "drinks-copy", f"submitted_on,drinks,age\n{day},12.3456789,15\n", "csv")
    assert {(p.row, p.column, p.code) for p in refused.value.problems} == {
        (1, "drinks", "import.report_off_grid"),
        (1, "age", "answer.number_out_of_range"),
    }


# -- the management page ---------------------------------------------------------------------------


def test_the_management_page_imports_lists_every_problem_and_refuses_a_researcher(app, small_survey, signed_in):
    day = _today(app)
    page = signed_in.get(f"/surveys/{small_survey}/share")
    assert page.status_code == 200 and 'id="imports"' in page.get_data(as_text=True)
    url = f"/surveys/{small_survey}/imports"
    bad = f"submitted_on,drugs,mirror,often\n{day},1,0,9\n{day},3,0,1\n".encode()
    response = signed_in.post(url, data={"file": (io.BytesIO(bad), "paper.csv")}, content_type="multipart/form-data")
    text = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "row 1, column &#39;often&#39;" in text and "row 2, column &#39;drugs&#39;" in text
    assert _stored(app, small_survey) == (0, 0)
    good = _csv(_researcher_rows(day)[:6]).encode()
    response = signed_in.post(
        url, data={"file": (io.BytesIO(good), "paper.csv"), "dry_run": "y"}, content_type="multipart/form-data"
    )
    assert response.status_code == 303 and _stored(app, small_survey) == (0, 0)
    response = signed_in.post(
        url, data={"file": (io.BytesIO(good), "paper.csv")}, content_type="multipart/form-data", follow_redirects=True
    )
    assert "6 responses imported" in response.get_data(as_text=True) and _stored(app, small_survey) == (6, 1)
    _clean(app, small_survey)
    make_user(app, "bob")
    _member(app, small_survey, "bob", "researcher")
    from .accounts import sign_in

    researcher = sign_in(app, "bob")
    response = researcher.post(url, data={"file": (io.BytesIO(good), "b.csv")}, content_type="multipart/form-data")
    assert response.status_code == 404 and _stored(app, small_survey) == (6, 1)


def _big_csv(day: str) -> bytes:
    rows = [
        {"submitted_on": day, "drugs": i % 2, "mirror": (i // 2) % 2, "often": i % 4, "age": ""} for i in range(4000)
    ]
    body = _csv(rows).encode()
    assert len(body) > 64 * 1024  # above the app's limit for a submission
    return body


def test_an_upload_may_be_larger_than_a_submission(app, small_survey):
    token = make_token(app, "alice", "imports")
    response = app.test_client().post(
        f"/api/v1/surveys/{small_survey}/imports",
        data=_big_csv(_today(app)),
        content_type="text/csv",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 201, response.get_data(as_text=True)[:300]
    assert _stored(app, small_survey) == (4000, 1)
    _clean(app, small_survey)


def test_the_page_form_takes_a_large_file_and_checks_its_csrf_token(csrf_app):
    """With CSRF protection on, as in production: without the form's token nothing changes; with it,
    a file larger than the app's limit for a submission is imported."""
    import re

    from .accounts import PASSWORD
    from .surveys import add_survey

    make_user(csrf_app, "alice")
    slug = add_survey(csrf_app, SMALL_SPEC)
    client = csrf_app.test_client()
    page = client.get("/auth/login").get_data(as_text=True)
    login_token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    signed = client.post("/auth/login", data={"username": "alice", "password": PASSWORD, "csrf_token": login_token})
    assert signed.status_code == 302
    body = _big_csv(_today(csrf_app))
    url = f"/surveys/{slug}/imports"
    response = client.post(url, data={"file": (io.BytesIO(body), "big.csv")}, content_type="multipart/form-data")
    assert response.status_code == 400
    assert _stored(csrf_app, slug) == (0, 0)
    manage = client.get(f"/surveys/{slug}/share").get_data(as_text=True)
    form_token = re.search(r'name="csrf_token" value="([^"]+)"', manage).group(1)
    response = client.post(
        url, data={"file": (io.BytesIO(body), "big.csv"), "csrf_token": form_token}, content_type="multipart/form-data"
    )
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    assert _stored(csrf_app, slug) == (4000, 1)


def test_the_api_takes_a_multipart_file_and_text_that_is_not_text_writes_nothing(app, small_survey):
    day = _today(app)
    token = make_token(app, "alice", "imports")
    client = app.test_client()
    url = f"/api/v1/surveys/{small_survey}/imports"
    headers = {"Authorization": f"Bearer {token}"}
    sneaky = json.dumps([{"submitted_on": day, "drugs": "1\u0000", "mirror": "\ud800", "often": 1}])
    response = client.post(
        url, data=sneaky.encode("utf-8", "surrogatepass"), content_type="application/json", headers=headers
    )
    assert_problem(response, 400)
    assert _stored(app, small_survey) == (0, 0)
    upload = {"file": (io.BytesIO(_csv(_researcher_rows(day)[:3]).encode()), "paper.csv")}
    response = client.post(url + "?dry_run=true", data=upload, content_type="multipart/form-data", headers=headers)
    assert response.status_code == 200 and response.json["dry_run"] and response.json["rows"] == 3
    upload = {"file": (io.BytesIO(_csv(_researcher_rows(day)[:3]).encode()), "paper.csv")}
    response = client.post(url, data=upload, content_type="multipart/form-data", headers=headers)
    assert response.status_code == 201 and _stored(app, small_survey) == (3, 1)
