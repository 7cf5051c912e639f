"""What holding coded submissions costs: submissions per second by code and by open link, one run.

A submission admitted by an invitation code is held and released with nine others in one shuffled
transaction (survey/domain/responses/mixing.py); one to an open link is written at once (one statement on
PostgreSQL). This benchmark sends the same answers both ways through the app's own request path
(Flask's test client, so no network and no HTTP server in the figure), in alternating rounds so
that both meet the same machine load, and prints the ratio. Absolute figures are this machine's;
the ratio is the result.

Run ``python benchmarks/held_ingest.py --postgresql postgresql://postgres@127.0.0.1:5432/test
--markdown benchmarks/held_ingest.md`` (``make bench`` does); without ``--postgresql`` it measures
SQLite only.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scratch import migrated_app, scratch_postgresql
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

QUESTIONS = [
    {"key": "drugs", "kind": "yes_no", "text": "Drugs?", "privacy": {"design": "warner", "p": 0.75}},
    {
        "key": "often",
        "kind": "choice",
        "text": "How often?",
        "options": ["never", "sometimes", "often", "always"],
        "privacy": {"design": "grr", "epsilon": 1.0},
    },
    {"key": "age", "kind": "direct", "text": "Age group?", "options": ["young", "old"]},
]
ANSWERS = {"drugs": 1, "often": 2, "age": 0}


def measure(app, rounds: int, per_round: int) -> tuple[list[float], list[float]]:
    with app.app_context():
        create_survey_from_spec(db.session, {"title": "Open", "slug": "open", "questions": QUESTIONS})
        coded = create_survey_from_spec(
            db.session, {"title": "Coded", "slug": "coded", "access": "invitation", "questions": QUESTIONS}
        )
        db.session.flush()
        codes = generate_codes(db.session, coded, rounds * per_round + 10)
        db.session.commit()
    client = app.test_client()
    rates: dict[str, list[float]] = {"open": [], "coded": []}
    used = 0
    for _ in range(rounds):
        for slug in ("open", "coded"):
            start = time.perf_counter()
            for _ in range(per_round):
                body = {"answers": ANSWERS}
                if slug == "coded":
                    body["invitation"] = codes[used]
                    used += 1
                response = client.post(f"/api/surveys/{slug}/responses", json=body)
                assert response.status_code == 201, response.get_data(as_text=True)
            rates[slug].append(per_round / (time.perf_counter() - start))
    return rates["open"], rates["coded"]


def row(name: str, open_rates: list[float], coded_rates: list[float]) -> str:
    ratios = [c / o for o, c in zip(open_rates, coded_rates, strict=True)]
    return (
        f"| {name} | {statistics.median(open_rates):,.0f} | {statistics.median(coded_rates):,.0f} | "
        f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgresql", help="a PostgreSQL URL to create a scratch database on")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--per-round", type=int, default=200)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    lines = [
        "# What holding coded submissions costs",
        "",
        f"Python {platform.python_version()}, {platform.machine()}; {args.rounds} alternating rounds of "
        f"{args.per_round} submissions each way through Flask's test client; medians per round, and the "
        "median (min–max) of the per-round ratio coded / open.",
        "",
        "| database | open link, submissions/s | by code, submissions/s | coded / open |",
        "|---|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as folder:
        open_rates, coded_rates = measure(
            migrated_app(f"sqlite:///{folder}/bench.sqlite", RATELIMIT_ENABLED=False), args.rounds, args.per_round
        )
        lines.append(row("SQLite", open_rates, coded_rates))
    if args.postgresql:
        with scratch_postgresql(args.postgresql, "held_bench") as url:
            app = migrated_app(url, RATELIMIT_ENABLED=False)
            open_rates, coded_rates = measure(app, args.rounds, args.per_round)
            lines.append(row("PostgreSQL", open_rates, coded_rates))
            with app.app_context():
                db.engine.dispose()
    lines += [
        "",
        "A coded submission costs its claim, its held row and its share of a release of ten (delete ten "
        "held rows, insert ten submissions and their answers in a shuffled order, add the batch to the "
        "tallies); an open one is a single statement on PostgreSQL.",
    ]
    text_out = "\n".join(lines) + "\n"
    print(text_out)
    if args.markdown:
        args.markdown.write_text(text_out)


if __name__ == "__main__":
    main()
