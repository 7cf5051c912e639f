"""The WSGI entry point for production servers.

    gunicorn -c python:survey.platform.gunicorn_conf survey.platform.wsgi:app

Here the app runs in production mode unless SURVEY_ENV says otherwise, so it refuses to start
without a real SECRET_KEY and sends its cookies over HTTPS only. ``make run`` (``flask run``) stays
in development mode.
"""

import os

# One thread per numerical library in each worker process, set before numpy is first imported:
# a worker computes one request's numbers at a time, and OpenBLAS's own threads, spinning for cores
# other workers hold, made a 30 ms regression fit take 2.5 s of CPU on two busy cores
# (benchmarks/worst_case.md). Set the variables yourself to choose otherwise.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from survey import create_app  # noqa: E402 - after the thread settings above

os.environ.setdefault("SURVEY_ENV", "production")
app = create_app()
