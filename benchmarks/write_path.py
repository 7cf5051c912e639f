"""Why the PostgreSQL submission statement is sent on the driver's cursor: the same generated
statement (survey/domain/responses/writes.py), sent the app's way and through SQLAlchemy Core, one process.

The statement is generated from the declaration as SQLAlchemy Core either way; the question is only
how it is sent. The app compiles it once and sends the text on a pooled psycopg connection in
autocommit (``autocommit_cursor``); the alternative is ``connection.execute(statement, params)`` on
an engine in AUTOCOMMIT, which works out the statement's cache key, looks up its compiled form and
processes each parameter on every submission. Both are timed in interleaved blocks, so that they meet
the same machine load; the ratio is the result.

Run ``python benchmarks/write_path.py --postgresql postgresql://postgres@127.0.0.1:5432/test
--markdown benchmarks/write_path.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scratch import migrated_app, scratch_postgresql
from survey.domain.models import Survey
from survey.domain.responses import writes
from survey.domain.responses.submissions import autocommit_cursor, submission_form
from survey.domain.responses.tallies import tally_mismatches
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

QUESTIONS = [
    *(
        {"key": f"y{i}", "kind": "yes_no", "text": f"Q{i}?", "privacy": {"design": "warner", "p": 0.75}}
        for i in range(8)
    ),
    {"key": "age", "kind": "direct", "text": "Age group?", "options": ["young", "old"]},
    {"key": "n", "kind": "number", "text": "How many?", "minimum": 0, "maximum": 99},
]


def measure(url: str, blocks: int, per_block: int) -> dict[str, list[float]]:
    app = migrated_app(url)
    with app.app_context():
        create_survey_from_spec(db.session, {"title": "Open", "slug": "open", "questions": QUESTIONS})
        db.session.commit()
        form = submission_form(db.session, "open")
        db.session.rollback()
        engine = db.engine
        autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        compiled = writes.postgresql_submission(False)
        statement = writes.postgresql_submission_statement(False)

        def params() -> dict:
            values = {f.id: random.randrange(2) if f.options else random.randrange(100) for f in form.fields}
            given = {"survey_id": form.survey_id, "slug": form.slug, "access": "link"}
            given.update(day=dt.date.today(), shard=random.randrange(16))
            return writes.submission_params(values, form.feeds, "postgresql", **given)

        def driver() -> None:
            with autocommit_cursor(engine) as cursor:
                cursor.execute(compiled.sql, compiled.params(params()))
                assert cursor.fetchone() is not None

        def core() -> None:
            with autocommit.connect() as connection:
                assert connection.execute(statement, params()).first() is not None

        ways = {"driver cursor (the app)": driver, "SQLAlchemy Core": core}
        for way in ways.values():
            for _ in range(per_block // 2):  # warm up: pool, compiled cache, prepared statements
                way()
        times: dict[str, list[float]] = {name: [] for name in ways}
        cpu: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(blocks):
            for name, way in ways.items():
                start, used = time.perf_counter(), time.process_time()
                for _ in range(per_block):
                    way()
                times[name].append((time.perf_counter() - start) / per_block * 1000)
                cpu[name].append((time.process_time() - used) / per_block * 1000)
        survey = db.session.scalar(select(Survey))
        assert tally_mismatches(db.session, survey) == [], "the tallies disagree with the answers"
        engine.dispose()
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgresql", required=True, help="a PostgreSQL URL to create a scratch database on")
    parser.add_argument("--blocks", type=int, default=12)
    parser.add_argument("--per-block", type=int, default=100)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    with scratch_postgresql(args.postgresql, "write_bench") as url:
        times, cpu = measure(url, args.blocks, args.per_block)
    reference = times["driver cursor (the app)"]
    lines = [
        "# Sending the submission statement: the driver's cursor or SQLAlchemy Core",
        "",
        f"Python {platform.python_version()}, {platform.machine()}; {len(QUESTIONS)} questions; "
        f"{args.blocks} interleaved blocks of {args.per_block} submissions each way, one process, one "
        "connection at a time; medians per block, and the median (min–max) of the per-block ratio.",
        "",
        "| sent through | ms per submission | / driver cursor | this process's CPU ms per submission |",
        "|---|---:|---:|---:|",
    ]
    for way, block_times in times.items():
        ratios = [t / r for t, r in zip(block_times, reference, strict=True)]
        lines.append(
            f"| {way} | {statistics.median(block_times):.2f} | "
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | "
            f"{statistics.median(cpu[way]):.3f} |"
        )
    lines += [
        "",
        "Both send the same statement, generated from the declaration in survey/domain/responses/writes.py; the "
        "difference is SQLAlchemy's execution layer (cache key, compiled-cache lookup, parameter "
        "processing, result wrapping) on every submission.",
    ]
    out = "\n".join(lines) + "\n"
    print(out)
    if args.markdown:
        args.markdown.write_text(out)


if __name__ == "__main__":
    main()
