"""Who is asking: who runs a survey, how to reach them, and its consent or ethics statement.

Revision ID: 0005
Revises: 0010

Three texts on ``surveys``, shown to respondents on the survey, privacy and thank-you pages. Surveys
that exist before the upgrade get empty texts (the pages then show none of them); downgrading drops
the columns and what they held.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("surveys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_by", sa.String(length=200), server_default=sa.text("''"), nullable=False))
        batch_op.add_column(sa.Column("contact", sa.String(length=300), server_default=sa.text("''"), nullable=False))
        batch_op.add_column(sa.Column("ethics_statement", sa.Text(), server_default=sa.text("''"), nullable=False))


def downgrade():
    with op.batch_alter_table("surveys", schema=None) as batch_op:
        batch_op.drop_column("ethics_statement")
        batch_op.drop_column("contact")
        batch_op.drop_column("run_by")
