"""An open survey may close itself once its live intervals are within the target margin.

Revision ID: 0010
Revises: 0009

``surveys.auto_close`` is off for every survey, existing ones included: closing automatically is
something an organizer turns on.
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("surveys") as batch:
        batch.add_column(sa.Column("auto_close", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("surveys") as batch:
        batch.drop_column("auto_close")
