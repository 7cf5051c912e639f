"""``flask --app survey ...`` commands: init-db, demo, create-user, make-admin, import-survey, estimate, recount.

(``flask --app survey db ...`` are Flask-Migrate's: Alembic's upgrade, downgrade, current, history.)
"""

from __future__ import annotations

import json

import click
from flask import Flask
from sqlalchemy import select

from survey.domain.models import Survey, User

from .extensions import db


def _urls(slug: str, host: str) -> tuple[str, str]:
    return f"{host}/s/{slug}", f"{host}/surveys/{slug}/results"


def _require_current_schema() -> None:
    from .schema import current_revision, head_revision

    current, head = current_revision(), head_revision()
    if current != head:
        raise click.ClickException(
            f"the database schema is at {current or 'nothing'}, not {head}: run `flask --app survey init-db` first"
        )


def register(app: Flask) -> None:
    @app.cli.command("init-db")
    def init_db() -> None:
        """Create or upgrade the schema by running the migrations (a new database gets every one)."""
        from .schema import SchemaError, upgrade_database

        try:
            before, after = upgrade_database()
        except SchemaError as error:
            raise click.ClickException(str(error)) from None
        where = db.engine.url.render_as_string(hide_password=True)
        if before == after:
            click.echo(f"Database ready (schema {after}, up to date): {where}")
        else:
            click.echo(f"Database ready (schema {before or 'empty'} → {after}): {where}")

    @app.cli.command("demo")
    @click.option("--respondents", default=3000, show_default=True, help="simulated respondents")
    @click.option("--host", default="http://127.0.0.1:5000", show_default=True, help="where the app is served")
    @click.option("--if-empty", is_flag=True, help="only if the database has no survey yet")
    def demo(respondents: int, host: str, if_empty: bool) -> None:
        """Create the demo survey with simulated respondents, and print where to look."""
        from survey.domain.surveys.demo import DEMO_PASSWORD, DEMO_USER, create_demo
        from survey.domain.surveys.validation_demo import create_validation_demo

        _require_current_schema()
        if if_empty and db.session.scalar(select(Survey.id).limit(1)) is not None:
            click.echo("The database already has surveys; no demo added.")
            return
        survey = create_demo(db.session, respondents)
        validation = create_validation_demo(db.session, respondents)
        db.session.commit()
        respond, results = _urls(survey.slug, host)
        click.echo(f"Demo survey “{survey.title}” is ready.")
        click.echo(f"  Answer it as a respondent:  {respond}")
        click.echo(f"  See the estimates:          {results}")
        respond, results = _urls(validation.slug, host)
        click.echo(f"Demo split ballots “{validation.title}”: did the randomization work?")
        click.echo(f"  Answer it (one of two ways per question, drawn for you):  {respond}")
        click.echo(f"  Randomized minus direct, and who did not comply:          {results}")
        click.echo(
            f"  Sign in as {DEMO_USER!r} with password {DEMO_PASSWORD!r} (an administrator: users at /admin/users)."
        )

    @app.cli.command("create-user")
    @click.argument("username")
    @click.password_option(help="the new user's password (asked for if not given)")
    @click.option("--email", help="the user's e-mail address (where invitations and password links go)")
    @click.option("--admin", is_flag=True, help="an administrator, who manages users on the /admin/users page")
    def create_user(username: str, password: str, email: str | None, admin: bool) -> None:
        """Create a user who can sign in (the first administrator: with --admin)."""
        from survey.domain.accounts.account_links import check_username, normalize_email
        from survey.domain.accounts.sign_in import MIN_PASSWORD_LENGTH, check_new_password
        from survey.domain.errors import DomainError

        _require_current_schema()
        try:
            check_new_password(password)
        except DomainError:
            raise click.BadParameter(f"use at least {MIN_PASSWORD_LENGTH} characters", param_hint="password") from None
        if db.session.scalar(select(User).where(User.username == username)) is not None:
            raise click.ClickException(f"a user named {username!r} already exists")
        try:
            username = check_username(db.session, username)
            address = normalize_email(email)
        except DomainError as error:
            raise click.ClickException(error.message) from None
        if address and db.session.scalar(select(User).where(User.email == address)) is not None:
            raise click.ClickException(f"another user has the address {address}")
        user = User(username=username, email=address, is_admin=admin)
        user.set_password(password)
        db.session.add(user)
        db.session.commit()
        click.echo(f"{'Administrator' if admin else 'User'} {username!r} created.")

    @app.cli.command("make-admin")
    @click.argument("username")
    def make_admin(username: str) -> None:
        """Make an existing user an administrator (and enable their account if it was disabled)."""
        _require_current_schema()
        user = db.session.scalar(select(User).where(User.username == username))
        if user is None:
            raise click.ClickException(f"no user named {username!r}")
        user.is_admin, user.disabled = True, False
        db.session.commit()
        click.echo(f"{username!r} is an administrator: the users page is /admin/users.")

    @app.cli.command("import-survey")
    @click.argument("file", type=click.File("r", encoding="utf-8"))
    @click.option("--owner", help="username of the survey's owner")
    @click.option("--host", default="http://127.0.0.1:5000", show_default=True)
    def import_survey(file, owner: str | None, host: str) -> None:
        """Create a survey from a JSON spec (see the README for the format)."""
        from survey.domain.errors import DomainError
        from survey.domain.surveys.specs import create_survey_from_spec

        _require_current_schema()
        try:
            spec = json.load(file)
        except json.JSONDecodeError as error:
            raise click.ClickException(f"{file.name} is not valid JSON: {error}") from None
        user = None
        if owner:
            user = db.session.scalar(select(User).where(User.username == owner))
            if user is None:
                raise click.ClickException(f"no user named {owner!r}")
        try:
            survey = create_survey_from_spec(db.session, spec, owner=user)
            db.session.commit()
        except DomainError as error:
            db.session.rollback()
            raise click.ClickException(f"the survey was not created: {error}") from None
        respond, results = _urls(survey.slug, host)
        click.echo(f"Survey “{survey.title}” created with {len(survey.questions)} questions.")
        if user is None:
            click.echo("  Note: no --owner was given, so no user can see or manage this survey yet.")
        click.echo(f"  Respondents answer at:  {respond}")
        click.echo(f"  Results:                {results}")

    @app.cli.command("import-responses")
    @click.argument("slug")
    @click.argument("file", type=click.Path(exists=True, dir_okay=False))
    @click.option("--dry-run", is_flag=True, help="check every row and say what would be added; write nothing")
    @click.option("--user", "username", help="username recorded as the importer")
    def import_responses_command(slug: str, file: str, dry_run: bool, username: str | None) -> None:
        """Import responses collected elsewhere (CSV or JSON, the microdata export's shape) into a survey."""
        from pathlib import Path

        from survey.domain.errors import DomainError
        from survey.domain.responses.imports import ImportRefused, format_of, import_responses
        from survey.domain.responses.pending import fold_all

        _require_current_schema()
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        if survey is None:
            raise click.ClickException(f"no survey {slug!r}")
        user = None
        if username:
            user = db.session.scalar(select(User).where(User.username == username))
            if user is None:
                raise click.ClickException(f"no user named {username!r}")
        path = Path(file)
        try:
            result = import_responses(
                db.session, survey, path.read_bytes(), format_of(path.name), user=user, dry_run=dry_run
            )
            db.session.commit()
            if not (result.already or dry_run):
                fold_all(db.session)  # the rows, listed for the fold by the import: added to the tallies now
        except ImportRefused as error:
            db.session.rollback()
            for problem in error.problems:
                click.echo(f"  {problem}", err=True)
            raise click.ClickException(
                f"nothing was imported: {error.params['count']} problem(s) in {path.name}"
            ) from None
        except DomainError as error:
            db.session.rollback()
            raise click.ClickException(f"nothing was imported: {error}") from None
        if result.already:
            click.echo(
                f"{path.name}: these {result.rows} rows came in before (upload {result.import_id}): nothing added."
            )
        elif dry_run:
            click.echo(f"{path.name}: {result.rows} rows are valid; nothing written (--dry-run).")
        else:
            click.echo(f"{path.name}: {result.rows} rows imported into {slug} (upload {result.import_id}).")

    @app.cli.command("estimate")
    @click.argument("slug")
    def estimate_command(slug: str) -> None:
        """Print the estimates of a survey as JSON."""
        from survey.domain.results.exports import estimates_document

        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        if survey is None:
            raise click.ClickException(f"no survey {slug!r}")
        click.echo(json.dumps(estimates_document(db.session, survey), indent=2, ensure_ascii=False))

    @app.cli.command("recount")
    @click.argument("slug", required=False)
    @click.option("--fix", is_flag=True, help="replace tallies that differ by the recount")
    def recount_command(slug: str | None, fix: bool) -> None:
        """Check the running tallies of one survey (or all) against a GROUP BY over the stored answers."""
        from survey.domain.responses.tallies import rebuild_tallies, tally_mismatches

        query = select(Survey).order_by(Survey.id)
        if slug:
            query = query.where(Survey.slug == slug)
        surveys = db.session.scalars(query).all()
        if slug and not surveys:
            raise click.ClickException(f"no survey {slug!r}")
        wrong = 0
        for survey in surveys:
            problems = tally_mismatches(db.session, survey)
            if not problems:
                click.echo(f"{survey.slug}: tallies agree with the stored answers")
                continue
            wrong += 1
            click.echo(f"{survey.slug}: tallies differ from the stored answers:")
            for problem in problems:
                click.echo(f"  {problem}")
            if fix:
                rebuild_tallies(db.session, survey)
                db.session.commit()
                click.echo(f"  rebuilt from a recount; now: {tally_mismatches(db.session, survey) or 'agree'}")
        if wrong and not fix:
            raise click.ClickException(f"{wrong} survey(s) with tallies that differ; run again with --fix to rebuild")
