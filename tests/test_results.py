"""Results pages and downloads: sign-in required, numbers identical to ``survey.privacy.estimate``.

The expected counts are computed here from the submissions the tests post, never read back from the
application, so a wrong GROUP BY, a mixed-up option order or a rounding in an export would show.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import re
from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
from sqlalchemy import select

from survey.domain.models import Survey, User, today
from survey.domain.responses.tallies import survey_results
from survey.domain.results import exports
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.privacy import Mechanism, estimate, mechanism_from_dict

from .surveys import KEYS, SMALL_SPEC, SUBMISSIONS, N, submit_answers

SLUG = SMALL_SPEC["slug"]
PAGES = ("results", "estimates.csv", "responses.csv", "codebook.json")


def _expected_counts() -> dict[str, np.ndarray]:
    """Counts of each reported code per question, from what the tests submitted."""
    result = {}
    for q in SMALL_SPEC["questions"]:
        k = len(q.get("options", ["yes", "no"]))
        tally = Counter(s[q["key"]] for s in SUBMISSIONS if q["key"] in s)
        result[q["key"]] = np.array([tally[code] for code in range(k)])
    return result


@pytest.fixture
def answered(client, small_survey):
    submit_answers(client, small_survey, SUBMISSIONS)
    return small_survey


@pytest.fixture
def stored_mechanisms(app, small_survey) -> dict[str, Mechanism]:
    """The frozen designs as stored; the identity for the directly asked question."""
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == small_survey))
        return {q.key: q.mechanism() or Mechanism(np.eye(len(q.options)), labels=q.labels) for q in survey.questions}


def _get_text(client, path: str) -> str:
    """The whole body; reading it also ends a streamed response and releases its cursor."""
    response = client.get(path)
    assert response.status_code == 200, path
    body = response.get_data(as_text=True)
    response.close()
    return body


def _researcher_order(kind: str, k: int) -> list[int]:
    """The stored codes in the order of the codes researchers see: a yes/no question (stored yes = 0,
    no = 1) is exported as 0 = no, 1 = yes; other questions keep their codes. Written out here rather
    than taken from survey.domain.results.coding, so that a mistake there fails these tests."""
    return [1, 0] if kind == "yes_no" else list(range(k))


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# -- who may see what ------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_anonymous_users_are_sent_to_sign_in(client, small_survey, page):
    response = client.get(f"/surveys/{small_survey}/{page}")
    assert response.status_code == 302
    assert "/auth/login" in response.headers["Location"]


@pytest.mark.parametrize("slug", [SLUG, "no-such-survey"])
def test_anonymous_api_gets_a_json_401_not_a_redirect(client, small_survey, slug):
    response = client.get(f"/api/surveys/{slug}/estimates")
    assert response.status_code == 401
    assert response.is_json and response.get_json()["status"] == 401


@pytest.mark.parametrize("page", PAGES)
def test_unknown_survey_is_404(signed_in, page):
    assert signed_in.get(f"/surveys/no-such-survey/{page}").status_code == 404


def test_unknown_survey_in_the_api_is_a_json_404(signed_in):
    response = signed_in.get("/api/surveys/no-such-survey/estimates")
    assert response.status_code == 404
    assert response.get_json()["status"] == 404


def test_results_are_not_cached(signed_in, small_survey):
    for page in PAGES:
        response = signed_in.get(f"/surveys/{small_survey}/{page}")
        response.get_data()
        response.close()
        assert "no-store" in response.headers["Cache-Control"]


# -- pages -----------------------------------------------------------------------------------------


def test_index_for_anonymous_users_explains_and_offers_sign_in(client, small_survey):
    page = client.get("/").get_data(as_text=True)
    assert "randomized" in page and 'href="/auth/login"' in page
    assert "Small test survey" not in page


def test_index_lists_surveys_with_submissions_and_total_epsilon(signed_in, answered, app):
    page = _get_text(signed_in, "/")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == answered))
        total = survey.total_epsilon()
    row = re.search(r"<tr>\s*<th scope=\"row\">Small test survey</th>(.*?)</tr>", page, re.S).group(1)
    assert f"<td>{N}</td>" in row and f"<td>{total:.2f}</td>" in row and "<td>open</td>" in row
    assert f'href="/surveys/{answered}/results"' in row and f'href="/s/{answered}"' in row


def test_results_page_shows_counts_estimates_and_design(signed_in, answered, stored_mechanisms):
    page = _get_text(signed_in, f"/surveys/{answered}/results")
    counts = _expected_counts()
    assert "<dt>Submissions</dt><dd>40</dd>" in page
    for key, c in counts.items():
        result = estimate(stored_mechanisms[key], c)
        low, high = result.ci()
        section = page.split(f'id="q-{key}"')[1].split("</section>")[0]
        assert f"<dt>Answered</dt><dd>{c.sum()}</dd>" in section
        for v, label in enumerate(result.labels):
            # the table shows one estimate and its intervals; "All the numbers" (a <details>) the rest
            shown, more = re.findall(rf'<th scope="row">{label}</th>(.*?)</tr>', section, re.S)[:2]
            cells = re.findall(r"<td[^>]*>(.*?)</td>", shown)
            assert cells[0] == f"{100 * result.proportions[v]:.1f}%"
            assert cells[1] == f"{100 * low[v]:.1f}% to {100 * high[v]:.1f}%"
            cells = re.findall(r"<td[^>]*>(.*?)</td>", more)
            assert cells[0] == str(c[v])
            assert cells[1] == f"{100 * result.observed[v]:.1f}%"
            assert cells[2] == f"{100 * result.unbiased[v]:.1f}%"
            assert cells[3] == f"{100 * result.standard_errors[v]:.1f}"
    # ε per question and in total; the direct question is labelled as unprotected and left out
    assert "<dt>ε</dt><dd>1.10</dd>" in page and "<dt>ε</dt><dd>1.00</dd>" in page
    assert "asked directly (not protected)" in page and "not part of the sum" in page
    assert "consistent" in page and "unbiased" in page
    for download in ("estimates.csv", "responses.csv", "codebook.json"):
        assert f'href="/surveys/{answered}/{download}"' in page
    # every download link downloads, the JSON too; the API itself still answers JSON to be read
    assert f'href="/api/surveys/{answered}/estimates?download=1" download' in page


def test_results_page_chart_is_accessible_svg_without_inline_style_or_script(signed_in, answered):
    page = _get_text(signed_in, f"/surveys/{answered}/results")
    charts = re.findall(r'<svg class="chart"[^>]*>', page)
    assert len(charts) == len(KEYS)
    # and one chart over time per randomized question, each with a title and a description
    timelines = re.findall(r'<svg class="chart timeline"[^>]*>', page)
    assert [re.search(r'aria-labelledby="timeline-(\w+)-title', t).group(1) for t in timelines] == KEYS[:3]
    for key, tag in zip(KEYS, charts, strict=True):
        assert 'role="img"' in tag and f'aria-labelledby="chart-{key}-title chart-{key}-desc"' in tag
        assert f'<title id="chart-{key}-title">' in page and f'<desc id="chart-{key}-desc">' in page
    assert page.count('class="chart-bar"') >= sum(len(c) for c in _expected_counts().values())
    assert "0%</text>" in page and "100%</text>" in page
    # The CSP allows no inline style or script: none may be on the page.
    assert not re.search(r"\sstyle=", page) and "<style" not in page and "<script" not in page
    assert "chart-truth" not in page  # no true rates for a real survey


def test_headings_are_in_order_and_tables_have_captions(signed_in, answered):
    page = _get_text(signed_in, f"/surveys/{answered}/results")
    levels = [int(h) for h in re.findall(r"<h([1-6])\b", page)]
    assert levels[0] == 1 and all(b - a <= 1 for a, b in pairwise(levels))
    assert page.count("<table") == page.count("<caption")
    assert page.count("<th scope=") == page.count("<th ")


def test_a_survey_without_responses_renders(signed_in, small_survey):
    page = _get_text(signed_in, f"/surveys/{small_survey}/results")
    assert page.count("No responses yet") == len(KEYS)
    assert "<svg" not in page
    document = signed_in.get(f"/api/surveys/{small_survey}/estimates").get_json()
    assert document["survey"]["submissions"] == 0
    assert all(q["n"] == 0 and "unbiased" not in q["categories"][0] for q in document["questions"])
    rows = _csv(_get_text(signed_in, f"/surveys/{small_survey}/estimates.csv"))
    assert len(rows) == 10 and all(r["n"] == "0" and r["unbiased"] == r["ci_low"] == "" for r in rows)
    assert _get_text(signed_in, f"/surveys/{small_survey}/responses.csv").splitlines() == [
        "submission,submitted_on," + ",".join(KEYS)
    ]


# -- estimates: JSON and CSV equal survey.privacy.estimate on the same counts ----------------------


def test_json_estimates_equal_privacy_estimate_exactly(signed_in, answered, stored_mechanisms):
    response = signed_in.get(f"/api/surveys/{answered}/estimates")
    assert response.status_code == 200 and response.is_json
    document = response.get_json()
    assert document["survey"] == {
        "slug": answered,
        "title": SMALL_SPEC["title"],
        "status": "open",
        "simulated": False,
        "submissions": N,
    }
    assert document["level"] == 0.95
    total = sum(m.epsilon for key, m in stored_mechanisms.items() if key != "age")
    assert document["total_epsilon"] == pytest.approx(total, abs=1e-12)
    assert document["total_epsilon_infinite"] is False
    counts = _expected_counts()
    assert [q["key"] for q in document["questions"]] == KEYS
    for q in document["questions"]:
        mechanism = stored_mechanisms[q["key"]]
        result = estimate(mechanism, counts[q["key"]])
        low, high = result.ci(0.95)
        assert q["n"] == result.n
        order = _researcher_order(q["kind"], len(result.labels))
        for code, (v, c) in enumerate(zip(order, q["categories"], strict=True)):
            # yes = 1, no = 0: the categories come in the researcher's code order
            assert (c["code"], c["label"], c["reported"]) == (code, result.labels[v], int(result.counts[v]))
            assert c["observed_share"] == float(result.observed[v])
            assert c["unbiased"] == float(result.unbiased[v])
            assert c["proportion"] == float(result.proportions[v])
            assert c["standard_error"] == float(result.standard_errors[v])
            assert (c["ci_low"], c["ci_high"]) == (float(low[v]), float(high[v]))
            assert c["interval_method"] == result.interval_methods[v]
        if q["randomized"]:
            # the exported design alone (in the same coding) reproduces the estimate
            again = estimate(Mechanism(q["design"]["matrix"], labels=q["design"]["labels"]), counts[q["key"]][order])
            np.testing.assert_allclose(again.unbiased, result.unbiased[order], rtol=1e-12, atol=1e-14)
            assert q["epsilon"] == mechanism.epsilon
            # and it is the design the spec asked for
            spec = next(s for s in SMALL_SPEC["questions"] if s["key"] == q["key"])
            asked = mechanism_from_dict({**spec["privacy"], "labels": list(mechanism.labels)})
            np.testing.assert_allclose(asked.matrix, mechanism.matrix, atol=1e-12)
        else:
            assert q["design"] is None and q["epsilon"] is None
    often = document["questions"][KEYS.index("often")]["categories"]
    assert min(c["unbiased"] for c in often) < 0 <= min(c["proportion"] for c in often)


def test_csv_estimates_equal_privacy_estimate_exactly(signed_in, answered, stored_mechanisms):
    response = signed_in.get(f"/surveys/{answered}/estimates.csv")
    assert response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == f'attachment; filename="{answered}-estimates.csv"'
    text = response.get_data(as_text=True)
    assert text.splitlines()[0] == ",".join(exports.ESTIMATE_COLUMNS)
    rows = _csv(text)
    counts = _expected_counts()
    assert [(r["question_key"], int(r["option_code"])) for r in rows] == [
        (key, v) for key in KEYS for v in range(len(counts[key]))
    ]
    for r in rows:
        key = r["question_key"]
        v = _researcher_order(r["kind"], len(counts[key]))[int(r["option_code"])]
        mechanism = stored_mechanisms[key]
        result = estimate(mechanism, counts[key])
        low, high = result.ci()
        assert r["survey_slug"] == answered and r["option_label"] == result.labels[v]
        assert int(r["n"]) == result.n and int(r["reported_count"]) == counts[key][v]
        assert float(r["observed_share"]) == result.observed[v]
        assert float(r["unbiased"]) == result.unbiased[v]
        assert float(r["consistent"]) == result.proportions[v]
        assert float(r["standard_error"]) == result.standard_errors[v]
        assert (float(r["ci_low"]), float(r["ci_high"])) == (low[v], high[v])
        assert r["interval_method"] == result.interval_methods[v]
        assert r["simulated_truth"] == ""
        if key == "age":
            assert (r["kind"], r["randomized"], r["design"], r["epsilon"]) == ("direct", "0", "", "")
        else:
            assert r["randomized"] == "1" and float(r["epsilon"]) == mechanism.epsilon
            assert r["design"] == mechanism.design


def test_cli_estimate_prints_the_api_document(runner, signed_in, answered):
    result = runner.invoke(args=["estimate", answered])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == signed_in.get(f"/api/surveys/{answered}/estimates").get_json()


# -- microdata and codebook ------------------------------------------------------------------------


def test_microdata_has_one_row_per_submission_with_reported_codes_only(signed_in, answered):
    days = {today().isoformat(), (today() - dt.timedelta(days=1)).isoformat()}
    response = signed_in.get(f"/surveys/{answered}/responses.csv")
    assert response.is_streamed
    assert response.headers["Content-Disposition"] == f'attachment; filename="{answered}-responses.csv"'
    text = response.get_data(as_text=True)
    response.close()
    reader = csv.reader(io.StringIO(text))
    assert next(reader) == ["submission", "submitted_on", *KEYS]
    rows = list(reader)
    assert len(rows) == N
    for number, (row, sent) in enumerate(zip(rows, SUBMISSIONS, strict=True), start=1):
        assert row[0] == str(number)  # a row number, not the database id
        assert row[1] in days
        # what the browser sent, in the researcher's codes (a yes/no question: 1 = yes, 0 = no)
        kinds = {q["key"]: q["kind"] for q in SMALL_SPEC["questions"]}
        assert row[2:] == [
            "" if key not in sent else str(1 - sent[key] if kinds[key] == "yes_no" else sent[key]) for key in KEYS
        ]


def test_microdata_is_streamed_in_chunks_from_a_batched_query(app, answered, signed_in):
    whole = _get_text(signed_in, f"/surveys/{answered}/responses.csv")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == answered))
        chunks = list(exports.microdata_csv(db.session, survey, chunk_rows=7, batch_size=5))
    assert len(chunks) == 1 + math.ceil(N / 7)  # the header, then 7 submissions at a time
    assert "".join(chunks) == whole


def test_codebook_matrix_equals_the_stored_design(app, signed_in, answered):
    response = signed_in.get(f"/surveys/{answered}/codebook.json")
    assert response.headers["Content-Disposition"] == f'attachment; filename="{answered}-codebook.json"'
    book = response.get_json()
    assert [c["name"] for c in book["columns"]] == ["submission", "submitted_on", *KEYS]
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == answered))
        assert book["total_epsilon"] == survey.total_epsilon()
        for q, entry in zip(survey.questions, book["questions"], strict=True):
            assert (entry["key"], entry["text"], entry["kind"]) == (q.key, q.text, q.kind)
            order = _researcher_order(q.kind, len(q.options))
            assert entry["options"] == [{"code": code, "label": q.options[v].label} for code, v in enumerate(order)]
            if q.design is None:
                assert entry["randomized"] is False and entry["design"] is None
                continue
            design = entry["design"]
            assert design["matrix"] == [[q.design.matrix[r][t] for t in order] for r in order]
            np.testing.assert_allclose(design["matrix"], q.mechanism().matrix[np.ix_(order, order)], atol=1e-15)
            assert design["name"] == q.design.mechanism_name and design["parameters"] == q.design.parameters
            assert design["epsilon"] == q.design.epsilon and design["epsilon_infinite"] is False
            assert "rows are reported codes" in design["matrix_note"]
    assert "Q⁻¹" in book["how_to_estimate"]["unbiased"]


def test_reestimating_from_microdata_and_codebook_gives_the_same_numbers(signed_in, answered):
    """What a researcher would do in R or Python with the two downloads (docs/exports.md)."""
    rows = _csv(_get_text(signed_in, f"/surveys/{answered}/responses.csv"))
    book = signed_in.get(f"/surveys/{answered}/codebook.json").get_json()
    document = signed_in.get(f"/api/surveys/{answered}/estimates").get_json()
    for q, published in zip(book["questions"], document["questions"], strict=True):
        k = len(q["options"])
        codes = np.array([int(r[q["key"]]) for r in rows if r[q["key"]] != ""])
        n = codes.size
        lam = np.bincount(codes, minlength=k) / n
        matrix = np.array(q["design"]["matrix"]) if q["design"] else np.eye(k)
        pi = np.linalg.solve(matrix, lam)
        inverse = np.linalg.inv(matrix)
        if np.any(pi < 0):  # the covariance is taken at the shares the consistent estimate implies
            lam = matrix @ np.array([c["proportion"] for c in published["categories"]])
        covariance = inverse @ (np.diag(lam) - np.outer(lam, lam)) @ inverse.T / n
        assert n == published["n"]
        np.testing.assert_allclose(pi, [c["unbiased"] for c in published["categories"]], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(
            np.sqrt(np.diag(covariance)), [c["standard_error"] for c in published["categories"]], rtol=1e-9
        )


# -- simulated and one-sided surveys ---------------------------------------------------------------


def test_demo_shows_true_rates_beside_the_estimates(app, signed_in):
    from survey.domain.surveys.demo import DEMO_SLUG, create_demo

    with app.app_context():
        survey = create_demo(db.session, respondents=300)
        survey.owner = db.session.scalar(select(User).where(User.username == "alice"))
        db.session.commit()
        # the number question has no simulated shares: it is summarized, not estimated
        truths = {q.key: q.simulated_truth for q in survey.questions if not q.is_number}
    page = _get_text(signed_in, f"/surveys/{DEMO_SLUG}/results")
    assert page.count(
        '<th scope="col"><abbr title="True share among the simulated respondents">True share</abbr></th>'
    ) == len(truths)
    assert page.count('class="chart-truth"') == sum(len(t) for t in truths.values()) + len(truths)  # + legends
    assert "<dt>Submissions</dt><dd>300</dd>" in page
    document = signed_in.get(f"/api/surveys/{DEMO_SLUG}/estimates").get_json()
    assert document["survey"]["simulated"] is True
    kinds = {q["key"]: q["kind"] for q in document["questions"]}
    coded = {key: [t[v] for v in _researcher_order(kinds[key], len(t))] for key, t in truths.items()}
    for q in document["questions"]:
        assert q["n"] == 300  # every simulated respondent answers every question, the numbers too
        if "summary" in q:  # a number: its mean (a randomized number's beside the simulated true mean)
            assert q["summary"]["mean"] > 0
            if q["randomized"]:
                assert 0 < q["summary"]["simulated_mean"] < 30
            continue
        assert [c["simulated_truth"] for c in q["categories"]] == coded[q["key"]]
    rows = [r for r in _csv(_get_text(signed_in, f"/surveys/{DEMO_SLUG}/estimates.csv")) if r["option_label"] != "mean"]
    assert [float(r["simulated_truth"]) for r in rows] == [t for key in coded for t in coded[key]]
    book = signed_in.get(f"/surveys/{DEMO_SLUG}/codebook.json").get_json()
    assert {q["key"]: q["simulated_truth"] for q in book["questions"] if q["options"]} == coded


def test_the_demo_compares_its_estimates_with_the_shares_of_its_own_respondents(app):
    """Not the rates the respondents were drawn from: those are a population's, and a reader checks
    the intervals against the one truth the page shows."""
    from survey.domain.surveys.demo import DEMO_SPEC, create_demo

    with app.app_context():
        survey = create_demo(db.session)  # the demo as `make run` loads it: 3,000 respondents, its seed
        results = {r.question.key: r for r in survey_results(db.session, survey)}
        drawn_from = {q["key"]: q.get("simulated_truth") for q in DEMO_SPEC["questions"]}
        for key, result in results.items():
            shown = np.array(result.question.simulated_truth)
            assert shown.sum() == pytest.approx(1.0)
            assert np.allclose(shown * 3000, np.round(shown * 3000))  # shares of 3,000 people
            assert shown.tolist() != drawn_from[key]
            if not result.randomized:  # asked directly: the report is the truth
                assert shown.tolist() == (result.counts / result.n).tolist()


def test_infinite_epsilon_is_shown_and_exported_explicitly(app, signed_in):
    spec = {
        "title": "One-sided",
        "slug": "one-sided",
        "questions": [
            {
                "key": "theft",
                "kind": "yes_no",
                "text": "Ever stolen?",
                "privacy": {
                    "design": "coin_flip",
                    "truth_probability": 0.5,
                    "yes_probability": 1.0,
                    "allow_one_sided": True,
                },
            }
        ],
    }
    with app.app_context():
        create_survey_from_spec(db.session, spec, owner=db.session.scalar(select(User).where(User.username == "alice")))
        db.session.commit()
    for answers in ({"theft": 0}, {"theft": 0}, {"theft": 1}):
        assert signed_in.post("/api/surveys/one-sided/responses", json={"answers": answers}).status_code == 201
    page = _get_text(signed_in, "/surveys/one-sided/results")
    assert "<dt>ε</dt><dd>∞</dd>" in page and "ε is infinite" in page
    document = signed_in.get("/api/surveys/one-sided/estimates").get_json()
    assert document["total_epsilon"] is None and document["total_epsilon_infinite"] is True
    assert document["questions"][0]["epsilon_infinite"] is True
    rows = _csv(_get_text(signed_in, "/surveys/one-sided/estimates.csv"))
    assert {r["epsilon"] for r in rows} == {"inf"}
    book = signed_in.get("/surveys/one-sided/codebook.json").get_json()
    assert book["total_epsilon_infinite"] is True and book["questions"][0]["design"]["epsilon_infinite"] is True


def test_the_json_download_is_an_attachment_and_the_api_is_not(signed_in, answered):
    downloaded = signed_in.get(f"/api/surveys/{answered}/estimates?download=1")
    assert downloaded.headers["Content-Disposition"] == f'attachment; filename="{answered}-estimates.json"'
    assert "Content-Disposition" not in signed_in.get(f"/api/surveys/{answered}/estimates").headers
    assert downloaded.get_json() == signed_in.get(f"/api/surveys/{answered}/estimates").get_json()


def test_few_answers_are_said_to_mean_little(signed_in, small_survey):
    """Four answers: the page says plainly that the numbers mean little, from the intervals' widths;
    with forty it does not, where the intervals are narrower than ±25 points."""
    for answers in SUBMISSIONS[:4]:
        assert signed_in.post(f"/api/surveys/{small_survey}/responses", json={"answers": answers}).status_code == 201
    page = _get_text(signed_in, f"/surveys/{small_survey}/results")
    assert page.count('class="warning small-n"') == len(KEYS)
    assert "Only 4 answers so far: too few for these numbers to mean much." in page
    for answers in SUBMISSIONS[4:]:
        signed_in.post(f"/api/surveys/{small_survey}/responses", json={"answers": answers})
    page = _get_text(signed_in, f"/surveys/{small_survey}/results")
    widest = {}
    for result in survey_results_for(signed_in.application, small_survey):
        low, high = result.estimate.ci()
        widest[result.question.key] = float(((high - low) / 2).max())
    assert page.count('class="warning small-n"') == sum(w > 0.25 for w in widest.values())


def survey_results_for(app, slug):
    with app.app_context():
        return survey_results(db.session, db.session.scalar(select(Survey).where(Survey.slug == slug)))
