"""The questions of the respondent's page are kept per process, keyed on their content
(survey.web.respond.fragments).

What these prove: the page is the same, byte for byte, with the store on and off, in every language
of the demo survey, and on a second visit served from the store; an edit made by any path shows on
the very next page, here with SQL typed by hand past the app (a question's text, an option's label, a
design's matrix, a translated text, help text and label, the order of the questions, a question's
number changed by another question); a language whose texts fall back to the first language's still
gets its own words; every column of the tables a question is stored in is in the key; the macro reads
nothing of the request (rendered with the request's globals taken away, it makes the same HTML); an
edit of either template shows at once with ``TEMPLATES_AUTO_RELOAD``; the store is bounded by its
memory, and a budget of 0 or less keeps nothing; an invitation code stays on its own page.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest
from jinja2 import StrictUndefined
from sqlalchemy import inspect, text

from survey import ROOT
from survey.domain.models import Design, Option, Question, Survey
from survey.platform.extensions import db
from survey.platform.templates import IndentationFreeLoader
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
    """How many questions the app's store holds now."""
    with app.test_request_context():
        store = fragments.store()
        return 0 if store is None else len(store)


def legend(html: str, key: str) -> str:
    return re.search(rf'id="question-{key}".*?<legend>\s*([^<]*?)\s*<', html, flags=re.S).group(1)


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

    app.config["RESPONDENT_FRAGMENTS_BYTES"] = 0
    app.jinja_env.cache.clear()  # a new compiled template: a new store, which keeps nothing
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

    # a question's number alone: the two before it become the arms of one split ballot, so it is
    # numbered one less while none of its own rows changes
    html = page(client, path)
    assert legend(html, "drugs").startswith("4. ")
    execute(app, "UPDATE questions SET arm_group = 'split', arm_share = 0.5 WHERE key IN ('often', 'mirror')")
    html = page(client, path)
    assert legend(html, "drugs").startswith("3. ") and legend(html, "mirror").startswith("2. ")


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


def test_a_translated_label_and_help_text_edited_past_the_app_show(app, user):
    from survey.domain.models import User
    from survey.domain.surveys.specs import create_survey_from_spec

    from .surveys import SMALL_SPEC, SMALL_TRANSLATIONS

    questions = [
        {**q, "help_text": "Think of the last year."} if q["key"] == "often" else q for q in SMALL_SPEC["questions"]
    ]
    spanish = {**SMALL_TRANSLATIONS["es"], "q:often:help_text": "Piense en el último año."}
    spec = {**SMALL_SPEC, "questions": questions, "translations": {"es": spanish}}
    with app.app_context():
        survey = create_survey_from_spec(db.session, spec, owner=db.session.get(User, user))
        db.session.commit()
        survey_id = survey.id
    client = app.test_client()
    html = page(client, "/s/small-test?lang=es")
    assert "A veces" in html and "Piense en el último año." in html
    edits = [("q:often:option:1", "de vez en cuando", "A veces"), ("q:often:help_text", "Piense en este mes.", "año.")]
    for path, new, old in edits:  # one at a time: each alone must make a new key
        execute(
            app,
            "UPDATE survey_translations SET text = :text"
            " WHERE survey_id = :survey AND language = 'es' AND path = :path",
            text=new,
            survey=survey_id,
            path=path,
        )
        html = page(client, "/s/small-test?lang=es")
        assert new[1:] in html and old not in html, path


def test_a_translated_unrelated_question_edited_past_the_app_shows(app):
    """A combined question's unrelated question, in the instruction the page writes around it."""
    from survey.domain.surveys.specs import create_survey_from_spec

    from .surveys import CROSSWISE_ES_SPEC

    with app.app_context():
        survey = create_survey_from_spec(db.session, CROSSWISE_ES_SPEC)
        db.session.commit()
        survey_id = survey.id
    client = app.test_client()
    assert "¿Cumple años su madre en enero" in page(client, "/s/crosswise-es?lang=es")
    execute(
        app,
        "UPDATE survey_translations SET text = '¿Nació su padre en enero, febrero o marzo?'"
        " WHERE survey_id = :survey AND path = 'q:evaded:unrelated_question'",
        survey=survey_id,
    )
    html = page(client, "/s/crosswise-es?lang=es")
    assert "¿Nació su padre en enero" in html and "¿Cumple años su madre" not in html


def test_a_language_whose_texts_are_the_same_gets_its_own_words(app, user):
    """A Spanish translation whose questions' texts are typed as the English ones: the texts are the
    same in both languages, and the words around them (badges, labels, the "try it" box) are each
    language's own."""
    from survey.domain.models import User
    from survey.domain.surveys.specs import create_survey_from_spec

    from .surveys import SMALL_SPEC, SMALL_TRANSLATIONS

    english = {f"q:{q['key']}:text": q["text"] for q in SMALL_SPEC["questions"]}
    english |= {
        f"q:{q['key']}:option:{i}": label
        for q in SMALL_SPEC["questions"]
        for i, label in enumerate(q.get("options", []))
    }
    with app.app_context():
        spec = {
            **SMALL_SPEC,
            "translations": {"es": {path: english.get(path, text) for path, text in SMALL_TRANSLATIONS["es"].items()}},
        }
        create_survey_from_spec(db.session, spec, owner=db.session.get(User, user))
        db.session.commit()
    client = app.test_client()
    english = fieldsets(page(client, "/s/small-test?lang=en"))
    spanish = fieldsets(page(client, "/s/small-test?lang=es"))
    assert "Have you used drugs?" in english[0] and "Have you used drugs?" in spanish[0]
    assert all(e != s for e, s in zip(english, spanish, strict=True))
    app.config["RESPONDENT_FRAGMENTS_BYTES"] = 0
    app.jinja_env.cache.clear()
    assert fieldsets(page(client, "/s/small-test?lang=es")) == spanish


@pytest.mark.parametrize("model", [Question, Option, Design])
def test_every_column_of_the_tables_is_in_the_key(app, small_survey, model):
    """Whatever column a later change makes the macro read, a change to it makes another key: the
    columns are the database's own (its tables as migrated), not the list the key is made from."""
    with app.test_request_context():
        survey = db.session.scalars(db.select(Survey).filter_by(slug=small_survey)).one()
        view = next(v for v in survey_page(survey).questions if v.question.design is not None)
        row = {Question: view.question, Option: view.question.options[0], Design: view.question.design}[model]
        table = model.__table__
        columns = [column["name"] for column in inspect(db.engine).get_columns(table.name)]
        assert len(columns) >= 3
        mapper = inspect(model)
        base = fragments.content_key(view, 1, "en")
        for name in columns:
            attribute = mapper.get_property_by_column(table.c[name]).key
            original = getattr(row, attribute)
            row.__dict__[attribute] = ["changed", original]  # in the loaded state only: nothing is written
            assert fragments.content_key(view, 1, "en") != base, f"{table.name}.{name}"
            row.__dict__[attribute] = original
        assert fragments.content_key(view, 1, "en") == base
        assert fragments.content_key(view, 2, "en") != base != fragments.content_key(view, 1, "es")
        db.session.rollback()


def test_the_macro_reads_nothing_of_the_request(app, demo):
    """The macro rendered where the request, the session, g, the config, url_for and the CSRF token
    are not defined at all (anything undefined raises) makes the same HTML: nothing of one
    respondent's request can be in what is kept for all."""
    request_names = {"request", "session", "g", "config", "url_for", "csrf_token", "csrf_meta_tag"}
    with app.test_request_context(f"/s/{demo}?lang=es"):
        survey = db.session.scalars(db.select(Survey).filter_by(slug=demo)).one()
        page_ = survey_page(survey)
        bare = app.jinja_env.overlay(undefined=StrictUndefined, cache_size=0)
        bare.globals = {name: value for name, value in app.jinja_env.globals.items() if name not in request_names}
        macro = bare.get_template(fragments.TEMPLATES[0]).module.question
        for view in page_.questions:
            number = page_.number(view)
            assert str(macro(view, number)) == str(fragments.question_html(view, number))


def test_an_edited_template_shows_at_once_when_templates_reload(app, small_survey, tmp_path):
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    app.jinja_loader = IndentationFreeLoader(tmp_path / "templates")
    app.jinja_env.auto_reload = True
    app.jinja_env.cache.clear()
    client = app.test_client()
    assert "data-edited" not in page(client, f"/s/{small_survey}")
    assert kept(app) == 4
    edits = [
        ("_answers.html", '<div class="options {{ q.layout }}">', '<div class="options {{ q.layout }}" data-edited>'),
        ("_question.html", '<fieldset class="question"', '<fieldset data-edited-too class="question"'),
    ]
    # one at a time: an edit of the imported template alone must show
    for (name, old, new), marker in zip(edits, ["data-edited>", "data-edited-too"], strict=True):
        path = tmp_path / "templates" / "respond" / name
        source = path.read_text()
        assert old in source
        path.write_text(source.replace(old, new))
        stat = path.stat()
        os.utime(path, (stat.st_atime, stat.st_mtime + 10))  # a later time than the compiled one's
        html = page(client, f"/s/{small_survey}")
        assert html.count(marker) == 4, name


def test_the_store_is_bounded_by_its_memory(app, demo):
    client = app.test_client()
    first = page(client, f"/s/{demo}?lang=en")
    with app.test_request_context():
        whole = fragments.store().used
        assert whole > 0
    app.config["RESPONDENT_FRAGMENTS_BYTES"] = whole // 2
    app.jinja_env.cache.clear()
    assert page(client, f"/s/{demo}?lang=en") == first
    assert page(client, f"/s/{demo}?lang=es") != first
    assert page(client, f"/s/{demo}?lang=en") == first
    with app.test_request_context():
        store = fragments.store()
        assert 0 < store.used <= whole // 2 and 0 < len(store) < len(fieldsets(first))


@pytest.mark.parametrize("budget", [0, -1])
def test_a_budget_of_nothing_keeps_nothing(app, demo, budget):
    client = app.test_client()
    first = page(client, f"/s/{demo}?lang=en")
    app.config["RESPONDENT_FRAGMENTS_BYTES"] = budget
    app.jinja_env.cache.clear()
    assert page(client, f"/s/{demo}?lang=en") == page(client, f"/s/{demo}?lang=en") == first
    assert kept(app) == 0


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
