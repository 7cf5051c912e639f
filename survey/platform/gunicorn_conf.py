"""Gunicorn settings for serving the app: ``gunicorn -c python:survey.platform.gunicorn_conf survey.platform.wsgi:app``.

Environment variables set the usual knobs (``BIND``, default 127.0.0.1:8000; ``WEB_CONCURRENCY``,
the number of worker processes, default two per core; ``WEB_THREADS``, threads per worker, default
32); anything given on gunicorn's command line wins over this file. Every worker keeps its own
pool of PostgreSQL connections (``DATABASE_POOL_SIZE``, 15, kept open rather than opened per busy
request: survey.platform.config.pool_without_churn), so give PostgreSQL (``DATABASE_URL``) room for
workers × 15 connections; SQLite allows one writer at a time. Several
workers need ``RATELIMIT_STORAGE_URL`` (a Redis server) for the rate limits to count once across
them, or refuse to start (survey.platform.config.check_shared_limits; docs/deploy.md).

**Slow clients.** Sync workers serve one connection each from its first byte to its last: four
clients that send their request slowly held all four workers (each until the 30 s timeout, then
the next) and a respondent waited 41 s. Threaded workers (``gthread``) keep kept-alive connections
in one poller and read each request in a thread of a pool: a client that trickles holds one thread,
not the worker, so it takes workers × threads slow clients, not workers, to starve the server
(tests/test_serving.py: eight slow clients against two workers, and a respondent is answered at
once). Threads rather than gevent: the analysis pages compute (numpy, scipy), and a greenlet that
computes stops every other connection of its worker, health checks included (measured: /health
waited 1.2 s behind three 1.5 s computations under gevent, 15 ms under gthread). No worker class
bounds how long a client may take to send its request, so production puts a buffering reverse
proxy in front, which hands gunicorn only whole requests (README, "Running in production").

The access log carries the method, the path (never the query string, where invitation codes
travel), the status, the size and the duration; no client address, no time of day and no user
agent, which next to a survey path could line a respondent up with a stored submission. It is
written by :class:`survey.platform.access_log.AccessLog`, which reads only those five values
(gunicorn's own logger collects every header and environment variable per request first).

**Preloaded.** The master imports the app once (``preload_app``) and each worker is a fork of it,
so a worker that starts (at boot, after a crash, after ``max_requests``, on ``kill -HUP``) serves at
once instead of importing the app (numpy, scipy, SQLAlchemy's models...) for seconds while requests
wait: a reload stalled requests up to 6.4 s before. The forked workers drop the database connections
they inherited (:func:`post_fork`), so no two processes share one. New *code* then needs a new master:
``kill -USR2`` (a new master and workers beside the old) then ``kill -QUIT`` of the old master, or a
restart; ``kill -HUP`` re-forks the code already loaded (docs/deploy.md). ``PRELOAD_APP=0`` turns
it off (benchmarks/scale_ingest.py compares the two).
"""

import multiprocessing
import os

bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count()))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", 32))
# A kept-alive connection waits in the worker's poller (no thread) this long for its next request.
keepalive = 5
# With threads, the worker's main loop answers the arbiter's heartbeat, so this no longer cuts off a
# slow client or a long request: it restarts a worker whose loop is stuck.
timeout = 30
graceful_timeout = 30
preload_app = os.environ.get("PRELOAD_APP", "1") != "0"
accesslog = "-"
logger_class = "survey.platform.access_log.AccessLog"
# the line AccessLog writes, in gunicorn's terms (it is what gunicorn's own logger would write with it)
access_log_format = "%(m)s %(U)s %(s)s %(B)s %(M)sms"
errorlog = "-"
# gunicorn 25.1+ opens a control socket (for ``gunicornc``) at one path per user,
# ~/.gunicorn/gunicorn.ctl: a second master on the machine (another host's, a test's, a deploy
# beside the old one) takes it over, and whichever stops first removes it for the other. Off unless
# CONTROL_SOCKET names a path of this master's own.
control_socket_disable = "CONTROL_SOCKET" not in os.environ
if not control_socket_disable:
    control_socket = os.environ["CONTROL_SOCKET"]


def on_starting(server) -> None:
    """Tell the app how many worker processes share its rate limits (survey.platform.config,
    ``check_shared_limits``): several need ``RATELIMIT_STORAGE_URL``. Read from gunicorn's final
    settings, so that ``-w`` on the command line counts too."""
    os.environ["SURVEY_WORKER_PROCESSES"] = str(server.cfg.workers)
    if server.cfg.preload_app:
        # the preloaded app was made before this hook, not knowing the count (`-w` included): checked
        # here instead; gunicorn prints the RuntimeError and exits 1
        from survey.platform.config import check_shared_limits
        from survey.platform.wsgi import app

        check_shared_limits(app.config)


def post_fork(server, worker):
    """Forget the database connections the preloaded app may have opened in the master (SQLite's
    checks at start do): a connection shared by two processes mixes their conversations. Closing
    them here would close them for the master too, so they are dropped without closing."""
    from survey.platform.extensions import db
    from survey.platform.wsgi import app

    with app.app_context():
        db.engine.dispose(close=False)


def when_ready(server):
    """With the app preloaded, compile the submission's statements once in the master, so that no
    worker (a new one after a reload above all) compiles them on its first submission."""
    if server.cfg.preload_app:
        from survey.domain.responses import writes

        for with_receipt in (False, True):
            writes.postgresql_submission(with_receipt)
            writes.postgresql_hold(with_receipt)
        writes.sqlite_submission()
