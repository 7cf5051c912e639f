"""The microdata as a researcher's tools read them: SPSS and Stata files with labels, and R.

R is Debian's (``make test`` installs it): the tests run the survey's own R script on the downloaded
CSV and read the SPSS file with R's ``foreign``, as docs/exports.md tells a researcher to.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyreadstat
import pytest
from sqlalchemy import select

from survey.domain.models import User
from survey.domain.surveys.kinds import kind_of
from survey.domain.surveys.specs import YES_NO_LABELS
from survey.domain.surveys.variable_names import NAME_LIMIT, variable_names
from survey.platform.extensions import db

from .surveys import KEYS, SMALL_SPEC, SUBMISSIONS, submit_answers

RSCRIPT = shutil.which("Rscript")
needs_r = pytest.mark.skipif(RSCRIPT is None, reason="R is not installed (make test installs it)")
TEXTS = {q["key"]: q["text"] for q in SMALL_SPEC["questions"]}
KINDS = {q["key"]: q["kind"] for q in SMALL_SPEC["questions"]}


@pytest.fixture
def answered(client, small_survey):
    submit_answers(client, small_survey, SUBMISSIONS)
    return small_survey


def _download(client, path: str) -> bytes:
    response = client.get(path)
    assert response.status_code == 200, path
    assert response.headers["Cache-Control"] == "private, no-store"
    body = response.get_data()
    response.close()
    return body


def _microdata(client, slug: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_download(client, f"/surveys/{slug}/responses.csv").decode())))


def _expected_cell(key: str, sent: dict[str, int]) -> float:
    """What the browser sent, in the researcher's codes (yes/no: 1 = yes, 0 = no), NaN if not answered."""
    if key not in sent:
        return float("nan")
    return float(1 - sent[key] if KINDS[key] == "yes_no" else sent[key])


@pytest.mark.parametrize("kind", ["sav", "dta"])
def test_labelled_microdata_hold_the_csv_values_with_question_texts_and_value_labels(
    signed_in, answered, tmp_path, kind
):
    body = _download(signed_in, f"/surveys/{answered}/responses.{kind}")
    path = tmp_path / f"responses.{kind}"
    path.write_bytes(body)
    frame, meta = (pyreadstat.read_sav if kind == "sav" else pyreadstat.read_dta)(str(path))
    assert list(frame.columns) == ["submission", "submitted_on", *KEYS]
    assert frame["submission"].tolist() == list(range(1, len(SUBMISSIONS) + 1))
    for key in KEYS:
        expected = [_expected_cell(key, sent) for sent in SUBMISSIONS]
        np.testing.assert_array_equal(frame[key].to_numpy(dtype=float), expected)
        label = meta.column_names_to_labels[key]
        assert label.startswith(TEXTS[key])
        assert label.endswith("[randomized report]") == (KINDS[key] != "direct")
    labels = meta.variable_value_labels
    yes, no = YES_NO_LABELS
    assert labels["drugs"] == {0: no, 1: yes} and labels["mirror"] == {0: no, 1: yes}
    often = next(q for q in SMALL_SPEC["questions"] if q["key"] == "often")
    assert labels["often"] == dict(enumerate(often["options"]))
    assert labels["age"] == {0: "young", 1: "old"}


def test_labelled_microdata_of_a_survey_without_answers(signed_in, small_survey, tmp_path):
    path = tmp_path / "empty.sav"
    path.write_bytes(_download(signed_in, f"/surveys/{small_survey}/responses.sav"))
    frame, _ = pyreadstat.read_sav(str(path))
    assert list(frame.columns) == ["submission", "submitted_on", *KEYS] and len(frame) == 0


def test_labelled_microdata_need_the_right_to_see_results(client, answered):
    response = client.get(f"/surveys/{answered}/responses.sav")
    assert response.status_code == 302 and "/auth/login" in response.headers["Location"]


def test_long_keys_are_cut_and_kept_distinct():
    """Names fit Stata (tests/test_exports_trust.py runs every reserved word and long key through
    every file)."""
    long = "a" * 40
    names = variable_names([long, long[:35] + "bbbbb", "short"])
    assert names["short"] == "short"
    assert names[long] == "a" * NAME_LIMIT and names[long[:35] + "bbbbb"] == "a" * (NAME_LIMIT - 2) + "_1"


@needs_r
def test_the_r_script_reproduces_the_estimates_file(signed_in, answered, tmp_path):
    _r_reproduces(signed_in, answered, tmp_path)


@needs_r
def test_the_r_script_reproduces_the_demo(app, signed_in, tmp_path):
    """The demo's six designs (forced response, unrelated question, GRR...) on 300 respondents."""
    from survey.domain.surveys.demo import DEMO_SLUG, create_demo

    with app.app_context():
        survey = create_demo(db.session, respondents=300)
        survey.owner = db.session.scalar(select(User).where(User.username == "alice"))
        db.session.commit()
    _r_reproduces(signed_in, DEMO_SLUG, tmp_path)


def _r_reproduces(client, slug: str, tmp_path: Path) -> None:
    script = tmp_path / f"{slug}-estimates.R"
    script.write_bytes(_download(client, f"/surveys/{slug}/estimates.R"))
    data = tmp_path / f"{slug}-responses.csv"
    data.write_bytes(_download(client, f"/surveys/{slug}/responses.csv"))
    out = tmp_path / "r-estimates.csv"
    run = subprocess.run([RSCRIPT, str(script), str(data), str(out)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    ours = list(csv.DictReader(io.StringIO(_download(client, f"/surveys/{slug}/estimates.csv").decode())))
    theirs = list(csv.DictReader(out.open()))
    assert [(r["question_key"], r["option_code"].replace("NA", "")) for r in theirs] == [
        (r["question_key"], r["option_code"]) for r in ours
    ]
    compared = 0
    for mine, r in zip(ours, theirs, strict=True):
        assert (r["option_label"], r["n"], r["reported_count"].replace("NA", "")) == (
            mine["option_label"],
            mine["n"],
            mine["reported_count"],
        )
        columns = ["observed_share", "unbiased", "consistent", "standard_error"]
        if r["interval_method"] in ("wilson-floor-mapped", "betting"):
            assert mine["interval_method"] == r["interval_method"]
            columns += ["ci_low", "ci_high"]
        if mine["kind"] == "number" and mine["n"] != "0":  # R redoes a number question's interval too
            assert r["interval_method"] == mine["interval_method"] == "betting", r["question_key"]
        if kind_of(mine["kind"]).randomized_number and mine["n"] != "0":  # and a randomized number's
            assert r["interval_method"] == mine["interval_method"], r["question_key"]
            if r["interval_method"] == "normal":
                columns += ["ci_low", "ci_high"]
        for column in columns:
            if mine[column] == "":
                assert r[column] == "NA"
                continue
            assert float(r[column]) == pytest.approx(float(mine[column]), abs=1e-6), (r["question_key"], column)
            compared += 1
    assert compared > 0


#: Designs that are not symmetric in yes and no, so that a matrix left in the stored coding (yes = 0)
#: would give different numbers; a forced-response choice question whose unbiased estimate goes
#: below 0 (so the consistent estimate is the constrained maximum likelihood).
LOPSIDED_SPEC = {
    "title": "Lopsided designs",
    "slug": "lopsided",
    "questions": [
        {
            "key": "cheated",
            "kind": "yes_no",
            "text": "Cheated?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 0.8},
        },
        {
            "key": "stole",
            "kind": "yes_no",
            "text": "Stole?",
            "privacy": {"design": "unrelated_question", "sensitive_probability": 0.7, "unrelated_yes_rate": 0.1},
        },
        {
            "key": "often",
            "kind": "choice",
            "text": "How often?",
            "options": ["never", "once", "often"],
            "privacy": {"design": "forced_response", "forced": [0.05, 0.1, 0.15]},
        },
    ],
}


@needs_r
def test_the_r_script_reproduces_designs_that_are_not_symmetric_in_yes_and_no(app, client, signed_in, tmp_path):
    from survey.domain.surveys.specs import create_survey_from_spec

    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == "alice"))
        create_survey_from_spec(db.session, LOPSIDED_SPEC, owner=owner)
        db.session.commit()
    rng = np.random.default_rng(7)
    for _ in range(60):
        answers = {"cheated": int(rng.random() < 0.3), "stole": int(rng.random() < 0.8)}
        answers["often"] = int(rng.choice(3, p=[0.55, 0.4, 0.05]))
        response = client.post("/api/surveys/lopsided/responses", json={"answers": answers})
        assert response.status_code == 201, response.get_json()
    _r_reproduces(signed_in, "lopsided", tmp_path)


@needs_r
def test_r_reads_the_spss_file_with_labels_and_yes_is_1(signed_in, answered, tmp_path):
    path = tmp_path / "responses.sav"
    path.write_bytes(_download(signed_in, f"/surveys/{answered}/responses.sav"))
    program = (
        "suppressWarnings(library(foreign));"
        f"d <- read.spss('{path}', to.data.frame = TRUE, use.value.labels = FALSE);"
        "cat(mean(d$drugs), '\\n');"
        "cat(names(attr(d$drugs, 'value.labels')), '\\n');"
        "cat(attr(d, 'variable.labels')[['drugs']], '\\n')"
    )
    run = subprocess.run([RSCRIPT, "-e", program], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    mean, labels, text = run.stdout.splitlines()
    reported_yes = sum(1 for s in SUBMISSIONS if s["drugs"] == 0)  # stored: yes = 0
    assert float(mean) == pytest.approx(reported_yes / len(SUBMISSIONS))
    assert set(labels.split()) == set(YES_NO_LABELS)
    assert text.startswith(TEXTS["drugs"])


#: Number questions whose answers make the betting interval's ends fall in each of its cases: at the
#: range's edge (one answer, all at the minimum, all at the maximum), inside it on one side (nineteen
#: at the minimum and one at the maximum), on both sides, over a range below 0, and no answer at all.
NUMBERS_SPEC = {
    "title": "Numbers in R",
    "slug": "numbers-in-r",
    "questions": [
        {"key": "days", "kind": "number", "text": "Days?", "minimum": 0, "maximum": 100},
        {"key": "once", "kind": "number", "text": "Once?", "minimum": 16, "maximum": 99, "required": False},
        {"key": "low", "kind": "number", "text": "Low?", "minimum": 3, "maximum": 7},
        {"key": "top", "kind": "number", "text": "Top?", "minimum": 3, "maximum": 7},
        {"key": "spread", "kind": "number", "text": "Spread?", "minimum": -50, "maximum": 50},
        {"key": "never", "kind": "number", "text": "Never?", "minimum": 0, "maximum": 10, "required": False},
    ],
}


@needs_r
def test_the_r_script_reproduces_number_intervals_to_1e_6(app, client, signed_in, tmp_path):
    from survey.domain.surveys.specs import create_survey_from_spec

    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == "alice"))
        create_survey_from_spec(db.session, NUMBERS_SPEC, owner=owner)
        db.session.commit()
    rng = np.random.default_rng(21)
    for i in range(20):
        answers = {"days": 100 if i == 7 else 0, "low": 3, "top": 7, "spread": int(rng.integers(-50, 51))}
        if i == 0:
            answers["once"] = 42
        response = client.post("/api/surveys/numbers-in-r/responses", json={"answers": answers})
        assert response.status_code == 201, response.get_json()
    _r_reproduces(signed_in, "numbers-in-r", tmp_path)
    rows = {
        r["question_key"]: r
        for r in csv.DictReader(io.StringIO(_download(signed_in, "/surveys/numbers-in-r/estimates.csv").decode()))
    }
    # the cases named above: the ends at the range's edges where they must be, inside it elsewhere
    assert (float(rows["once"]["ci_low"]), float(rows["once"]["ci_high"])) == (16.0, 99.0)
    assert float(rows["low"]["ci_low"]) == 3.0 < float(rows["low"]["ci_high"]) < 7.0
    assert 3.0 < float(rows["top"]["ci_low"]) < float(rows["top"]["ci_high"]) == 7.0
    assert float(rows["days"]["ci_low"]) == 0.0 < float(rows["days"]["ci_high"]) < 100.0
    assert -50.0 < float(rows["spread"]["ci_low"]) < float(rows["spread"]["ci_high"]) < 50.0
    assert rows["never"]["n"] == "0" and rows["never"]["ci_low"] == ""
