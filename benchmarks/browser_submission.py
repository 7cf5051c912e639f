"""What a respondent's browser submission costs the server, request by request.

The survey page sends its answers with fetch() as a form post (its session cookie, CSRF token and a
submission key), follows the 303 to the thank-you page inside that fetch (``Sec-Fetch-Dest: empty``)
to learn that the answers arrived, then opens the thank-you page, which shows what was sent. Each
request goes through the app's own request path (Flask's test client: no network, no server in the
figure) on a scratch PostgreSQL database, in interleaved blocks so that all of them meet the same
machine load; reported is the CPU of each (process time, median over the blocks).

The fetch is answered 204 with nothing made (survey/web/respond/views.py, ``thanks``); *the fetch
as before* is the thank-you page made without its list, which is what that fetch was sent until
2026-11-30 and what any request that is neither the fetch nor a document still gets.

Run ``python benchmarks/browser_submission.py --postgresql postgresql://postgres@127.0.0.1:5432/test
--markdown benchmarks/browser_submission.md`` (``make bench`` does).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scale import SPEC
from benchmarks.scratch import migrated_app, scratch_postgresql
from survey.domain.models import User
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

SLUG = "browser-submission"

#: The requests of one submission, in the order the browser sends them, and what each is called.
STEPS = {
    "post": "the form post (303)",
    "fetch": "the fetch of the redirect (204)",
    "fetch_before": "the fetch as before (the page made without its list)",
    "page": "the thank-you page, with what was sent",
}


def measure(url: str, blocks: int, per_block: int) -> dict[str, list[float]]:
    app = migrated_app(url, RATELIMIT_ENABLED=False, FOLD_SECONDS=0)
    with app.app_context():
        owner = User(username="owner")
        owner.set_password("owner-password")
        db.session.add(owner)
        survey = create_survey_from_spec(db.session, {**SPEC, "slug": SLUG}, owner=owner)
        db.session.commit()
        options = {q.key: len(q.options) for q in survey.questions}
    rng = np.random.default_rng(20261130)
    client = app.test_client()
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get(f"/s/{SLUG}").get_data(as_text=True))
    assert token is not None
    run = secrets.token_hex(6)
    sent = [0]
    thanks = f"/s/{SLUG}/thanks"

    def post() -> None:
        sent[0] += 1
        answers = {f"q_{key}": int(rng.integers(k)) for key, k in options.items()}
        data = {"csrf_token": token.group(1), "submission_key": f"{run}{sent[0]:020d}", **answers}
        assert client.post(f"/s/{SLUG}", data=data, headers={"Accept": "text/html"}).status_code == 303

    def fetch() -> None:
        response = client.get(thanks, headers={"Sec-Fetch-Dest": "empty"})
        assert response.status_code == 204 and not response.get_data()

    def fetch_before() -> None:
        response = client.get(thanks, headers={"Sec-Fetch-Dest": "iframe"})  # leaves the list, shows none
        assert response.status_code == 200 and b'id="what-was-sent"' not in response.get_data()

    def page() -> None:
        response = client.get(thanks, headers={"Sec-Fetch-Dest": "document"})
        assert response.status_code == 200 and b'id="what-was-sent"' in response.get_data()

    steps: dict[str, Callable[[], None]] = {
        "post": post,
        "fetch": fetch,
        "fetch_before": fetch_before,
        "page": page,
    }
    for _ in range(20):  # warm up: templates compiled, the pool filled
        for step in steps.values():
            step()
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(blocks):
        spent = dict.fromkeys(steps, 0.0)
        for _ in range(per_block):  # a submission's requests in the browser's order, each timed
            for name, step in steps.items():
                start = time.process_time()
                step()
                spent[name] += time.process_time() - start
        for name in steps:
            cpu[name].append(spent[name] / per_block)
    with app.app_context():
        db.engine.dispose()
    return cpu


def report(cpu: dict[str, list[float]], header: str) -> str:
    median = {name: statistics.median(values) for name, values in cpu.items()}
    now = median["post"] + median["fetch"] + median["page"]
    before = median["post"] + median["fetch_before"] + median["page"]
    lines = [
        "# A browser submission's requests",
        "",
        header,
        "",
        "| request | CPU | share of a submission |",
        "|---|---|---|",
    ]
    for name, label in STEPS.items():
        share = "" if name == "fetch_before" else f"{median[name] / now:.0%}"
        lines.append(f"| {label} | {median[name] * 1000:.2f} ms | {share} |")
    lines += [
        f"| **a submission** (post, fetch, page) | **{now * 1000:.2f} ms** | 100% |",
        f"| a submission as before | {before * 1000:.2f} ms | {before / now:.0%} |",
        "",
        f"Answering the fetch with 204 saves {(before - now) * 1000:.2f} ms of {before * 1000:.2f} ms"
        f" ({1 - now / before:.0%}) of a submission's CPU. What the 204 still costs is Flask's request"
        " (the session read, the hooks) and the survey's lookup, which keeps a slug that names no survey a 404.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgresql", default=os.environ.get("TEST_DATABASE_URL"), help="server URL")
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--per-block", type=int, default=40)
    args = parser.parse_args()
    if not args.postgresql:
        parser.error("a PostgreSQL server is needed: --postgresql or TEST_DATABASE_URL")
    with scratch_postgresql(args.postgresql, "browser_submission") as url:
        cpu = measure(url, args.blocks, args.per_block)
    header = (
        f"`python benchmarks/browser_submission.py` on {time.strftime('%Y-%m-%d')}, this {os.cpu_count()}-core"
        f" machine (Python {platform.python_version()}), PostgreSQL; the 10-question survey of"
        f" benchmarks/scale.py; {args.blocks} blocks of {args.per_block} submissions, each request of a"
        " submission timed in the browser's order, medians of the blocks. Absolute times are this machine's;"
        " the shares are the result."
    )
    text = report(cpu, header)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
