"""Forms of the survey builder (Flask-WTF, for their CSRF token and for carrying errors to fields).

The forms hold almost no rules of their own: what they collect becomes a question spec or a planning
dict, which :mod:`survey.domain.surveys.specs` validates exactly as it validates an imported survey. A
refusal is a :class:`~survey.domain.errors.DomainError` whose path says which spec field it is about
(``("questions", 2, "privacy", "epsilon")``); each form maps paths to its inputs with a small table
(:class:`survey.web.common.FormErrors`).

The question form's privacy inputs come from the registry of designs
(:data:`survey.privacy.designs.DESIGNS`): the design select offers every design, one input per
parameter name the designs use, and the "set the level by" choice offers ε and each design's
level parameter. The page marks which inputs belong to which design (``data-designs``), so the
script shows the right ones without a list of its own. A new registry entry appears here as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from flask_wtf import FlaskForm
from werkzeug.datastructures import MultiDict
from wtforms import BooleanField, HiddenField, RadioField, SelectField, StringField, TextAreaField
from wtforms.fields.choices import SelectChoice

from survey.domain.errors import DomainError, Path
from survey.domain.models import Question, Survey
from survey.domain.surveys.kinds import KIND_LIST, KINDS, LISTED, Kind, builder_designs, find_kind
from survey.domain.surveys.preview import chosen_design, input_for, plain_message, privacy_settings
from survey.domain.validation import loose_number
from survey.privacy.designs import DESIGNS, EPSILON, Design

from ..common import FormErrors

#: One radio button per kind of the registry (survey.domain.surveys.kinds), in its order.
KIND_CHOICES = [SelectChoice(kind.id, kind.choice) for kind in KIND_LIST if kind.in_builder]
EPSILON_CHOICE = SelectChoice(EPSILON.name, "ε (privacy loss)")
ONE_SIDED_MESSAGE = (
    "This design has ε = ∞: some reports reveal the true answer, so only one answer is deniable. "
    "Tick “Allow one-sided protection” to accept that explicitly."
)


class BuilderForm(FormErrors, FlaskForm):
    """A builder form: domain errors go next to the input of the same name."""


class SurveyDetailsForm(BuilderForm):
    title = StringField("Title")
    introduction = TextAreaField("Introduction")
    closing_message = TextAreaField("Closing message")
    # Who is asking: shown to respondents on the survey, privacy and thank-you pages.
    run_by = StringField("Run by")
    contact = StringField("Contact")
    ethics_statement = TextAreaField("Consent or ethics statement")
    # How respondents answer: on a device several people share, the page keeps nothing (SECURITY.md, section 2).
    shared_devices = BooleanField("Answered on shared devices (several people answer on one computer or tablet)")

    TEXTS = ("title", "introduction", "closing_message", "run_by", "contact", "ethics_statement")

    @classmethod
    def for_survey(cls, survey: Survey) -> SurveyDetailsForm:
        data = {name: getattr(survey, name) for name in cls.TEXTS}
        return cls(formdata=None, data={**data, "shared_devices": survey.shared_devices})

    def spec(self) -> dict[str, Any]:
        """The texts and the shared-devices setting, as spec fields (an unticked box is false)."""
        texts = {name: self[name].data or "" for name in self.TEXTS}
        return {**texts, "shared_devices": bool(self.shared_devices.data)}


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
        """The planning dict for :func:`survey.domain.surveys.builder.update_planning` (an empty cap means none)."""
        cap = (self.epsilon_cap.data or "").strip()
        return {
            "epsilon_cap": None if cap == "" else loose_number(cap),
            "expected_respondents": loose_number(self.expected_respondents.data),
            "target_margin": loose_number(self.target_margin.data),
        }


class MoveForm(FlaskForm):
    direction = HiddenField("Direction")


def _exact(value: Any) -> str:
    """A stored parameter as text that parses back to exactly the same float (or list of floats); a
    text parameter (the unrelated question) as it is."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(_exact(v) for v in value)
    return repr(float(value))


@dataclass
class ParameterInput:
    """One input of the question form's privacy settings: a parameter name the registry's designs
    use, which designs use it, and what each of them says about it."""

    name: str
    label: str
    level: bool
    per_option: bool
    low: float
    high: float
    default: float | None = None
    #: Words, not a number (the unrelated question of the non-randomized designs).
    text: bool = False
    designs: list[str] = field(default_factory=list)
    #: (design ids, hint) pairs: the hint of each design, designs saying the same thing together.
    hints: list[tuple[str, str]] = field(default_factory=list)


def parameter_inputs() -> list[ParameterInput]:
    """The privacy inputs the registry's designs need, level inputs first, in registry order."""
    inputs: dict[str, ParameterInput] = {}
    for role in ("level", "other"):
        for design in builder_designs().values():
            parameters = [design.level] if role == "level" else list(design.others)
            for p in parameters:
                if p.field == EPSILON.name:  # a design set by ε alone (a number's): the form's own ε input
                    continue
                item = inputs.setdefault(
                    p.field,
                    ParameterInput(p.field, p.label, role == "level", p.per_option, p.low, p.high, p.default, p.text),
                )
                item.designs.append(design.id)
                for i, (ids, hint) in enumerate(item.hints):
                    if hint == p.hint:
                        item.hints[i] = (f"{ids} {design.id}", hint)
                        break
                else:
                    item.hints.append((design.id, p.hint))
    return list(inputs.values())


def set_by_designs() -> dict[str, list[str]]:
    """For each way of setting the level (ε, or an input), the designs it applies to."""
    # a non-randomized design is set by its unrelated question's rate alone: ε follows from it
    ways: dict[str, list[str]] = {EPSILON.name: [d.id for d in builder_designs().values() if not d.combined]}
    for design in builder_designs().values():
        if design.level.field != EPSILON.name:
            ways.setdefault(design.level.field, []).append(design.id)
    return ways


def level_designs() -> list[str]:
    """The designs whose level may be set by something other than ε (the "set the level by" choice
    is shown for them; a design of numbers is set by ε alone, a non-randomized one by its rate alone)."""
    return [d.id for d in builder_designs().values() if d.level.field != EPSILON.name and not d.combined]


def input_attributes(item: ParameterInput) -> dict[str, Any]:
    """HTML attributes of a parameter's input: a number box with its range, or text for a list."""
    if item.text:
        return {"autocomplete": "off"}
    if item.per_option:
        return {"autocomplete": "off", "spellcheck": "false"}
    attrs: dict[str, Any] = {"type": "number", "step": "any", "inputmode": "decimal"}
    if math.isfinite(item.low):
        attrs["min"] = f"{item.low:g}"
    if math.isfinite(item.high):
        attrs["max"] = f"{item.high:g}"
    return attrs


class QuestionForm(BuilderForm):
    """One question: texts, kind, options, and its privacy settings. The parameter inputs are added
    per request from the registry (:meth:`build`)."""

    kind = RadioField("Kind of question", choices=KIND_CHOICES, default=KINDS[0], validate_choice=False)
    text = TextAreaField("Question text")
    help_text = TextAreaField("Help text (optional)")
    key = StringField("Short name (optional)")
    required = BooleanField("Required: a respondent must answer it", default=True)
    decline = BooleanField("Respondents may decline it (“Prefer not to say”)", default=False)
    options = TextAreaField("Options, one per line")
    minimum = StringField("Smallest number accepted", default="0")
    maximum = StringField("Largest number accepted", default="100")
    bins = StringField("Bins for the results (optional)", default="")
    design = SelectField("Design", default="coin_flip", validate_choice=False)
    set_by = RadioField("Set the privacy level by", default=EPSILON.name, validate_choice=False)
    epsilon = StringField("ε (epsilon)", default="1")
    allow_one_sided = BooleanField("Allow one-sided protection (ε = ∞)")
    own_coin = BooleanField("Respondents randomize with their own coins or die", default=False)
    arm_group = StringField("Split ballot (optional)", default="")
    arm_share = StringField("Chance of being asked this way", default="0.5")

    #: The privacy inputs, from the registry (set by :meth:`build`).
    inputs: list[ParameterInput]

    @classmethod
    def build(cls, formdata: MultiDict | None = None, data: dict[str, Any] | None = None) -> QuestionForm:
        """The form with one input per parameter the registry's designs use, read now (so that a
        design registered later is offered as well)."""
        inputs = parameter_inputs()
        fields = {
            item.name: StringField(item.label, default=_exact(item.default) if item.default is not None else "")
            for item in inputs
        }
        form_class = type("QuestionForm", (cls,), fields)
        form = form_class(formdata=formdata, data=data) if data else form_class(formdata=formdata)
        form.inputs = inputs
        form.design.choices = [SelectChoice(d.id, d.name) for d in builder_designs().values()]
        labels = {item.name: item.label for item in inputs if item.level}
        form.set_by.choices = [EPSILON_CHOICE, *(SelectChoice(name, label) for name, label in labels.items())]
        return form

    @staticmethod
    def initial(question: Question) -> dict[str, Any]:
        """The inputs as they describe ``question`` now.

        A stored design is shown set by its level parameter, written so that it parses back to the
        very same float: saving an unchanged form then changes nothing (which matters once the
        survey is open and any change to a design is refused).
        """
        data: dict[str, Any] = {
            "kind": question.kind,
            "text": question.text,
            "help_text": question.help_text,
            "key": question.key,
            "required": question.required,
            "decline": question.decline,
            "options": "\n".join(question.labels) if question.kind_entry.options == LISTED else "",
            "allow_one_sided": False,
            "own_coin": bool(question.own_coin),
            "arm_group": question.arm_group or "",
            "arm_share": _exact(question.arm_share) if question.arm_share is not None else "0.5",
        }
        if question.is_number:
            data["minimum"], data["maximum"] = str(question.minimum), str(question.maximum)
            data["bins"] = ", ".join(f"{e:g}" for e in question.bins or [])
        stored = question.design
        design = DESIGNS.get(stored.mechanism_name) if stored is not None else None
        if stored is not None and design is not None:  # every design a spec can hold is registered
            data["design"] = design.id
            data["epsilon"] = "" if stored.epsilon is None else f"{stored.epsilon:.4g}"
            data["allow_one_sided"] = stored.epsilon is None
            data["set_by"] = design.level.field
            if stored.given and EPSILON.name in stored.given:  # set by its ε: shown as it was set
                data["set_by"] = EPSILON.name
                data["epsilon"] = _exact(stored.given[EPSILON.name])
            for parameter in design.parameters:
                if parameter.name in stored.parameters:
                    data[parameter.field] = _exact(stored.parameters[parameter.name])
        return data

    @classmethod
    def for_question(cls, question: Question | None, formdata: MultiDict | None = None) -> QuestionForm:
        """The form for a new question (``question`` None) or an existing one, from ``formdata`` if given."""
        return cls.build(formdata, cls.initial(question) if question is not None else None)

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
    def chosen(self) -> Design | None:
        return DESIGNS.get(self.design.data or "")

    @property
    def chosen_set_by(self) -> str:
        """The input the level was set by: ε, or the chosen design's level input."""
        design = self.chosen
        if design is not None and (self.set_by.data == design.level.field or design.combined):
            return design.level.field
        return EPSILON.name

    def option_labels(self) -> list[str]:
        return [line.strip() for line in (self.options.data or "").splitlines() if line.strip()]

    @property
    def chosen_kind(self) -> Kind | None:
        """The kind chosen, if it is one (the spec refuses any other)."""
        return find_kind(self.kind.data)

    def _k(self) -> int:
        kind = self.chosen_kind
        return kind.option_count(len(self.option_labels())) if kind is not None and kind.has_options else 2

    def _others(self, design: Design) -> dict[str, Any]:
        return {p.field: self[p.field].data for p in design.others}

    def to_raw(self, default_key: str | None = None) -> dict[str, Any]:
        """The question spec this form describes; raises :class:`DomainError` for the privacy inputs."""
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
        entry = self.chosen_kind
        if entry is not None and entry.ranged:
            raw["minimum"] = loose_number(self.minimum.data)
            raw["maximum"] = loose_number(self.maximum.data)
            edges = [part.strip() for part in (self.bins.data or "").replace(";", ",").split(",")]
            if any(edges):
                raw["bins"] = [loose_number(e) for e in edges]
        elif entry is None or entry.options == LISTED:
            raw["options"] = self.option_labels()
        if entry is not None and entry.randomized and self.decline.data:
            raw["decline"] = True
        group = (self.arm_group.data or "").strip()
        if group:
            raw["arm"] = {"group": group, "share": loose_number(self.arm_share.data)}
        if entry is not None and entry.randomized:
            if entry.options == LISTED and self._k() < 2:
                raw["privacy"] = {"design": self.design.data}  # the spec says what is wrong: the options
            else:
                design = chosen_design({"design": self.design.data})
                set_by = self.chosen_set_by
                raw["privacy"] = privacy_settings(
                    design,
                    set_by=set_by,
                    level=self[set_by].data,
                    others=self._others(design),
                    k=self._k(),
                    allow_one_sided=bool(self.allow_one_sided.data),
                )
                if self.own_coin.data:
                    raw["privacy"]["own_coin"] = True
        return raw

    def preview_params(self, n: int, margin: float) -> dict[str, Any]:
        """The preview API's parameters for what the form holds (the server-rendered preview): a
        kind with a range sends its range instead of a number of options."""
        set_by = self.chosen_set_by
        params: dict[str, Any] = {
            "design": self.design.data,
            "kind": self.kind.data,
            "set_by": set_by,
            set_by: self[set_by].data,
            "n": n,
            "margin": margin,
            "allow_one_sided": "1" if self.allow_one_sided.data else "",
        }
        entry = self.chosen_kind
        if entry is not None and entry.ranged:
            params.update(minimum=self.minimum.data, maximum=self.maximum.data)
        else:
            params["k"] = self._k()
        if self.chosen is not None:
            params.update(self._others(self.chosen))
        return params

    def paths(self) -> dict[tuple[Any, ...], str | None]:
        return {
            ("options",): "options",
            ("minimum",): "minimum",
            ("maximum",): "maximum",
            ("bins",): "bins",
            ("privacy", "design"): "design",
            ("privacy", "allow_one_sided"): "allow_one_sided",
            ("privacy", "own_coin"): "own_coin",
            ("arm",): "arm_group",
            ("arm", "group"): "arm_group",
            ("arm", "share"): "arm_share",
        }

    def field_for(self, path: Path) -> str | None:
        """Errors of the spec come at ``("questions", i, ...)``, the form's own at the question's
        fields: both end at the input the registry says the privacy parameter is typed into."""
        if path[:1] == ("questions",):
            path = path[2:]
        if path[:1] == ("privacy",) and path not in self.paths():
            name = input_for(path, self.chosen, self.chosen_set_by)
            return name if name in self._fields else None
        return super().field_for(path)

    def message_for(self, error: DomainError, field: str | None) -> str:
        """Plain words next to the input: what a privacy parameter must be (the registry's rule),
        not the spec's precise message, which an imported spec's reader gets."""
        if field == "allow_one_sided":
            return ONE_SIDED_MESSAGE
        if field is not None and field in self._fields:
            typed = {name: self[name].data for name in self._fields}
            return plain_message(error, self.chosen, typed)
        return super().message_for(error, field)

    def clear_derived(self) -> None:
        """Empty the level input the organizer did not type into (ε, or the design's level input):
        it showed the value that followed from the last valid setting, and is stale once the typed
        one is refused."""
        design = self.chosen
        if design is None:
            return
        for name in (EPSILON.name, design.level.field):
            if name != self.chosen_set_by and name in self._fields:
                self[name].data = ""
