"""Number questions: a whole number in a range the organizer sets, asked directly.

Revision ID: 0008
Revises: 0003

``questions.minimum`` and ``questions.maximum`` hold a number question's range (null for the other
kinds). An answer to a number question stores the number itself in ``answers.value``. Downgrading
deletes number questions first, with their answers and tallies (explicitly: SQLite does not enforce
the cascades), because the old schema has no range to check them against.
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("questions") as batch:
        batch.add_column(sa.Column("minimum", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("maximum", sa.Integer(), nullable=True))


def downgrade():
    numbers = "SELECT id FROM questions WHERE kind = 'number'"
    for table in ("answers", "answer_tallies", "options", "designs"):
        op.execute(f"DELETE FROM {table} WHERE question_id IN ({numbers})")
    op.execute("DELETE FROM questions WHERE kind = 'number'")
    with op.batch_alter_table("questions") as batch:
        batch.drop_column("maximum")
        batch.drop_column("minimum")
