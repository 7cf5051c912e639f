"""The questions of the respondent's page are kept per process, keyed on their content
(survey.web.respond.fragments).

What these prove: the page is the same, byte for byte, with the store on and off, in every language
of the demo survey, and on a second visit served from the store; an edit made by any path shows on
the very next page, here with SQL typed by hand past the app (a question's text, an option's label, a
design's matrix, a translation, the order of the questions); every stored column of a question, an
option and a design is in the key; the store is bounded; nothing of one respondent's request (an
invitation code) is in what another respondent is sent; a template reloaded starts a new store.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import inspect, text

from survey.domain.models import Design, Option, Question, Survey
from survey.platform.extensions import db
from survey.web.respond import fragments
from survey.web.respond.page import survey_page

LANGUAGES = ["en", "es", "ar"]


def page(client, path: str) -> str:
    """The page as sent, the CSRF token left out (made per session)."""
    html = client.get(path).get_data(as_text=True)
    return re.sub(r'(name="csrf_token" value=")[^"]*', r"\1", html)


def fieldsets(html: str) -> list[str]:
    return re.findall(r"<fieldset.*?</fieldset>", html, flags=re.S)


def columns_of(html: str, key: str) -> str:
    """What the page tells the browser to draw the question's report from."""
    return re.search(rf'id="question-{key}"[^>]*data-columns="([^"]*)"', html).group(1)


def kept(app) -> int:
    with app.test_request_context():
        template = app.jinja_env.get_template(fragments.TEMPLATE)
        return len(template.__dict__.get(fragments.STORE) or ())


def execute(app, sql: str, **values) -> None:
    with app.app_context():
        db.session.execute(text(sql), values)
        db.session.commit()


def test_the_page_is_the_same_with_the_store_on_and_off(app, demo):
    client = app.test_client()
    kept_pages = {lang: page(client, f"/s/{demo}?lang={lang}") for lang in LANGUAGES}
    again = {lang: page(client, f"/s/{demo}?lang={lang}") for lang in LANGUAGES}
    with app.app_context():
        questions = len(db.session.scalars(db.select(Survey).filter_by(slug=demo)).one().questions)
    assert kept(app) == questions * len(LANGUAGES)  # one per question and language, made once

    app.config["RESPONDENT_FRAGMENTS_KEPT"] = 0
    app.jinja_env.cache.clear()  # a new compiled template: a new store, of size 0
    made = {lang: page(client, f"/s/{demo}?lang={lang}") for lang in LANGUAGES}
    assert kept(app) == 0
    for lang in LANGUAGES:
        assert kept_pages[lang] == again[lang] == made[lang], lang
        assert len(fieldsets(made[lang])) == questions
    # the languages differ (the store is keyed on the language as well)
    assert fieldsets(made["es"]) != fieldsets(made["en"]) != fieldsets(made["ar"])
    assert 'lang="es"' in made["es"] and "Enviar mis respuestas" in made["es"]


def test_an_edit_past_the_app_shows_on_the_next_page(app, small_survey):
    """The key is read from the rows this request loaded, so no path of an edit can leave a stale copy."""
    client = app.test_client()
    path = f"/s/{small_survey}"
    before = page(client, path)
    assert "Have you used drugs?" in before

    execute(app, "UPDATE questions SET text = 'Have you ever taken a banned substance?' WHERE key = 'drugs'")
    html = page(client, path)
    assert "Have you ever taken a banned substance?" in html and "Have you used drugs?" not in html

    execute(app, "UPDATE options SET label = 'now and then' WHERE label = 'sometimes'")
    html = page(client, path)
    assert "Now and then" in html and "Sometimes" not in html

    # a design, whose columns the page hands to the browser to draw from (its parameters and matrix
    # changed together, as Design.mechanism() checks one against the other)
    assert columns_of(html, "mirror") == "[[0.75, 0.25], [0.25, 0.75]]"
    with app.app_context():
        design = db.session.scalars(db.select(Design).join(Question).filter(Question.key == "mirror")).one()
        design.parameters = {**design.parameters, "p": 0.8}
        design.matrix = [[0.8, 0.2], [0.2, 0.8]]
        db.session.commit()
    html = page(client, path)
    assert columns_of(html, "mirror").startswith("[[0.8, 0.")

    # the order of the questions: each question's number is in its key
    numbers = re.findall(r"<legend>\s*(\d+)\. ([^<]*?)\s*(?:<|$)", html)
    execute(app, "UPDATE questions SET position = 100 - position")
    reordered = re.findall(r"<legend>\s*(\d+)\. ([^<]*?)\s*(?:<|$)", page(client, path))
    assert [text for _, text in reordered] == [text for _, text in reversed(numbers)]
    assert [n for n, _ in reordered] == [n for n, _ in numbers]


def test_a_translation_edited_past_the_app_shows_in_its_language_alone(app, demo):
    client = app.test_client()
    english, spanish = page(client, f"/s/{demo}?lang=en"), page(client, f"/s/{demo}?lang=es")
    with app.app_context():
        survey = db.session.scalars(db.select(Survey).filter_by(slug=demo)).one()
        key = survey.questions[0].key
        survey_id = survey.id
    execute(
        app,
        "UPDATE survey_translations SET text = 'Una pregunta reescrita' "
        "WHERE survey_id = :survey AND language = 'es' AND path = :path",
        survey=survey_id,
        path=f"q:{key}:text",
    )
    assert "Una pregunta reescrita" in page(client, f"/s/{demo}?lang=es")
    assert "Una pregunta reescrita" not in spanish
    assert page(client, f"/s/{demo}?lang=en") == english


@pytest.mark.parametrize("model", [Question, Option, Design])
def test_every_stored_column_is_in_the_key(app, small_survey, model):
    """Whatever column a later change makes the macro read, a change to it makes another key."""
    with app.test_request_context():
        survey = db.session.scalars(db.select(Survey).filter_by(slug=small_survey)).one()
        view = next(v for v in survey_page(survey).questions if v.question.design is not None)
        row = {Question: view.question, Option: view.question.options[0], Design: view.question.design}[model]
        columns = [attribute.key for attribute in inspect(model).column_attrs]
        assert len(columns) >= 3
        base = fragments.content_key(view, 1, "en")
        for name in columns:
            original = getattr(row, name)
            row.__dict__[name] = ["changed", original]  # in the loaded state only: nothing is written
            assert fragments.content_key(view, 1, "en") != base, f"{model.__name__}.{name}"
            row.__dict__[name] = original
        assert fragments.content_key(view, 1, "en") == base
        assert fragments.content_key(view, 2, "en") != base != fragments.content_key(view, 1, "es")
        db.session.rollback()


def test_the_store_is_bounded(app, demo):
    app.config["RESPONDENT_FRAGMENTS_KEPT"] = 3
    client = app.test_client()
    first = page(client, f"/s/{demo}?lang=en")
    assert kept(app) == 3
    assert page(client, f"/s/{demo}?lang=es") != first
    assert kept(app) == 3
    assert page(client, f"/s/{demo}?lang=en") == first


def test_an_invitation_code_stays_on_its_own_page(app, user):
    """The questions are made once for everyone: the code of the respondent who made them is nowhere
    in another's page (it is in the form's hidden field, outside the kept questions)."""
    from survey.domain.models import User
    from survey.domain.responses.codes import generate_codes
    from survey.domain.surveys.specs import create_survey_from_spec

    from .surveys import SMALL_SPEC

    with app.app_context():
        spec = {**SMALL_SPEC, "slug": "invited", "access": "invitation"}
        survey = create_survey_from_spec(db.session, spec, owner=db.session.get(User, user))
        db.session.flush()
        first, second = generate_codes(db.session, survey, 2)
        slug = survey.slug
        db.session.commit()
    client = app.test_client()
    one = client.get(f"/s/{slug}", query_string={"code": first}).get_data(as_text=True)
    other = client.get(f"/s/{slug}", query_string={"code": second}).get_data(as_text=True)
    assert first in one and first not in other and second in other
    assert kept(app) > 0 and fieldsets(one) == fieldsets(other)
