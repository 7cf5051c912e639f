"""Gunicorn settings for serving the app: ``gunicorn -c python:survey.platform.gunicorn_conf survey.platform.wsgi:app``.

Environment variables set the usual knobs (``BIND``, default 127.0.0.1:8000; ``WEB_CONCURRENCY``,
the number of worker processes, default two per core); anything given on gunicorn's command line
wins over this file. Every worker keeps its own database connection pool, so give PostgreSQL
(``DATABASE_URL``) room for workers × pool size connections; SQLite allows one writer at a time.

The access log carries the method, the path (never the query string, where invitation codes
travel), the status, the size and the duration; no client address, no time of day and no user
agent, which next to a survey path could line a respondent up with a stored submission.
"""

import multiprocessing
import os

bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count()))
worker_class = "sync"
# Sync workers answer one request at a time; a client slower than this is cut off rather than
# holding a worker. Put a buffering reverse proxy (nginx, a load balancer) in front.
timeout = 30
graceful_timeout = 30
accesslog = "-"
access_log_format = "%(m)s %(U)s %(s)s %(B)s %(M)sms"
errorlog = "-"
