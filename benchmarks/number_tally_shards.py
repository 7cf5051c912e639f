"""What counting a randomized number's cells one row per report code costs a submission.

Since migration 0023 a randomized number's report code (inside its grid) names the shard its cells
are counted in, instead of the submission's random shard (survey.domain.responses.writes,
``_shard_of``): a reader then sums a row per code, not up to 16 (benchmarks/number_scale.md). The
submission's statement takes each answer's shard with its answers (worked out by ``code_shard``:
the same rule written in the statement's SQL, the kind looked up per row, cost 0.19–0.33 ms a
submission in this benchmark's first version), and its number's cells become fewer rows updated more
often. Here the statement the app sends (compiled once, on the driver's cursor, autocommit) is
timed with the rule and without it (the same declaration with every cell in the random shard), in
interleaved blocks, on a survey of two randomized yes/no questions, two questions asked directly (4
and 3 options) and a randomized number (hybrid, ε = 1), whose report codes are drawn uniformly from
its grid. Two states of the tallies: a new survey (the random shards mostly insert rows, the codes'
rows are soon updated), and a survey whose number has every cell in every shard already (as after
hundreds of thousands of submissions: both update), vacuumed.

Run ``python benchmarks/number_tally_shards.py --postgresql postgresql://postgres@127.0.0.1:5432/test
--markdown benchmarks/number_tally_shards.md``.
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

from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scratch import migrated_app, scratch_postgresql
from survey.domain.models import Survey
from survey.domain.responses import writes
from survey.domain.responses.submissions import autocommit_cursor, submission_form
from survey.domain.responses.tallies import tally_mismatches
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

QUESTIONS = [
    {"key": "y1", "kind": "yes_no", "text": "Q1?", "privacy": {"design": "warner", "p": 0.75}},
    {"key": "y2", "kind": "yes_no", "text": "Q2?", "privacy": {"design": "warner", "p": 0.75}},
    {"key": "region", "kind": "direct", "text": "Region?", "options": ["a", "b", "c", "d"]},
    {"key": "sector", "kind": "direct", "text": "Sector?", "options": ["a", "b", "c"]},
    {
        "key": "drinks",
        "kind": "rr_number",
        "text": "Drinks?",
        "minimum": 0,
        "maximum": 30,
        "privacy": {"design": "hybrid", "epsilon": 1},
    },
]
WAYS = ("random shard (before 0023)", "code-keyed (0023)")


def fill_every_cell(engine, ids: dict[str, int]) -> None:
    """Every cell of the number in every shard, as after very many submissions, then vacuumed."""
    with engine.begin() as conn:
        every = "generate_series(0, 2000) v, generate_series(0, 15) s"
        conn.execute(
            text(f"INSERT INTO answer_tallies (question_id, value, shard, count) SELECT :q, v, s, 1 FROM {every}"),
            {"q": ids["drinks"]},
        )
        conn.execute(
            text(
                "INSERT INTO day_tallies (question_id, value, day, shard, count) "
                f"SELECT :q, v, CURRENT_DATE, s, 1 FROM {every} ON CONFLICT DO NOTHING"
            ),
            {"q": ids["drinks"]},
        )
        for other, k in (("region", 4), ("sector", 3)):
            low, high = sorted((ids["drinks"], ids[other]))
            number_first = low == ids["drinks"]
            values = "v, :b, g" if number_first else "g, :b, v"
            conn.execute(
                text(
                    "INSERT INTO pair_tallies (question_id, value, other_id, other_value, shard, count) "
                    f"SELECT :a, {values}, s, 1 FROM {every}, generate_series(0, :k) g ON CONFLICT DO NOTHING"
                ),
                {"a": low, "b": high, "k": k - 1},
            )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE answer_tallies, day_tallies, pair_tallies"))


def measure(url: str, steady: bool, blocks: int, per_block: int) -> dict[str, list[float]]:
    app = migrated_app(url)
    with app.app_context():
        create_survey_from_spec(db.session, {"title": "Open", "slug": "open", "questions": QUESTIONS})
        db.session.commit()
        form = submission_form(db.session, "open")
        db.session.rollback()
        engine = db.engine
        ids = {f.key: f.id for f in form.fields}
        coded = writes.postgresql_submission(False)
        rule = writes._shard_of
        writes._shard_of = lambda keys, shard, one=False: shard
        try:
            random_shard = writes.postgresql_submission.__wrapped__(False)
        finally:
            writes._shard_of = rule
        if steady:
            fill_every_cell(engine, ids)

        def params() -> dict:
            values = {ids["drinks"]: random.randrange(2001), ids["region"]: random.randrange(4)}
            values.update({ids["sector"]: random.randrange(3), ids["y1"]: random.randrange(2)})
            values[ids["y2"]] = random.randrange(2)
            given = {"survey_id": form.survey_id, "slug": form.slug, "access": "link", "day": dt.date.today()}
            return writes.submission_params(values, form.feeds, "postgresql", shard=random.randrange(16), **given)

        def way(compiled):
            def send() -> None:
                with autocommit_cursor(engine) as cursor:
                    cursor.execute(compiled.sql, compiled.params(params()))
                    assert cursor.fetchone() is not None

            return send

        ways = dict(zip(WAYS, (way(random_shard), way(coded)), strict=True))
        for send in ways.values():
            for _ in range(50):  # warm up: the pool, psycopg's prepared statements
                send()
        times: dict[str, list[float]] = {name: [] for name in ways}
        for block in range(blocks):
            for name, send in ways.items() if block % 2 else reversed(ways.items()):
                start = time.perf_counter()
                for _ in range(per_block):
                    send()
                times[name].append((time.perf_counter() - start) / per_block * 1000)
        if not steady:
            survey = db.session.scalar(db.select(Survey))
            assert tally_mismatches(db.session, survey) == [], "the tallies disagree with the answers"
        engine.dispose()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgresql", required=True)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--per-block", type=int, default=200)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    random.seed(23)
    started = time.perf_counter()
    rows = []
    for steady, label in ((False, "a new survey"), (True, "every cell of the number already in every shard")):
        with scratch_postgresql(args.postgresql, "tally_shards") as url:
            times = measure(url, steady, args.blocks, args.per_block)
        before, after = (statistics.median(times[w]) for w in WAYS)
        change = f"{after - before:+.3f} ms ({after / before - 1:+.0%})"
        rows.append(f"| {label} | {before:.3f} ms | {after:.3f} ms | {change} |")
    minutes = (time.perf_counter() - started) / 60
    lines = [
        "# What counting a randomized number's cells one row per code costs a submission (PostgreSQL)",
        "",
        f"Produced by `benchmarks/number_tally_shards.py` in {minutes:.1f} min (Python {platform.python_version()}, "
        f"{args.blocks} interleaved blocks of {args.per_block} submissions per way and state; medians of the blocks' "
        "means). The method is in the module's docstring. What it buys is in `number_scale.md`.",
        "",
        "| tallies | random shard (before 0023) | code-keyed (0023) | difference |",
        "|---|---|---|---|",
        *rows,
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.markdown:
        args.markdown.write_text(report)


if __name__ == "__main__":
    main()
