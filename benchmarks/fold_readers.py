"""What a reader pays for the submissions still listed for the fold, on PostgreSQL and SQLite.

A submission by link adds at once to the submission tally alone; the fold adds it to the answer, day
and pair tallies about a second later (survey.domain.responses.pending), and every read adds the
listed submissions' answers in the same statement (survey.domain.responses.writes.with_listed). So
a read costs the stored cells plus the listed submissions' answers: nothing more at rest, more under
load, when the list holds about a fold interval's submissions (a few hundred a second on one host).

Method: the scale benchmark's survey (ten randomized questions), 20,000 submissions stored through
the app's write and folded, then more stored and left listed: 0, 100, 500, 2,000 and 10,000. At each
size three reads, each the median of 30 calls: the results page's counts (``survey_counts``), the day
counts of every question (``questions_day_counts``, the timelines and the breakdown by week), and one
pair of questions (``pair_counts``, a breakdown or an association). Reported: each read's time and its
ratio to the same read with nothing listed, measured in the same run.

On PostgreSQL the list is analyzed once it is empty, after the fold of the 20,000: the statistics
autovacuum may leave on a list that is nearly empty at every moment, and the worst a reader can
meet (before migration 0026 they made a read of a pair with 1,000 listed take 3.3 s).

Run ``python benchmarks/fold_readers.py --postgresql postgresql://postgres@127.0.0.1:5432/test
--markdown benchmarks/fold_readers.md``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import select, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scale import SPEC
from benchmarks.scratch import migrated_app, scratch_postgresql
from survey.domain.models import Survey
from survey.domain.responses.pending import fold_all, listed
from survey.domain.responses.submissions import record_submission, submission_form
from survey.domain.responses.tallies import questions_day_counts, survey_counts, tally_mismatches
from survey.domain.results.analysis import pair_counts
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

SIZES = (0, 100, 500, 2_000, 10_000)
FOLDED = 20_000
CALLS = 30


def _median_ms(read) -> float:
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        read()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def measure(url: str) -> list[dict]:
    """The reads' times at each size of the list, on the database ``url``."""
    app = migrated_app(url, RATELIMIT_ENABLED=False)
    rng = np.random.default_rng(11)
    keys = [q["key"] for q in SPEC["questions"]]
    found = []
    with app.app_context():
        survey = create_survey_from_spec(db.session, SPEC)
        db.session.commit()
        options = [len(q.options) for q in survey.questions]
        form = submission_form(db.session, survey.slug)

        def store(n: int) -> None:
            for _ in range(n):
                answers = {k: int(rng.integers(k_options)) for k, k_options in zip(keys, options, strict=True)}
                record_submission(db.session, form, answers)

        store(FOLDED)
        fold_all(db.session)
        db.session.commit()
        if db.engine.dialect.name == "postgresql":
            # the list's statistics as autovacuum may leave them: taken at a moment it held nothing
            db.session.execute(text("ANALYZE pending_submissions"))
            db.session.commit()
        survey = db.session.scalar(select(Survey).where(Survey.slug == SPEC["slug"]))
        questions = list(survey.questions)
        first, second = questions[0], questions[1]
        reads = {
            "counts": lambda: survey_counts(db.session, survey),
            "days": lambda: questions_day_counts(db.session, questions),
            "pair": lambda: pair_counts(db.session, first, second),
        }
        have = 0
        for size in SIZES:
            store(size - have)
            have = size
            assert listed(db.session) == size
            row = {"listed": size, **{name: _median_ms(read) for name, read in reads.items()}}
            assert survey_counts(db.session, survey).submissions == FOLDED + size
            found.append(row)
            print(row, flush=True)
        assert tally_mismatches(db.session, survey) == []
        db.session.remove()
        db.engine.dispose()
    return found


def report(results: dict[str, list[dict]], minutes: float) -> str:
    lines = [
        "# What a reader pays for the submissions not yet folded",
        "",
        f"Produced by `benchmarks/fold_readers.py` in {minutes:.1f} min (Python {platform.python_version()}; "
        f"{FOLDED:,} submissions folded, then the listed ones; each figure the median of {CALLS} reads). The method "
        "is in the module's docstring; the ratio is to the same read with nothing listed, in the same run.",
        "",
    ]
    for backend, rows in results.items():
        floor = rows[0]
        lines += [
            f"## {backend}",
            "",
            "| listed | survey's counts | ÷ none listed | day counts, 10 questions | ÷ none listed | one pair"
            " | ÷ none listed |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            cells = [f"{row[k]:.2f} ms | {row[k] / floor[k]:.1f}×" for k in ("counts", "days", "pair")]
            lines.append(f"| {row['listed']:,} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgresql", required=True)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    results = {}
    with scratch_postgresql(args.postgresql, "fold_readers") as url:
        results["PostgreSQL"] = measure(url)
    with tempfile.TemporaryDirectory() as tmp:
        results["SQLite"] = measure(f"sqlite:///{Path(tmp) / 'readers.sqlite'}")
    text = report(results, (time.perf_counter() - started) / 60)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
