"""Personal API tokens: a user's named, scoped, expiring tokens, stored as hashes.

Revision ID: 0015
Revises: 0014

``api_tokens`` holds one row per token (its SHA-256 digest, never the token), and
``api_token_surveys`` the surveys a restricted token may reach. The downgrade drops both: every
token stops working.
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("scope", sa.String(length=12), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("restricted", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_on", sa.Date(), nullable=False),
        sa.Column("expires_on", sa.Date(), nullable=False),
        sa.Column("last_used_on", sa.Date(), nullable=True),
        sa.Column("revoked", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_api_tokens_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_user_id"), ["user_id"], unique=False)
    op.create_table(
        "api_token_surveys",
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.Column("survey_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["token_id"], ["api_tokens.id"], name=op.f("fk_api_token_surveys_token_id_api_tokens"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["survey_id"], ["surveys.id"], name=op.f("fk_api_token_surveys_survey_id_surveys"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("token_id", "survey_id", name=op.f("pk_api_token_surveys")),
    )
    with op.batch_alter_table("api_token_surveys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_token_surveys_survey_id"), ["survey_id"], unique=False)


def downgrade():
    op.drop_table("api_token_surveys")
    op.drop_table("api_tokens")
