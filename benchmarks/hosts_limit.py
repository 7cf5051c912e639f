"""What a sign-in limit of 10 a minute lets through on 2 hosts × N workers: counted per process vs in Redis.

Two gunicorn hosts (survey.platform.gunicorn_conf, production settings, N workers each) on one
database, with ``LOGIN_RATE_LIMIT="10 per minute"``. One address sends wrong passwords for alice,
alternating hosts, each on a new connection (so any worker may take it), many more than the limit,
all within the first minute; the figure is how many were checked (401) rather than refused (429).
``RATELIMIT_STORAGE_URL=memory://`` (each worker counts apart: the explicit per-process choice,
which before counted this way by default) against a Redis URL (one count).

Also: a form fetched from host A posted to host B, with one ``SECRET_KEY`` on both and with a key
each, to show why every host needs the same key (docs/deploy.md).

Run ``python benchmarks/hosts_limit.py --markdown benchmarks/hosts_limit.md`` (Redis at
``TEST_REDIS_URL``, default redis://127.0.0.1:6379/0; keys under a prefix of the run's, deleted).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from survey import create_app
from survey.domain.models import User
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database
from tests.databases import REDIS_URL, delete_redis_keys
from tests.live import CHEAP_PASSWORD_HASH
from tests.servers import Visitor, start_gunicorn

LIMIT = 10
PASSWORD = "the right password"


def database(folder: Path) -> str:
    url = f"sqlite:///{folder / 'hosts.sqlite'}"
    app = create_app(
        {"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "setup", "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH}
    )
    with app.app_context():
        upgrade_database()
        alice = User(username="alice")
        alice.set_password(PASSWORD)
        db.session.add(alice)
        db.session.commit()
        db.engine.dispose()
    return url


@contextlib.contextmanager
def two_hosts(url: str, folder: Path, workers: int, store: str, keys=("k" * 64, "k" * 64), limit: int = LIMIT):
    prefix = f"bench-hosts-{uuid.uuid4().hex[:8]}"
    settings = {
        "WEB_CONCURRENCY": str(workers),
        "WEB_THREADS": "4",
        "RATELIMIT_STORAGE_URL": store,
        "RATELIMIT_KEY_PREFIX": prefix,
        "LOGIN_RATE_LIMIT": f"{limit} per minute",
    }
    try:
        with (
            start_gunicorn(url, folder / "a.log", SECRET_KEY=keys[0], **settings) as a,
            start_gunicorn(url, folder / "b.log", SECRET_KEY=keys[1], **settings) as b,
        ):
            yield a, b
    finally:
        delete_redis_keys(prefix)


def wrong_passwords_checked(a: int, b: int, attempts: int) -> tuple[int, float]:
    """How many of ``attempts`` wrong passwords were checked (401, not 429), and the seconds taken."""
    visitor = Visitor("127.0.0.1")
    token = visitor.form_token(a, "/auth/login")
    started = time.monotonic()
    statuses = [
        visitor.post((a, b)[i % 2], "/auth/login", {"username": "alice", "password": "wrong", "csrf_token": token})[0]
        for i in range(attempts)
    ]
    elapsed = time.monotonic() - started
    assert set(statuses) <= {401, 429}, statuses
    return statuses.count(401), elapsed


def csrf_accepted(a: int, b: int, posts: int) -> int:
    """Of ``posts`` sign-in forms fetched from A and posted to B (right password), how many B accepted."""
    accepted = 0
    for _ in range(posts):
        visitor = Visitor("127.0.0.1")
        token = visitor.form_token(a, "/auth/login")
        status, _ = visitor.post(b, "/auth/login", {"username": "alice", "password": PASSWORD, "csrf_token": token})
        assert status in (302, 400), status  # accepted, or refused as a bad CSRF token
        accepted += status == 302
    return accepted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--attempts", type=int, default=200)
    parser.add_argument("--csrf-posts", type=int, default=15)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    os.environ.pop("SURVEY_ENV", None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url = database(folder)
        for workers in args.workers:
            for name, store in (("in memory, per process", "memory://"), ("Redis, shared", REDIS_URL)):
                with two_hosts(url, folder, workers, store) as (a, b):
                    checked, seconds = wrong_passwords_checked(a, b, args.attempts)
                assert seconds < 60, "the attempts must fit in one window"
                rows.append((workers, name, checked, seconds))
                print(f"2 hosts x {workers} workers, {name}: {checked} of {args.attempts} checked in {seconds:.1f} s")
        with two_hosts(url, folder, 2, REDIS_URL, limit=1000) as (a, b):
            same = csrf_accepted(a, b, args.csrf_posts)
        with two_hosts(url, folder, 2, REDIS_URL, keys=("k" * 64, "j" * 64), limit=1000) as (a, b):
            different = csrf_accepted(a, b, args.csrf_posts)
    print(f"one SECRET_KEY: {same}/{args.csrf_posts} accepted; a key each: {different}/{args.csrf_posts}")
    lines = [
        "# A sign-in limit on two hosts: per process vs Redis",
        "",
        "Generated by `python benchmarks/hosts_limit.py --markdown benchmarks/hosts_limit.md`; "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores "
        "(shared with other work).",
        "",
        f"`LOGIN_RATE_LIMIT = {LIMIT} per minute`, one address, {args.attempts} wrong passwords sent "
        "alternately to two gunicorn hosts, a new connection each, all within one minute. *Checked*: "
        "answered 401 (the password was compared) rather than 429. Which worker takes a connection is the "
        "kernel's choice, so the per-process figure varies between runs up to 10 × hosts × workers; the "
        "shared one is the limit.",
        "",
        "| hosts × workers | counters | wrong passwords checked in the minute | seconds |",
        "|---|---|---:|---:|",
        *[f"| 2 × {w} | {name} | {checked} | {seconds:.1f} |" for w, name, checked, seconds in rows],
        "",
        f"A sign-in form fetched from host A and posted to host B ({args.csrf_posts} times): with one `SECRET_KEY` "
        f"on both, {same} of {args.csrf_posts} accepted; with a key each, {different} of {args.csrf_posts} "
        "(the rest refused as a bad CSRF token, 400).",
        "",
    ]
    if args.markdown:
        args.markdown.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
