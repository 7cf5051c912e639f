"""An account link that offers a role on a survey is a role offer: its purpose is ``role_offer``.

Revision ID: 0014
Revises: 0013

The purpose was ``invitation``, the name respondent codes also went by; only the stored value
changes (``account_links.purpose`` is a String(12), with no constraint on its values). Links
already sent keep working: the token is the link, and its row only changes its purpose. The
downgrade gives them back the old name.
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade():
    op.execute("UPDATE account_links SET purpose = 'role_offer' WHERE purpose = 'invitation'")


def downgrade():
    op.execute("UPDATE account_links SET purpose = 'invitation' WHERE purpose = 'role_offer'")
