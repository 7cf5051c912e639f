"""Forms of the survey's team on the management page: share it (offer a role), remove a member,
withdraw a role offer's link."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import RadioField, SelectChoice, StringField
from wtforms.validators import DataRequired, InputRequired, Length

from survey.domain.accounts.sharing import ROLE_DESCRIPTIONS

from ..common import FormErrors
from ..ids import IdField


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


class RemoveMemberForm(FlaskForm):
    user_id = IdField()


class WithdrawOfferForm(FlaskForm):
    link_id = IdField()
