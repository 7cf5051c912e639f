"""What an administrator decides for the whole site (``site_settings``): for now, whether users who
are not administrators may invite someone without an account to make one.

Off by default. An invitation to make an account lets its inviter put a person of their choosing on
the site; where accounts are the site's own business (a university, a clinic), that is the
administrators' to decide. With the setting off, administrators still make accounts (on the users
page, or by inviting from a survey's sharing page), and everyone still shares surveys with
accounts that exist. The setting is read where an invitation is made *and* where its link is used,
so turning it off also stops the links ordinary users made before.

The functions take plain values and a session, and leave committing to the caller.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from survey.domain.models import SiteSettings, User

SETTINGS_ID = 1


def settings(session: Session) -> SiteSettings:
    """The site's settings: the stored row, or (none stored) one holding every default, not added."""
    return session.get(SiteSettings, SETTINGS_ID) or SiteSettings(id=SETTINGS_ID, members_invite_accounts=False)


def may_invite_accounts(session: Session, user: User | None) -> bool:
    """Whether ``user`` may invite someone to make an account: an enabled administrator always, any
    other enabled user only while the administrators allow it."""
    if user is None or user.disabled:
        return False
    return bool(user.is_admin) or bool(settings(session).members_invite_accounts)


def set_members_invite_accounts(session: Session, allowed: bool) -> SiteSettings:
    """Store the setting (the caller checks that an administrator asks)."""
    row = session.get(SiteSettings, SETTINGS_ID)
    if row is None:
        row = SiteSettings(id=SETTINGS_ID)
        session.add(row)
    row.members_invite_accounts = bool(allowed)
    return row
