"""The schema is made and changed only by the migrations, and they agree with the models.

Each test gets a truly empty database (a new SQLite file, or a new PostgreSQL schema), runs the
migrations the way ``make run`` does (``flask --app survey init-db``), and looks at what they made.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import numpy as np
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, select, text

from survey import create_app
from survey.domain.models import Survey
from survey.domain.responses.tallies import recount, survey_counts, tally_mismatches
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.platform.schema import FIRST_REVISION_TABLES, VERSION_TABLE, alembic_config, current_revision, head_revision

from .databases import BACKENDS, pg_url
from .surveys import SMALL_SPEC

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=BACKENDS)
def empty_app(request, tmp_path):
    """An app on a database with no tables at all."""
    if request.param == "sqlite":
        config = {"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'empty.sqlite'}"}
        cleanup = None
    else:
        schema = f"mig_{uuid.uuid4().hex[:10]}"
        admin = create_engine(pg_url())
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        config = {
            "SQLALCHEMY_DATABASE_URI": pg_url(),
            "SQLALCHEMY_ENGINE_OPTIONS": {"connect_args": {"options": f"-csearch_path={schema}"}},
        }

        def cleanup():
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()

    app = create_app({"TESTING": True, "SECRET_KEY": "test", "RATELIMIT_ENABLED": False, **config})
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()
    if cleanup:
        cleanup()


def tables(app) -> set[str]:
    with app.app_context():
        return set(inspect(db.engine).get_table_names())


def differences(app) -> list:
    """What Alembic's autogenerate would change to make the database match the models."""
    with app.app_context(), db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
        return compare_metadata(context, db.metadata)


def init_db(app) -> str:
    result = app.test_cli_runner().invoke(args=["init-db"])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_new_database_gets_every_migration_and_matches_the_models(empty_app):
    assert tables(empty_app) == set()
    output = init_db(empty_app)
    with empty_app.app_context():
        head = head_revision()
        assert current_revision() == head
    assert f"empty → {head}" in output
    assert tables(empty_app) == {t.name for t in db.metadata.sorted_tables} | {VERSION_TABLE}
    assert differences(empty_app) == []
    # running it again changes nothing and says so
    assert "up to date" in init_db(empty_app)


def test_migrations_go_down_to_nothing_and_up_again(empty_app):
    init_db(empty_app)
    with empty_app.app_context():
        command.downgrade(alembic_config(), "base")
    assert tables(empty_app) == {VERSION_TABLE}
    init_db(empty_app)
    assert differences(empty_app) == []


def legacy_database(app) -> None:
    """A database as ``db.create_all()`` made it before migrations existed, with responses in it."""
    # The survey is made by today's models (which know columns 0001 did not have), then the schema is
    # taken down to 0001 with it in place, as the first revision's tables held it.
    with app.app_context():
        command.upgrade(alembic_config(), "head")
        survey = create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
        survey_id, questions = survey.id, [(q.id, len(q.options)) for q in survey.questions]
        db.session.remove()
        command.downgrade(alembic_config(), "0001")
        with db.engine.begin() as conn:
            conn.execute(text(f"DROP TABLE {VERSION_TABLE}"))
    assert tables(app) == FIRST_REVISION_TABLES
    with app.app_context():
        rng = np.random.default_rng(7)
        for i in range(1, 41):
            db.session.execute(
                text("INSERT INTO submissions (id, survey_id, submitted_on) VALUES (:i, :s, '2026-01-02')"),
                {"i": i, "s": survey_id},
            )
            for question_id, k in questions:
                db.session.execute(
                    text("INSERT INTO answers (submission_id, question_id, value) VALUES (:i, :q, :v)"),
                    {"i": i, "q": question_id, "v": int(rng.integers(k))},
                )
        db.session.commit()


def test_who_is_asking_comes_empty_to_surveys_made_before_it_and_goes_on_downgrade(empty_app):
    """0005 gives existing surveys empty who-is-asking texts; going back before it keeps the surveys."""
    init_db(empty_app)
    with empty_app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "run_by": "Lab", "contact": "lab@example.org"})
        db.session.commit()
        db.session.remove()
        command.downgrade(alembic_config(), "0010")  # the revision before 0005
        columns = {c["name"] for c in inspect(db.engine).get_columns("surveys")}
        assert not columns & {"run_by", "contact", "ethics_statement"}
        command.upgrade(alembic_config(), "head")
        survey = db.session.scalar(select(Survey))
        assert survey.slug == SMALL_SPEC["slug"] and len(survey.questions) == len(SMALL_SPEC["questions"])
        assert (survey.run_by, survey.contact, survey.ethics_statement) == ("", "", "")
    assert differences(empty_app) == []


def test_role_offers_stored_as_invitations_become_role_offers_and_go_back_on_downgrade(empty_app):
    """0014 renames the purpose of the account links that offer a role; password links keep theirs."""
    init_db(empty_app)
    insert = text(
        "INSERT INTO account_links (token_hash, purpose, created_on, expires_at, used, mailed) "
        "VALUES (:hash, :purpose, '2026-01-02', '2026-01-09 00:00:00', false, false)"
    )
    purposes = text("SELECT token_hash, purpose FROM account_links ORDER BY token_hash")
    with empty_app.app_context():
        command.downgrade(alembic_config(), "0013")
        with db.engine.begin() as conn:
            conn.execute(insert, [{"hash": "a" * 64, "purpose": "invitation"}, {"hash": "b" * 64, "purpose": "reset"}])
        command.upgrade(alembic_config(), "head")
        with db.engine.connect() as conn:
            assert conn.execute(purposes).all() == [("a" * 64, "role_offer"), ("b" * 64, "reset")]
        command.downgrade(alembic_config(), "0013")
        with db.engine.connect() as conn:
            assert conn.execute(purposes).all() == [("a" * 64, "invitation"), ("b" * 64, "reset")]
        command.upgrade(alembic_config(), "head")
    assert differences(empty_app) == []


def test_api_tokens_come_with_0015_and_go_on_downgrade(empty_app):
    """0015 makes the tokens' two tables, which hold a token's digest, its surveys and its limits; the
    downgrade drops them (every token stops working), and upgrading again makes them empty."""
    init_db(empty_app)
    with empty_app.app_context():
        survey = create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
        survey_id = survey.id
        with db.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO users (id, username, password_hash, created_on) VALUES (7, 'alice', '!', '2026-01-02')"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO api_tokens (id, user_id, name, scope, token_hash, restricted, created_on, expires_on) "
                    "VALUES (1, 7, 'script', 'results', :hash, true, '2026-01-02', '2026-02-01')"
                ),
                {"hash": "c" * 64},
            )
            conn.execute(text("INSERT INTO api_token_surveys (token_id, survey_id) VALUES (1, :s)"), {"s": survey_id})
        db.session.remove()
        command.downgrade(alembic_config(), "0014")
    assert {"api_tokens", "api_token_surveys"}.isdisjoint(tables(empty_app))
    with empty_app.app_context():
        command.upgrade(alembic_config(), "head")
        with db.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM api_tokens")).scalar() == 0
    assert differences(empty_app) == []


def _answer_indexes(app) -> dict[str, list[str]]:
    with app.app_context():
        return {i["name"]: i["column_names"] for i in inspect(db.engine).get_indexes("answers")}


def test_answers_are_indexed_by_question_then_submission_from_0016_and_back_on_downgrade(empty_app):
    """0016 replaces the index (question, value) of ``answers`` by (question, submission, value), the
    regression's join; answers stored before it stay, and the downgrade puts the old index back."""
    init_db(empty_app)
    assert _answer_indexes(empty_app)["ix_answers_question_submission"] == ["question_id", "submission_id", "value"]
    assert "ix_answers_question_value" not in _answer_indexes(empty_app)
    with empty_app.app_context():
        survey = create_survey_from_spec(db.session, SMALL_SPEC)  # made at head: the model is head's
        db.session.commit()
        question_id = survey.questions[0].id
        db.session.remove()
        command.downgrade(alembic_config(), "0015")
    indexes = _answer_indexes(empty_app)
    assert indexes["ix_answers_question_value"] == ["question_id", "value"]
    assert "ix_answers_question_submission" not in indexes
    with empty_app.app_context():
        with db.engine.begin() as conn:
            conn.execute(
                text("INSERT INTO submissions (id, survey_id, submitted_on) VALUES (1, :s, '2026-01-02')"),
                {"s": survey.id},
            )
            conn.execute(
                text("INSERT INTO answers (submission_id, question_id, value) VALUES (1, :q, 1)"), {"q": question_id}
            )
        db.session.remove()
        command.upgrade(alembic_config(), "head")
        with db.engine.connect() as conn:
            assert conn.execute(text("SELECT submission_id, value FROM answers")).all() == [(1, 1)]
    assert "ix_answers_question_submission" in _answer_indexes(empty_app)
    assert differences(empty_app) == []


def test_bins_and_decimal_ranges_come_with_0017_and_round_outwards_on_downgrade(empty_app):
    """0017 adds a number question's bins and lets its range end between whole numbers; the
    downgrade drops the bins and rounds decimal ends outwards, so every report stays in range."""
    init_db(empty_app)
    question = {
        "key": "hours",
        "kind": "rr_number",
        "text": "Hours?",
        "minimum": 0.5,
        "maximum": 2.5,
        "bins": [1, 2],
        "privacy": {"design": "hybrid", "epsilon": 1},
    }
    with empty_app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "questions": [question]})
        db.session.commit()
        assert (survey.questions[0].minimum, survey.questions[0].bins) == (0.5, [1, 2])
        db.session.remove()
        command.downgrade(alembic_config(), "0016")
        with db.engine.connect() as conn:
            assert conn.execute(text("SELECT minimum, maximum FROM questions")).one() == (0, 3)
        assert "bins" not in {c["name"] for c in inspect(db.engine).get_columns("questions")}
        command.upgrade(alembic_config(), "head")
    assert differences(empty_app) == []


def test_init_db_adopts_a_database_made_before_migrations_and_fills_the_tallies(empty_app):
    legacy_database(empty_app)
    output = init_db(empty_app)
    assert "0001 → " in output
    assert differences(empty_app) == []
    with empty_app.app_context():
        survey = db.session.scalar(select(Survey))
        assert survey_counts(db.session, survey).submissions == 40
        assert tally_mismatches(db.session, survey) == []
        counted = recount(db.session, survey)
        assert sum(int(c.sum()) for c in counted.by_question.values()) == 40 * len(SMALL_SPEC["questions"])


def test_init_db_refuses_a_database_with_only_some_of_the_tables(empty_app):
    with empty_app.app_context(), db.engine.begin() as conn:
        conn.execute(text("CREATE TABLE users (id INTEGER PRIMARY KEY, username VARCHAR(80))"))
    result = empty_app.test_cli_runner().invoke(args=["init-db"])
    assert result.exit_code != 0
    assert "some of this app's tables but not all" in result.output
    assert "surveys" in result.output  # names what is missing
    assert tables(empty_app) == {"users"}  # nothing was changed


def test_commands_that_write_refuse_a_database_that_is_not_migrated(empty_app):
    runner = empty_app.test_cli_runner()
    for args in (["demo"], ["create-user", "bob", "--password", "long enough password"]):
        result = runner.invoke(args=args)
        assert result.exit_code != 0, args
        assert "init-db" in result.output
    assert tables(empty_app) == set()


def test_the_demo_on_a_migrated_database_has_tallies_that_match_its_rows(empty_app):
    init_db(empty_app)
    result = empty_app.test_cli_runner().invoke(args=["demo", "--respondents", "300", "--if-empty"])
    assert result.exit_code == 0, result.output
    with empty_app.app_context():
        surveys = db.session.scalars(select(Survey)).all()
        assert [s.slug for s in surveys] == ["health-and-habits", "asking-honestly"]
        for survey in surveys:
            assert survey_counts(db.session, survey).submissions == 300
            assert tally_mismatches(db.session, survey) == []


def test_nothing_but_the_migrations_creates_tables():
    """No code path may fall back on ``create_all()``: a table it made would have no migration."""
    offenders = []
    for path in [*ROOT.glob("survey/**/*.py"), *ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/*.py")]:
        source = path.read_text(encoding="utf-8")
        # a call, not a mention in ``backquotes`` in a docstring
        if path.name != "test_migrations.py" and re.search(r"(?<![`\w.])[\w.]+\.create_all\(", source):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_a_randomized_numbers_cells_are_gathered_one_row_per_code_by_0023(empty_app):
    """From 0023 a randomized number's report code (inside its grid) names its shard. Cells counted
    before it, spread over random shards, are gathered into that shard, holding their sum; every
    other cell (a yes/no's, a direct question's, the grid's ends) keeps its rows as they were."""
    init_db(empty_app)
    spec = {
        **SMALL_SPEC,
        "questions": [
            {"key": "used", "kind": "yes_no", "text": "Used?", "privacy": {"design": "warner", "p": 0.75}},
            {"key": "region", "kind": "direct", "text": "Region?", "options": ["north", "south"]},
            {
                "key": "drinks",
                "kind": "rr_number",
                "text": "Drinks?",
                "minimum": 0,
                "maximum": 30,
                "privacy": {"design": "hybrid", "epsilon": 1},
            },
        ],
    }
    rng = np.random.default_rng(23)
    with empty_app.app_context():
        survey = create_survey_from_spec(db.session, spec)
        db.session.commit()
        used, region, drinks = (q.id for q in survey.questions)
        db.session.remove()
        command.downgrade(alembic_config(), "0022")
        with db.engine.begin() as conn:
            for s in range(1, 201):  # stored as before 0023: each submission's cells in a random shard
                conn.execute(
                    text("INSERT INTO submissions (id, survey_id, submitted_on) VALUES (:s, :v, '2026-01-02')"),
                    {"s": s, "v": survey.id},
                )
                values = {
                    used: int(rng.integers(2)),
                    region: int(rng.integers(2)),
                    drinks: int(rng.choice([0, 7, 999, 1500, 2000])),
                }
                for q, v in values.items():
                    conn.execute(
                        text("INSERT INTO answers (submission_id, question_id, value) VALUES (:s, :q, :v)"),
                        {"s": s, "q": q, "v": v},
                    )
            conn.execute(text("DELETE FROM answer_tallies"))
            conn.execute(text("DELETE FROM day_tallies"))
            conn.execute(text("DELETE FROM pair_tallies"))
            conn.execute(text("DELETE FROM submission_tallies"))
            random_shard = "(a.submission_id * 7) % 16"
            conn.execute(
                text(
                    "INSERT INTO answer_tallies (question_id, value, shard, count) "
                    f"SELECT a.question_id, a.value, {random_shard}, count(*) "
                    f"FROM answers a GROUP BY a.question_id, a.value, {random_shard}"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO day_tallies (question_id, value, day, shard, count) "
                    f"SELECT a.question_id, a.value, '2026-01-02', {random_shard}, count(*) "
                    f"FROM answers a WHERE a.question_id IN (:u, :d) GROUP BY a.question_id, a.value, {random_shard}"
                ),
                {"u": used, "d": drinks},
            )
            conn.execute(
                text(
                    f"INSERT INTO pair_tallies (question_id, value, other_id, other_value, shard, count) "
                    f"SELECT a.question_id, a.value, b.question_id, b.value, {random_shard}, count(*) FROM answers a "
                    f"JOIN answers b ON b.submission_id = a.submission_id AND b.question_id > a.question_id "
                    f"WHERE NOT (a.question_id = :u AND b.question_id = :d) "
                    f"GROUP BY a.question_id, a.value, b.question_id, b.value, {random_shard}"
                ),
                {"u": used, "d": drinks},
            )
            conn.execute(
                text("INSERT INTO submission_tallies (survey_id, shard, count) VALUES (:v, 0, 200)"), {"v": survey.id}
            )
        # (the recount of today's code reads tables 0022 lacks: it checks the counts after the upgrade)
        command.upgrade(alembic_config(), "head")
        survey = db.session.get(Survey, survey.id)
        assert tally_mismatches(db.session, survey) == []  # the counts inserted above, gathered
        with db.engine.connect() as conn:
            for table in ("answer_tallies", "day_tallies"):
                rows = conn.execute(
                    text(f"SELECT value, shard FROM {table} WHERE question_id = :d"), {"d": drinks}
                ).all()
                for code in (999, 1500):
                    assert [s for v, s in rows if v == code] == [code % 16], (table, rows)
                assert len([s for v, s in rows if v in (0, 7, 2000)]) > 3  # ends and small codes: as they were
            pairs = conn.execute(
                text("SELECT value, other_value, shard FROM pair_tallies WHERE other_id = :d"), {"d": drinks}
            ).all()
            for group in (0, 1):
                assert [s for v, o, s in pairs if v == group and o == 999] == [999 % 16]
            used_rows = conn.execute(text("SELECT shard FROM answer_tallies WHERE question_id = :u"), {"u": used}).all()
            assert len(used_rows) > 2  # a yes/no's cells keep their random shards
    assert differences(empty_app) == []


def test_the_list_is_planned_at_its_declared_size_from_0026_and_not_after_downgrade(empty_app):
    """0026 gives PostgreSQL ``listed_ids``, declared at about 1,000 rows whatever the list's
    statistics say, and safe in a parallel plan; the downgrade takes it away (the code of 0025 reads
    the list directly). SQLite gets nothing."""
    init_db(empty_app)

    def declared() -> list[tuple[float, bool, str]]:
        with empty_app.app_context(), db.engine.connect() as conn:
            if conn.dialect.name != "postgresql":
                return []
            return conn.execute(
                text(
                    "SELECT p.prorows, p.proretset, p.proparallel FROM pg_proc p"
                    " JOIN pg_namespace n ON n.oid = p.pronamespace"
                    " WHERE p.proname = 'listed_ids' AND n.nspname = current_schema()"
                )
            ).all()

    postgresql = "postgresql" in empty_app.config["SQLALCHEMY_DATABASE_URI"]
    assert declared() == ([(1000.0, True, "s")] if postgresql else [])
    with empty_app.app_context():
        if postgresql:
            with db.engine.connect() as conn:
                assert conn.execute(text("SELECT listed_ids(ARRAY[3, 1, 2])")).scalars().all() == [3, 1, 2]
        db.session.remove()
        command.downgrade(alembic_config(), "0025")
    assert declared() == []
    with empty_app.app_context():
        command.upgrade(alembic_config(), "head")
    assert declared() == ([(1000.0, True, "s")] if postgresql else [])
    assert differences(empty_app) == []
