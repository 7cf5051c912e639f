"""Scale: estimates, exports, analysis and ingest from 10,000 to 1,000,000 submissions, PostgreSQL and SQLite.

Four measurements, each on databases of its own that the migrations create:

* **Estimation.** A 10-question survey (five yes/no and five 5-option questions, all GRR, ε from
  0.5 to 3) is filled by bulk insert (COPY on PostgreSQL, executemany on SQLite) to 10,000, then
  100,000, then 1,000,000 submissions, and its running tallies are rebuilt from the rows (the
  one GROUP BY a bulk load needs). At each size, in a fresh process: the time to compute every
  estimate (``survey_results``: read the tallies, debias, intervals), to serve the estimates JSON
  through the app, and the peak memory of the estimate step (growth of the process's resident
  high-water mark, and Python's own peak by tracemalloc). Beside it: a full GROUP BY recount (what
  a request would cost without tallies) and multi-freq-ldpy's GRR aggregation
  (``GRR_Aggregator_MI``) of the very same reports, held in memory as numpy arrays.
* **Export.** The microdata CSV streamed through the app at each size: time, bytes, and the
  growth of resident memory.
* **Ingest** (PostgreSQL). gunicorn with ``survey.platform.gunicorn_conf`` (threaded workers, access log on) and
  2 or 4 workers; wrk posts valid random 10-question submissions over loopback from a fixed number
  of connections (one per wrk thread, so that stopping at the deadline abandons no request), for a
  fixed time. Reported: submissions per second, p50 and p99 latency, errors, and a recount that
  every 201 is stored and the tallies equal a GROUP BY. Beside it, in the same run and interleaved
  with it, the ceiling: as many processes as workers inserting the same rows by plain SQL (one
  INSERT per row, one transaction per submission, psycopg), and the same processes sending the one
  statement our app sends (with the tallies, in autocommit), the floor of our own SQL.

* **Analysis** (PostgreSQL). A survey with direct covariates (``ANALYSIS_SPEC``) bulk-loaded to
  each size, a database each, every size measured in the same rounds: breakdowns and an association
  from the pair and day tallies; a regression on three covariates beside a naive peer reading the
  raw answers into numpy (:func:`peer_regression`, the same fit), interleaved; the results page
  through the app beside its floor, the one SELECT of the tallies, interleaved, with the statements
  one view sends and its size. Then the ingest cost of the regression's index
  (:func:`run_index_cost`): the app's statement with the indexes of ``answers`` before migration
  0016, after it, and both, interleaved.

Run with ``make bench``; the committed ``scale.md`` beside this file is its last output. Needs
``TEST_DATABASE_URL`` (or ``--postgresql``) for PostgreSQL, and ``wrk`` (Debian's package) for ingest.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import math
import multiprocessing
import os
import platform
import resource
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = (10_000, 100_000, 1_000_000)
EPSILONS = (0.5, 1.0, 1.5, 2.0, 3.0)
USER, PASSWORD = "bench", "bench-password-1"
#: The measuring processes sign in with a test client: no CSRF token to scrape, no rate limit.
CHILD_CONFIG = {"SECRET_KEY": "bench", "RATELIMIT_ENABLED": False, "WTF_CSRF_ENABLED": False}
SLUG = "scale-bench"
PLAIN_SLUG = "scale-plain-sql"
SPEC: dict[str, Any] = {
    "title": "Scale benchmark",
    "slug": SLUG,
    "questions": [
        {"key": f"yn{i}", "kind": "yes_no", "text": f"Yes/no question {i}?", "privacy": {"design": "grr", "epsilon": e}}
        for i, e in enumerate(EPSILONS, 1)
    ]
    + [
        {
            "key": f"ch{i}",
            "kind": "choice",
            "text": f"Choice question {i}?",
            "options": ["a", "b", "c", "d", "e"],
            "privacy": {"design": "grr", "epsilon": e},
        }
        for i, e in enumerate(EPSILONS, 1)
    ],
}
#: True shares the simulated respondents are drawn from (then randomized by each question's GRR).
TRUTHS = [
    [0.2, 0.8],
    [0.05, 0.95],
    [0.5, 0.5],
    [0.3, 0.7],
    [0.01, 0.99],
    [0.6, 0.2, 0.1, 0.07, 0.03],
    [0.2] * 5,
    [0.9, 0.04, 0.03, 0.02, 0.01],
    [0.4, 0.3, 0.2, 0.1, 0.0],
    [0.05, 0.05, 0.3, 0.3, 0.3],
]


#: The analysis part's survey: seven randomized questions and three asked directly (two with options,
#: one number), so that it has groups to break down by and covariates to regress on.
ANALYSIS_SLUG = "scale-analysis"
ANALYSIS_SPEC: dict[str, Any] = {
    "title": "Scale benchmark, analysis",
    "slug": ANALYSIS_SLUG,
    "questions": [
        {"key": f"y{i}", "kind": "yes_no", "text": f"Yes/no {i}?", "privacy": {"design": "grr", "epsilon": e}}
        for i, e in enumerate(EPSILONS, 1)
    ]
    + [
        {
            "key": f"c{i}",
            "kind": "choice",
            "text": f"Choice {i}?",
            "options": ["a", "b", "c", "d", "e"],
            "privacy": {"design": "grr", "epsilon": 1.0},
        }
        for i in (1, 2)
    ]
    + [
        {"key": "region", "kind": "direct", "text": "Region?", "options": ["north", "east", "south", "west"]},
        {"key": "sector", "kind": "direct", "text": "Sector?", "options": ["public", "private", "other"]},
        {"key": "age", "kind": "number", "text": "Age?", "minimum": 16, "maximum": 99},
    ],
}
ANALYSIS_DAYS = 56  # eight weeks of submissions


def simulate_analysis(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` respondents of ANALYSIS_SPEC (their stored values, n × 10) and their days."""
    from survey.privacy import GeneralizedRR

    region = rng.choice(4, size=n, p=[0.3, 0.3, 0.2, 0.2])
    sector = rng.choice(3, size=n, p=[0.4, 0.5, 0.1])
    age = rng.integers(16, 100, size=n)
    eta = -1.5 + 0.3 * (region == 1) - 0.2 * (sector == 2) - 0.02 * (age - 40)
    first = (rng.random(n) >= 1 / (1 + np.exp(-eta))).astype(np.int64)  # code 0 is "yes"
    second = np.where(first == 0, rng.random(n) >= 0.5, rng.random(n) >= 0.2).astype(np.int64)
    truths = [first, second] + [rng.choice(2, size=n, p=[t, 1 - t]) for t in (0.1, 0.3, 0.02)]
    truths += [rng.choice(5, size=n, p=[0.5, 0.2, 0.15, 0.1, 0.05]) for _ in range(2)]
    reports = np.empty((n, 10), dtype=np.int64)
    for j, (truth, eps) in enumerate(zip(truths, [*EPSILONS, 1.0, 1.0], strict=True)):
        reports[:, j] = GeneralizedRR(2 if j < 5 else 5, epsilon=eps).randomize(truth, rng)
    reports[:, 7], reports[:, 8], reports[:, 9] = region, sector, age
    return reports, rng.integers(0, ANALYSIS_DAYS, size=n)


def peer_regression(url: str, outcome_id: int, code: int, covariates: list[tuple[int, bool]], mechanism) -> Any:
    """The naive peer of a regression: every raw answer of the outcome and the covariates read into
    numpy, one row per submission, the patterns counted by numpy, and the same fit
    (:func:`survey.privacy.rr_logistic`) on them. ``covariates``: (question id, is a number) in
    order. Returns the fit."""
    import psycopg

    from survey.privacy import rr_logistic

    ids = [outcome_id, *(qid for qid, _ in covariates)]
    # every answer to these questions, as (submission, question, value): sent as one array per column
    # and question, which psycopg's binary loader reads in C (a row at a time costs it ~10 µs a row)
    query = (
        "SELECT question_id, array_agg(submission_id), array_agg(value) FROM answers"
        " WHERE question_id = ANY(%s) GROUP BY question_id"
    )
    parts = []
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        for question_id, submission_ids, values in conn.cursor(binary=True).execute(query, (ids,)):
            block = np.empty((len(values), 3), dtype=np.int64)
            block[:, 0], block[:, 1], block[:, 2] = submission_ids, question_id, values
            parts.append(block)
    raw = np.concatenate(parts)
    submissions, row = np.unique(raw[:, 0], return_inverse=True)
    order = np.argsort(ids)
    column = order[np.searchsorted(np.asarray(ids)[order], raw[:, 1])]
    wide = np.full((len(submissions), len(ids)), -1, dtype=np.int64)
    wide[row, column] = raw[:, 2]
    wide = wide[(wide >= 0).all(axis=1)]  # those who answered the outcome and every covariate
    # one row per (covariate pattern): respondents and how many reported the category
    covariate_values = wide[:, 1:]
    radix = covariate_values.max(axis=0) + 1  # each row's pattern as one number, then counted
    code_of = np.zeros(len(wide), dtype=np.int64)
    for j in range(covariate_values.shape[1]):
        code_of = code_of * radix[j] + covariate_values[:, j]
    codes, which = np.unique(code_of, return_inverse=True)
    patterns = np.empty((len(codes), covariate_values.shape[1]), dtype=np.int64)
    rest = codes.copy()
    for j in reversed(range(covariate_values.shape[1])):
        rest, patterns[:, j] = np.divmod(rest, radix[j])
    total = np.bincount(which, minlength=len(patterns)).astype(float)
    yes = np.bincount(which, weights=(wide[:, 0] == code), minlength=len(patterns))
    columns = []
    for j, (_, number) in enumerate(covariates):
        if number:
            columns.append(patterns[:, j].astype(float))
        else:
            columns += [(patterns[:, j] == c).astype(float) for c in np.unique(patterns[:, j])[1:]]
    X = np.column_stack(columns)
    n = len(patterns)
    return rr_logistic(
        mechanism,
        np.vstack([X, X]),
        np.concatenate([np.ones(n), np.zeros(n)]),
        np.concatenate([yes, total - yes]),
        category=code,
    )


def _analysis_operations(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the analysis part times on the survey of one database, as callables sharing one app (a
    breakdown by a direct question, by week, an association of two randomized questions, a regression
    on three covariates as the compare and regression pages compute them, loading the survey
    included; the naive peer of the regression, :func:`peer_regression`; the results page through the
    app and its floor, the one SELECT of the tallies it needs), each run once to warm up; and what
    those runs found (the counts, the fit, the statements of one view, the page's size)."""
    from sqlalchemy import event, select

    from survey import create_app
    from survey.domain.models import Survey
    from survey.domain.responses.tallies import counts_statement, question_kinds, question_mechanism
    from survey.domain.results import kept
    from survey.domain.results.analysis import compare, regression
    from survey.platform.extensions import db

    app = create_app(CHILD_CONFIG | {"SQLALCHEMY_DATABASE_URI": url})

    def in_context(fn):
        def once():
            with app.app_context():
                out = fn(db.session.scalar(select(Survey).where(Survey.slug == ANALYSIS_SLUG)))
                db.session.remove()
                return out

        return once

    covariate_keys = ["region", "sector", "age"]
    ops: dict[str, Any] = {
        "breakdown": in_context(lambda s: compare(db.session, s, "y1", "region").to_dict()),
        "week": in_context(lambda s: compare(db.session, s, "y1", "week").to_dict()),
        "association": in_context(lambda s: compare(db.session, s, "y1", "y2").to_dict()),
        "regression": in_context(lambda s: regression(db.session, s, "y1", covariate_keys).to_dict()),
    }

    def inputs(s: Survey) -> tuple:
        by_key = {q.key: q for q in s.questions}
        outcome = by_key["y1"]
        return outcome.id, [(by_key[k].id, by_key[k].is_number) for k in covariate_keys], question_mechanism(outcome)

    outcome_id, covariates, mechanism = in_context(inputs)()
    ops["regression_peer"] = lambda: peer_regression(url, outcome_id, 0, covariates, mechanism)

    client = app.test_client()
    assert client.post("/auth/login", data={"username": USER, "password": PASSWORD}).status_code == 302
    path = f"/surveys/{ANALYSIS_SLUG}/results"

    def page() -> bytes:
        response = client.get(path)
        assert response.status_code == 200
        return response.data

    def page_afresh() -> bytes:
        kept.forget()  # nothing kept from the last view: every timeline computed again
        return page()

    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == ANALYSIS_SLUG))
        statement = counts_statement(survey.id, question_kinds(survey), db.engine.dialect.name)
        engine = db.engine

    def floor() -> None:
        with app.app_context():
            db.session.execute(statement).all()
            db.session.remove()

    ops |= {"page": page, "page_afresh": page_afresh, "floor": floor}
    first = {name: op() for name, op in ops.items()}  # warm up, and what the runs find
    fit, theirs = first["regression"], first["regression_peer"]
    assert np.allclose([c["estimate"] for c in fit["coefficients"]], theirs.params, rtol=1e-6, atol=1e-9)
    statements: list[str] = []

    def count(conn, cursor, statement, *args) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    page()
    event.remove(engine, "before_cursor_execute", count)
    facts = {
        "breakdown_n": first["breakdown"]["total"]["n"],
        "weeks": len(first["week"]["groups"]),
        "association_n": int(sum(c["reported"] for c in first["association"]["cells"])),
        "regression_n": fit["n"],
        "regression_patterns": fit["n_patterns"],
        "age_coefficient": next(c["estimate"] for c in fit["coefficients"] if c["name"] == "age"),
        "page_statements": len(statements),
        "page_kb": len(first["page"]) / 1000,
    }
    return ops, facts


#: Rounds of each group of the analysis part's measurements; in a round every size runs each once.
ANALYSIS_ROUNDS = (
    (("breakdown", "week", "association"), 15),
    (("regression", "regression_peer"), 7),
    # afresh first: it forgets what every size kept, then keeps its own again for the page after it
    (("page_afresh", "page", "floor"), 15),
)


def measure_analysis(urls: list[str]) -> list[dict[str, Any]]:
    """Runs in a child process, on one database per size (``urls`` in the sizes' order): every
    measurement interleaved across the sizes, so that a slow minute of the machine falls on all of
    them alike and "flat from 10,000 to 1,000,000" compares times taken at the same moments (run one
    size after another, two runs of one night read the breakdown's spread as 1.18 and 1.54). Each round runs
    every size once, starting from the next size each round; within a size, the group's operations
    run one after the other (the regression beside its peer, the page beside its floor). Medians."""
    measured = [_analysis_operations(url) for url in urls]
    times: list[dict[str, list[float]]] = [{} for _ in urls]
    for names, rounds in ANALYSIS_ROUNDS:
        for r in range(rounds):
            for i in [(r + k) % len(urls) for k in range(len(urls))]:
                for name in names:
                    times[i].setdefault(name, []).append(_seconds(measured[i][0][name]))
    return [
        {f"{name}_s": statistics.median(runs) for name, runs in taken.items()} | facts
        for taken, (_, facts) in zip(times, measured, strict=True)
    ]


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_analysis(postgresql: str, workdir: Path, sizes: tuple[int, ...]) -> list[dict]:
    """A database of its own for each size, loaded from empty (the same seed each), then every size
    measured in one child process, interleaved (:func:`measure_analysis`)."""
    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        databases = []
        for size in sizes:
            database = Database("postgresql", postgresql, workdir, ANALYSIS_SPEC)
            stack.callback(database.drop)
            reports, days = simulate_analysis(size, np.random.default_rng(20261125))
            load_s = bulk_load(database, reports, days=days)
            rows.append({"size": size, "load_s": load_s, "tally_s": rebuild(database)})
            databases.append(database)
        measured_by_size = in_child("analysis", " ".join(d.url for d in databases))
        for row, measured in zip(rows, measured_by_size, strict=True):
            for key in ("breakdown_n", "association_n", "regression_n"):
                assert measured[key] == row["size"], (key, measured[key], row["size"])
            row.update(measured)
            print(json.dumps(row), flush=True)
    return rows


def analysis_report(rows: list[dict], index_cost: dict[str, list[float]] | None = None) -> tuple[list[str], list[str]]:
    """Target lines and the tables of the analysis part."""

    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    targets = []
    biggest = rows[-1]
    size = f"{biggest['size']:,}"
    for name, key in (("breakdown by a direct question", "breakdown_s"), ("association", "association_s")):
        slowest = max(r[key] for r in rows)
        spread = slowest / min(r[key] for r in rows)
        targets.append(
            f"| {name} of {size} submissions < 50 ms on PostgreSQL | {fmt_s(biggest[key])} |"
            f" {verdict(biggest[key] < 0.05)} |"
        )
        targets.append(
            f"| {name}: flat from {rows[0]['size']:,} to {size} (slowest ÷ fastest ≤ 1.5) | {spread:.2f} |"
            f" {verdict(spread <= 1.5)} |"
        )
    took = biggest["regression_s"]
    targets.append(f"| regression on 3 covariates, {size} submissions < 1 s | {fmt_s(took)} | {verdict(took < 1)} |")
    ratio = biggest["regression_peer_s"] / took
    targets.append(
        f"| regression on 3 covariates, {size} submissions: faster than the raw-row numpy peer"
        f" | {ratio:.1f}× ({fmt_s(biggest['regression_peer_s'])}) | {verdict(ratio > 1)} |"
    )
    worst = max(rows, key=lambda r: r["page_s"] / r["floor_s"])
    times = worst["page_s"] / worst["floor_s"]
    targets.append(
        f"| results page within 20× of the one tally SELECT it needs, {rows[0]['size']:,} to {size}"
        f" | {times:.1f}× at {worst['size']:,} | {verdict(times <= 20)} |"
    )
    spread = max(r["page_s"] for r in rows) / min(r["page_s"] for r in rows)
    targets.append(
        f"| results page: flat from {rows[0]['size']:,} to {size} (slowest ÷ fastest ≤ 1.5) | {spread:.2f} |"
        f" {verdict(spread <= 1.5)} |"
    )
    table = [
        "## Analysis (PostgreSQL)",
        "",
        "A 10-question survey (`ANALYSIS_SPEC`: five yes/no and two 5-option questions randomized by GRR, two"
        " questions asked directly with 4 and 3 options, a number question 16–99), bulk-loaded over eight weeks"
        " and its tallies rebuilt (answer, pair and day tallies: what `flask recount --fix` does), a database of"
        " its own for each size. Medians over 15 runs in one fresh process, each loading the survey as the page"
        " does, the sizes interleaved (every round runs each size once, the first size moving on each round), so"
        " that the sizes are timed at the same moments of the machine. *Breakdown*:"
        " `y1` by `region` (pair tallies). *By week*: `y1` by week of submission (day tallies). *Association*:"
        " `y1` with `y2` (pair tallies). *Regression*: `y1` on `region`, `sector` and `age` (a GROUP BY over the"
        " answers per covariate pattern, a merge join of index-only scans of `(question_id, submission_id, value)`,"
        " then Newton on the counts); *patterns* is the number of distinct (outcome, covariates) rows it fits on."
        " *Peer*: every raw answer of those four questions read into numpy (one array per question and column,"
        " psycopg's binary loader), one row per submission, the patterns counted by numpy and the same fit; its"
        " coefficients are checked equal to ours. Regression and peer are 7 runs each, interleaved.",
        "",
        "| submissions | bulk load | tally rebuild | breakdown | by week | association | regression | peer"
        " | peer ÷ ours | patterns | age coefficient (true −0.02) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        table.append(
            f"| {r['size']:,} | {fmt_s(r['load_s'])} | {fmt_s(r['tally_s'])} | {fmt_s(r['breakdown_s'])}"
            f" | {fmt_s(r['week_s'])} | {fmt_s(r['association_s'])} | {fmt_s(r['regression_s'])}"
            f" | {fmt_s(r['regression_peer_s'])} | {r['regression_peer_s'] / r['regression_s']:.1f}×"
            f" | {r['regression_patterns']:,} | {r['age_coefficient']:.4f} |"
        )
    table += [
        "",
        "### Results page",
        "",
        "`GET /surveys/<slug>/results` of the same survey through the app's test client, signed in, 15 runs of"
        " each interleaved with each other and with the other sizes: *page* as a researcher refreshing it sees"
        " it (the timelines kept from the view before, `survey/domain/results/kept.py`, since no submission"
        " came); *page afresh* with nothing kept (every timeline computed again, as after a submission);"
        " *tally read*, its floor: the one SELECT of the running tallies the page needs (`counts_statement`:"
        " sent and its rows read, the survey's id known)."
        " *Statements*: every SQL statement one view sends (counted by a SQLAlchemy event), signing in included.",
        "",
        "| submissions | page | page afresh | tally read | page ÷ tally read | afresh ÷ tally read | statements"
        " | HTML |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        table.append(
            f"| {r['size']:,} | {fmt_s(r['page_s'])} | {fmt_s(r['page_afresh_s'])} | {fmt_s(r['floor_s'])}"
            f" | {r['page_s'] / r['floor_s']:.1f}× | {r['page_afresh_s'] / r['floor_s']:.1f}×"
            f" | {r['page_statements']} | {r['page_kb']:.0f} kB |"
        )
    if index_cost:
        before, after = (statistics.median(v) for v in list(index_cost.values())[:2])
        targets.append(
            f"| ingest cost of the regression's index (0016): the app's statement, 2 processes"
            f" | {after:.0f}/s against {before:.0f}/s before ({after / before - 1:+.0%}) | |"
        )
        rounds = len(next(iter(index_cost.values())))
        table += [
            "",
            "### What the regression's index costs a submission",
            "",
            f"Submissions per second of the one statement the app sends (answers and every tally, autocommit),"
            f" from 2 processes, as in the ingest part below, with each layout of the indexes of `answers`;"
            f" {rounds} rounds, each running every layout, the order reversed every other round (the table grows"
            " as it goes).",
            "",
            "| indexes of `answers` besides its key and (submission, question) | "
            + " | ".join(f"round {i + 1}" for i in range(rounds))
            + " | median |",
            "|---|" + "---|" * (rounds + 1),
        ]
        for layout, rates in index_cost.items():
            table.append(
                f"| {layout} | " + " | ".join(f"{r:.0f}/s" for r in rates) + f" | {statistics.median(rates):.0f}/s |"
            )
    return targets, table


# -- databases -------------------------------------------------------------------------------------


class Database:
    """A database of its own for one part of the benchmark, migrated, holding the survey."""

    def __init__(self, backend: str, postgresql: str | None, workdir: Path, spec: dict[str, Any] | None = None) -> None:
        from benchmarks.scratch import scratch_postgresql

        spec = spec or SPEC

        self.backend = backend
        self._scratch = contextlib.ExitStack()
        if backend == "sqlite":
            self.url = f"sqlite:///{workdir / f'scale-{uuid.uuid4().hex[:6]}.sqlite'}"
        else:
            self.url = self._scratch.enter_context(scratch_postgresql(postgresql or "", "scale_bench"))
        app = self.app()
        from survey.domain.models import User
        from survey.domain.surveys.specs import create_survey_from_spec
        from survey.platform.extensions import db
        from survey.platform.schema import upgrade_database

        with app.app_context():
            upgrade_database()
            owner = User(username=USER)
            owner.set_password(PASSWORD)
            db.session.add(owner)
            survey = create_survey_from_spec(db.session, spec, owner=owner)
            # the same questions again, for the plain-SQL runs, whose rows keep no tallies
            plain = create_survey_from_spec(db.session, {**spec, "slug": PLAIN_SLUG}, owner=owner)
            db.session.commit()
            self.survey_id, self.plain_survey_id = survey.id, plain.id
            self.question_ids = [q.id for q in survey.questions]
            self.plain_question_ids = [q.id for q in plain.questions]
            self.options = [len(q.options) for q in survey.questions]
            db.engine.dispose()
        self.submissions = 0

    def app(self):
        from survey import create_app

        return create_app({"SQLALCHEMY_DATABASE_URI": self.url, "SECRET_KEY": "bench", "RATELIMIT_ENABLED": False})

    def psycopg_url(self) -> str:
        return self.url.replace("postgresql+psycopg://", "postgresql://")

    def drop(self) -> None:
        self._scratch.close()


def simulate_reports(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` respondents' reported codes (n × 10), each truth randomized by its question's GRR."""
    from survey.privacy import GeneralizedRR

    reports = np.empty((n, len(TRUTHS)), dtype=np.int64)
    for j, (truth, eps) in enumerate(zip(TRUTHS, EPSILONS * 2, strict=True)):
        true = rng.choice(len(truth), size=n, p=truth)
        reports[:, j] = GeneralizedRR(len(truth), epsilon=eps).randomize(true, rng)
    return reports


def bulk_load(database: Database, reports: np.ndarray, chunk: int = 100_000, days: np.ndarray | None = None) -> float:
    """Append ``reports`` as submissions with explicit ids; returns seconds (without the tallies).
    ``days``: each submission's day as a number of days after 2026-11-01 (all on that day if None)."""
    start = time.perf_counter()
    first = database.submissions + 1
    day = dt.date(2026, 11, 1)
    if days is None:
        days = np.zeros(len(reports), dtype=int)
    names = [(day + dt.timedelta(days=int(d))).isoformat() for d in range(int(days.max(initial=0)) + 1)]
    qids = np.asarray(database.question_ids)
    if database.backend == "postgresql":
        import psycopg

        with psycopg.connect(database.psycopg_url()) as conn, conn.cursor() as cur:
            for lo in range(0, len(reports), chunk):
                block = reports[lo : lo + chunk]
                ids = np.arange(first + lo, first + lo + len(block))
                on = days[lo : lo + chunk]
                with cur.copy("COPY submissions (id, survey_id, submitted_on) FROM STDIN") as copy:
                    copy.write(
                        "".join(f"{i}\t{database.survey_id}\t{names[d]}\n" for i, d in zip(ids, on, strict=True))
                    )
                rows = np.column_stack([np.repeat(ids, len(qids)), np.tile(qids, len(block)), block.ravel()])
                buffer = io.StringIO()
                np.savetxt(buffer, rows, fmt="%d", delimiter="\t")
                with cur.copy("COPY answers (submission_id, question_id, value) FROM STDIN") as copy:
                    copy.write(buffer.getvalue())
            cur.execute("SELECT setval('submissions_id_seq', (SELECT max(id) FROM submissions))")
            cur.execute("SELECT setval('answers_id_seq', (SELECT max(id) FROM answers))")
            conn.commit()
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE submissions")
            conn.execute("VACUUM ANALYZE answers")
    else:
        import sqlite3

        conn = sqlite3.connect(database.url.removeprefix("sqlite:///"))
        with conn:
            for lo in range(0, len(reports), chunk):
                block = reports[lo : lo + chunk]
                ids = np.arange(first + lo, first + lo + len(block))
                on = days[lo : lo + chunk]
                conn.executemany(
                    "INSERT INTO submissions (id, survey_id, submitted_on) VALUES (?, ?, ?)",
                    [(int(i), database.survey_id, names[d]) for i, d in zip(ids, on, strict=True)],
                )
                repeated, tiled = np.repeat(ids, len(qids)).tolist(), np.tile(qids, len(block)).tolist()
                rows = zip(repeated, tiled, block.ravel().tolist(), strict=True)
                conn.executemany("INSERT INTO answers (submission_id, question_id, value) VALUES (?, ?, ?)", rows)
        conn.execute("ANALYZE")
        conn.close()
    database.submissions += len(reports)
    return time.perf_counter() - start


def rebuild(database: Database) -> float:
    from survey.domain.models import Survey
    from survey.domain.responses.tallies import rebuild_tallies
    from survey.platform.extensions import db

    app = database.app()
    with app.app_context():
        start = time.perf_counter()
        rebuild_tallies(db.session, db.session.get(Survey, database.survey_id))
        db.session.commit()
        seconds = time.perf_counter() - start
        db.engine.dispose()
    return seconds


# -- measurements in a fresh process ---------------------------------------------------------------


def _rss_mb() -> float:
    """This process's resident memory now (not its high-water mark, which imports already set)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


class RssWatch:
    """The largest resident size seen at the samples taken, above the size at the start."""

    def __init__(self) -> None:
        self.start = self.high = _rss_mb()

    def sample(self) -> None:
        self.high = max(self.high, _rss_mb())

    @property
    def growth(self) -> float:
        return self.high - self.start


def _median_seconds(fn, repeats: int, watch: RssWatch | None = None) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if watch is not None:
            watch.sample()
    return statistics.median(times)


def measure_estimates(url: str) -> dict[str, Any]:
    """Runs in a child process: time and memory of computing and serving every estimate."""
    from sqlalchemy import select

    from survey import create_app
    from survey.domain.models import Survey
    from survey.domain.responses.tallies import recount, survey_results
    from survey.platform.extensions import db

    app = create_app(CHILD_CONFIG | {"SQLALCHEMY_DATABASE_URI": url})
    client = app.test_client()
    assert client.post("/auth/login", data={"username": USER, "password": PASSWORD}).status_code == 302

    def estimates() -> list:
        with app.app_context():
            survey = db.session.scalar(select(Survey).where(Survey.slug == SLUG))
            results = survey_results(db.session, survey)
            db.session.remove()
            return results

    def serve() -> dict:
        response = client.get(f"/api/surveys/{SLUG}/estimates")
        assert response.status_code == 200
        return response.json

    results = estimates()  # warm up: imports, connections, caches
    document = serve()
    watch = RssWatch()
    estimate_s = _median_seconds(estimates, 25, watch)
    serve_s = _median_seconds(serve, 25, watch)
    rss_growth = watch.growth
    tracemalloc.start()
    estimates()
    _, python_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    def full_recount() -> None:
        with app.app_context():
            recount(db.session, db.session.scalar(select(Survey).where(Survey.slug == SLUG)))
            db.session.remove()

    recount_s = _median_seconds(full_recount, 3)
    return {
        "estimate_s": estimate_s,
        "serve_s": serve_s,
        "estimate_rss_growth_mb": rss_growth,
        "estimate_python_peak_mb": python_peak / 2**20,
        "recount_s": recount_s,
        "submissions": document["survey"]["submissions"],
        "unbiased": [r.estimate.unbiased.tolist() for r in results],
        "counts": [r.counts.tolist() for r in results],
    }


def measure_export(url: str) -> dict[str, Any]:
    """Runs in a child process: stream the microdata CSV through the app, counting bytes and rows."""
    from survey import create_app

    app = create_app(CHILD_CONFIG | {"SQLALCHEMY_DATABASE_URI": url})
    client = app.test_client()
    assert client.post("/auth/login", data={"username": USER, "password": PASSWORD}).status_code == 302
    client.get(f"/surveys/{SLUG}/codebook.json")  # warm up
    watch = RssWatch()
    start = time.perf_counter()
    response = client.get(f"/surveys/{SLUG}/responses.csv", buffered=False)
    size = lines = 0
    for i, chunk in enumerate(response.response):
        size += len(chunk)
        lines += chunk.count(b"\n") if isinstance(chunk, bytes) else chunk.count("\n")
        if i % 50 == 0:
            watch.sample()
    response.close()
    watch.sample()
    return {"export_s": time.perf_counter() - start, "bytes": size, "rows": lines - 1, "rss_growth_mb": watch.growth}


def in_child(what: str, url: str) -> Any:
    """What :func:`main`'s ``--child`` measurement printed last, as JSON (``url``: the analysis
    part's several databases, separated by spaces)."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", what, "--url", url],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if out.returncode != 0:
        raise RuntimeError(f"child {what} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def peer_aggregation(reports: np.ndarray) -> tuple[float, float, list[np.ndarray]]:
    """multi-freq-ldpy's GRR aggregation of the same reports (in memory): seconds, MB, estimates."""
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI

    tracemalloc.start()
    start = time.perf_counter()
    out = [GRR_Aggregator_MI(reports[:, j], len(TRUTHS[j]), eps) for j, eps in enumerate(EPSILONS * 2)]
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, (peak + reports.nbytes) / 2**20, out


def clip_and_rescale(unbiased: list[float]) -> np.ndarray:
    clipped = np.clip(np.asarray(unbiased), 0, None)
    return clipped / clipped.sum()


def run_estimation(backend: str, postgresql: str | None, workdir: Path, sizes: tuple[int, ...]) -> list[dict]:
    database = Database(backend, postgresql, workdir)
    rng = np.random.default_rng(20261122)
    rows: list[dict] = []
    held = np.empty((0, len(TRUTHS)), dtype=np.int64)
    try:
        for size in sizes:
            new = simulate_reports(size - database.submissions, rng)
            held = np.concatenate([held, new])
            load_s = bulk_load(database, new)
            tally_s = rebuild(database)
            est = in_child("estimates", database.url)
            assert est["submissions"] == size, est["submissions"]
            for j, counts in enumerate(est["counts"]):  # the database holds exactly these reports
                assert counts == np.bincount(held[:, j], minlength=len(TRUTHS[j])).tolist()
            export = in_child("export", database.url)
            assert export["rows"] == size
            peer_s, peer_mb, peer = peer_aggregation(held)
            for ours, theirs in zip(est["unbiased"], peer, strict=True):
                assert np.allclose(clip_and_rescale(ours), theirs, atol=1e-12)
            rows.append(
                {
                    "backend": backend,
                    "size": size,
                    "load_s": load_s,
                    "tally_s": tally_s,
                    **{k: v for k, v in est.items() if k not in ("unbiased", "counts")},
                    "peer_s": peer_s,
                    "peer_mb": peer_mb,
                    "export_s": export["export_s"],
                    "export_mb": export["bytes"] / 2**20,
                    "export_rss_growth_mb": export["rss_growth_mb"],
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        database.drop()
    return rows


# -- ingest ----------------------------------------------------------------------------------------

WRK_SCRIPT = """
-- Generated by benchmarks/scale.py: POST valid random submissions; one connection per thread.
local bodies = {BODIES}
local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end
function init(args)
  stop_at = tonumber(args[1])
  n = id * 7919
  created = 0
  other = 0
end
function request()
  n = n + 1
  return wrk.format("POST", "{PATH}", {HEADERS}, bodies[(n % #bodies) + 1]{BODY_TAIL})
end
function response(status, headers, body)
  if status == {STORED} then created = created + 1 else other = other + 1 end
  if os.time() >= stop_at then wrk.thread:stop() end
end
function done(summary, latency, requests)
  local c, o = 0, 0
  for _, t in ipairs(threads) do c = c + t:get("created"); o = o + t:get("other") end
  local e = summary.errors
  io.write(string.format(
    'RESULT {"created": %d, "other": %d, "p50_ms": %.3f, "p99_ms": %.3f, ' ..
    '"connect": %d, "read": %d, "write": %d, "timeout": %d}\\n',
    c, o, latency:percentile(50) / 1000, latency:percentile(99) / 1000, e.connect, e.read, e.write, e.timeout))
end
"""


def wrk_script(database: Database, path: Path, rng: np.random.Generator, bodies: int = 500) -> None:
    keys = [q["key"] for q in SPEC["questions"]]
    texts = []
    for _ in range(bodies):
        answers = {key: int(rng.integers(k)) for key, k in zip(keys, database.options, strict=True)}
        texts.append(json.dumps(json.dumps({"answers": answers})))
    path.write_text(wrk_lua(texts, f"/api/surveys/{SLUG}/responses", '{["Content-Type"] = "application/json"}'))


def wrk_lua(bodies: list[str], url: str, headers: str, stored: int = 201, body_tail: str = "") -> str:
    """The load script: ``bodies`` (Lua string literals) posted in turn to ``url`` with ``headers`` (a
    Lua table), each followed by the Lua expression ``body_tail``; an answer of status ``stored``
    counts as a stored submission."""
    return (
        WRK_SCRIPT.replace("{BODIES}", "{" + ", ".join(bodies) + "}")
        .replace("{PATH}", url)
        .replace("{HEADERS}", headers)
        .replace("{STORED}", str(stored))
        .replace("{BODY_TAIL}", body_tail)
    )


def stored_submissions(database: Database) -> int:
    import psycopg

    with psycopg.connect(database.psycopg_url()) as conn:
        query = "SELECT count(*) FROM submissions WHERE survey_id = %s"
        return conn.execute(query, (database.survey_id,)).fetchone()[0]


def server_env(database: Database, port: int, workers: int) -> dict[str, str]:
    """The environment of a server of the app on ``database`` (gunicorn or another) for the ingest
    benchmarks: on ``port``, ``workers`` processes, the production entry point's defaults."""
    env = {
        **os.environ,
        "DATABASE_URL": database.url,
        "SECRET_KEY": secrets.token_hex(32),
        "BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(workers),
        # every request comes from 127.0.0.1: the limiter still runs, with room for the load, counted
        # in each worker's memory as when benchmarks/scale.md was measured (production would name Redis)
        "SUBMISSION_RATE_LIMIT": "100000000 per minute",
        "RATELIMIT_STORAGE_URL": "memory://",
    }
    env.pop("SURVEY_ENV", None)
    return env


def web_run(database: Database, workers: int, connections: int, seconds: float, script: Path, log: Path) -> dict:
    """gunicorn with ``workers`` workers, loaded by wrk for ``seconds``; the recount comes after."""
    port = free_port()
    env = server_env(database, port, workers)
    before = stored_submissions(database)
    with log.open("a") as out:
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "-c",
                "python:survey.platform.gunicorn_conf",
                "survey.platform.wsgi:app",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(port, server)
        stop_at = math.ceil(time.time()) + int(seconds)
        started = time.time()
        load = subprocess.Popen(
            [
                *("wrk", f"-t{connections}", f"-c{connections}", f"-d{int(seconds) + 30}s", "-s", str(script)),
                *(f"http://127.0.0.1:{port}", "--", str(stop_at)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        time.sleep(max(0.0, stop_at - time.time()) + 2.0)  # every thread has had its last answer
        load.send_signal(signal.SIGINT)
        output, _ = load.communicate(timeout=60)
        elapsed = stop_at - started
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"wrk printed no result:\n{output}")
    result = json.loads(lines[-1].removeprefix("RESULT "))
    stored = stored_submissions(database) - before
    errors = result["other"] + result["connect"] + result["read"] + result["write"] + result["timeout"]
    return {
        "workers": workers,
        "rate": result["created"] / elapsed,
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "acknowledged": result["created"],
        "stored": stored,
        "lost": max(0, result["created"] - stored),
        "errors": errors,
    }


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, server: subprocess.Popen) -> None:
    import http.client

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("gunicorn exited")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("gunicorn did not become healthy")


def _plain_inserts(
    url: str, survey_id: int, question_ids: list[int], options: list[int], mode: str, stop_at: float, out
) -> None:
    """One process of the ceiling: plain SQL, one transaction per submission, until ``stop_at``. In
    the *statement* mode, the app's statement, and the fold of the deferred tallies once a second, as the
    app's processes start it (survey.platform.folding), the last one after ``stop_at``: its cost is
    counted in the rate, and no later run inherits a list to fold."""
    import random

    import psycopg
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session
    from sqlalchemy.pool import NullPool

    from survey.domain.responses.pending import fold_all
    from survey.domain.responses.writes import Feeds, postgresql_submission, submission_params

    statement = postgresql_submission(False)
    feeds = {qid: Feeds(randomized=True, paired=True) for qid in question_ids}  # every question of SPEC is randomized
    day = dt.date.today()
    done = 0
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"), poolclass=NullPool)
    next_fold = time.time() + 1.0
    with psycopg.connect(url) as conn, Session(engine) as session:
        while time.time() < stop_at:
            if mode != "naive" and time.time() >= next_fold:
                fold_all(session)
                next_fold += 1.0
            values = [random.randrange(k) for k in options]
            if mode == "naive":
                with conn.transaction():
                    sid = conn.execute(
                        "INSERT INTO submissions (survey_id, submitted_on) VALUES (%s, %s) RETURNING id",
                        (survey_id, day),
                    ).fetchone()[0]
                    for qid, value in zip(question_ids, values, strict=True):
                        conn.execute(
                            "INSERT INTO answers (submission_id, question_id, value) VALUES (%s, %s, %s)",
                            (sid, qid, value),
                        )
            else:  # the statement the app sends, from a bare loop
                params = submission_params(
                    dict(zip(question_ids, values, strict=True)),
                    feeds,
                    "postgresql",
                    survey_id=survey_id,
                    slug=PLAIN_SLUG,
                    access="link",
                    day=day,
                    shard=random.randrange(16),
                )
                conn.autocommit = True  # as the app sends it: one statement, its own transaction
                assert conn.execute(statement.sql, statement.params(params)).fetchone() is not None
            done += 1
        if mode != "naive":
            fold_all(session)
    engine.dispose()
    out.put(done)


INSERT_SUBMISSION = "INSERT INTO submissions (survey_id, submitted_on) VALUES (%s, %s) RETURNING id"
INSERT_ANSWER = "INSERT INTO answers (submission_id, question_id, value) VALUES (%s, %s, %s)"


def ceiling_run(database: Database, processes: int, seconds: float, mode: str) -> dict:
    queue: multiprocessing.Queue = multiprocessing.Queue()
    started = time.time()
    stop_at = started + seconds
    procs = [
        multiprocessing.Process(
            target=_plain_inserts,
            args=(
                database.psycopg_url(),
                database.plain_survey_id,
                database.plain_question_ids,
                database.options,
                mode,
                stop_at,
                queue,
            ),
        )
        for _ in range(processes)
    ]
    for p in procs:
        p.start()
    total = sum(queue.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join()
    return {"processes": processes, "mode": mode, "rate": total / (time.time() - started)}


def run_ingest(postgresql: str, workdir: Path, seconds: float, rounds: int, connections: int) -> dict:
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk); `make bench` installs it")
    database = Database("postgresql", postgresql, workdir)
    script = workdir / "post.lua"
    wrk_script(database, script, np.random.default_rng(7))
    log = workdir / "gunicorn.log"
    runs: dict[int, dict[str, list[dict]]] = {}
    try:
        # not counted: one short run of each kind, so that no measured run meets a cold database
        ceiling_run(database, 2, 5, "naive")
        web_run(database, 2, connections, 5, script, log)
        ceiling_run(database, 2, 5, "statement")
        for workers in (2, 4):
            runs[workers] = {"web": [], "naive": [], "statement": []}
            for _ in range(rounds):  # interleaved, so that a slow minute of the machine hits both
                runs[workers]["naive"].append(ceiling_run(database, workers, seconds, "naive"))
                runs[workers]["web"].append(web_run(database, workers, connections, seconds, script, log))
                runs[workers]["statement"].append(ceiling_run(database, workers, seconds, "statement"))
                print(json.dumps({k: v[-1] for k, v in runs[workers].items()}), flush=True)
        app = database.app()
        from survey.domain.models import Survey
        from survey.domain.responses.tallies import tally_mismatches
        from survey.platform.extensions import db

        with app.app_context():
            mismatches = tally_mismatches(db.session, db.session.get(Survey, database.survey_id))
            db.engine.dispose()
        return {"runs": runs, "tally_mismatches": mismatches, "connections": connections, "seconds": seconds}
    finally:
        database.drop()


#: The indexes of ``answers`` (besides its key and its unique (submission, question)) before
#: migration 0016, after it, and both at once: the ingest cost of the regression's index.
INDEX_LAYOUTS = {
    "before 0016: (question, value)": ("ix_answers_question_value (question_id, value)",),
    "0016: (question, submission, value)": ("ix_answers_question_submission (question_id, submission_id, value)",),
    "both": (
        "ix_answers_question_value (question_id, value)",
        "ix_answers_question_submission (question_id, submission_id, value)",
    ),
}


def _set_indexes(database: Database, layout: str) -> None:
    import psycopg

    with psycopg.connect(database.psycopg_url(), autocommit=True) as conn:
        conn.execute("DROP INDEX IF EXISTS ix_answers_question_value")
        conn.execute("DROP INDEX IF EXISTS ix_answers_question_submission")
        for index in INDEX_LAYOUTS[layout]:
            conn.execute(f"CREATE INDEX {index.split()[0]} ON answers {index.split(' ', 1)[1]}")
        conn.execute("VACUUM ANALYZE answers")


def run_index_cost(postgresql: str, workdir: Path, seconds: float, rounds: int) -> dict[str, list[float]]:
    """Submissions per second of the statement the app sends (2 processes, as in the ingest part)
    with each of :data:`INDEX_LAYOUTS`, interleaved: each round runs every layout, the order
    reversed every other round, so that the table's growth and a busy moment of the machine fall on
    all of them alike."""
    database = Database("postgresql", postgresql, workdir)
    rates: dict[str, list[float]] = {layout: [] for layout in INDEX_LAYOUTS}
    try:
        ceiling_run(database, 2, 5, "statement")  # not counted: a warm database for the first layout
        for i in range(rounds):
            for layout in list(INDEX_LAYOUTS)[:: 1 if i % 2 == 0 else -1]:
                _set_indexes(database, layout)
                rates[layout].append(ceiling_run(database, 2, seconds, "statement")["rate"])
            print(json.dumps({k: v[-1] for k, v in rates.items()}), flush=True)
    finally:
        database.drop()
    return rates


# -- report ----------------------------------------------------------------------------------------


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _ingest_lines(ingest: dict | None) -> list[str]:
    lines: list[str] = []
    if ingest:
        lines += [
            "",
            "## Ingest (PostgreSQL)",
            "",
            f"{ingest['seconds']:.0f} s per run after an uncounted 5 s warm-up of each kind, {ingest['connections']}"
            " wrk connections, runs interleaved (plain SQL,"
            " web, our statement) and repeated; medians in the summary. *Plain SQL*: as many processes as workers,"
            " one INSERT per row (a submission and its 10 answers), one transaction per submission. *Our statement*:"
            " the same processes sending the single statement the app sends (answers and tallies), in"
            " autocommit as the app does. *Web*: gunicorn (`survey.platform.gunicorn_conf`: threaded workers,"
            " access log on) behind wrk; *stored* is counted in the database before and after the run.",
            "",
            "| workers | round | plain SQL /s | our statement /s | web /s | web ÷ plain | p50 | p99 | errors"
            " | acknowledged | stored | lost |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for workers, kinds in ingest["runs"].items():
            for i, (naive, web, stmt) in enumerate(
                zip(kinds["naive"], kinds["web"], kinds["statement"], strict=True), 1
            ):
                lines.append(
                    f"| {workers} | {i} | {naive['rate']:.0f} | {stmt['rate']:.0f} | {web['rate']:.0f}"
                    f" | {web['rate'] / naive['rate']:.0%}"
                    f" | {web['p50_ms']:.1f} ms | {web['p99_ms']:.1f} ms | {web['errors']} | {web['acknowledged']:,}"
                    f" | {web['stored']:,} | {web['lost']} |"
                )
            med = {k: statistics.median(r["rate"] for r in v) for k, v in kinds.items()}
            lines.append(
                f"| {workers} | median | {med['naive']:.0f} | {med['statement']:.0f} | {med['web']:.0f} |"
                f" {med['web'] / med['naive']:.0%} | {statistics.median(r['p50_ms'] for r in kinds['web']):.1f} ms"
                f" | {statistics.median(r['p99_ms'] for r in kinds['web']):.1f} ms | | | | |"
            )
    return lines


def report(
    estimation: list[dict],
    ingest: dict | None,
    header: str,
    analysis: list[dict] | None = None,
    index_cost: dict[str, list[float]] | None = None,
) -> str:
    lines = [header, ""]
    targets = ["## Targets", "", "| target | measured | |", "|---|---|---|"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    pg = [r for r in estimation if r["backend"] == "postgresql"]
    biggest = max((r for r in pg), key=lambda r: r["size"], default=None)
    if biggest is not None:
        size, took = f"{biggest['size']:,}", biggest["estimate_s"]
        targets.append(
            f"| all estimates of {size} submissions < 0.25 s on PostgreSQL | {fmt_s(took)} | {verdict(took < 0.25)} |"
        )
        ratio = biggest["peer_s"] / took
        fast = verdict(ratio >= 20)
        targets.append(f"| ≥ 20× faster than multi-freq-ldpy on the same reports ({size}) | {ratio:,.0f}× | {fast} |")
    for backend in ("postgresql", "sqlite"):
        rows = [r for r in estimation if r["backend"] == backend]
        if len(rows) > 1:
            spread = max(r["estimate_rss_growth_mb"] for r in rows) - min(r["estimate_rss_growth_mb"] for r in rows)
            py = max(r["estimate_python_peak_mb"] for r in rows) - min(r["estimate_python_peak_mb"] for r in rows)
            targets.append(
                f"| estimate-step memory flat within 20 MB, {rows[0]['size']:,} → {rows[-1]['size']:,} ({backend}) |"
                f" resident Δ {spread:.1f} MB, Python peak Δ {py:.2f} MB | {verdict(spread <= 20 and py <= 20)} |"
            )
    if ingest:
        for workers, kinds in ingest["runs"].items():
            web = statistics.median(r["rate"] for r in kinds["web"])
            naive = statistics.median(r["rate"] for r in kinds["naive"])
            errors = sum(r["errors"] for r in kinds["web"])
            lost = sum(r["lost"] for r in kinds["web"])
            clean = verdict(errors == 0 and lost == 0)
            targets.append(
                f"| ingest, {workers} workers: 0 errors and 0 lost | {errors} errors, {lost} lost | {clean} |"
            )
            targets.append(
                f"| ingest, {workers} workers: ≥ 60% of the plain-SQL ceiling |"
                f" {web:.0f}/s = {web / naive:.0%} of {naive:.0f}/s | {verdict(web >= 0.6 * naive)} |"
            )
            targets.append(
                f"| ingest, {workers} workers: aim 1,000 submissions/s | {web:.0f}/s | {verdict(web >= 1000)} |"
            )
        targets.append(
            f"| tallies equal a GROUP BY after all ingest runs | {ingest['tally_mismatches'] or 'equal'} |"
            f" {verdict(not ingest['tally_mismatches'])} |"
        )
    analysis_table: list[str] = []
    if analysis:
        more, analysis_table = analysis_report(analysis, index_cost)
        targets += more
    lines += [*targets, ""]
    if analysis_table:
        lines += [*analysis_table, ""]
    if not estimation:
        return "\n".join(lines + _ingest_lines(ingest)) + "\n"

    lines += [
        "## Estimation and export",
        "",
        "Times are medians (25 runs for estimates and JSON, 3 for the recount). *Estimates*: load the survey,"
        " read the tallies, debias and compute every interval of all 10 questions. *JSON*: the same through the"
        " app (`GET /api/surveys/<slug>/estimates`, signed in). *Recount*: the GROUP BY over every answer that"
        " the tallies spare each request. *Peer*: multi-freq-ldpy `GRR_Aggregator_MI` on the same reports held in"
        " memory (its MB include the reports). Memory of the estimate step: the largest resident size of the"
        " measuring process over the 50 timed runs, above its size before them, and tracemalloc's peak for"
        " one step. Export Δ resident: the same, sampled while the CSV streams.",
        "",
        "| backend | submissions | bulk load | tally rebuild | estimates | JSON | recount | peer | peer ÷ ours |"
        " estimate Δ resident | estimate Python peak | peer MB | export CSV | CSV size | export Δ resident |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in estimation:
        lines.append(
            f"| {r['backend']} | {r['size']:,} | {fmt_s(r['load_s'])} | {fmt_s(r['tally_s'])}"
            f" | {fmt_s(r['estimate_s'])} | {fmt_s(r['serve_s'])} | {fmt_s(r['recount_s'])} | {fmt_s(r['peer_s'])}"
            f" | {r['peer_s'] / r['estimate_s']:,.0f}×"
            f" | {r['estimate_rss_growth_mb']:.1f} MB | {r['estimate_python_peak_mb']:.2f} MB | {r['peer_mb']:.0f} MB"
            f" | {fmt_s(r['export_s'])} | {r['export_mb']:.1f} MB | {r['export_rss_growth_mb']:.1f} MB |"
        )
    lines += _ingest_lines(ingest)
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument(
        "--postgresql", default=os.environ.get("TEST_DATABASE_URL"), help="server URL (a database is created on it)"
    )
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--ingest-seconds", type=float, default=15.0)
    parser.add_argument("--ingest-rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8, help="wrk connections (one per thread)")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-estimation", action="store_true")
    parser.add_argument("--skip-analysis", action="store_true")
    parser.add_argument("--index-seconds", type=float, default=10.0, help="per run of the index-cost part")
    parser.add_argument("--index-rounds", type=int, default=3, help="rounds of the index-cost part (0: skip it)")
    parser.add_argument("--child", choices=("estimates", "export", "analysis"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure = {"estimates": measure_estimates, "export": measure_export, "analysis": measure_analysis}
        result = measure[args.child](args.url.split(" ") if args.child == "analysis" else args.url)
        print(json.dumps(result))
        return

    sizes = tuple(int(s) for s in args.sizes.split(","))
    backends = [b for b in args.backends.split(",") if b]
    if "postgresql" in backends and not args.postgresql:
        print("TEST_DATABASE_URL is not set: PostgreSQL parts skipped", file=sys.stderr)
        backends.remove("postgresql")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        estimation = []
        if not args.skip_estimation:
            for backend in backends:
                estimation += run_estimation(backend, args.postgresql, workdir, sizes)
        analysis = []
        index_cost = None
        if not args.skip_analysis and args.postgresql:
            analysis = run_analysis(args.postgresql, workdir, sizes)
            if args.index_rounds:
                index_cost = run_index_cost(args.postgresql, workdir, args.index_seconds, args.index_rounds)
        ingest = None
        if not args.skip_ingest and args.postgresql:
            ingest = run_ingest(args.postgresql, workdir, args.ingest_seconds, args.ingest_rounds, args.connections)
    minutes = (time.perf_counter() - started) / 60
    import psycopg
    import sqlalchemy

    header = (
        "# Scale benchmark\n\n"
        f"`python benchmarks/scale.py` ({dt.date.today().isoformat()}, Python {platform.python_version()},"
        f" SQLAlchemy {sqlalchemy.__version__}, psycopg {psycopg.__version__},"
        f" {os.cpu_count()} cores; {minutes:.1f} min). The method is in the module docstring."
    )
    text = report(estimation, ingest, header, analysis, index_cost)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
