"""The submissions whose pairs of answers are not yet in the pair tallies.

Revision ID: 0024
Revises: 0023

From this revision a submission made on the survey page or through the API notes its id in
``pending_pairs`` instead of adding its pairs of answers to ``pair_tallies`` at once; a fold adds
them later, hundreds at a time, and deletes the rows (survey.domain.responses.pending_pairs). Every
reader adds the pairs of the listed submissions, so what the tallies mean does not change. The
upgrade starts with an empty list (every pair stored so far is counted); the downgrade folds what
is listed into the pair tallies first, then drops the table.
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pending_pairs",
        sa.Column("submission_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint("submission_id"),
    )


def downgrade() -> None:
    # the pairs alone: at this revision a listed submission is in the answer and day tallies already
    # (revision 0025 made the list hold those too, and its downgrade empties it)
    from survey.domain.responses import writes
    from survey.domain.responses.pending import add_submissions

    bind = op.get_bind()
    with sa.orm.Session(bind=bind) as session:
        taken = session.connection().execute(sa.text("DELETE FROM pending_pairs RETURNING submission_id"))
        add_submissions(session, [row[0] for row in taken], tallies=(writes.TALLY["pairs"],))
        session.flush()
    op.drop_table("pending_pairs")
