"""The signed-in user's own account: change one's password (which signs out every other session),
and one's personal API tokens (make one, shown once; list them with their last use; revoke one)."""

from __future__ import annotations

from flask import make_response, render_template, request
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required
from wtforms.fields.choices import SelectChoice

from survey.domain.accounts.access import visible_surveys
from survey.domain.accounts.api_tokens import create_token, is_live, revoke_token, tokens_of
from survey.domain.accounts.sharing import change_password
from survey.platform.extensions import db

from ..common import commit_or_refuse, me, see_other
from . import bp
from .forms import SCOPE_LABELS, PasswordForm, RevokeTokenForm, TokenForm


def _page(
    status: int = 200,
    *,
    form: PasswordForm | None = None,
    token_form: TokenForm | None = None,
    new_token: str | None = None,
) -> ResponseReturnValue:
    """The account page: the password form, and the tokens section (with a new token, once)."""
    user = me()
    surveys = [*visible_surveys(db.session, user), *visible_surveys(db.session, user, archived=True)]
    token_form = token_form or TokenForm(formdata=None)
    token_form.surveys.choices = [SelectChoice(s.id, s.title) for s in surveys]
    page = render_template(
        "auth/account.html",
        form=form or PasswordForm(formdata=None),
        token_form=token_form,
        revoke_form=RevokeTokenForm(formdata=None),
        tokens=tokens_of(db.session, user),
        is_live=is_live,
        scope_labels=SCOPE_LABELS,
        new_token=new_token,
    )
    response = make_response(page, status)
    if new_token:  # shown once: no cache keeps the page that shows it
        response.headers["Cache-Control"] = "no-store"
    return response


@bp.route("/account", methods=["GET", "POST"])
@login_required
def account():
    """Change one's own password."""
    form = PasswordForm()
    if request.method == "GET":
        return _page()
    return commit_or_refuse(
        lambda: change_password(
            db.session, me(), form.current_password.data, form.new_password.data, keep_token=current_user.get_id()
        ),
        form=form,
        done=lambda _: see_other("auth.account", "Your password was changed, and you were signed out everywhere else."),
        refused=lambda status, _: _page(status, form=form),
    )


@bp.post("/account/tokens")
@login_required
def create_api_token():
    """Make a personal API token; the page that answers shows it, once (nothing else ever holds it:
    it is not flashed, which would put it in the session cookie)."""
    form = TokenForm()
    return commit_or_refuse(
        lambda: create_token(
            db.session, me(), form.name.data, form.scope.data, form.days.data, survey_ids=form.surveys.data
        ),
        form=form,
        done=lambda made: _page(new_token=made[1]),
        refused=lambda status, _: _page(status, token_form=form),
    )


@bp.post("/account/tokens/revoke")
@login_required
def revoke_api_token():
    """Revoke one of one's tokens: its next request is refused."""
    form = RevokeTokenForm()
    return commit_or_refuse(
        lambda: revoke_token(db.session, me(), form.token_id.data),
        form=form,
        done=lambda token: see_other("auth.account", f"The token “{token.name}” was revoked.", anchor="tokens"),
        refused=lambda status, _: _page(status),
    )
