"""Answers indexed by question, then submission, with the value: a regression reads only the index.

Revision ID: 0016
Revises: 0015

A regression counts the covariate patterns by joining one question's answers to another's on the
submission (:func:`survey.domain.results.analysis.pattern_counts`). With ``(question_id, value)``
PostgreSQL found each question's rows by a bitmap heap scan of ``answers`` and hashed them:
1.85–4.9 s at a million submissions. ``(question_id, submission_id, value)`` hands each question's
answers over in submission order with their values, from the index alone, so the join is a merge of
sorted index scans. It replaces ``(question_id, value)``: every lookup by question that index served
this one serves too, and a submission keeps writing two indexes of ``answers`` besides its key, not
three (``benchmarks/scale.md`` measures both, and submissions per second with each).

Building the index takes a lock that holds submissions off while it runs (seconds per million
answers). The downgrade puts the old index back.
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.create_index("ix_answers_question_submission", ["question_id", "submission_id", "value"], unique=False)
        batch_op.drop_index("ix_answers_question_value")


def downgrade():
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.create_index("ix_answers_question_value", ["question_id", "value"], unique=False)
        batch_op.drop_index("ix_answers_question_submission")
