"""Scale of a randomized number's results: the mean, the bins and the mean by group, read from the
running tallies of 10,000 to 1,000,000 submissions on PostgreSQL.

Written to ``number_scale.md`` beside this file. A survey of two questions (``drinks``: a randomized
number 0–30, hybrid ε = 1, bins at 1, 5 and 15; ``region``: asked directly, 4 options) on a scratch
PostgreSQL database the migrations create. At each size the tallies that many submissions leave
are written by COPY (answer tallies per code and shard, pair tallies per code, region and shard, the
submission tally): the same rows the writers would have added one submission at a time, since the
reads below touch nothing else (the answers table is not read by any of them). The codes are drawn
by the mechanism from true numbers (60% zeros, else uniform), each submission on a random shard.

Timed, medians of ``--repeats`` rounds, the steps interleaved in every round, each in a fresh
session with the survey already loaded (as the page has it):

- **floor (answers)**: the answer tallies' SELECT alone (``question_id, value, sum(count)`` of the
  survey, grouped), the least any result can cost;
- **mean**: the same read as the results page does it (``survey_counts``) and the mean with its
  betting interval and live interval (``summarize_reports`` without bins);
- **bins (cold)**: the same read and the four bins' shares with their profile-likelihood intervals,
  fitted afresh (the process's kept results dropped before the clock starts): a page's first read
  after a new report;
- **bins (kept)**: the same, read again with the tallies unchanged: the fit kept by
  ``survey.domain.results.kept.kept_bins`` (the results page's path) is looked up, not redone;
- **floor (pairs)**: the pair tallies' SELECT of the two questions alone;
- **breakdown (cold)**: ``compare_number`` (pair and answer tallies read, every group's mean and
  interval), nothing kept;
- **breakdown (kept)**: the same again, the tallies unchanged: read, and the groups' intervals
  looked up (kept by their counts).

Run ``python benchmarks/number_scale.py --markdown benchmarks/number_scale.md`` (needs
``TEST_DATABASE_URL`` or ``--postgresql``).
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.scratch import migrated_app, scratch_postgresql  # noqa: E402
from survey.domain.models import TALLY_SHARDS as SHARDS  # noqa: E402
from survey.domain.responses.writes import code_shard  # noqa: E402

SIZES = tuple(int(s) for s in os.environ.get("NUMBER_SCALE_SIZES", "10000,100000,1000000").split(","))
SPEC = {
    "title": "Number scale",
    "slug": "number-scale",
    "questions": [
        {
            "key": "drinks",
            "kind": "rr_number",
            "text": "Drinks last week?",
            "minimum": 0,
            "maximum": 30,
            "bins": [1, 5, 15],
            "privacy": {"design": "hybrid", "epsilon": 1},
        },
        {"key": "region", "kind": "direct", "text": "Region?", "options": ["north", "south", "east", "west"]},
    ],
}
TARGET_MS = 50.0
#: The same script's run of 2026-11-28 (its tallies vacuumed, as here) with the rule before migration
#: 0023, each cell counted in the submission's random shard.
BEFORE = (
    "Before migration 0023, when each cell of the number was counted in the submission's random shard (the "
    "same script on 2026-11-28, this machine quiet), the tallies at 1,000,000 submissions were 32,015 "
    "answer-tally rows and 119,757 pair rows, and mean 32.6 ms, bins cold 69.8 ms, bins kept 28.6 ms, "
    "breakdown cold 97.2 ms, breakdown kept 75.8 ms (floors 23.5 and 51.4 ms; flat: 2.09×, 0.80×, 2.50×, "
    "2.78×, 3.52×). What counting a code in the shard it names costs a submission: "
    "`number_tally_shards.md`."
)


def _cells(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``columns`` and how many times each occurs."""
    stacked = np.column_stack(columns)
    rows, counts = np.unique(stacked, axis=0, return_counts=True)
    return rows, counts


def _copy(cur, table: str, columns: str, rows: np.ndarray, counts: np.ndarray) -> None:
    buffer = io.StringIO()
    for row, n in zip(rows.tolist(), counts.tolist(), strict=True):
        buffer.write("\t".join(str(v) for v in row) + f"\t{n}\n")
    buffer.seek(0)
    with cur.copy(f"COPY {table} ({columns}, count) FROM STDIN") as copy:
        copy.write(buffer.read())


def load_tallies(url: str, survey_id: int, drinks_id: int, region_id: int, mechanism, n: int, seed: int) -> float:
    """Replace the survey's tallies by those of ``n`` simulated submissions; returns seconds."""
    import psycopg

    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    truth = np.where(rng.random(n) < 0.6, 0.0, rng.uniform(0, 30, n))
    region = rng.integers(0, 4, n)
    codes = mechanism.randomize(truth + 2 * region, rng)
    random_shard = rng.integers(0, SHARDS, n)
    # as the app counts them (survey.domain.responses.writes.code_shard): a report code inside the
    # grid names its shard; the grid's ends, and the region's answers, go to the submission's own
    number_shard = np.fromiter(
        (code_shard(code, True, shard) for code, shard in zip(codes.tolist(), random_shard.tolist(), strict=True)),
        dtype=np.int64,
        count=n,
    )
    shard = random_shard
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn, conn.cursor() as cur:
        for table in ("answer_tallies", "pair_tallies"):
            cur.execute(f"DELETE FROM {table} WHERE question_id IN (%s, %s)", (drinks_id, region_id))
        cur.execute("DELETE FROM submission_tallies WHERE survey_id = %s", (survey_id,))
        rows, counts = _cells([np.full(n, drinks_id), codes, number_shard])
        _copy(cur, "answer_tallies", "question_id, value, shard", rows, counts)
        rows, counts = _cells([np.full(n, region_id), region, shard])
        _copy(cur, "answer_tallies", "question_id, value, shard", rows, counts)
        rows, counts = _cells([np.full(n, drinks_id), codes, np.full(n, region_id), region, number_shard])
        _copy(cur, "pair_tallies", "question_id, value, other_id, other_value, shard", rows, counts)
        rows, counts = _cells([np.full(n, survey_id), shard])
        _copy(cur, "submission_tallies", "survey_id, shard", rows, counts)
        conn.commit()
        # the rows the DELETE above left dead are vacuumed away, as autovacuum does on a live
        # server: the reads then find the tallies as a running survey has them
        conn.autocommit = True
        cur.execute("VACUUM ANALYZE answer_tallies, pair_tallies, submission_tallies")
    return time.perf_counter() - started


def measure(app, survey_id: int, repeats: int) -> dict[str, float]:
    from sqlalchemy import text

    from survey.domain.models import Survey
    from survey.domain.responses.tallies import survey_counts
    from survey.domain.results.kept import forget, kept_bins
    from survey.domain.results.number_analysis import compare_number
    from survey.domain.results.randomized_numbers import summarize_reports
    from survey.platform.extensions import db

    with app.app_context():
        survey = db.session.get(Survey, survey_id)
        drinks, region = survey.questions
        ids = (drinks.id, region.id)
        db.session.expunge_all()

    answers_sql = text(
        "SELECT t.question_id, t.value, sum(t.count) FROM answer_tallies t JOIN questions q ON q.id = t.question_id "
        "WHERE q.survey_id = :s GROUP BY t.question_id, t.value"
    )
    pairs_sql = text(
        "SELECT value, other_value, sum(count) FROM pair_tallies WHERE question_id = :a AND other_id = :b "
        "GROUP BY value, other_value"
    )

    def floor_answers(s):
        db.session.execute(answers_sql, {"s": s.id}).all()

    def mean(s):
        q = s.questions[0]
        counts = survey_counts(db.session, s).numbers[q.id]
        summary = summarize_reports(_without_bins(q), counts, mechanism=q.mechanism())
        assert summary.interval is not None and summary.live is not None

    def bins(s):
        q = s.questions[0]
        counts = survey_counts(db.session, s).numbers[q.id]
        shares = kept_bins(q.mechanism(), {c: n for c, n in counts.items() if n > 0}, q.bins, 0.95)
        assert abs(sum(shares.shares) - 1) < 1e-9

    def floor_pairs(s):
        db.session.execute(pairs_sql, {"a": ids[0], "b": ids[1]}).all()

    def breakdown(s):
        compare_number(db.session, s, "drinks", "region").to_dict()

    steps = {"floor_answers": floor_answers, "mean": mean, "bins": bins, "bins_kept": bins}
    steps.update(floor_pairs=floor_pairs, breakdown=breakdown, breakdown_kept=breakdown)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(repeats + 1):
        for name, step in steps.items():
            with app.app_context():
                s = db.session.get(Survey, survey_id)
                _ = [q.design for q in s.questions]  # the survey as the page has it, loaded
                if name in ("bins", "breakdown"):
                    forget()  # cold: nothing kept (the next step, its kept twin, finds what this one kept)
                started = time.perf_counter()
                step(s)
                elapsed = time.perf_counter() - started
                db.session.remove()
            if round_:  # the first round warms up
                times[name].append(elapsed)
    return {name: statistics.median(values) * 1000 for name, values in times.items()}


class _without_bins:
    """The question as ``summarize_reports`` reads it, with no bins (the mean alone)."""

    def __init__(self, question) -> None:
        self._question = question

    def __getattr__(self, name):
        return None if name == "bins" else getattr(self._question, name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgresql", default=os.environ.get("TEST_DATABASE_URL", ""))
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    if not args.postgresql:
        sys.exit("needs --postgresql or TEST_DATABASE_URL")
    from survey.domain.surveys.specs import create_survey_from_spec
    from survey.platform.extensions import db

    started = time.perf_counter()
    results = []
    with scratch_postgresql(args.postgresql, "number_scale") as url:
        app = migrated_app(url, RATELIMIT_ENABLED=False)
        with app.app_context():
            survey = create_survey_from_spec(db.session, SPEC)
            db.session.commit()
            survey_id = survey.id
            drinks, region = survey.questions
            ids, mechanism = (drinks.id, region.id), drinks.mechanism()
            db.session.remove()
        for i, n in enumerate(SIZES):
            load_s = load_tallies(url, survey_id, *ids, mechanism, n, seed=100 + i)
            with app.app_context():
                from sqlalchemy import text

                rows = db.session.execute(
                    text("SELECT count(*) FROM answer_tallies WHERE question_id = :q"), {"q": ids[0]}
                ).scalar()
                pair_rows = db.session.execute(
                    text("SELECT count(*) FROM pair_tallies WHERE question_id = :q"), {"q": ids[0]}
                ).scalar()
                db.session.remove()
            results.append(
                {
                    "n": n,
                    "load_s": load_s,
                    "rows": rows,
                    "pair_rows": pair_rows,
                    **measure(app, survey_id, args.repeats),
                }
            )
        with app.app_context():
            db.session.remove()
            db.engine.dispose()
    seconds = time.perf_counter() - started
    largest = results[-1]
    timed = ("mean", "bins", "bins_kept", "breakdown", "breakdown_kept")
    names = {
        "mean": "mean",
        "bins": "bins cold",
        "bins_kept": "bins kept",
        "breakdown": "breakdown cold",
        "breakdown_kept": "breakdown kept",
    }
    growth = {name: largest[name] / results[0][name] for name in ("floor_answers", "floor_pairs", *timed)}
    steady = max(growth[name] for name in timed) < 1.5
    over = [names[name] for name in timed if largest[name] >= TARGET_MS]
    verdict = "yes" if not over else f"no ({', '.join(over)})"
    lines = [
        "# A randomized number's results from the tallies: 10,000 to 1,000,000 submissions (PostgreSQL)",
        "",
        f"Produced by `benchmarks/number_scale.py` in {seconds:.0f} s (Python {platform.python_version()}, "
        f"medians of {args.repeats} interleaved rounds, on a 2-core machine). The tallies are bulk-loaded "
        "as the app counts them and vacuumed.",
        "",
        "*Cold* is computed afresh (a page's first read after a new report); *kept* the same read again "
        "with the tallies unchanged: the tallies are read (that is how a kept result is known to be current) "
        "and the bins' fit or the groups' intervals, kept by the process under those counts, looked up.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        f"| mean, bins and breakdown (cold and kept) of {largest['n']:,} submissions each under "
        f"{TARGET_MS:.0f} ms | "
        + ", ".join(f"{names[name]} {largest[name]:.1f} ms" for name in timed)
        + f" | {verdict} |",
        f"| flat from {results[0]['n']:,} to {largest['n']:,}: time at the largest over the smallest | "
        + ", ".join(f"{names[name]} {growth[name]:.2f}×" for name in timed)
        + f" (their floors {growth['floor_answers']:.2f}× and {growth['floor_pairs']:.2f}×: the tallies grow "
        f"until every code has met every group) | {'yes' if steady else 'no'} |",
        "",
        BEFORE,
        "",
        "## Per size",
        "",
        "Times in milliseconds; the ratios are over the floor of the same tallies (the answer tallies' SELECT "
        "for the mean and the bins, the pair tallies' for the breakdown). *Rows*: the number's answer-tally "
        "rows and pair-tally rows (a row per code, and per group for a pair; the grid's two ends, where "
        "reports pile up, one per shard).",
        "",
        "| submissions | tally rows | pair rows | floor (answers) | mean | ratio | bins cold | ratio | bins kept "
        "| ratio | floor (pairs) | breakdown cold | ratio | breakdown kept | ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        f = r["floor_answers"]
        lines.append(
            f"| {r['n']:,} | {r['rows']:,} | {r['pair_rows']:,} | {f:.1f} | {r['mean']:.1f} | "
            f"{r['mean'] / f:.1f}× | {r['bins']:.1f} | {r['bins'] / f:.1f}× | {r['bins_kept']:.1f} | "
            f"{r['bins_kept'] / f:.1f}× | {r['floor_pairs']:.1f} | {r['breakdown']:.1f} | "
            f"{r['breakdown'] / r['floor_pairs']:.1f}× | {r['breakdown_kept']:.1f} | "
            f"{r['breakdown_kept'] / r['floor_pairs']:.1f}× |"
        )
    text_out = "\n".join(lines) + "\n"
    if args.markdown:
        args.markdown.write_text(text_out)
    print(text_out)


if __name__ == "__main__":
    main()
