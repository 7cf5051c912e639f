"""The WSGI entry point for production servers.

    gunicorn -c python:survey.platform.gunicorn_conf survey.platform.wsgi:app

Here the app runs in production mode unless SURVEY_ENV says otherwise, so it refuses to start
without a real SECRET_KEY and sends its cookies over HTTPS only. ``make run`` (``flask run``) stays
in development mode.
"""

import os

from survey import create_app

os.environ.setdefault("SURVEY_ENV", "production")
app = create_app()
