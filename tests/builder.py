"""Building a survey through the organizer's builder pages with the test client, and reading back
what the builder stored and which errors it showed (tests/test_builder.py, tests/test_exports_trust.py).
"""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

from sqlalchemy import select
from werkzeug.test import TestResponse

from survey.domain.models import Survey
from survey.domain.surveys.specs import question_to_spec
from survey.platform.extensions import db

#: The builder's form for a multiple-choice question under GRR at ε = 1.
CHOICE = {
    "kind": "choice",
    "text": "How often do you drink alone?",
    "required": "y",
    "options": "never\nsometimes\noften\nalways",
    "design": "grr",
    "set_by": "epsilon",
    "epsilon": "1",
}


def new_draft(client, title: str = "Exam habits") -> str:
    """Create a draft through the form; returns its slug."""
    response = client.post("/surveys/new", data={"title": title, "introduction": "Hello.", "closing_message": "Bye."})
    assert response.status_code == 303, response.text
    match = re.fullmatch(r"/surveys/([a-z0-9-]+)/build", response.location)
    assert match, response.location
    return match.group(1)


def add(client, slug: str, data: dict, status: int = 303) -> TestResponse:
    """Post the new-question form of draft ``slug``, expecting ``status``."""
    response = client.post(f"/surveys/{slug}/questions/new", data=data)
    assert response.status_code == status, response.text[:3000]
    return response


def snapshot(app, slug: str) -> dict:
    """Everything stored about a survey that the builder may (or must not) change."""
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        questions = []
        for q in survey.questions:
            item = question_to_spec(q) | {"position": q.position, "codes": [o.code for o in q.options]}
            if q.design is not None:
                item["design"] = {
                    "name": q.design.mechanism_name,
                    "parameters": q.design.parameters,
                    "matrix": q.design.matrix,
                    "epsilon": q.design.epsilon,
                }
            questions.append(item)
        return {
            "status": survey.status,
            "title": survey.title,
            "introduction": survey.introduction,
            "closing_message": survey.closing_message,
            "run_by": survey.run_by,
            "contact": survey.contact,
            "ethics_statement": survey.ethics_statement,
            "owner": survey.owner.username if survey.owner else None,
            "epsilon_cap": survey.epsilon_cap,
            "expected_respondents": survey.expected_respondents,
            "target_margin": survey.target_margin,
            "questions": questions,
        }


def control(html: str, control_id: str) -> str:
    """The tag of the form control with id ``control_id``."""
    match = re.search(rf'<(?:input|textarea|select)\b[^>]*\bid="{re.escape(control_id)}"[^>]*>', html)
    assert match, f"no control with id {control_id!r}"
    return match.group(0)


def field_error(html: str, field: str, control_id: str | None = None) -> str:
    """The error shown next to ``field``; asserts it is linked to its input and the input is marked invalid."""
    tag = control(html, control_id or field)
    assert 'aria-invalid="true"' in tag, tag
    described = re.search(r'aria-describedby="([^"]*)"', tag)
    assert described and f"{field}-error" in described.group(1).split(), tag
    match = re.search(rf'<p class="field-error" id="{re.escape(field)}-error">(.*?)</p>', html, re.S)
    assert match, f"no error next to {field!r}"
    return unescape(match.group(1))


class FormValues(HTMLParser):
    """What a browser shows in the form with id ``question-form``: name → value (disabled inputs too)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self._inside = False
        self._textarea: str | None = None
        self._select: str | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self._inside = a.get("id") == "question-form"
        if not self._inside:
            return
        name = a.get("name")
        if tag == "input" and name:
            if a.get("type") in ("radio", "checkbox"):
                if "checked" in a:
                    self.values[name] = a.get("value") or "on"
            else:
                self.values[name] = a.get("value") or ""
        elif tag == "textarea":
            self._textarea = name
            self.values[name] = ""
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.values[self._select] = a.get("value") or ""

    def handle_endtag(self, tag):
        if tag == "form":
            self._inside = False
        elif tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data):
        if self._textarea:
            self.values[self._textarea] += data

    @classmethod
    def of(cls, client, url: str) -> dict[str, str]:
        response = client.get(url)
        assert response.status_code == 200
        values = cls(response.text).values
        # a browser drops the one newline that follows <textarea>
        return {k: v[2:] if v.startswith("\r\n") else v.removeprefix("\n") for k, v in values.items()}
