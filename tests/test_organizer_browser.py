"""The organizer's workspace in a real browser (Playwright driving Debian's Chromium).

What these prove: an organizer can build a survey from nothing, watching the privacy preview follow
what they type (numbers asked from the server, which match the privacy core); the budget panel shows
the total ε; a respondent can answer the result in another browser and the organizer sees the
response counted; a researcher sees results but cannot reach the builder; the pages run under the
site's CSP (no inline script or style) and axe-core finds no serious accessibility violation.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from survey.domain.models import Membership, Survey, User
from survey.domain.surveys.preview import labels_for, points_text, probability_text
from survey.domain.surveys.wording import deniability_sentence, describe_design
from survey.platform.extensions import db
from survey.privacy import CoinFlip, Crosswise, ForcedResponse, GeneralizedRR, UnrelatedQuestion, margin_of_error
from survey.privacy.number_planning import number_margin, number_sample_size
from survey.privacy.numeric import HybridNumber
from survey.privacy.unrelated_items import ITEMS

from .live import live_site
from .pages import axe_violations, new_page, sign_in

ORGANIZER = ("olivia", "organizer password 1")
RESEARCHER = ("rita", "researcher password 1")


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    def setup(session):
        for name, password in (ORGANIZER, RESEARCHER):
            user = User(username=name)
            user.set_password(password)
            session.add(user)

    with live_site(tmp_path_factory.mktemp("organizer"), "organizer-browser-tests", setup) as site:
        yield site


def preview_text(page, name: str):
    return page.locator(f"#privacy-preview [data-preview='{name}']")


def test_organizer_builds_publishes_and_sees_a_response(live_server, browser):
    app, base = live_server
    page = new_page(browser)
    sign_in(page, base, ORGANIZER)

    page.goto(f"{base}/surveys/new")
    page.fill("#title", "Student life")
    page.fill("#introduction", "A short survey about study habits.")
    with page.expect_navigation():
        page.click("text=Create draft")
    slug = re.search(r"/surveys/([^/]+)/build$", page.url).group(1)

    # a yes/no question with the seed's coin flip, set by its ε
    page.click("#add-question")
    expect(page.locator("#options-block")).to_be_hidden()  # a yes/no question has no options to type
    page.fill("#text", "Have you ever cheated in an exam?")
    page.fill("#epsilon", repr(math.log(3)))
    expect(preview_text(page, "deniability")).to_contain_text("at most 75% sure")
    expect(preview_text(page, "derived")).to_have_text("→ truth probability 0.5")
    expect(page.locator("#truth_probability")).to_have_value("0.5")  # the parameter that follows, shown read-only
    with page.expect_navigation():
        page.click("text=Add question")
    expect(page.locator("#total-epsilon")).to_have_text("1.10")

    # a choice question with GRR over 4 options; the preview follows ε as it is typed
    page.click("#add-question")
    page.check("#kind-1")
    expect(page.locator("#options-block")).to_be_visible()
    expect(page.locator("#yes-probability-block")).to_be_hidden()
    expect(page.locator("#design")).to_have_value("grr")  # the only design a choice question can use
    expect(page.locator("#design option[value=coin_flip]")).to_be_disabled()
    page.fill("#text", "How often do you study after midnight?")
    page.fill("#options", "never\nsometimes\noften\nalways")
    expect(preview_text(page, "epsilon")).to_have_text("1.00")
    before = {name: preview_text(page, name).text_content() for name in ("derived", "deniability", "margin")}
    page.fill("#epsilon", "")
    page.locator("#epsilon").press_sequentially("0.5", delay=60)
    grr = GeneralizedRR(labels_for("choice", 4), epsilon=0.5)
    expect(preview_text(page, "epsilon")).to_have_text("0.50")
    expect(preview_text(page, "derived")).to_have_text(f"→ truth probability {probability_text(grr.truth_probability)}")
    expect(preview_text(page, "deniability")).to_have_text(deniability_sentence(grr))
    expect(preview_text(page, "margin")).to_have_text(points_text(margin_of_error(grr, 1000)))
    after = {name: preview_text(page, name).text_content() for name in before}
    assert all(before[name] != after[name] for name in before), (before, after)
    page.fill("#epsilon", "2")
    expect(preview_text(page, "epsilon")).to_have_text("2.00")
    page.fill("#epsilon", "0")
    expect(preview_text(page, "error")).to_contain_text("ε (epsilon) must be a number greater than 0")
    expect(page.locator("#privacy-preview [data-preview='figures']")).to_be_hidden()
    page.fill("#epsilon", "0.5")
    expect(preview_text(page, "epsilon")).to_have_text("0.50")
    with page.expect_navigation():
        page.click("text=Add question")

    # a direct question: no privacy settings, said to be unprotected
    page.click("#add-question")
    page.check("#kind-2")
    expect(page.locator("#privacy-block")).to_be_hidden()
    expect(page.locator("#direct-note")).to_be_visible()
    page.fill("#text", "Your year of study?")
    page.fill("#options", "first\nsecond\nthird or later")
    page.uncheck("#required")
    with page.expect_navigation():
        page.click("text=Add question")

    total = CoinFlip.from_epsilon(math.log(3)).epsilon + grr.epsilon
    expect(page.locator("#total-epsilon")).to_have_text(f"{total:.2f}")
    expect(page.locator("#budget")).to_contain_text("1 question is asked directly")
    assert page.locator(".question-item").count() == 3
    assert not page.csp_errors, page.csp_errors

    # publish from the management page, as the organizer would
    page.click("text=Publish, share and access")
    page.click("#publish-link")  # what freezes, then the confirmation
    with page.expect_navigation():
        page.click("#confirm-button")
    with app.app_context():
        assert db.session.scalar(select(Survey.status).where(Survey.slug == slug)) == "open"

    respondent = new_page(browser)
    respondent.goto(f"{base}/s/{slug}")
    respondent.click("label[for='q1-1']")
    respondent.click("label[for='q2-2']")
    respondent.click("label[for='q3-0']")
    with respondent.expect_navigation():
        respondent.click("#submit-button")
    assert respondent.text_content("h1") == "Your answers were sent"
    respondent.context.close()

    page.goto(f"{base}/surveys/{slug}/results")
    expect(page.locator("dl.kv").first).to_contain_text("Submissions")
    assert page.locator("dl.kv dt:text('Submissions') + dd").first.text_content().strip() == "1"

    page.goto(f"{base}/surveys/{slug}/build")
    expect(page.locator("#frozen-note")).to_be_visible()
    assert page.locator("form[action$='/delete']").count() == 0
    page.context.close()


def test_organizer_builds_forced_response_and_unrelated_question_and_publishes(live_server, browser):
    """The two designs the builder did not offer before: their inputs come from the registry, the
    script shows each design's own, and the preview fills in the parameter that follows."""
    app, base = live_server
    page = new_page(browser)
    sign_in(page, base, ORGANIZER)
    page.goto(f"{base}/surveys/new")
    page.fill("#title", "Every design")
    with page.expect_navigation():
        page.click("text=Create draft")
    slug = re.search(r"/surveys/([^/]+)/build$", page.url).group(1)

    # forced response on three options, set by ε: every option is forced with the same chance
    page.click("#add-question")
    page.check("#kind-1")
    page.fill("#text", "Which of these have you done?")
    page.fill("#options", "a\nb\nc")
    page.select_option("#design", "forced_response")
    expect(page.locator("#forced-block")).to_be_visible()
    for hidden in ("#yes-probability-block", "#unrelated-yes-rate-block", "#truth-probability-block"):
        expect(page.locator(hidden)).to_be_hidden()
    page.fill("#epsilon", "1")
    forced = ForcedResponse.from_epsilon(1.0, 3)
    c = forced.parameters["forced"][0]
    expect(preview_text(page, "epsilon")).to_have_text("1.00")
    expect(preview_text(page, "derived")).to_have_text(
        f"→ forcing probabilities {', '.join([probability_text(c)] * 3)}"
    )
    expect(page.locator("#forced")).to_have_value(", ".join([f"{c:.6g}"] * 3))
    expect(preview_text(page, "deniability")).to_have_text(deniability_sentence(ForcedResponse([c] * 3)))
    with page.expect_navigation():
        page.click("text=Add question")

    # the unrelated question on a yes/no question, set by the sensitive-question probability
    page.click("#add-question")
    page.fill("#text", "Have you ever shoplifted?")
    expect(page.locator("#design option[value=forced_response]")).to_be_disabled()  # a choice design
    page.select_option("#design", "unrelated_question")
    expect(page.locator("#unrelated-yes-rate-block")).to_be_visible()
    expect(page.locator("#yes-probability-block")).to_be_hidden()
    page.fill("#unrelated_yes_rate", "0.25")
    page.check("input[name=set_by][value=sensitive_probability]")
    page.fill("#sensitive_probability", "0.7")
    unrelated = UnrelatedQuestion(0.7, 0.25)
    expect(preview_text(page, "epsilon")).to_have_text(f"{unrelated.epsilon:.2f}")
    expect(page.locator("#epsilon")).to_have_value(f"{unrelated.epsilon:.6g}")
    expect(preview_text(page, "description")).to_have_text(describe_design(unrelated))
    with page.expect_navigation():
        page.click("text=Add question")
    assert page.locator(".question-item").count() == 2
    assert not page.csp_errors, page.csp_errors

    page.click("text=Publish, share and access")
    page.click("#publish-link")  # what freezes, then the confirmation
    with page.expect_navigation():
        page.click("#confirm-button")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        assert survey.status == "open"
        first, second = (q.design for q in survey.questions)
        assert first.mechanism_name == "forced_response" and first.parameters == {"forced": [c] * 3}
        assert first.epsilon == pytest.approx(1.0)
        assert second.mechanism_name == "unrelated_question"
        assert second.parameters == {"sensitive_probability": 0.7, "unrelated_yes_rate": 0.25}
    page.context.close()


def test_organizer_builds_a_randomized_number_watching_its_planned_margin(live_server, browser):
    """The randomized number: its range and privacy blocks, the designs of numbers only (hybrid
    first), no "set the level by" choice (ε alone), and the preview's planned half-width of the
    mean in the question's units (number_margin), beside asking directly, following the range."""
    app, base = live_server
    page = new_page(browser)
    sign_in(page, base, ORGANIZER)
    page.goto(f"{base}/surveys/new")
    page.fill("#title", "Drinks")
    with page.expect_navigation():
        page.click("text=Create draft")
    slug = re.search(r"/surveys/([^/]+)/build$", page.url).group(1)

    page.click("#add-question")
    page.check("input[name=kind][value=rr_number]")
    expect(page.locator("#range-block")).to_be_visible()
    expect(page.locator("#privacy-block")).to_be_visible()
    expect(page.locator("#options-block")).to_be_hidden()
    expect(page.locator("#set-by-block")).to_be_hidden()
    expect(page.locator("#design")).to_have_value("hybrid")
    expect(page.locator("#design option[value=grr]")).to_be_disabled()
    expect(page.locator("#design option[value=laplace]")).to_be_enabled()
    page.fill("#text", "How many drinks did you have last week?")
    page.fill("#minimum", "0")
    page.fill("#maximum", "30")
    page.fill("#epsilon", "2")
    hybrid = HybridNumber(2.0, 0, 30)
    planned, direct = number_margin(1000, 0, 30, mechanism=hybrid), number_margin(1000, 0, 30)
    expect(preview_text(page, "epsilon")).to_have_text("2.00")
    expect(preview_text(page, "number-margin")).to_have_text(f"±{planned:.2f}")
    expect(preview_text(page, "direct-margin")).to_have_text(f"±{direct:.2f}")
    # the answers needed for the survey's target margin (5 points) as that share of the range: ±1.50
    needed, direct_needed = (number_sample_size(1.5, 0, 30, mechanism=m) for m in (hybrid, None))
    expect(preview_text(page, "number-needed")).to_have_text(f"{needed:,} (for ±1.50, 5% of its range)")
    expect(preview_text(page, "direct-needed")).to_have_text(f"{direct_needed:,}")
    expect(preview_text(page, "margin")).to_be_hidden()
    expect(preview_text(page, "deniability")).to_have_text(deniability_sentence(hybrid))
    page.fill("#maximum", "60")  # the margin is in the question's units: it follows the range
    expect(preview_text(page, "number-margin")).to_have_text(
        f"±{number_margin(1000, 0, 60, mechanism=HybridNumber(2.0, 0, 60)):.2f}"
    )
    page.fill("#maximum", "0")
    expect(preview_text(page, "error")).to_contain_text("above the minimum")
    page.fill("#maximum", "30")
    expect(preview_text(page, "number-margin")).to_have_text(f"±{planned:.2f}")
    with page.expect_navigation():
        page.click("text=Add question")
    assert page.locator(".question-item").count() == 1
    expect(page.locator("#total-epsilon")).to_have_text("2.00")
    assert not page.csp_errors, page.csp_errors
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        (question,) = survey.questions
        assert (question.kind, question.minimum, question.maximum) == ("rr_number", 0, 30)
        assert question.design.mechanism_name == "hybrid" and question.design.epsilon == 2.0
    page.context.close()


def test_researcher_sees_results_but_not_the_builder(live_server, browser):
    app, base = live_server
    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == ORGANIZER[0]))
        researcher = db.session.scalar(select(User).where(User.username == RESEARCHER[0]))
        survey = Survey(slug="shared-survey", title="Shared survey", status="draft", owner=owner)
        db.session.add(survey)
        db.session.add(Membership(survey=survey, user=researcher, role="researcher"))
        db.session.commit()
    page = new_page(browser)
    sign_in(page, base, RESEARCHER)
    response = page.goto(f"{base}/surveys/shared-survey/results")
    assert response.status == 200 and "Shared survey" in page.text_content("h1")
    for path in ("build", "questions/new", "questions/q1/edit"):
        assert page.goto(f"{base}/surveys/shared-survey/{path}").status == 404, path
    page.context.close()


def test_builder_pages_have_no_serious_accessibility_violations(live_server, browser):
    _, base = live_server
    page = new_page(browser, bypass_csp=True)  # only so that axe itself can be injected
    sign_in(page, base, ORGANIZER)
    page.goto(f"{base}/surveys/new")
    page.fill("#title", "Accessible")
    with page.expect_navigation():
        page.click("text=Create draft")
    build = page.url
    page.click("#add-question")
    page.fill("#epsilon", "0")
    with page.expect_navigation():
        page.click("text=Add question")  # no text and ε = 0: the error state
    assert page.locator(".field-error").count() >= 2
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.goto(build)
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.context.close()


def test_organizer_says_who_is_asking_when_creating_a_survey(live_server, browser):
    """The new-survey form takes who runs the survey, a contact and the consent or ethics statement;
    the build page shows them to correct, and both pages stay accessible."""
    app, base = live_server
    page = new_page(browser, bypass_csp=True)  # bypass: only so that axe itself can be injected
    sign_in(page, base, ORGANIZER)
    page.goto(f"{base}/surveys/new")
    expect(page.locator("fieldset.who-is-asking legend")).to_have_text("Who is asking")
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.fill("#title", "Sleep and screens")
    page.fill("#run_by", "Sleep Lab, University of Example")
    page.fill("#contact", "sleep-lab@example.org")
    page.fill("#ethics_statement", "Approved by the Example Ethics Board (ref. EB-2026-031).")
    with page.expect_navigation():
        page.click("text=Create draft")
    expect(page.locator("#contact")).to_have_value("sleep-lab@example.org")
    expect(page.locator("#ethics_statement")).to_have_value("Approved by the Example Ethics Board (ref. EB-2026-031).")
    slug = re.search(r"/surveys/([^/]+)/build$", page.url).group(1)
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        assert (survey.run_by, survey.contact) == ("Sleep Lab, University of Example", "sleep-lab@example.org")
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.context.close()


def test_organizer_builds_a_crosswise_question_from_a_preset_and_edits_it(live_server, browser):
    """The crosswise model: no "set the level by" choice (its unrelated question's rate sets it), a
    preset fills the unrelated question's words and rate, both stay editable, and the preview shows
    Warner's ε at that rate and the words a respondent will read."""
    app, base = live_server
    page = new_page(browser)
    sign_in(page, base, ORGANIZER)
    page.goto(f"{base}/surveys/new")
    page.fill("#title", "Crosswise")
    with page.expect_navigation():
        page.click("text=Create draft")
    slug = re.search(r"/surveys/([^/]+)/build$", page.url).group(1)

    page.click("#add-question")
    page.fill("#text", "Did you cheat on the exam?")
    page.select_option("#design", "crosswise")
    expect(page.locator("#set-by-block")).to_be_hidden()
    expect(page.locator("#unrelated-preset-block")).to_be_visible()
    preset = ITEMS["phone_last_digit_0_2"]
    page.select_option("#unrelated-preset", preset.id)
    expect(page.locator("#unrelated_question")).to_have_value(preset.text)
    expect(page.locator("#unrelated_rate")).to_have_value(str(preset.rate))
    crosswise = Crosswise(preset.rate, preset.text)
    expect(preview_text(page, "epsilon")).to_have_text(f"{crosswise.epsilon:.2f}")
    expect(preview_text(page, "description")).to_have_text(describe_design(crosswise))
    # edited: a rate of its own
    page.fill("#unrelated_rate", "0.2")
    expect(preview_text(page, "epsilon")).to_have_text(f"{Crosswise(0.2).epsilon:.2f}")
    with page.expect_navigation():
        page.click("text=Add question")
    assert not page.csp_errors, page.csp_errors
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        (question,) = survey.questions
        assert question.design.mechanism_name == "crosswise"
        assert question.design.parameters == {"unrelated_yes_rate": 0.2, "unrelated_question": preset.text}
        key = question.key
    page.context.close()
    # the form with the crosswise design, and its respondent's page, stay accessible
    page = new_page(browser, bypass_csp=True)  # bypass: only so that axe itself can be injected
    sign_in(page, base, ORGANIZER)
    page.goto(f"{base}/surveys/{slug}/questions/{key}/edit")
    expect(page.locator("#unrelated-preset-block")).to_be_visible()
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.goto(f"{base}/s/{slug}/preview")
    expect(page.locator(f"#instruction-{key}")).to_contain_text(preset.text)
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.context.close()
