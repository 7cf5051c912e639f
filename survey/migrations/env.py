"""Alembic's entry point, run by Flask-Migrate (``flask --app survey db ...``) and by ``init-db``.

The engine and the metadata come from the running app, so a migration runs against whatever
database the app is configured for (SQLite in ``instance/``, or PostgreSQL through DATABASE_URL).
Logging is left to the app: ``logging.config.fileConfig`` here would replace the handlers of an
app (and of a test run) that is already logging.
"""

from alembic import context
from flask import current_app

config = context.config
migrate = current_app.extensions["migrate"]
target_metadata = migrate.db.metadata


def run_migrations_offline() -> None:
    """``flask db upgrade --sql``: print the SQL instead of running it."""
    url = migrate.db.engine.url.render_as_string(hide_password=False)
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True, **migrate.configure_args)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    def skip_empty_autogenerate(context, revision, directives):
        # `flask db migrate` with no model change writes no empty revision file.
        if getattr(config.cmd_opts, "autogenerate", False) and directives[0].upgrade_ops.is_empty():
            directives[:] = []

    arguments = {"process_revision_directives": skip_empty_autogenerate, **migrate.configure_args}
    with migrate.db.engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, **arguments)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
