"""The users page: every account, and what an administrator does with them (survey.domain.users).

A new account and a new password come as a single-use link, e-mailed when the user has an address
and a mail server is configured, or else shown once on the answer to the post for the administrator
to pass on (survey.web.mailing). Non-administrators get a 404 from every view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import render_template
from flask_login import login_required

from survey.domain import users
from survey.domain.errors import DomainError
from survey.domain.models import User
from survey.platform.extensions import db

from ..common import commit_or_refuse, me, see_other
from ..mailing import Delivery, deliver_password_link
from . import bp
from .forms import CreateUserForm, UserActionForm


def _page(status: int = 200, *, form: CreateUserForm | None = None, delivery: Delivery | None = None, error: str = ""):
    return render_template(
        "admin/users.html",
        users=users.all_users(db.session, me()),
        form=form or CreateUserForm(formdata=None),
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

    def done(made: tuple[User, Any, str]):
        _, link, token = made
        delivery = deliver_password_link(link, token, admin)
        return _page(200, delivery=delivery)

    return commit_or_refuse(
        lambda: users.create_user(db.session, admin, form.username.data, form.email.data, form.is_admin.data),
        form=form,
        done=done,
        refused=lambda status, _: _page(status, form=form),
    )


def _action(change: Callable[[int | None], User], message: Callable[[User], str]):
    users.require_admin(me())
    form = UserActionForm()
    return commit_or_refuse(
        lambda: change(form.user_id.data),
        form=form,
        done=lambda user: see_other("admin.index", message(user)),
        refused=lambda status, error: _page(status, error=error.message if error else "Choose a user."),
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

    def done(made: tuple[User, Any, str]):
        _, link, token = made
        return _page(200, delivery=deliver_password_link(link, token, admin))

    def refused(status: int, error: DomainError | None):
        return _page(status, error=error.message if error else "Choose a user.")

    return commit_or_refuse(
        lambda: users.reset_link(db.session, admin, form.user_id.data), form=form, done=done, refused=refused
    )
