"""What the respondent's page shows and carries for each question.

A randomized question carries what its mechanism says the browser samples from (its ``sampler()``,
the general mechanism interface of :mod:`survey.privacy.interface`): for a matrix, its columns
(``columns[t]`` is the distribution of the report when the true answer is ``t``). The browser samples
from exactly these numbers and holds no formula of its own, so the page can never disagree with the
server about ε; nothing here assumes the mechanism is a matrix.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass

from survey.domain.models import Question, Survey
from survey.domain.surveys.kinds import Kind
from survey.domain.surveys.wording import (
    COMBINED_OPTIONS,
    combined_instruction,
    deniability_line,
    describe_design,
    epsilon_text,
    own_coin_description,
    own_coin_instruction,
    sent_sentence,
    total_deniability_sentence,
)
from survey.platform.request_translations import gettext
from survey.privacy import Mechanism, Randomizer
from survey.privacy.designs import DESIGNS
from survey.privacy.physical import physical_procedure

#: How the respondent's page draws each report (SECURITY.md, section 2). MEMOIZED: from an HMAC of a
#: secret this browser keeps, so the same browser sending the same answer again repeats its report.
#: SINGLE_USE (a survey by invitation: each code admits one submission, so there is nothing to repeat)
#: and SHARED (answered on shared devices, where a browser's secret would be everyone's): a fresh
#: draw each time, nothing kept in the browser; SHARED also clears the page for the next person.
MEMOIZED, SINGLE_USE, SHARED = "memoized", "single-use", "shared"

#: Up to this many options, none longer than COLUMN_LABEL characters, are laid out in two columns.
COLUMN_OPTIONS = 6
COLUMN_LABEL = 20


@dataclass
class QuestionView:
    question: Question
    mechanism: Mechanism | Randomizer | None

    @property
    def key(self) -> str:
        return self.question.key

    @property
    def randomized(self) -> bool:
        return self.mechanism is not None

    @property
    def epsilon(self) -> str:
        return epsilon_text(self.mechanism.epsilon) if self.mechanism else ""

    @property
    def combined(self) -> bool:
        """Whether it is a non-randomized design's combined question (crosswise, triangular): nothing is
        drawn; the respondent's answer to the combined question is the report, posted as it is."""
        design = DESIGNS.get(getattr(self.mechanism, "design", ""))
        return design is not None and design.combined

    @property
    def own_coin(self) -> bool:
        """Whether the respondent randomizes with their own coins or die (survey.privacy.physical): the
        page draws nothing, and the answer given, already the report, is posted as it is."""
        return bool(self.question.own_coin) and isinstance(self.mechanism, Mechanism)

    @property
    def by_hand(self) -> bool:
        """Whether the page draws nothing for it (a combined question, or randomized with one's own
        coins): its answers are named inputs posted as they are."""
        return self.combined or self.own_coin

    @property
    def instruction(self) -> str:
        """How to answer the combined question, or how to toss or roll for it, in a few short
        sentences (empty for any other question)."""
        if self.combined:
            # a survey read in another language (content_translations) gives its own unrelated question
            return combined_instruction(self.mechanism, getattr(self.question, "unrelated_question", None))
        if self.own_coin:
            procedure = physical_procedure(self.mechanism)
            assert procedure is not None  # the spec refuses own coins for any other design
            return own_coin_instruction(procedure, [option_label(label) for _, label in self.options])
        return ""

    @property
    def one_sided(self) -> bool:
        return self.mechanism is not None and math.isinf(self.mechanism.epsilon)

    @property
    def description(self) -> str:
        if self.own_coin:
            return own_coin_description()
        return describe_design(self.mechanism) if self.mechanism else ""

    @property
    def deniability(self) -> str:
        """The one short line under the question: how far what is sent can move a suspicion."""
        return deniability_line(self.mechanism) if self.mechanism else ""

    @property
    def sampler_attributes(self) -> dict[str, str]:
        """The fieldset's ``data-`` attributes that tell the browser how to draw the report."""
        assert self.mechanism is not None
        return sampler_attributes(self.mechanism)

    @property
    def kind(self) -> Kind:
        return self.question.kind_entry

    @property
    def arm_group(self) -> str | None:
        """The split ballot it is an arm of (survey.domain.surveys.arms): the page shows one arm of a
        group, drawn by respond.js with the arms' shares, and hides and disables the others."""
        return self.question.arm_group

    @property
    def template(self) -> str:
        """The macro of templates/respond/_answers.html that draws its answer (its kind's)."""
        return self.kind.template

    @property
    def number(self) -> bool:
        """Whether its answer is a number typed: asked directly, the browser checks the range before
        sending it; randomized, it clamps it to the range and sends only the code it draws from it."""
        return self.kind.ranged

    @property
    def options(self) -> list[tuple[int, str]]:
        """(code, label) of each answer; a combined question's are its combined answers, whose codes are
        the report codes (the matrix's rows)."""
        if self.combined:
            return list(enumerate(gettext(label) for label in COMBINED_OPTIONS[self.mechanism.design]))
        return [(o.code, o.label) for o in self.question.options]

    @property
    def layout(self) -> str:
        """How the answers are laid out, each one still a full-row tap target of at least 44 px:
        a kind's own layout first ("row" puts yes and no side by side); "columns" flows three to six
        short options down two columns (in reading order, so a scale still reads from top to bottom);
        "" is one per row."""
        labels = [o.label for o in self.question.options]
        if self.combined:  # two long answers, one per row
            return ""
        if self.kind.layout:
            return self.kind.layout
        if 3 <= len(labels) <= COLUMN_OPTIONS and max(map(len, labels)) <= COLUMN_LABEL:
            return "columns"
        return ""


@dataclass
class SurveyPage:
    survey: Survey
    questions: list[QuestionView]
    #: The survey's total ε: the sum over its randomized questions (∞ if one is one-sided).
    epsilon: float

    @property
    def total_epsilon(self) -> str:
        return epsilon_text(self.epsilon)

    @property
    def regime(self) -> str:
        """How reports are drawn: memoized per browser only where one browser is one respondent and
        may answer again; shared devices come first, since there a code does not make the device
        anyone's own."""
        if self.survey.shared_devices:
            return SHARED
        if self.survey.access == "invitation":
            return SINGLE_USE
        return MEMOIZED

    @property
    def total_deniability(self) -> str:
        return total_deniability_sentence(self.epsilon)

    @property
    def randomized(self) -> list[QuestionView]:
        return [q for q in self.questions if q.randomized]

    @property
    def drawn(self) -> list[QuestionView]:
        """The questions whose report the browser draws at random (all randomized ones but the combined
        and those randomized with the respondent's own coins)."""
        return [q for q in self.questions if q.randomized and not q.by_hand]

    @property
    def own_coins(self) -> list[QuestionView]:
        """The questions the respondent randomizes with their own coins or die: nothing is drawn."""
        return [q for q in self.questions if q.own_coin]

    @property
    def combined(self) -> list[QuestionView]:
        """The non-randomized designs' combined questions (crosswise, triangular): nothing is drawn."""
        return [q for q in self.questions if q.combined]

    @property
    def randomized_numbers(self) -> list[QuestionView]:
        """The questions whose answer is a number randomized by a number mechanism (the page then
        loads the number sampler, static/js/respond/numbers.js)."""
        return [q for q in self.questions if q.kind.randomized_number]

    @property
    def direct(self) -> list[QuestionView]:
        return [q for q in self.questions if not q.randomized]

    def number(self, view: QuestionView) -> int:
        """The question's number as the page shows it (from 1): the arms of a split ballot share one,
        since a respondent sees one of them."""
        return self._numbers[self.questions.index(view)]

    @functools.cached_property
    def _numbers(self) -> list[int]:
        numbers: list[int] = []
        previous: str | None = None
        for q in self.questions:
            same = q.arm_group is not None and q.arm_group == previous
            numbers.append(numbers[-1] if same else (numbers[-1] if numbers else 0) + 1)
            previous = q.arm_group
        return numbers

    @property
    def splits(self) -> list[tuple[int, int]]:
        """(number, how many ways) of each split ballot, in page order: the summary says that such a
        question is asked one way of several, chosen at random, and the way shown says how it is protected."""
        counts: dict[str, int] = {}
        for q in self.questions:
            if q.arm_group is not None:
                counts[q.arm_group] = counts.get(q.arm_group, 0) + 1
        firsts = {q.arm_group: q for q in reversed(self.questions) if q.arm_group is not None}
        return sorted((self.number(firsts[group]), k) for group, k in counts.items())

    @property
    def splits_by_ways(self) -> list[tuple[int, list[int]]]:
        """:attr:`splits` gathered by how many ways: (ways, the numbers of the questions asked in that
        many), so the summary says "Questions 1 and 2 are each asked in one of 2 ways" once."""
        gathered: dict[int, list[int]] = {}
        for number, ways in self.splits:
            gathered.setdefault(ways, []).append(number)
        return sorted(gathered.items())

    @property
    def questions_shown(self) -> int:
        """How many questions a respondent answers: a split ballot is one."""
        return self._numbers[-1] if self.questions else 0

    def outside_splits(self, views: list[QuestionView]) -> list[QuestionView]:
        """``views`` without the arms of split ballots (which the summary describes on their own)."""
        return [q for q in views if q.arm_group is None]


@dataclass
class SentView:
    """What was sent for one randomized question, shown on the thank-you page right after sending:
    the report (never the true answer, which never reached the server) and why it protects."""

    number: int
    question: QuestionView
    #: The report as shown: an option's label, or a number in the question's units.
    shown: str
    #: Why it does not give the answer away, computed for this very report.
    why: str


def _number_text(x: float) -> str:
    """A reported number as the page shows it: at most one decimal (as try.js shows a try)."""
    text = f"{round(float(x), 1):g}"
    return "0" if text == "-0" else text


def sent_views(page: SurveyPage, reports: dict[str, int]) -> list[SentView]:
    """The thank-you page's "what was sent for you": for each question whose report the browser drew,
    in page order, the report received (``reports``: question key → reported code, as stored)."""
    views = []
    for q in page.drawn:
        code = reports.get(q.key)
        if code is None:  # not answered (an optional question)
            continue
        if isinstance(q.mechanism, Mechanism):
            label = option_label(dict(q.options).get(code, str(code)))
            why = sent_sentence(q.mechanism, code, label, [option_label(shown) for _, shown in q.options])
        else:
            label = _number_text(q.mechanism.value_of(code))
            why = sent_sentence(q.mechanism, code)
        views.append(SentView(page.number(q), q, label, why))
    return views


def sampler_attributes(mechanism: Randomizer) -> dict[str, str]:
    """A mechanism's ``sampler()`` as ``data-`` attributes: ``sampler`` names how the browser draws
    (respond.js refuses one it does not know), each other entry is JSON (for a matrix: ``columns``).

    >>> from survey.privacy import Warner
    >>> sampler_attributes(Warner(0.75))
    {'sampler': 'columns', 'columns': '[[0.75, 0.25], [0.25, 0.75]]'}
    """
    sampler = mechanism.sampler()
    return {"sampler": str(sampler["sampler"])} | {
        name: json.dumps(value) for name, value in sampler.items() if name != "sampler"
    }


def survey_page(survey: Survey) -> SurveyPage:
    views = [QuestionView(q, q.mechanism()) for q in survey.questions]
    return SurveyPage(survey, views, survey.total_epsilon())


def option_label(label: str) -> str:
    return label[:1].upper() + label[1:]


EMAIL = re.compile(r"[^@\s<>\"]+@[^@\s<>\"]+\.[^@\s<>\"]+")
WEB_ADDRESS = re.compile(r"https?://[^\s<>\"]+", re.IGNORECASE)
PHONE_NUMBER = re.compile(r"\+?[0-9][0-9 ().-]{5,}[0-9]")


def contact_href(contact: str) -> str | None:
    """A link for a survey's contact when it is one e-mail address, web address or phone number
    (``mailto:``, the address itself, ``tel:``); None for anything else, which is shown as text.

    >>> contact_href("team@example.org"), contact_href("https://example.org/study")
    ('mailto:team@example.org', 'https://example.org/study')
    >>> contact_href("+44 (0)20 7946 0000"), contact_href("Dr. Example, room 4")
    ('tel:+442079460000', None)
    """
    contact = (contact or "").strip()
    if EMAIL.fullmatch(contact):
        return f"mailto:{contact}"
    if WEB_ADDRESS.fullmatch(contact):
        return contact
    if PHONE_NUMBER.fullmatch(contact):
        # "(0)" is the trunk prefix dialled only from within the country, never after "+44"
        return "tel:" + re.sub(r"[^0-9+]", "", contact.replace("(0)", ""))
    return None
