"""Forms of the survey builder (Flask-WTF, for their CSRF token and for carrying errors to fields).

The forms hold almost no rules of their own: what they collect becomes a question spec or a
planning dict, which :mod:`survey.specs` validates exactly as it validates an imported survey.
A :class:`~survey.specs.SpecError` names the spec field it is about ("question 2 ('q2'), field
'privacy.epsilon': ..."); :meth:`BuilderForm.add_spec_error` puts its message next to the input
that field came from.
"""

from __future__ import annotations

import re
from typing import Any

from flask_wtf import FlaskForm
from werkzeug.datastructures import MultiDict
from wtforms import BooleanField, HiddenField, RadioField, SelectField, StringField, TextAreaField

try:  # WTForms 3.3 deprecates (value, label) tuples in favour of SelectChoice
    from wtforms.fields.choices import SelectChoice
except ImportError:  # pragma: no cover - older WTForms
    SelectChoice = None

from ..models import Question, Survey
from ..specs import SpecError
from .preview import DESIGN_NAMES, privacy_settings


def _choices(pairs: list[tuple[str, str]]) -> list[Any]:
    return [SelectChoice(value, label) for value, label in pairs] if SelectChoice else pairs


KIND_CHOICES = [
    ("yes_no", "Yes / no"),
    ("choice", "Choice between options"),
    ("direct", "Asked directly (not protected)"),
]
DESIGN_CHOICES = [
    ("coin_flip", "Coin flip (forced response)"),
    ("warner", "Warner (mirrored question)"),
    ("grr", "Generalized randomized response (GRR)"),
]
SET_BY_CHOICES = [("epsilon", "ε (privacy loss)"), ("truth_probability", "Truth probability")]
#: A design the builder cannot edit (imported from a spec) is kept as it is when this is chosen.
KEEP = "keep"
SPEC_FIELD = re.compile(r"field '([^']+)': (.*)$", re.DOTALL)


class BuilderForm(FlaskForm):
    """A form that can show a spec's error message next to the input it is about."""

    def add_error(self, name: str | None, message: str) -> None:
        field = self._fields.get(name) if name else None
        if field is None:
            self.form_errors.append(message)
        else:
            field.errors = [*field.errors, message]

    def field_for_spec(self, spec_field: str, message: str) -> str | None:
        """The input a spec field's error belongs to; by default the input of the same name."""
        return spec_field if spec_field in self._fields else None

    def add_spec_error(self, error: SpecError) -> None:
        match = SPEC_FIELD.search(str(error))
        if match is None:
            self.add_error(None, str(error))
            return
        spec_field, message = match.groups()
        self.add_error(self.field_for_spec(spec_field, message), message)

    @property
    def has_errors(self) -> bool:
        return bool(self.form_errors) or any(f.errors for f in self)


class SurveyDetailsForm(BuilderForm):
    title = StringField("Title")
    introduction = TextAreaField("Introduction")
    closing_message = TextAreaField("Closing message")

    @classmethod
    def for_survey(cls, survey: Survey) -> SurveyDetailsForm:
        return cls(
            formdata=None,
            data={
                "title": survey.title,
                "introduction": survey.introduction,
                "closing_message": survey.closing_message,
            },
        )

    def spec(self) -> dict[str, Any]:
        return {
            "title": self.title.data or "",
            "introduction": self.introduction.data or "",
            "closing_message": self.closing_message.data or "",
        }


def _loose_number(text: str | None) -> Any:
    """A typed number as int or float, or the text itself so that the spec can say what is wrong."""
    text = (text or "").strip()
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


class PlanningForm(BuilderForm):
    epsilon_cap = StringField("Cap on the total ε")
    expected_respondents = StringField("Expected respondents")
    target_margin = StringField("Target margin of error (a share)")

    @classmethod
    def for_survey(cls, survey: Survey) -> PlanningForm:
        cap = survey.epsilon_cap
        return cls(
            formdata=None,
            data={
                "epsilon_cap": "" if cap is None else f"{cap:g}",
                "expected_respondents": str(survey.expected_respondents),
                "target_margin": f"{survey.target_margin:g}",
            },
        )

    def fields(self) -> dict[str, Any]:
        """The planning dict for :func:`survey.builder.update_planning` (an empty cap means none)."""
        cap = (self.epsilon_cap.data or "").strip()
        return {
            "epsilon_cap": None if cap == "" else _loose_number(cap),
            "expected_respondents": _loose_number(self.expected_respondents.data),
            "target_margin": _loose_number(self.target_margin.data),
        }


class MoveForm(FlaskForm):
    direction = HiddenField("Direction")


def _repr(x: float) -> str:
    """A float as text that parses back to exactly the same float."""
    return repr(float(x))


class QuestionForm(BuilderForm):
    kind = RadioField("Kind of question", choices=_choices(KIND_CHOICES), default="yes_no", validate_choice=False)
    text = TextAreaField("Question text")
    help_text = TextAreaField("Help text (optional)")
    key = StringField("Short name (optional)")
    required = BooleanField("Required: a respondent must answer it", default=True)
    options = TextAreaField("Options, one per line")
    design = SelectField("Design", choices=_choices(DESIGN_CHOICES), default="coin_flip", validate_choice=False)
    set_by = RadioField(
        "Set the privacy level by", choices=_choices(SET_BY_CHOICES), default="epsilon", validate_choice=False
    )
    epsilon = StringField("ε (epsilon)", default="1")
    truth_probability = StringField("Truth probability")
    yes_probability = StringField("Forced “yes” probability (coin flip only)", default="0.5")
    allow_one_sided = BooleanField("Allow one-sided protection (ε = ∞)")

    #: The stored design of the question being edited, when it is one the builder cannot edit.
    kept_privacy: dict[str, Any] | None = None

    @staticmethod
    def initial(question: Question) -> dict[str, Any]:
        """The inputs as they describe ``question`` now.

        A stored design is shown set by its truth probability, written so that it parses back to
        the very same float: saving an unchanged form then changes nothing (which matters once the
        survey is open and any change to a design is refused).
        """
        data: dict[str, Any] = {
            "kind": question.kind,
            "text": question.text,
            "help_text": question.help_text,
            "key": question.key,
            "required": question.required,
            "options": "\n".join(question.labels) if question.kind != "yes_no" else "",
            "design": "coin_flip",
            "set_by": "epsilon",
            "epsilon": "1",
            "truth_probability": "",
            "yes_probability": "0.5",
            "allow_one_sided": False,
        }
        design = question.design
        if design is not None:
            params = design.parameters
            name = design.mechanism_name
            data["design"] = name if name in ("coin_flip", "warner", "grr") else KEEP
            data["epsilon"] = "" if design.epsilon is None else f"{design.epsilon:.4g}"
            data["allow_one_sided"] = design.epsilon is None
            if name in ("coin_flip", "grr"):
                data.update(set_by="truth_probability", truth_probability=_repr(params["truth_probability"]))
            if name == "coin_flip":
                data["yes_probability"] = _repr(params["yes_probability"])
            if name == "warner":
                data.update(set_by="truth_probability", truth_probability=_repr(params["p"]))
        return data

    @classmethod
    def for_question(cls, question: Question | None, formdata: MultiDict | None = None) -> QuestionForm:
        """The form for a new question (``question`` None) or an existing one, from ``formdata`` if given."""
        data = cls.initial(question) if question is not None else None
        form = cls(formdata=formdata, data=data) if data else cls(formdata=formdata)
        if question is not None and question.design is not None and data and data["design"] == KEEP:
            form.kept_privacy = {"design": question.design.mechanism_name, **question.design.parameters}
            if question.design.epsilon is None:
                form.kept_privacy["allow_one_sided"] = True
            name = DESIGN_NAMES.get(question.design.mechanism_name, question.design.mechanism_name)
            form.design.choices = _choices([(KEEP, f"Keep the imported design: {name}"), *DESIGN_CHOICES])
        return form

    @classmethod
    def frozen(cls, question: Question, posted: MultiDict) -> QuestionForm:
        """The form of an opened survey's question: what was posted, over the stored values.

        The page disables every input but the texts, and a browser does not send disabled inputs;
        an input that is absent keeps its stored value, one that is present and differs is a
        structural change the builder refuses.
        """
        merged: MultiDict = MultiDict()
        for name, value in cls.initial(question).items():
            if value is True:
                merged[name] = "y"
            elif value is not False:
                merged[name] = value
        for name in posted:
            merged.setlist(name, posted.getlist(name))
        return cls.for_question(question, merged)

    @property
    def chosen_set_by(self) -> str:
        return self.set_by.data if self.set_by.data in ("epsilon", "truth_probability") else "epsilon"

    def option_labels(self) -> list[str]:
        return [line.strip() for line in (self.options.data or "").splitlines() if line.strip()]

    def to_raw(self, default_key: str | None = None) -> dict[str, Any]:
        """The question spec this form describes; raises :class:`~.preview.InputError` for the inputs."""
        kind = self.kind.data or ""
        raw: dict[str, Any] = {
            "kind": kind,
            "text": self.text.data or "",
            "help_text": self.help_text.data or "",
            "required": bool(self.required.data),
        }
        key = (self.key.data or "").strip() or default_key
        if key:
            raw["key"] = key
        if kind != "yes_no":
            raw["options"] = self.option_labels()
        if kind in ("yes_no", "choice"):
            if self.design.data == KEEP and self.kept_privacy is not None:
                raw["privacy"] = dict(self.kept_privacy)
            else:
                raw["privacy"] = privacy_settings(
                    self.design.data or "",
                    set_by=self.set_by.data or "",
                    epsilon=self.epsilon.data,
                    truth_probability=self.truth_probability.data,
                    yes_probability=self.yes_probability.data,
                    allow_one_sided=bool(self.allow_one_sided.data),
                )
        return raw

    def preview_params(self, n: int, margin: float) -> dict[str, Any]:
        """The preview API's parameters for what the form holds (the server-rendered preview)."""
        set_by = self.chosen_set_by
        return {
            "design": self.design.data,
            "kind": self.kind.data,
            "k": len(self.option_labels()) if self.kind.data == "choice" else 2,
            set_by: self.epsilon.data if set_by == "epsilon" else self.truth_probability.data,
            "yes_probability": self.yes_probability.data if self.design.data == "coin_flip" else None,
            "n": n,
            "margin": margin,
            "allow_one_sided": "1" if self.allow_one_sided.data else "",
        }

    def field_for_spec(self, spec_field: str, message: str) -> str | None:
        if spec_field.startswith("options"):
            return "options"
        if spec_field in ("privacy.truth_probability", "privacy.p"):
            return self.chosen_set_by
        if spec_field == "privacy":
            return "allow_one_sided" if "ε = ∞" in message else self.chosen_set_by
        names = {"privacy.design": "design", "privacy.epsilon": "epsilon", "privacy.yes_probability": "yes_probability"}
        return names.get(spec_field, spec_field if spec_field in self._fields else None)

    def add_spec_error(self, error: SpecError) -> None:
        text = str(error).replace(
            "Set 'allow_one_sided': true to accept that explicitly",
            "Tick “Allow one-sided protection” to accept that explicitly",
        )
        super().add_spec_error(SpecError(text))
