"""Coded submissions wait to be released in batches; receipts make a resend safe.

Revision ID: 0012
Revises: 0011

``held_submissions`` keeps a submission to a survey by invitation until a batch of them is released
into ``submissions`` together (survey/domain/responses/mixing.py), so that nothing in the database ties a code
to the answers it admitted. ``submission_receipts`` keeps the SHA-256 hash of each stored
submission's key for a few days, so that a resend is answered "already received" and stored once.
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "held_submissions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("survey_id", sa.Integer(), nullable=False),
        sa.Column("held_on", sa.Date(), nullable=False),
        sa.Column("answers", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["survey_id"], ["surveys.id"], name=op.f("fk_held_submissions_survey_id_surveys"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_held_submissions")),
    )
    op.create_index(op.f("ix_held_submissions_survey_id"), "held_submissions", ["survey_id"])
    op.create_table(
        "submission_receipts",
        sa.Column("survey_id", sa.Integer(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("received_on", sa.Date(), nullable=False),
        sa.ForeignKeyConstraint(
            ["survey_id"], ["surveys.id"], name=op.f("fk_submission_receipts_survey_id_surveys"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("survey_id", "key_hash", name=op.f("pk_submission_receipts")),
    )
    op.create_index(op.f("ix_submission_receipts_received_on"), "submission_receipts", ["received_on"])


def downgrade():
    op.drop_index(op.f("ix_submission_receipts_received_on"), table_name="submission_receipts")
    op.drop_table("submission_receipts")
    op.drop_index(op.f("ix_held_submissions_survey_id"), table_name="held_submissions")
    op.drop_table("held_submissions")
