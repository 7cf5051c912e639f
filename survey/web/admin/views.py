"""The users page: every account, what an administrator does with them (survey.domain.accounts.users), and
the site's setting of who may invite people to make accounts (survey.domain.accounts.site).

A new account and a new password come as a single-use link, e-mailed when the user has an address
and a mail server is configured, or else shown once on the answer to the post for the administrator
to pass on (survey.web.mailing). Non-administrators get a 404 from every view.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import render_template
from flask_login import login_required

from survey.domain.accounts import users
from survey.domain.errors import DomainError
from survey.domain.models import User
from survey.platform.extensions import db

from ..common import commit_or_refuse, localized, me, see_other
from ..mailing import Delivery, Outgoing, deliver, prepare_password_link, send_limit
from . import bp
from .forms import CreateUserForm, SettingsForm, UserActionForm


def _page(status: int = 200, *, form: CreateUserForm | None = None, delivery: Delivery | None = None, error: str = ""):
    allowed = users.members_invite_accounts(db.session, me())
    return render_template(
        "admin/users.html",
        users=users.all_users(db.session, me()),
        form=form or CreateUserForm(formdata=None),
        settings_form=SettingsForm(formdata=None, data={"members_invite_accounts": allowed}),
        members_invite_accounts=allowed,
        delivery=delivery,
        action_error=error,
    ), status


@bp.get("/users")
@login_required
def index():
    users.require_admin(me())
    return _page()


@bp.post("/users")
@login_required
def create():
    users.require_admin(me())
    form = CreateUserForm()
    admin = me()

    def create_account() -> Outgoing:
        _, link, token = users.create_user(
            db.session, admin, form.username.data, form.email.data, form.is_admin.data, quota=send_limit()
        )
        return prepare_password_link(link, token, admin)

    return commit_or_refuse(
        create_account,
        form=form,
        done=lambda outgoing: _page(200, delivery=deliver(outgoing)),
        refused=lambda status, _: _page(status, form=form),
    )


def _action(change: Callable[[int | None], User], message: Callable[[User], str]):
    users.require_admin(me())
    form = UserActionForm()
    return commit_or_refuse(
        lambda: change(form.user_id.data),
        form=form,
        done=lambda user: see_other("admin.index", message(user)),
        refused=lambda status, error: _page(status, error=localized(error) if error else "Choose a user."),
    )


@bp.post("/users/disable")
@login_required
def disable():
    return _action(
        lambda user_id: users.set_disabled(db.session, me(), user_id, True),
        lambda user: f"{user.username} is disabled: they are signed out and cannot sign in.",
    )


@bp.post("/users/enable")
@login_required
def enable():
    return _action(
        lambda user_id: users.set_disabled(db.session, me(), user_id, False),
        lambda user: f"{user.username} can sign in again.",
    )


@bp.post("/users/make-admin")
@login_required
def make_admin():
    return _action(
        lambda user_id: users.set_admin(db.session, me(), user_id, True),
        lambda user: f"{user.username} is now an administrator.",
    )


@bp.post("/users/remove-admin")
@login_required
def remove_admin():
    return _action(
        lambda user_id: users.set_admin(db.session, me(), user_id, False),
        lambda user: f"{user.username} is no longer an administrator.",
    )


@bp.post("/users/password-link")
@login_required
def password_link():
    """A link for the user to choose a new password (or their first): e-mailed, or shown once here."""
    users.require_admin(me())
    form = UserActionForm()
    admin = me()

    def make_link() -> Outgoing:
        _, link, token = users.reset_link(db.session, admin, form.user_id.data, quota=send_limit())
        return prepare_password_link(link, token, admin)

    def refused(status: int, error: DomainError | None):
        return _page(status, error=localized(error) if error else "Choose a user.")

    return commit_or_refuse(
        make_link, form=form, done=lambda outgoing: _page(200, delivery=deliver(outgoing)), refused=refused
    )


@bp.post("/settings")
@login_required
def settings():
    """Whether users who are not administrators may invite people to make accounts."""
    users.require_admin(me())
    form = SettingsForm()
    return commit_or_refuse(
        lambda: users.set_members_invite_accounts_by(db.session, me(), bool(form.members_invite_accounts.data)),
        form=form,
        done=lambda allowed: see_other(
            "admin.index",
            "Users who are not administrators may now invite people to make accounts."
            if allowed
            else "Only administrators may now invite people to make accounts.",
            anchor="settings",
        ),
        refused=lambda status, error: _page(status, error=localized(error) if error else "Choose a setting."),
    )
