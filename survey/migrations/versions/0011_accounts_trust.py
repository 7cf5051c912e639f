"""Accounts that reach only whom they were meant for: look-alike usernames, a site setting, send quotas.

Revision ID: 0011
Revises: 0004

- ``users.username_key``: a SHA-256 hash of the username's confusable skeleton
  (survey.domain.accounts.usernames), unique, so that ``dеmo`` (a Cyrillic е) cannot sit beside ``demo``.
  Existing users get theirs here; of two existing look-alikes the older keeps the key and the newer
  gets none (it stays as it is, but no new look-alike of it can be made).
- ``account_links.mailed``: the link reached its address by e-mail and was shown to nobody. Only such
  a link gives the account it makes that address. False for every existing link: nothing proved
  that whoever holds one reads the address it names.
- ``site_settings``: what an administrator decides for the site (one row); no row means every
  default, so ordinary users no longer invite new accounts until an administrator allows it.
- ``send_quotas``: how many invitations and e-mails each user made in the current window.

Downgrading drops all four.
"""

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0004"
branch_labels = None
depends_on = None


def _digest(name: str) -> str:
    from survey.domain.accounts.usernames import username_key

    return hashlib.sha256(username_key(name).encode()).hexdigest()


def upgrade():
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("username_key", sa.String(length=64), nullable=True))
    connection = op.get_bind()
    users = sa.table("users", sa.column("id", sa.Integer), sa.column("username", sa.String), sa.column("username_key"))
    taken: set[str] = set()
    for user_id, username in connection.execute(sa.select(users.c.id, users.c.username).order_by(users.c.id)):
        key = _digest(username)
        if key not in taken:
            taken.add(key)
            connection.execute(sa.update(users).where(users.c.id == user_id).values(username_key=key))
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_unique_constraint(batch_op.f("uq_users_username_key"), ["username_key"])
    with op.batch_alter_table("account_links", schema=None) as batch_op:
        batch_op.add_column(sa.Column("mailed", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.create_table(
        "site_settings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("members_invite_accounts", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_site_settings")),
    )
    op.create_table(
        "send_quotas",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("window_number", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_send_quotas_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", "window_number", name=op.f("pk_send_quotas")),
    )


def downgrade():
    op.drop_table("send_quotas")
    op.drop_table("site_settings")
    with op.batch_alter_table("account_links", schema=None) as batch_op:
        batch_op.drop_column("mailed")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_users_username_key"), type_="unique")
        batch_op.drop_column("username_key")
