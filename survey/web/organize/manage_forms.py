"""Forms of the management page, the spec import and the account page (Flask-WTF: each carries a CSRF token).

The forms check shape only (a number, a date, two equal passwords); the rules of the domain (a
closing date after the opening date, who may be added to a survey, the current password) are
checked by the domain functions, whose errors the forms put next to the input their path names
(:class:`survey.web.common.FormErrors`).
"""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import (
    BooleanField,
    DateField,
    IntegerField,
    PasswordField,
    RadioField,
    SelectChoice,
    StringField,
    TextAreaField,
)
from wtforms.validators import DataRequired, EqualTo, InputRequired, Length, NumberRange, Optional

from survey.domain.accounts.sharing import ROLE_DESCRIPTIONS
from survey.domain.accounts.sign_in import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from survey.domain.models import ACCESS_MODES
from survey.domain.responses.codes import MAX_CODES_PER_REQUEST

from ..common import FormErrors
from ..ids import IdField

ACCESS_LABELS = {
    "link": "Open link: anyone with the survey's link may answer, once or more",
    "invitation": "Invitations: each respondent needs a single-use code, sent as a personal link",
}


class DatesForm(FormErrors, FlaskForm):
    default_field = "closes_on"

    opens_on = DateField("First day answers are accepted", validators=[Optional()])
    closes_on = DateField("Last day answers are accepted", validators=[Optional()])


class AccessForm(FlaskForm):
    access = RadioField(
        "Who may answer",
        choices=[SelectChoice(mode, ACCESS_LABELS[mode]) for mode in ACCESS_MODES],
        validators=[InputRequired("Choose who may answer.")],
    )


class AutoCloseForm(FlaskForm):
    auto_close = BooleanField("Close the survey automatically once every randomized question reaches the target margin")


class InvitationsForm(FormErrors, FlaskForm):
    default_field = "count"

    count = IntegerField(
        "Number of new codes",
        default=10,
        validators=[
            InputRequired("Give the number of codes to make."),
            NumberRange(1, MAX_CODES_PER_REQUEST, f"Make 1 to {MAX_CODES_PER_REQUEST:,} codes at a time."),
        ],
    )


class AddMemberForm(FormErrors, FlaskForm):
    default_field = "username"

    username = StringField(
        "Username, e-mail address or name",
        validators=[DataRequired("Give a username, an e-mail address or a name."), Length(max=254)],
    )
    role = RadioField(
        "Role",
        choices=[SelectChoice(role, label) for role, label in ROLE_DESCRIPTIONS.items()],
        default="researcher",
        validators=[InputRequired("Choose a role.")],
    )


class RevokeForm(FlaskForm):
    code = StringField(validators=[DataRequired("Choose a code to revoke."), Length(max=60)])


class AddressForm(FormErrors, FlaskForm):
    default_field = "slug"

    slug = StringField("The survey's address", validators=[Length(max=200)])


class RemoveMemberForm(FlaskForm):
    user_id = IdField()


class WithdrawInvitationForm(FlaskForm):
    link_id = IdField()


class ImportForm(FlaskForm):
    file = FileField("A spec file (JSON)")
    text = TextAreaField("Or paste the spec", validators=[Optional()])


class PasswordForm(FormErrors, FlaskForm):
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
