"""A question may be one arm of a split ballot, and may be randomized with the respondent's own coins.

Revision ID: 0021
Revises: 0020

``questions.arm_group``: the name of the split ballot the question is an arm of (None for an
ordinary question); ``questions.arm_share``: the probability that a respondent's browser assigns
them this arm. The arms of a group are consecutive questions whose shares sum to 1; each respondent
answers exactly one of them (survey.domain.surveys.arms). Existing questions are in no group.

``questions.own_coin``: the respondent randomizes with their own coins or die and reports what they
say (survey.privacy.physical); the page draws nothing. False for every existing question.
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("questions") as batch:
        batch.add_column(sa.Column("arm_group", sa.String(length=40), nullable=True))
        batch.add_column(sa.Column("arm_share", sa.Float(), nullable=True))
        batch.add_column(sa.Column("own_coin", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("questions") as batch:
        batch.drop_column("own_coin")
        batch.drop_column("arm_share")
        batch.drop_column("arm_group")
