"""The signed-in user's own account: change one's password (which signs out every other session)."""

from __future__ import annotations

from flask import render_template, request
from flask_login import current_user, login_required

from survey.domain.accounts.sharing import change_password
from survey.platform.extensions import db

from ..common import commit_or_refuse, me, see_other
from . import bp
from .forms import PasswordForm


@bp.route("/account", methods=["GET", "POST"])
@login_required
def account():
    """Change one's own password."""
    form = PasswordForm()
    if request.method == "GET":
        return render_template("auth/account.html", form=form)
    return commit_or_refuse(
        lambda: change_password(
            db.session, me(), form.current_password.data, form.new_password.data, keep_token=current_user.get_id()
        ),
        form=form,
        done=lambda _: see_other("auth.account", "Your password was changed, and you were signed out everywhere else."),
        refused=lambda status, _: (render_template("auth/account.html", form=form), status),
    )
