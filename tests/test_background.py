"""The background thread (survey.platform.background) keeps running the jobs it is given, whatever
happened to the thread before: one that never got going (a test that stopped threads from starting
met the first job of the process, and every job after waited for ever) is replaced at the next job.
Run in a fresh interpreter, where no worker has started yet."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import threading
    from flask import Flask
    from survey.platform import background

    app, ran = Flask("t"), []
    start = threading.Thread.start
    threading.Thread.start = lambda self: None  # the first job's thread never starts
    background.run_later(app, ran.append, "first")
    threading.Thread.start = start
    background.run_later(app, ran.append, "second")
    assert background.settle(10), "the jobs were never run"
    assert ran == ["first", "second"], ran
    print("ok")
    """
)


def test_a_worker_that_never_started_is_replaced_at_the_next_job():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
