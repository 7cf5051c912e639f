"""On PostgreSQL, the submissions listed for the fold are read through a function that tells the
planner how many to expect.

Revision ID: 0026
Revises: 0025

The list of submissions awaiting the fold (``pending_submissions``) is nearly empty at every moment,
so whatever statistics a vacuum or an analyze leaves on it (autovacuum's, about once a minute on a
default server) describe an accident: taken while it held nothing, they say "empty" until the next,
and the planner then puts the list inside nested loops. A read of a pair of questions with 1,000
submissions listed scanned the list once per listed submission (3.3 s instead of about 20 ms), and the
fold's delete probed the whole list once per row of its batch (105 ms instead of 37 ms);
benchmarks/fold_readers.md.

``listed_ids(ids)`` returns the ids it is given, one per row, and declares about 1,000 of them
(``ROWS``), which the planner takes whatever the list's statistics say. Its callers gather the ids in
the statement that reads them (``ARRAY(SELECT ...)``, computed once, in that statement's snapshot: a
submission is then in the stored tallies or in the list, never both, never neither), so the
function reads no table itself. PL/pgSQL, because the planner would inline a SQL function's body and
lose the declared size; ``PARALLEL SAFE``, because a function that is not (the default) keeps every
statement that calls it from a parallel plan.

SQLite keeps no statistics of this kind and gets nothing here.
"""

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

#: About what the list holds under load: a fold interval of a busy host's submissions.
ROWS = 1000


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        f"""
        CREATE FUNCTION listed_ids(ids integer[]) RETURNS SETOF integer
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ROWS {ROWS} AS $$
        BEGIN
            RETURN QUERY SELECT unnest(ids);
        END
        $$
        """
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION listed_ids(integer[])")
