"""Responses collected elsewhere: the uploads they came in with, and which submissions came so.

Revision ID: 0020
Revises: 0019

``imports``: one row per upload of responses collected on paper, by telephone or in another tool
(survey.domain.responses.imports): its survey, the SHA-256 of its normalized rows (unique per
survey, so the same rows uploaded twice are added once), how many rows, the day and the user.
``submissions.import_id``: the upload a submission came in with; NULL for every web submission,
existing ones included.
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "imports",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("survey_id", sa.Integer(), sa.ForeignKey("surveys.id", ondelete="CASCADE"), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("imported_on", sa.Date(), nullable=False),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.UniqueConstraint("survey_id", "sha256"),
    )
    op.create_index("ix_imports_survey_id", "imports", ["survey_id"])
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("import_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_submissions_import_id_imports", "imports", ["import_id"], ["id"], ondelete="CASCADE"
        )


def downgrade():
    with op.batch_alter_table("submissions") as batch:
        batch.drop_constraint("fk_submissions_import_id_imports", type_="foreignkey")
        batch.drop_column("import_id")
    op.drop_index("ix_imports_survey_id", "imports")
    op.drop_table("imports")
