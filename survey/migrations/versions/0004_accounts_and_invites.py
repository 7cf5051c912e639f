"""Administrators, disabled accounts, e-mail addresses, and single-use links for accounts.

Revision ID: 0004
Revises: 0006

``users`` gains ``email`` (optional, unique), ``is_admin`` and ``disabled`` (both false for the users
that exist: an administrator is named afterwards with ``flask --app survey make-admin``).

``account_links`` holds one row per invitation, first-password or reset link: a SHA-256 hash of
its random token (never the token), what it is for, whom it names, the survey and role an
invitation offers, when it expires and whether it was used. Downgrading drops the links (every
link dies) and the three columns.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email", sa.String(length=254), nullable=True))
        batch_op.add_column(sa.Column("is_admin", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column("disabled", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.create_unique_constraint(batch_op.f("uq_users_email"), ["email"])
    op.create_table(
        "account_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("purpose", sa.String(length=12), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("email", sa.String(length=254), nullable=True),
        sa.Column("name", sa.String(length=80), nullable=True),
        sa.Column("survey_id", sa.Integer(), nullable=True),
        sa.Column("role", sa.String(length=12), nullable=True),
        sa.Column("invited_by_id", sa.Integer(), nullable=True),
        sa.Column("created_on", sa.Date(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_account_links_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["invited_by_id"], ["users.id"], name=op.f("fk_account_links_invited_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["survey_id"], ["surveys.id"], name=op.f("fk_account_links_survey_id_surveys"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_account_links")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_account_links_token_hash")),
    )
    with op.batch_alter_table("account_links", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_account_links_user_id"), ["user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_account_links_survey_id"), ["survey_id"], unique=False)


def downgrade():
    with op.batch_alter_table("account_links", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_account_links_survey_id"))
        batch_op.drop_index(batch_op.f("ix_account_links_user_id"))
    op.drop_table("account_links")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_users_email"), type_="unique")
        batch_op.drop_column("disabled")
        batch_op.drop_column("is_admin")
        batch_op.drop_column("email")
