"""A sensitive question may let its respondents decline it ("prefer not to say").

Revision ID: 0019
Revises: 0018

``questions.decline``: whether a respondent may send the "declined" marker for this question
instead of a randomized report (only a randomized question may allow it). False for every existing
question: each stays as it was asked. A declined answer is stored as an answer whose value is
:data:`survey.domain.models.DECLINED`; no other column is needed.
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("questions") as batch:
        batch.add_column(sa.Column("decline", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("questions") as batch:
        batch.drop_column("decline")
