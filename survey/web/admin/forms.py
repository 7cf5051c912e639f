"""Forms of the users page (Flask-WTF: each carries a CSRF token). They check shape only; the rules
(a free username, a real address, not disabling oneself) are survey.domain.accounts.users'."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, StringField
from wtforms.validators import DataRequired, Length, Optional

from survey.domain.accounts.account_links import MAX_EMAIL_LENGTH, MAX_USERNAME_LENGTH

from ..common import FormErrors
from ..ids import IdField


class CreateUserForm(FormErrors, FlaskForm):
    default_field = "username"

    username = StringField(
        "Username",
        validators=[
            DataRequired("Give a username."),
            Length(max=MAX_USERNAME_LENGTH, message=f"Use at most {MAX_USERNAME_LENGTH} characters."),
        ],
    )
    email = StringField(
        "E-mail address (optional)",
        validators=[Optional(), Length(max=MAX_EMAIL_LENGTH, message="This address is too long.")],
    )
    is_admin = BooleanField("Administrator: may manage users, like you")


class UserActionForm(FlaskForm):
    """One button on one user's row (disable, enable, new password link, administrator's role)."""

    user_id = IdField()


class SettingsForm(FlaskForm):
    """The site's settings (survey.domain.accounts.site)."""

    members_invite_accounts = BooleanField(
        "Users who are not administrators may invite people without an account to make one"
    )
