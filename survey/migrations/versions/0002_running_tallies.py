"""Running tallies: the counts estimates read, kept in each submission's transaction.

Revision ID: 0002
Revises: 0001

A database that already holds answers gets its tallies from one GROUP BY over them here, so the
estimates read from the tallies equal those the GROUP BY gave before the upgrade.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "submission_tallies",
        sa.Column("survey_id", sa.Integer(), nullable=False),
        sa.Column("shard", sa.SmallInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["survey_id"], ["surveys.id"], name=op.f("fk_submission_tallies_survey_id_surveys"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("survey_id", "shard", name=op.f("pk_submission_tallies")),
    )
    op.create_table(
        "answer_tallies",
        sa.Column("question_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("shard", sa.SmallInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["question_id"], ["questions.id"], name=op.f("fk_answer_tallies_question_id_questions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("question_id", "value", "shard", name=op.f("pk_answer_tallies")),
    )
    op.execute(
        "INSERT INTO submission_tallies (survey_id, shard, count) "
        "SELECT survey_id, 0, count(*) FROM submissions GROUP BY survey_id"
    )
    op.execute(
        "INSERT INTO answer_tallies (question_id, value, shard, count) "
        "SELECT question_id, value, 0, count(*) FROM answers GROUP BY question_id, value"
    )


def downgrade():
    op.drop_table("answer_tallies")
    op.drop_table("submission_tallies")
