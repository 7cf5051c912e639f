"""The form of the management page's section for responses collected elsewhere."""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import BooleanField


class ImportResponsesForm(FlaskForm):
    """A CSV or JSON file in the microdata export's shape (survey.domain.responses.imports), and
    whether only to check it."""

    file = FileField("A file of responses (CSV or JSON)")
    dry_run = BooleanField("Only check the file; import nothing")
