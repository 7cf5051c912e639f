"""Forms of the respondent codes on the management page: make codes, revoke one."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import IntegerField, StringField
from wtforms.validators import DataRequired, InputRequired, Length, NumberRange

from survey.domain.responses.codes import MAX_CODES_PER_REQUEST

from ..common import FormErrors


class CodesForm(FormErrors, FlaskForm):
    default_field = "count"

    count = IntegerField(
        "Number of new codes",
        default=10,
        validators=[
            InputRequired("Give the number of codes to make."),
            NumberRange(1, MAX_CODES_PER_REQUEST, f"Make 1 to {MAX_CODES_PER_REQUEST:,} codes at a time."),
        ],
    )


class RevokeForm(FlaskForm):
    code = StringField(validators=[DataRequired("Choose a code to revoke."), Length(max=60)])
