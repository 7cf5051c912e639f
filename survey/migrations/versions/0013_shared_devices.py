"""A survey may be marked as answered on shared devices: the respondent's page then keeps nothing.

Revision ID: 0013
Revises: 0012

``surveys.shared_devices`` is off for every survey, existing ones included. With it on, the
respondent's page draws each report afresh (no per-browser memoization, whose secret would be
shared by everyone at one device), keeps nothing in the browser and clears itself for the next
person after sending (SECURITY.md, section 2).
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("surveys") as batch:
        batch.add_column(sa.Column("shared_devices", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("surveys") as batch:
        batch.drop_column("shared_devices")
