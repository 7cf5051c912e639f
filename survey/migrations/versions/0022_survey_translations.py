"""A survey's own texts in more languages than its first: ``survey_translations``.

Revision ID: 0022
Revises: 0021

One row per survey, language and text (``path``: "title", "q:<key>:text", "q:<key>:option:<code>",
...; survey.domain.surveys.content_translations), holding the organizer's translation and the
English it was made from (``source``: a translation whose English changed since is stale). Surveys
made before it have none: they stay in English. Nothing about a respondent's language is stored.
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "survey_translations",
        sa.Column(
            "survey_id", sa.Integer(), sa.ForeignKey("surveys.id", ondelete="CASCADE"), primary_key=True, nullable=False
        ),
        sa.Column("language", sa.String(8), primary_key=True, nullable=False),
        sa.Column("path", sa.String(80), primary_key=True, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
    )


def downgrade():
    op.drop_table("survey_translations")
