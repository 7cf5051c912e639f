"""Servers other than the one we run, on the ingest benchmark's load: does the HTTP layer decide how
close a web submission comes to the plain-SQL ceiling?

benchmarks/scale_ingest.py measures our serving (gunicorn's threaded workers, its Python HTTP parser)
at 57–59% of the plain-SQL ceiling with 4 workers on 2 cores, against a target of 60%. This one
measures, on the same machinery (the survey of ten randomized questions, its wrk script, its plain
processes), in interleaved rounds so that a slow minute of this shared machine hits every arm alike:

* *gunicorn*: ``survey.platform.gunicorn_conf`` as production runs it (the pure-Python parser; a
  submission answered beneath Flask, survey/web/direct_submissions.py);
* *gunicorn, Flask path*: the same with ``DIRECT_SUBMISSIONS=0``, every submission answered by Flask's
  request handling (as before direct_submissions.py);
* *gunicorn, limits in Redis*: the same, its rate-limit counters in Redis (``RATELIMIT_STORAGE_URL``
  at ``TEST_REDIS_URL``, default redis://127.0.0.1:6379/0), as several workers or hosts run in
  production (docs/deploy.md): one round trip to Redis a submission, which the other arms count in
  each worker's memory;
* *gunicorn, through PgBouncer*: the same, its connections through PgBouncer in transaction mode
  (``DATABASE_TRANSACTION_POOLING=1``, JIT off on the database, 8 server connections for the workers'
  60), as docs/deploy.md says to run many hosts on one database: what the pooler's hop costs (its
  CPU is counted with the arm's);
* *gunicorn, page's form post*: the same server, loaded with what the survey page's script sends (a
  form post to ``/s/<slug>`` with the session cookie, its CSRF token and a fresh submission key,
  answered 303 to the thank-you page), which Flask answers: what a respondent in a browser costs;
* *gunicorn, C parser*: the same with gunicorn's optional C parser (``gunicorn_h1c``, picohttpparser;
  run only when it is installed: ``pip install gunicorn_h1c``, which needs a C compiler here);
* *granian*: granian's WSGI server (HTTP in Rust, the app in a pool of 4 blocking threads per worker;
  run only when installed: ``pip install granian``), the same app object and settings;
* *gunicorn, bare write*: our gunicorn and its settings serving, instead of the app, a bare WSGI
  callable that does only the write (benchmarks/bare_submission.py): the floor of the server and the
  statement, so that the gap between it and *gunicorn* is what the app's request handling costs.

Reported per round: submissions per second, web ÷ plain, and the CPU the serving processes spent per
acknowledged submission (the whole process tree, from /proc). Every acknowledged submission is
checked stored. Run ``python benchmarks/serving_alternatives.py --markdown
benchmarks/serving_alternatives.md`` (needs ``wrk``: ``make wrk``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.scale import (  # noqa: E402 - after the path above
    SLUG,
    SPEC,
    Database,
    ceiling_run,
    free_port,
    server_env,
    stored_submissions,
    wait_healthy,
    wrk_lua,
    wrk_script,
)
from benchmarks.scale_ingest import errors_of, load, named_cpu, set_auto_close, tree_cpu  # noqa: E402
from tests.databases import REDIS_URL  # noqa: E402

BIN = Path(sys.executable).parent
#: The arms: a name, the command line (``{port}``, ``{workers}``), the module it needs installed, the
#: WSGI application it serves, and what it adds to the environment.
APP = "survey.platform.wsgi:app"
ARMS: dict[str, tuple[list[str], str | None, str, dict[str, str]]] = {
    "gunicorn": (
        [str(BIN / "gunicorn"), "-c", "python:survey.platform.gunicorn_conf", "--http-parser", "python"],
        None,
        APP,
        {},
    ),
    "gunicorn, Flask path": (
        [str(BIN / "gunicorn"), "-c", "python:survey.platform.gunicorn_conf", "--http-parser", "python"],
        None,
        APP,
        {"DIRECT_SUBMISSIONS": "0"},
    ),
    "gunicorn, limits in Redis": (
        [str(BIN / "gunicorn"), "-c", "python:survey.platform.gunicorn_conf", "--http-parser", "python"],
        None,
        APP,
        {"RATELIMIT_STORAGE_URL": REDIS_URL, "RATELIMIT_KEY_PREFIX": "benchmark-serving"},
    ),
    "gunicorn, through PgBouncer": (
        [str(BIN / "gunicorn"), "-c", "python:survey.platform.gunicorn_conf", "--http-parser", "python"],
        None,
        APP,
        {"DATABASE_URL": "{pgbouncer}", "DATABASE_TRANSACTION_POOLING": "1"},
    ),
    "gunicorn, page's form post": (
        [str(BIN / "gunicorn"), "-c", "python:survey.platform.gunicorn_conf", "--http-parser", "python"],
        None,
        APP,
        {},
    ),
    "gunicorn, C parser": (
        [str(BIN / "gunicorn"), "-c", "python:survey.platform.gunicorn_conf", "--http-parser", "fast"],
        "gunicorn_h1c",
        APP,
        {},
    ),
    "granian": (
        [
            *(str(BIN / "granian"), "--interface", "wsgi", "--workers", "{workers}", "--blocking-threads", "4"),
            *("--host", "127.0.0.1", "--port", "{port}", "--access-log"),
        ],
        "granian",
        APP,
        {},
    ),
    # the floor: the same server and settings, the app replaced by the write alone
    "gunicorn, bare write": (
        [str(BIN / "gunicorn"), "-c", "python:survey.platform.gunicorn_conf", "--http-parser", "python"],
        None,
        "benchmarks.bare_submission:app",
        {},
    ),
}


def web_run(
    database: Database, arm: str, workers: int, seconds: float, script: Path, log: Path, places: dict[str, str]
) -> dict:
    """One run of ``arm``; ``places`` fills the ``{name}`` in its environment (``{pgbouncer}``: the
    database's URL through the run's PgBouncer)."""
    command, _, application, extra = ARMS[arm]
    port = free_port()
    env = {**server_env(database, port, workers), **{k: v.format(**places) for k, v in extra.items()}}
    before = stored_submissions(database)
    args = [part.format(port=port, workers=workers) for part in command] + [application]
    with log.open("a") as out:
        server = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(port, server)
        if arm in FORM_POSTS:
            script = form_script(database, port, script.parent / "form.lua")
        pooled = through_pooler(arm)
        cpu = tree_cpu(server.pid) + (named_cpu("pgbouncer") if pooled else 0.0)
        result, elapsed = load(port, 8, seconds, script)
        cpu = tree_cpu(server.pid) + (named_cpu("pgbouncer") if pooled else 0.0) - cpu
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    created = result["created"]
    return {
        "rate": created / elapsed,
        "cpu_ms": 1000 * cpu / max(1, created),
        "errors": errors_of(result),
        "lost": max(0, created - (stored_submissions(database) - before)),
    }


def through_pooler(arm: str) -> bool:
    """Whether ``arm`` reaches the database through the run's PgBouncer (whose CPU is then counted
    with the arm's: it is no child of the server)."""
    return any("{pgbouncer}" in value for value in ARMS[arm][3].values())


#: The arms loaded with the survey page's form post instead of the JSON API's body.
FORM_POSTS = {"gunicorn, page's form post"}


def form_script(database: Database, port: int, path: Path) -> Path:
    """A load script of the survey page's own submission to the server on ``port``: its session cookie
    and CSRF token as the page gave them (the server's secret is its own), the reported codes in
    ``q_<key>`` fields, and a submission key of its own per request (as the page makes one per
    filling of the form); stored is a 303 to the thank-you page."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/s/{SLUG}", timeout=30) as page:
        cookie = next(c.split(";", 1)[0] for c in page.headers.get_all("Set-Cookie") if c.startswith("session="))
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.read().decode()).group(1)
    rng = np.random.default_rng(7)
    keys = [q["key"] for q in SPEC["questions"]]
    bodies = []
    for _ in range(500):
        fields = {
            "csrf_token": token,
            **{f"q_{key}": int(rng.integers(k)) for key, k in zip(keys, database.options, strict=True)},
        }
        bodies.append(json.dumps(urllib.parse.urlencode(fields)))
    headers = (
        '{["Content-Type"] = "application/x-www-form-urlencoded", ["Accept"] = "text/html", '
        f'["Cookie"] = {json.dumps(cookie)}}}'
    )
    run_key = secrets.token_hex(8)  # the keys of one run are new to the database
    tail = f' .. "&submission_key={run_key}" .. string.format("%04d%012d", id, n)'
    path.write_text(wrk_lua(bodies, f"/s/{SLUG}", headers, stored=303, body_tail=tail))
    return path


def run(
    postgresql: str, workdir: Path, workers: int, seconds: float, rounds: int, only: set[str] | None = None
) -> dict:
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk); `make wrk` installs it")
    arms = [arm for arm, (_, needs, _, _) in ARMS.items() if needs is None or importlib.util.find_spec(needs)]
    arms = [arm for arm in arms if only is None or arm in only]
    database = Database("postgresql", postgresql, workdir)
    script = workdir / "post.lua"
    wrk_script(database, script, np.random.default_rng(7))
    log = workdir / "servers.log"
    rows: list[dict] = []
    places: dict[str, str] = {}
    try:
        with contextlib.ExitStack() as pooler:
            if any(through_pooler(arm) for arm in arms):
                places["pgbouncer"] = pooler.enter_context(through_pgbouncer(database, workdir))
            set_auto_close(database, False)
            ceiling_run(database, workers, 5, "naive")  # not counted: no measured run meets a cold database
            for arm in arms:
                web_run(database, arm, workers, 5, script, log, places)
            for number in range(rounds):
                plain = ceiling_run(database, workers, seconds, "naive")["rate"]
                row: dict = {"round": number + 1, "plain": plain}
                for arm in arms if number % 2 == 0 else arms[::-1]:  # each arm first in every other round
                    row[arm] = web_run(database, arm, workers, seconds, script, log, places)
                rows.append(row)
                print(json.dumps(row), flush=True)
        return {"arms": arms, "rows": rows, "workers": workers, "seconds": seconds}
    finally:
        database.drop()


#: Server connections PgBouncer lends the arm through it: as many as PostgreSQL runs well at once on
#: this machine's two cores, fewer than the workers' client connections (4 × 15).
PGBOUNCER_POOL = 8


@contextlib.contextmanager
def through_pgbouncer(database: Database, workdir: Path) -> Iterator[str]:
    """PgBouncer in transaction mode in front of ``database``, set up as docs/deploy.md says (JIT off
    on the database); yields the database's URL through it."""
    from sqlalchemy import create_engine, text

    from tests.servers import start_pgbouncer

    admin = create_engine(database.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'ALTER DATABASE "{admin.url.database}" SET jit = off'))
    admin.dispose()
    with start_pgbouncer(database.url, workdir / "pgbouncer.log", pool_size=PGBOUNCER_POOL) as url:
        yield url


def report(result: dict, header: str) -> str:
    arms, rows = result["arms"], result["rows"]
    lines = ["# Servers other than ours, on the ingest benchmark's load", "", header, ""]
    lines += [
        "| round | plain SQL /s | " + " | ".join(f"{a} /s | {a} ÷ plain | {a} CPU/sub" for a in arms) + " |",
        "|---|---|" + "---|---|---|" * len(arms),
    ]
    for row in rows:
        cells = [
            f"{row[a]['rate']:.0f} | {row[a]['rate'] / row['plain']:.0%} | {row[a]['cpu_ms']:.2f} ms" for a in arms
        ]
        lines.append(f"| {row['round']} | {row['plain']:.0f} | " + " | ".join(cells) + " |")
    medians = [
        f"{statistics.median(r[a]['rate'] for r in rows):.0f}"
        f" | {statistics.median(r[a]['rate'] / r['plain'] for r in rows):.0%}"
        f" | {statistics.median(r[a]['cpu_ms'] for r in rows):.2f} ms"
        for a in arms
    ]
    lines.append(f"| median | {statistics.median(r['plain'] for r in rows):.0f} | " + " | ".join(medians) + " |")
    errors = sum(r[a]["errors"] for r in rows for a in arms)
    lost = sum(r[a]["lost"] for r in rows for a in arms)
    lines += ["", f"Errors: {errors}. Acknowledged but not stored: {lost}.", ""]
    base = "gunicorn"
    for arm in arms:
        if arm == base:
            continue
        faster = sum(r[arm]["rate"] / r["plain"] > r[base]["rate"] / r["plain"] for r in rows)
        cheaper = sum(r[arm]["cpu_ms"] < r[base]["cpu_ms"] for r in rows)
        lines.append(
            f"*{arm}* against *{base}*: nearer the ceiling in {faster} of {len(rows)} rounds,"
            f" less CPU a submission in {cheaper} of {len(rows)}."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgresql", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--arm", action="append", help="an arm to run, by name (repeated; default: all installed)")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as workdir:
        only = set(args.arm) if args.arm else None
        result = run(args.postgresql, Path(workdir), args.workers, args.seconds, args.rounds, only)
    versions = []
    for module in ("gunicorn", "gunicorn_h1c", "granian"):
        try:
            versions.append(f"{module} {importlib.metadata.version(module)}")
        except importlib.metadata.PackageNotFoundError:  # not installed: not run
            versions.append(f"{module} not installed")
    chosen = "".join(f" --arm {arm!r}" for arm in args.arm or [])
    header = (
        f"`python benchmarks/serving_alternatives.py --workers {args.workers} --seconds {args.seconds:g}"
        f" --rounds {args.rounds}{chosen}` on {time.strftime('%Y-%m-%d')}, this {os.cpu_count()}-core machine"
        f" (Python {platform.python_version()}; {', '.join(versions)}; {(time.time() - started) / 60:.1f} min)."
        f" {result['workers']} worker processes each, 8 wrk connections, {args.seconds:g} s a run, interleaved"
        " rounds; *plain SQL*: as many psycopg processes as workers, one INSERT per row (scale_ingest.py's"
        " ceiling). *CPU/sub*: CPU seconds of the server's processes per acknowledged submission."
    )
    text = report(result, header)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
