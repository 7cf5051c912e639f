"""Closing automatically checks the target margin when a count is due, not after every submission.

Revision ID: 0018
Revises: 0017

``surveys.auto_close_due``: the number of stored submissions at which the survey set to close by
itself is next checked for precision (survey.domain.results.live.close_if_precise). 0 for every
survey, existing ones included: the next submission checks, and sets the next count.
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("surveys") as batch:
        batch.add_column(sa.Column("auto_close_due", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade():
    with op.batch_alter_table("surveys") as batch:
        batch.drop_column("auto_close_due")
