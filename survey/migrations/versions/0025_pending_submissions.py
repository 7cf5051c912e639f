"""The list of submissions waiting for the fold holds those not yet in the answer and day tallies too.

Revision ID: 0025
Revises: 0024

From this revision a new submission adds at once only to the submission tally; its answer, day and
pair tallies are added by the fold (survey.domain.responses.pending), and every reader adds the
listed submissions. The list is renamed for what it now holds, ``pending_pairs`` →
``pending_submissions``. The submissions listed before the upgrade are already in the answer and
day tallies, so the upgrade adds their pairs alone and empties the list: the fold must never add
their answers twice. The downgrade adds what the listed submissions owe to all three tallies, so the
older code starts from an empty list.

The two codes' lists mean different things, so no worker of the older code may run once this
revision is applied (it would list submissions whose answers it had counted): stop the old workers,
migrate, start the new ones (docs/deploy.md).
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def _take_all(bind: sa.engine.Connection, table: str) -> list[int]:
    return [row[0] for row in bind.execute(sa.text(f"DELETE FROM {table} RETURNING submission_id"))]


def upgrade() -> None:
    from survey.domain.responses import writes
    from survey.domain.responses.pending import add_submissions

    bind = op.get_bind()
    op.rename_table("pending_pairs", "pending_submissions")
    if bind.dialect.name == "postgresql":
        op.execute("ALTER INDEX pk_pending_pairs RENAME TO pk_pending_submissions")
    with sa.orm.Session(bind=bind) as session:
        add_submissions(
            session, _take_all(session.connection(), "pending_submissions"), tallies=(writes.TALLY["pairs"],)
        )
        session.flush()


def downgrade() -> None:
    from survey.domain.responses import writes
    from survey.domain.responses.pending import add_submissions

    bind = op.get_bind()
    with sa.orm.Session(bind=bind) as session:
        owed = tuple(writes.TALLY[name] for name in ("answers", "days", "pairs"))  # (named: what 0025 meant)
        add_submissions(session, _take_all(session.connection(), "pending_submissions"), tallies=owed)
        session.flush()
    if bind.dialect.name == "postgresql":
        op.execute("ALTER INDEX pk_pending_submissions RENAME TO pk_pending_pairs")
    op.rename_table("pending_submissions", "pending_pairs")
