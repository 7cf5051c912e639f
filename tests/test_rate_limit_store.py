"""Where the rate limits count: one Redis count for every process that names it, what happens when
that store is down, and production's refusal to run several workers that would each count apart."""

from __future__ import annotations

import logging
import os
import subprocess
import uuid

import pytest

from survey import create_app
from survey.platform.limits import SweptMemoryStorage, limiter

from .databases import REDIS_PREFIX, REDIS_URL, delete_redis_keys, limited_app
from .servers import GUNICORN, ROOT, free_port
from .surveys import GOOD


def wrong_sign_in(client) -> int:
    return client.post("/auth/login", data={"username": "x", "password": "y"}).status_code


def test_apps_naming_one_redis_store_share_one_count_and_it_expires(tmp_path, sqlite_template):
    import redis

    first = limited_app(tmp_path, sqlite_template, LOGIN_RATE_LIMIT="4 per minute", WTF_CSRF_ENABLED=False)
    second = limited_app(tmp_path, sqlite_template, LOGIN_RATE_LIMIT="4 per minute", WTF_CSRF_ENABLED=False)
    a, b = first.test_client(), second.test_client()
    assert [wrong_sign_in(a), wrong_sign_in(b), wrong_sign_in(a), wrong_sign_in(b)] == [401] * 4
    assert [wrong_sign_in(b), wrong_sign_in(a)] == [429, 429]  # two apps (two processes): one count
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{REDIS_PREFIX}:*"))
    assert len(keys) == 1 and b"LOGIN_RATE_LIMIT" in keys[0] and b"127.0.0.1" in keys[0]
    assert int(client.get(keys[0])) == 6 and 0 < client.ttl(keys[0]) <= 60  # forgotten with its window
    limiter.reset(first)
    assert list(client.scan_iter(match=f"{REDIS_PREFIX}:*")) == []
    client.close()


def test_another_prefix_on_the_same_server_counts_apart(tmp_path, sqlite_template):
    prefix = f"{REDIS_PREFIX}:apart-{uuid.uuid4().hex[:6]}"
    ours = limited_app(tmp_path, sqlite_template, LOGIN_RATE_LIMIT="1 per minute", WTF_CSRF_ENABLED=False)
    theirs = limited_app(
        tmp_path, sqlite_template, LOGIN_RATE_LIMIT="1 per minute", WTF_CSRF_ENABLED=False, RATELIMIT_KEY_PREFIX=prefix
    )
    try:
        assert [wrong_sign_in(ours.test_client()) for _ in range(2)] == [401, 429]
        assert [wrong_sign_in(theirs.test_client()) for _ in range(2)] == [401, 429]
    finally:
        delete_redis_keys(prefix)
        limiter.reset(ours)


def test_with_the_store_down_secrets_are_refused_and_answers_let_through(tmp_path, sqlite_template, caplog):
    """Nothing listens at the store's port: sign-in, links and bearer tokens answer 503 (nobody guesses
    uncounted), submissions are stored (a respondent's answers are not lost to a counter), each logged."""
    down = f"redis://127.0.0.1:{free_port()}/0"
    app = limited_app(tmp_path, sqlite_template, WTF_CSRF_ENABLED=False)
    app.config["RATELIMIT_STORAGE_URL"] = down  # after limited_app has cleared its counters
    client = app.test_client()
    with caplog.at_level(logging.ERROR, logger="survey.platform.limits"):
        refused = client.post("/auth/login", data={"username": "x", "password": "y"})
        assert refused.status_code == 503
        assert "cannot be counted" in refused.get_data(as_text=True)
        assert client.get("/auth/link?token=" + "A" * 40).status_code == 503
        bearer = client.get("/api/surveys/small-test/estimates", headers={"Authorization": "Bearer " + "x" * 40})
        assert bearer.status_code == 503 and bearer.mimetype == "application/problem+json"
        stored = client.post("/api/surveys/small-test/responses", json={"answers": GOOD})
        assert stored.status_code == 201
    messages = [record.getMessage() for record in caplog.records]
    assert any("refusing (503)" in m and "LOGIN_RATE_LIMIT" in m for m in messages), messages
    assert any("letting through uncounted" in m and "SUBMISSION_RATE_LIMIT" in m for m in messages), messages
    # clearing every store this process used (every test app does) passes over the one that is down
    limiter.reset()
    assert all(url != down for url, _ in limiter.stores)


def test_without_a_store_url_the_counters_are_this_process_memory(tmp_path):
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'm.sqlite'}"})
    assert type(limiter.window(app).storage) is SweptMemoryStorage
    named = create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://", "RATELIMIT_STORAGE_URL": "memory://"})
    assert limiter.window(named) is limiter.window(app)  # memory:// is the same thread-free store


@pytest.fixture
def production(monkeypatch, tmp_path):
    monkeypatch.setenv("SURVEY_ENV", "production")
    monkeypatch.setenv("SECRET_KEY", "k" * 64)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'p.sqlite'}")
    monkeypatch.setenv("PUBLIC_URL", "https://surveys.example.org")
    for name in ("RATELIMIT_STORAGE_URL", "RATELIMIT_KEY_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_production_refuses_several_workers_without_a_shared_store(production, caplog):
    production.setenv("SURVEY_WORKER_PROCESSES", "4")
    with pytest.raises(RuntimeError, match="4 worker processes count rate limits apart"):
        create_app()
    production.setenv("RATELIMIT_STORAGE_URL", "memory://")  # the explicit choice: started, and said
    with caplog.at_level(logging.WARNING, logger="survey.platform.config"):
        create_app()
    assert any("up to 4 times each limit" in record.getMessage() for record in caplog.records)
    production.setenv("RATELIMIT_STORAGE_URL", REDIS_URL)
    assert create_app().config["RATELIMIT_STORAGE_URL"] == REDIS_URL
    production.delenv("RATELIMIT_STORAGE_URL")
    production.setenv("SURVEY_WORKER_PROCESSES", "1")  # one worker counts once without a store
    create_app()


def test_gunicorn_with_two_workers_and_no_store_stops_and_says_why(tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'g.sqlite'}",
        "SECRET_KEY": "gunicorn-test-" + "x" * 40,
        "BIND": f"127.0.0.1:{free_port()}",
        "WEB_CONCURRENCY": "2",
        "RATELIMIT_STORAGE_URL": "",
    }
    env.pop("SURVEY_ENV", None)  # the entry point's own default: production
    finished = subprocess.run(
        [str(GUNICORN), "-c", "python:survey.platform.gunicorn_conf", "survey.platform.wsgi:app"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode != 0
    assert "2 worker processes count rate limits apart" in finished.stdout + finished.stderr
