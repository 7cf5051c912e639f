"""Number questions: bins the organizer sets, and ranges with decimal ends.

Revision ID: 0017
Revises: 0016

``questions.bins`` holds a number question's bin edges (a JSON list of numbers strictly inside its
range; null for no bins, and for the other kinds). ``questions.minimum`` and ``questions.maximum``
become floating point, so a randomized number's range can end between whole numbers (0.5 to 2.5
hours); whole ends read back as whole numbers (:class:`survey.domain.models.RangeEnd`). Downgrading
drops the bins and rounds decimal ends outwards (down for the minimum, up for the maximum), so
every stored report still lies in its range.
"""

import math

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("questions") as batch:
        batch.add_column(sa.Column("bins", sa.JSON(), nullable=True))
        batch.alter_column("minimum", existing_type=sa.Integer(), type_=sa.Float(), existing_nullable=True)
        batch.alter_column("maximum", existing_type=sa.Integer(), type_=sa.Float(), existing_nullable=True)


def downgrade():
    # rounded in Python: SQLite may lack floor() and ceil(), and PostgreSQL's cast to integer rounds
    connection = op.get_bind()
    rows = connection.execute(sa.text("SELECT id, minimum, maximum FROM questions WHERE minimum IS NOT NULL"))
    for question_id, low, high in rows.fetchall():
        connection.execute(
            sa.text("UPDATE questions SET minimum = :low, maximum = :high WHERE id = :id"),
            {"low": math.floor(low), "high": math.ceil(high), "id": question_id},
        )
    with op.batch_alter_table("questions") as batch:
        batch.alter_column("maximum", existing_type=sa.Float(), type_=sa.Integer(), existing_nullable=True)
        batch.alter_column("minimum", existing_type=sa.Float(), type_=sa.Integer(), existing_nullable=True)
        batch.drop_column("bins")
