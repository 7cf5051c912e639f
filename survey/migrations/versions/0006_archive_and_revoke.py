"""Revocable invitation codes, archived surveys, and designs exported as they were set.

Revision ID: 0006
Revises: 0005

``invitations.revoked`` marks a code the organizers withdrew before it was used. A revoked code is
also marked ``used``, so the statement that claims a code (``... AND used = false``) refuses it
as it is; the flag only lets the respondent and the organizers be told why. Codes that exist
before the upgrade were never revoked (``false``). Downgrading drops the flag and leaves revoked
codes used, so that no withdrawn code admits anyone again.

``designs.given`` keeps the privacy level as the organizer gave it when that was ε (``{"epsilon":
1.5}``), so that the exported spec says ε = 1.5 rather than the truth probability it implies.
Designs stored before the upgrade have none (``NULL``): they are exported by their parameters, as
before.

An archived survey is one more value of ``surveys.status`` ("archived", which fits its
``VARCHAR(10)``), so it needs no column; downgrading turns archived surveys back into closed ones,
the only state the old code knows them as.
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("invitations", sa.Column("revoked", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column("designs", sa.Column("given", sa.JSON(), nullable=True))


def downgrade():
    op.execute(sa.text("UPDATE surveys SET status = 'closed' WHERE status = 'archived'"))
    with op.batch_alter_table("designs", schema=None) as batch_op:
        batch_op.drop_column("given")
    with op.batch_alter_table("invitations", schema=None) as batch_op:
        batch_op.drop_column("revoked")
