"""An outage is the app's own (survey.platform.connections.outage_of): one app's database going down
is logged by that app, and ended in the log by that app's next working connection, never by another
app's in the same process (as the tests build one app after another; CI once saw a test's app log
"database available again" for an earlier test's outage).
"""

from __future__ import annotations

import logging
import socket

from sqlalchemy import text

from survey import create_app
from survey.platform.connections import outage_of
from survey.platform.extensions import db


def test_another_apps_working_connection_does_not_end_an_apps_outage(app, caplog):
    with socket.socket() as probe:  # a port nothing listens at
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = create_app(
        {"SQLALCHEMY_DATABASE_URI": f"postgresql+psycopg://postgres@127.0.0.1:{port}/gone", "SECRET_KEY": "x"}
    )
    with caplog.at_level(logging.INFO, logger="survey.database"):
        assert down.test_client().get("/health").status_code == 503
        assert outage_of(down).since is not None and outage_of(down).refused == 1
        with app.app_context():  # the working app's connections: its own outage record, never opened
            with db.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
            db.engine.dispose()
    messages = [r.getMessage() for r in caplog.records if r.name == "survey.database"]
    assert [m[:20] for m in messages] == ["database unavailable"], messages
    assert outage_of(down).since is not None and outage_of(app).since is None
    assert outage_of(down) is not outage_of(app)
    with down.app_context():
        db.engine.dispose()
