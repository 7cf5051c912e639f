"""Revocable sign-in sessions, and memberships that wait for the invited user's consent.

Revision ID: 0003
Revises: 0002

``login_sessions`` holds one row per signed-in session: a hash of the cookie's random token, the
user and a date. Upgrading signs everyone out (old cookies carry a user id, which names no session).

``memberships.pending`` marks a role offered but not yet accepted. Memberships that exist before the
upgrade were granted under the old rules and keep working (``false``); downgrading deletes the
pending ones first, because the old schema would read them as granted.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "login_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_on", sa.Date(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_login_sessions_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_sessions")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_login_sessions_token_hash")),
    )
    with op.batch_alter_table("login_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_sessions_user_id"), ["user_id"], unique=False)
    op.add_column("memberships", sa.Column("pending", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade():
    op.execute(sa.text("DELETE FROM memberships WHERE pending = :yes").bindparams(yes=True))
    with op.batch_alter_table("memberships", schema=None) as batch_op:
        batch_op.drop_column("pending")
    with op.batch_alter_table("login_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_sessions_user_id"))
    op.drop_table("login_sessions")
