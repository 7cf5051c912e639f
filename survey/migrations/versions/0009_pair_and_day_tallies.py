"""Running tallies of pairs of answers and of answers per day, for comparisons at any size.

Revision ID: 0009
Revises: 0008

``pair_tallies`` counts, per pair of questions of a survey of which one is randomized, how many
submissions reported each pair of values; ``day_tallies`` counts each randomized question's reported
values per day of submission. Both are kept in the submission's transaction, like
``answer_tallies``. The upgrade fills them from the stored answers (the same GROUP BY as
``flask recount``); the downgrade drops them.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

DIRECT = "('direct', 'number')"


def upgrade():
    op.create_table(
        "pair_tallies",
        sa.Column("question_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("other_id", sa.Integer(), nullable=False),
        sa.Column("other_value", sa.Integer(), nullable=False),
        sa.Column("shard", sa.SmallInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["question_id"], ["questions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["other_id"], ["questions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("question_id", "value", "other_id", "other_value", "shard"),
    )
    op.create_table(
        "day_tallies",
        sa.Column("question_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("shard", sa.SmallInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["question_id"], ["questions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("question_id", "value", "day", "shard"),
    )
    op.execute(
        f"""INSERT INTO pair_tallies (question_id, value, other_id, other_value, shard, count)
        SELECT a.question_id, a.value, b.question_id, b.value, 0, COUNT(*)
        FROM answers a
        JOIN answers b ON b.submission_id = a.submission_id AND b.question_id > a.question_id
        JOIN questions qa ON qa.id = a.question_id
        JOIN questions qb ON qb.id = b.question_id
        WHERE qa.kind <> 'number' AND qb.kind <> 'number'
          AND (qa.kind NOT IN {DIRECT} OR qb.kind NOT IN {DIRECT})
        GROUP BY a.question_id, a.value, b.question_id, b.value"""
    )
    op.execute(
        f"""INSERT INTO day_tallies (question_id, value, day, shard, count)
        SELECT a.question_id, a.value, s.submitted_on, 0, COUNT(*)
        FROM answers a
        JOIN submissions s ON s.id = a.submission_id
        JOIN questions q ON q.id = a.question_id
        WHERE q.kind NOT IN {DIRECT}
        GROUP BY a.question_id, a.value, s.submitted_on"""
    )


def downgrade():
    op.drop_table("day_tallies")
    op.drop_table("pair_tallies")
