from flask_wtf import FlaskForm
from wtforms import PasswordField, RadioField, SelectField, SelectMultipleField, StringField, SubmitField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, EqualTo, Length

from survey.domain.accounts.account_links import MAX_EMAIL_LENGTH, MAX_USERNAME_LENGTH
from survey.domain.accounts.api_tokens import EXPIRY_CHOICES, MAX_NAME_LENGTH
from survey.domain.accounts.sign_in import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH

from ..common import FormErrors
from ..ids import IdField

#: The scopes of an API token, as the account page names them (survey.domain.models.API_SCOPES).
SCOPE_LABELS = {
    "results": "Read results and exports",
    "manage": "Manage surveys",
    "imports": "Submit imports",
}


class LoginForm(FlaskForm):
    username = StringField("Username", validators=[DataRequired(), Length(max=80)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=200)])
    submit = SubmitField("Sign in")


class ForgotPasswordForm(FlaskForm):
    """ "Forgot password?": the username or the e-mail address of one's account."""

    who = StringField(
        "Username or e-mail address",
        validators=[
            DataRequired("Give your username or your e-mail address."),
            Length(max=MAX_EMAIL_LENGTH, message=f"Use at most {MAX_EMAIL_LENGTH} characters."),
        ],
    )


class LogoutForm(FlaskForm):
    submit = SubmitField("Sign out")


class TakeRoleForm(FlaskForm):
    """Take up the role an invitation offers with the account one is signed in with (only its CSRF token)."""


class NewPasswordForm(FormErrors, FlaskForm):
    """A password chosen through a first-password or reset link."""

    default_field = "password"

    password = PasswordField(
        "Password",
        validators=[
            DataRequired("Choose a password."),
            Length(
                MIN_PASSWORD_LENGTH,
                MAX_PASSWORD_LENGTH,
                f"Use {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters.",
            ),
        ],
    )
    confirm = PasswordField(
        "Password, again",
        validators=[DataRequired("Type the password again."), EqualTo("password", "The two do not match.")],
    )


class PasswordForm(FormErrors, FlaskForm):
    """Change one's own password, on the account page (the current one first)."""

    default_field = "new_password"

    current_password = PasswordField(
        "Current password", validators=[DataRequired("Give your current password."), Length(max=MAX_PASSWORD_LENGTH)]
    )
    new_password = PasswordField(
        "New password",
        validators=[
            DataRequired("Give a new password."),
            Length(
                MIN_PASSWORD_LENGTH,
                MAX_PASSWORD_LENGTH,
                f"Use {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters.",
            ),
        ],
    )
    confirm = PasswordField(
        "New password, again",
        validators=[DataRequired("Type the new password again."), EqualTo("new_password", "The two do not match.")],
    )


class NewAccountForm(NewPasswordForm):
    """The account an invitation makes: a username (suggested) and a password."""

    default_field = "username"

    username = StringField(
        "Username",
        validators=[
            DataRequired("Choose a username."),
            Length(max=MAX_USERNAME_LENGTH, message=f"Use at most {MAX_USERNAME_LENGTH} characters."),
        ],
    )


class TokenForm(FormErrors, FlaskForm):
    """A new personal API token, on the account page: its name, scope, lifetime and surveys."""

    default_field = "name"

    name = StringField(
        "Name",
        validators=[
            DataRequired("Name the token (where it will be used)."),
            Length(max=MAX_NAME_LENGTH, message=f"Use at most {MAX_NAME_LENGTH} characters."),
        ],
    )
    scope = RadioField(
        "What it may do", choices=[SelectChoice(k, v) for k, v in SCOPE_LABELS.items()], default="results"
    )
    days = SelectField(
        "Valid for",
        choices=[SelectChoice(d, f"{d} days") for d in EXPIRY_CHOICES],
        coerce=int,
        default=EXPIRY_CHOICES[1],
    )
    #: Checked by the domain (the surveys the user can see), not by the form's choices.
    surveys = SelectMultipleField("Only these surveys", coerce=int, validate_choice=False)


class RevokeTokenForm(FlaskForm):
    token_id = IdField()
