"""Forms of the survey's lifecycle on the management page (dates, access, closing by itself, address)
and of the spec import (Flask-WTF: each carries a CSRF token).

The forms check shape only (a date, a choice); the rules of the domain (a closing date after the
opening date, a free address) are checked by the domain functions, whose errors the forms put next
to the input their path names (:class:`survey.web.common.FormErrors`).
"""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import BooleanField, DateField, RadioField, SelectChoice, StringField, TextAreaField
from wtforms.validators import InputRequired, Length, Optional

from survey.domain.models import ACCESS_MODES

from ..common import FormErrors

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


class AddressForm(FormErrors, FlaskForm):
    default_field = "slug"

    slug = StringField("The survey's address", validators=[Length(max=200)])


class ImportForm(FlaskForm):
    file = FileField("A spec file (JSON)")
    text = TextAreaField("Or paste the spec", validators=[Optional()])
