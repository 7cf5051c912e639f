"""Work done after the response, in one thread per process: what a request must not wait for because
its duration would tell something.

The first user is the sign-in page's "Forgot password?" (survey.web.mailing): whether an account
exists decides whether a link is made and mailed, and an answer that waited for the database and the
mail server would take longer for an account that exists. Handed here, the request only queues the
job and answers at once, the same way and in the same time whoever asked.

One worker thread per process runs the jobs in the order they came, each inside its app's context
(its own database session), and logs a job that fails. The queue is bounded (:data:`MAX_WAITING`): a
job that finds it full is dropped and logged, so that a flood of requests (each already rate-limited
per address) cannot grow a worker's memory. The thread starts with the first job, in the process
that runs it (after gunicorn forks its workers).

Python's ``concurrent.futures.ThreadPoolExecutor`` was the obvious choice and is not used: its queue
has no bound, and :func:`settle` (wait until the jobs queued so far are done, which tests and a
worker's shutdown need) would reach into its private queue.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from flask import Flask

log = logging.getLogger(__name__)

#: Jobs waiting at most; beyond this a job is dropped (and logged).
MAX_WAITING = 200

Job = tuple[Flask, Callable[..., Any], tuple[Any, ...]]

_jobs: queue.Queue[Job] = queue.Queue(maxsize=MAX_WAITING)
#: The thread running the jobs, once one was started; a new one is started when it is not alive: in
#: a forked child (gunicorn's workers: threads do not survive a fork), or if it never got going.
_worker: threading.Thread | None = None
_lock = threading.Lock()


def _work() -> None:
    while True:
        app, job, args = _jobs.get()
        try:
            with app.app_context():
                job(*args)
        except Exception:  # a job's failure is logged; the worker goes on with the next one
            log.exception("a background job (%s) failed", getattr(job, "__name__", job))
        finally:
            _jobs.task_done()


def _ensure_worker() -> None:
    global _worker
    with _lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_work, name="survey-background", daemon=True)
            _worker.start()


def run_later(app: Flask, job: Callable[..., Any], *args: Any) -> bool:
    """Queue ``job(*args)`` to run in ``app``'s context after this request; False (and logged) when
    the queue is full and the job is dropped."""
    _ensure_worker()
    try:
        _jobs.put_nowait((app, job, args))
    except queue.Full:
        log.warning("the background queue is full: a job (%s) was dropped", getattr(job, "__name__", job))
        return False
    return True


def settle(timeout: float) -> bool:
    """Wait until every job queued so far has run (True), or ``timeout`` seconds (False)."""
    with _jobs.all_tasks_done:
        return _jobs.all_tasks_done.wait_for(lambda: _jobs.unfinished_tasks == 0, timeout)
