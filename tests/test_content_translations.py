"""A survey's own texts in its organizer's languages (docs/translations.md, "The survey's own texts").

- A spec carries ``translations`` and round-trips them; it is refused with a language the app lacks,
  a text the survey does not have, or (not a draft) a text left untranslated, named.
- Publishing refuses a survey with a missing translation and names the language and the text.
- The respondent's pages in Spanish show the organizer's Spanish texts and options (yes and no are
  the app's words), from the browser's language or the switch; a survey is offered in its languages
  only: one without Spanish texts gives English to a Spanish browser, with no switch.
- The codebook comes in each of the survey's languages, with the same codes.
- The organizer's translations page adds a language, saves its texts and removes it; once the
  survey is published, a language is not added and a translation is not emptied.
"""

from __future__ import annotations

import copy
import re

import pytest
from sqlalchemy import select

from survey.domain.errors import DomainError
from survey.domain.models import Survey, SurveyTranslation
from survey.domain.surveys import builder, content_translations, lifecycle
from survey.domain.surveys.specs import create_survey_from_spec, question_to_spec, survey_to_spec
from survey.platform.extensions import db

from .accounts import bearer, make_token, make_user, sign_in
from .surveys import CROSSWISE_ES_SPEC, FORM, SMALL_SPEC, SMALL_TRANSLATIONS, add_survey, stored, text

SPANISH = {
    **SMALL_TRANSLATIONS["es"],
    "run_by": "Estudio de Salud",
    "ethics_statement": "La participación es voluntaria.",
}
ARABIC = {**SMALL_TRANSLATIONS["ar"], "run_by": "دراسة الصحة", "ethics_statement": "المشاركة طوعية."}


def translated_spec(**translations) -> dict:
    spec = copy.deepcopy(SMALL_SPEC)
    spec.update(slug="translated", run_by="Health Study", ethics_statement="Taking part is voluntary.")
    spec["translations"] = translations or {"es": dict(SPANISH)}
    return spec


def refusal(app, spec) -> DomainError:
    with app.app_context():
        with pytest.raises(DomainError) as caught:
            create_survey_from_spec(db.session, spec)
        db.session.rollback()
        return caught.value


# -- the spec ----------------------------------------------------------------------------------------


def test_a_spec_with_translations_round_trips(app):
    spec = translated_spec(es=dict(SPANISH), ar=dict(ARABIC))
    with app.app_context():
        survey = create_survey_from_spec(db.session, spec)
        db.session.commit()
        exported = survey_to_spec(survey)
        assert exported["translations"] == {"es": SPANISH, "ar": ARABIC}
        # in the order of the page, whatever the order given
        assert list(exported["translations"]["es"])[:3] == ["title", "introduction", "run_by"]
        again = create_survey_from_spec(db.session, {**exported, "slug": "translated-again"})
        db.session.commit()
        assert survey_to_spec(again) == exported
        assert content_translations.languages_of(again) == ["es", "ar"]
    # a draft may hold a language with nothing translated yet, and keeps it
    with app.app_context():
        draft = create_survey_from_spec(db.session, {**translated_spec(es={}), "slug": "empty-es", "status": "draft"})
        db.session.commit()
        assert survey_to_spec(draft)["translations"] == {"es": {}}
        assert content_translations.languages_of(draft) == ["es"]


def test_a_spec_is_refused_with_an_unknown_language_or_text_or_a_missing_one(app):
    unknown = refusal(app, translated_spec(fr={"title": "Enquête"}))
    assert unknown.code == "translation.language_unknown" and unknown.path == ("translations", "fr")
    assert "Español (es)" in str(unknown) and "العربية (ar)" in str(unknown)
    assert refusal(app, translated_spec(en=dict(SPANISH))).code == "translation.language_unknown"

    wrong = refusal(app, translated_spec(es={**SPANISH, "q:often:option:9": "nueve"}))
    assert wrong.code == "translation.path_unknown" and wrong.path == ("translations", "es", "q:often:option:9")

    incomplete = {k: v for k, v in SPANISH.items() if k != "q:often:option:1"}
    missing = refusal(app, translated_spec(es=incomplete))
    assert missing.code == "survey.publish_translation_missing"
    assert missing.path == ("translations", "es", "q:often:option:1")
    assert "Español (es)" in str(missing) and "question 3 ('often'): option 2 ('sometimes')" in str(missing)
    # a draft may be incomplete: publishing checks it
    with app.app_context():
        create_survey_from_spec(db.session, {**translated_spec(es=incomplete), "status": "draft"})
        db.session.commit()


# -- publishing --------------------------------------------------------------------------------------


def test_publishing_refuses_a_missing_translation_and_names_it(app, user):
    spec = {**translated_spec(es={k: v for k, v in SPANISH.items() if k != "q:age:text"}), "status": "draft"}
    slug = add_survey(app, spec)
    with app.app_context():
        survey = db.session.scalar(select(Survey).filter_by(slug=slug))
        problems = lifecycle.publish_refusals(survey)
        assert [p.code for p in problems] == ["survey.publish_translation_missing"]
        with pytest.raises(DomainError) as caught:
            lifecycle.publish(survey)
        assert str(caught.value) == (
            "The Español (es) translation lacks question 4 ('age'): its text. Translate it on the translations "
            "page, or remove the language."
        )
        assert survey.status == "draft"
    client = sign_in(app, "alice")
    page = text(client.get(f"/surveys/{slug}/publish"))
    assert "question 4 (&#39;age&#39;): its text" in page and 'id="translations-link"' in page
    assert client.post(f"/surveys/{slug}/publish").status_code == 409
    # translated, it publishes
    with app.app_context():
        survey = db.session.scalar(select(Survey).filter_by(slug=slug))
        content_translations.save_texts(survey, {"es": {"q:age:text": "¿Grupo de edad?"}})
        db.session.commit()
    assert client.post(f"/surveys/{slug}/publish").status_code == 303
    with app.app_context():
        assert db.session.scalar(select(Survey.status).filter_by(slug=slug)) == "open"


def test_a_translation_made_from_an_earlier_english_is_stale_until_saved_again(app, user):
    """An option relabelled in a draft: its Spanish said what the old option was, so publishing waits
    until the organizer has looked at it (saving the translations page); a spec leaves it out."""
    slug = add_survey(app, {**translated_spec(), "status": "draft"})
    client = sign_in(app, "alice")
    with app.app_context():
        survey = db.session.scalar(select(Survey).filter_by(slug=slug))
        often = builder.question_by_key(survey, "often")
        raw = {**question_to_spec(often), "options": ["never", "rarely", "often", "always"]}
        builder.update_question(survey, often, raw)
        db.session.commit()
        problems = lifecycle.publish_refusals(survey)
        assert [p.code for p in problems] == ["survey.publish_translation_stale"]
        assert str(problems[0]) == (
            "The Español (es) translation of question 3 ('often'): option 2 ('rarely') was made for an earlier "
            "English text. Check it on the translations page and save it again."
        )
        assert "q:often:option:1" not in survey_to_spec(survey)["translations"]["es"]
    page = text(client.get(f"/surveys/{slug}/translations"))
    assert page.count("the English changed: check it") == 1
    # the organizer corrects it (or keeps it): saved beside today's English, it is current again
    assert client.post(f"/surveys/{slug}/translations", data={"t-es-q:often:option:1": "rara vez"}).status_code == 303
    assert client.post(f"/surveys/{slug}/publish").status_code == 303


def test_a_renamed_questions_translations_follow_it(app, user):
    slug = add_survey(app, {**translated_spec(), "status": "draft"})
    with app.app_context():
        survey = db.session.scalar(select(Survey).filter_by(slug=slug))
        # "age" goes (its texts stay behind, unused), then "often" takes its key
        builder.delete_question(survey, builder.question_by_key(survey, "age"))
        db.session.commit()
        often = builder.question_by_key(survey, "often")
        builder.update_question(survey, often, {**question_to_spec(often), "key": "age"})
        db.session.commit()
        spanish = survey_to_spec(survey)["translations"]["es"]
        assert spanish["q:age:text"] == "¿Con qué frecuencia?" and spanish["q:age:option:3"] == "siempre"
        assert not [path for path in spanish if path.startswith("q:often:")]
        assert lifecycle.publish_refusals(survey) == []


def test_the_publish_page_names_the_first_missing_texts_and_counts_the_rest(app, user):
    slug = add_survey(app, {**translated_spec(es={}, ar={}), "status": "draft"})
    with app.app_context():
        survey = db.session.scalar(select(Survey).filter_by(slug=slug))
        problems = lifecycle.publish_refusals(survey)
        gaps = content_translations.missing(survey)
    assert len(gaps) == 2 * 14  # each language: the title, the introduction, who runs it, the statement, ten more
    assert len(problems) == lifecycle.GAPS_NAMED + 1
    assert problems[0].params["what"] == "the title" and problems[0].params["language"] == "Español (es)"
    assert str(problems[-1]) == (
        f"Texts still to translate or check besides these: {28 - lifecycle.GAPS_NAMED} (the translations page "
        "marks each)."
    )


# -- the respondent's pages --------------------------------------------------------------------------


def test_the_spanish_page_shows_the_organizers_spanish_texts_and_options(app, client):
    slug = add_survey(app, translated_spec(), owner=None)
    page = text(client.get(f"/s/{slug}", headers={"Accept-Language": "es-MX, fr;q=0.5"}))
    assert '<html lang="es" dir="ltr">' in page
    for spanish in ("Encuesta de prueba", "Para las pruebas.", "Estudio de Salud", "La participación es voluntaria."):
        assert spanish in page
    assert "¿Con qué frecuencia?" in page and "How often?" not in page
    labels = re.findall(r'<label class="option" for="often-\d">\s*<input[^>]*>\s*<span>([^<]*)</span>', page)
    assert labels == ["Nunca", "A veces", "A menudo", "Siempre"]
    yes_no = re.findall(r'<label class="option" for="drugs-\d">\s*<input[^>]*>\s*<span>([^<]*)</span>', page)
    assert yes_no == ["Sí", "No"]  # the app's words
    assert "Small test survey" not in page and "Have you used drugs?" not in page
    # the switch offers the survey's languages: English and Spanish, not Arabic
    switch = re.search(r'<nav class="language-switch".*?</nav>', page, re.S).group(0)
    assert re.findall(r'href="([^"]+)"', switch) == ["?lang=en", "?lang=es"]
    # English on request, with the English texts
    english = text(client.get(f"/s/{slug}?lang=en", headers={"Accept-Language": "es"}))
    assert '<html lang="en"' in english and "How often?" in english and "Encuesta de prueba" not in english
    # a language the survey lacks gives its first, whole: no Arabic sentence around English texts
    arabic = text(client.get(f"/s/{slug}?lang=ar"))
    assert '<html lang="en" dir="ltr">' in arabic and "Send my answers" in arabic
    # the privacy and thank-you pages follow
    privacy = text(client.get(f"/s/{slug}/privacy?lang=es"))
    assert "¿Con qué frecuencia?" in privacy and "Encuesta de prueba" in privacy
    response = client.post(f"/s/{slug}", data=FORM, headers={"Accept-Language": "es"})
    assert response.status_code == 303 and stored(app) == (1, len(FORM))


def test_a_survey_without_spanish_texts_gives_english_to_a_spanish_browser_without_a_switch(app, client):
    slug = add_survey(app, SMALL_SPEC, owner=None)
    page = text(client.get(f"/s/{slug}", headers={"Accept-Language": "es"}))
    assert '<html lang="en" dir="ltr">' in page and "Send my answers" in page
    assert 'class="language-switch"' not in page
    # a page that names no survey is offered every language of the app
    missing = client.get("/s/no-such-survey", headers={"Accept-Language": "es"})
    assert missing.status_code == 404 and '<html lang="es"' in text(missing)


def test_a_draft_in_spanish_is_previewed_by_its_organizers_and_its_404_says_nothing_of_it(app, user):
    """A draft's languages are its organizers' business: to anyone else its address answers as an
    address with no survey does, in the browser's language whatever the draft's languages are."""
    slug = add_survey(app, {**translated_spec(), "status": "draft"})
    english_only = add_survey(app, {**SMALL_SPEC, "slug": "english-draft", "status": "draft"})
    anonymous = app.test_client()
    for address in (f"/s/{slug}", "/s/english-draft", "/s/no-such-survey", f"/s/{english_only}/privacy"):
        response = anonymous.get(address, headers={"Accept-Language": "ar"})
        assert response.status_code == 404 and '<html lang="ar" dir="rtl">' in text(response), address
    client = sign_in(app, "alice")
    preview = text(client.get(f"/s/{slug}/preview", headers={"Accept-Language": "es"}))
    assert '<html lang="es"' in preview and "¿Con qué frecuencia?" in preview
    switch = re.search(r'<nav class="language-switch".*?</nav>', preview, re.S).group(0)
    assert re.findall(r'href="([^"]+)"', switch) == ["?lang=en", "?lang=es"]


def test_a_combined_questions_unrelated_question_comes_translated(app, client):
    spec = copy.deepcopy(CROSSWISE_ES_SPEC)  # its Spanish is taken apart below
    slug = add_survey(app, spec, owner=None)
    page = text(client.get(f"/s/{slug}?lang=es"))
    instruction = re.search(r'<p class="combined-instruction"[^>]*>(.*?)</p>', page, re.S).group(1)
    assert "¿Cumple años su madre en enero, febrero o marzo?" in instruction and "mother" not in instruction
    # and the survey without it is refused, naming it
    del spec["translations"]["es"]["q:evaded:unrelated_question"]
    assert "its unrelated question" in str(refusal(app, {**spec, "slug": "crosswise-2"}))


# -- the codebook ------------------------------------------------------------------------------------


def test_the_codebook_comes_in_each_of_the_surveys_languages_with_one_coding(app, user):
    slug = add_survey(app, translated_spec())
    client = sign_in(app, "alice")
    english = client.get(f"/surveys/{slug}/codebook.json").get_json()
    spanish_response = client.get(f"/surveys/{slug}/codebook.json?language=es")
    assert f'filename="{slug}-codebook-es.json"' in spanish_response.headers["Content-Disposition"]
    spanish = spanish_response.get_json()
    assert english["language"] == "en" and spanish["language"] == "es"
    assert english["languages"] == spanish["languages"] == ["en", "es"]
    assert spanish["survey"]["title"] == "Encuesta de prueba"
    questions = {q["key"]: q for q in spanish["questions"]}
    assert questions["often"]["text"] == "¿Con qué frecuencia?"
    assert [o["label"] for o in questions["often"]["options"]] == ["nunca", "a veces", "a menudo", "siempre"]
    assert [o["label"] for o in questions["drugs"]["options"]] == ["no", "sí"]  # the researcher's codes: no is 0
    # one coding: the same codes, columns and matrices, only the words differ
    for mine, theirs in zip(english["questions"], spanish["questions"], strict=True):
        assert [o["code"] for o in mine["options"]] == [o["code"] for o in theirs["options"]]
        assert mine["design"] == theirs["design"]
    assert english["columns"] == spanish["columns"]
    english_often = next(q for q in english["questions"] if q["key"] == "often")
    assert [o["label"] for o in english_often["options"]] == ["never", "sometimes", "often", "always"]
    # a language the survey does not have is refused
    assert client.get(f"/surveys/{slug}/codebook.json?language=ar").status_code == 400
    # the API's codebook takes the language too
    token = make_token(app, "alice")
    api = client.get(f"/api/v1/surveys/{slug}/codebook?language=es", headers=bearer(token)).get_json()
    assert api["survey"]["title"] == "Encuesta de prueba"
    results = text(client.get(f"/surveys/{slug}/results"))
    assert f'href="/surveys/{slug}/codebook.json?language=es"' in results


# -- the organizer's page ----------------------------------------------------------------------------


def test_the_organizer_adds_a_language_translates_it_and_removes_it(app, user):
    slug = add_survey(app, {**SMALL_SPEC, "status": "draft"})
    client = sign_in(app, "alice")
    build = text(client.get(f"/surveys/{slug}/build"))
    assert f'href="/surveys/{slug}/translations"' in build
    assert client.post(f"/surveys/{slug}/translations/add", data={"language": "fr"}).status_code == 400
    response = client.post(f"/surveys/{slug}/translations/add", data={"language": "es"})
    assert response.status_code == 303
    page = text(client.get(f"/surveys/{slug}/translations"))
    # each English text beside its Spanish input, every one still to translate
    assert 'name="t-es-title"' in page and 'name="t-es-q:often:option:3"' in page
    assert "option 4 (&#39;always&#39;)" in page and "12 texts still to translate or to check" in page
    assert client.post(f"/surveys/{slug}/translations/add", data={"language": "es"}).status_code == 409
    form = {f"t-es-{path}": value for path, value in SPANISH.items() if path not in ("run_by", "ethics_statement")}
    form["t-es-q:age:text"] = ""
    assert client.post(f"/surveys/{slug}/translations", data=form).status_code == 303
    page = text(client.get(f"/surveys/{slug}/translations"))
    assert "1 text still to translate or to check" in page and 'value="nunca"' in page
    assert ">¿Con qué frecuencia?</textarea>" in page
    assert client.post(f"/surveys/{slug}/publish").status_code == 409
    # a NUL is no text (the app-wide check leaves this form's body to the domain, which refuses it)
    nul = client.post(f"/surveys/{slug}/translations", data={**form, "t-es-title": "Otra\x00"})
    assert nul.status_code == 400 and "NUL" in text(nul)
    # a text too long is refused and nothing is saved
    too_long = {**form, "t-es-q:age:text": "x" * 3000, "t-es-title": "Otra"}
    refused = client.post(f"/surveys/{slug}/translations", data=too_long)
    assert refused.status_code == 400 and "longer than 2000 characters" in text(refused)
    with app.app_context():
        titles = db.session.scalars(select(SurveyTranslation.text).filter_by(path="title")).all()
        assert titles == ["Encuesta de prueba"]
    assert client.post(f"/surveys/{slug}/translations", data={"t-es-q:age:text": "¿Edad?"}).status_code == 303
    assert client.post(f"/surveys/{slug}/publish").status_code == 303
    # published: a language is not added nor removed, and a translation is corrected, never emptied
    assert client.post(f"/surveys/{slug}/translations/add", data={"language": "ar"}).status_code == 409
    assert client.post(f"/surveys/{slug}/translations/remove", data={"language": "es"}).status_code == 409
    emptied = client.post(f"/surveys/{slug}/translations", data={"t-es-q:age:text": ""})
    assert emptied.status_code == 409 and "cannot be emptied" in text(emptied)
    assert client.post(f"/surveys/{slug}/translations", data={"t-es-q:age:text": "¿Su edad?"}).status_code == 303
    assert "¿Su edad?" in text(client.get(f"/s/{slug}?lang=es"))
    # a draft's language goes with its texts
    with app.app_context():
        db.session.scalar(select(Survey).filter_by(slug=slug)).status = "draft"
        db.session.commit()
    assert client.post(f"/surveys/{slug}/translations/remove", data={"language": "es"}).status_code == 303
    with app.app_context():
        assert db.session.scalars(select(SurveyTranslation)).all() == []


def test_someone_without_the_edit_right_gets_a_404(app, user, bob):
    slug = add_survey(app, {**SMALL_SPEC, "status": "draft"})
    client = sign_in(app, "bob")
    assert client.get(f"/surveys/{slug}/translations").status_code == 404
    assert client.post(f"/surveys/{slug}/translations/add", data={"language": "es"}).status_code == 404


def test_the_translations_forms_need_a_csrf_token(csrf_app):
    make_user(csrf_app, "carol", "a long enough password")
    slug = add_survey(csrf_app, {**SMALL_SPEC, "status": "draft"}, owner="carol")
    client = csrf_app.test_client()

    def token(url: str) -> str:
        return re.search(r'name="csrf_token"[^>]*value="([^"]+)"', client.get(url).text).group(1)

    login = {"username": "carol", "password": "a long enough password", "csrf_token": token("/auth/login")}
    assert client.post("/auth/login", data=login).status_code == 302
    page = f"/surveys/{slug}/translations"
    assert client.post(f"{page}/add", data={"language": "es"}).status_code == 400
    with csrf_app.app_context():
        assert db.session.scalars(select(SurveyTranslation)).all() == []
    assert client.post(f"{page}/add", data={"language": "es", "csrf_token": token(page)}).status_code == 303
    assert client.post(page, data={"t-es-title": "Sin token"}).status_code == 400
    assert client.post(f"{page}/remove", data={"language": "es"}).status_code == 400
    saved = client.post(page, data={"t-es-title": "Con token", "csrf_token": token(page)})
    assert saved.status_code == 303
    # the texts may be far larger than a submission (the app's limit is 64 KiB): an Arabic
    # introduction of 10,000 letters is 60 KB in a form's body
    client.post(f"{page}/add", data={"language": "ar", "csrf_token": token(page)})
    long = {"t-ar-title": "ع" * 200, "t-ar-introduction": "ع" * 10_000, "csrf_token": token(page)}
    long |= {f"t-ar-q:{key}:text": "ع" * 2000 for key in ("drugs", "mirror", "often", "age")}  # 108 KB in all
    assert client.post(page, data=long).status_code == 303
    with csrf_app.app_context():
        assert db.session.scalars(select(SurveyTranslation.text).filter_by(language="es")).all() == ["Con token"]
