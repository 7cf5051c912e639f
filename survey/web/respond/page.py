"""What the respondent's page shows and carries for each question.

A randomized question carries its matrix's columns (``columns[t]`` is the distribution of the
report when the true answer is ``t``); the browser samples from exactly these numbers and holds no
formula of its own, so the page can never disagree with the server about ε.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from survey.domain.models import Question, Survey
from survey.domain.wording import deniability_sentence, describe_design, epsilon_text, total_deniability_sentence
from survey.privacy import Mechanism


@dataclass
class QuestionView:
    question: Question
    mechanism: Mechanism | None

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
    def one_sided(self) -> bool:
        return self.mechanism is not None and math.isinf(self.mechanism.epsilon)

    @property
    def description(self) -> str:
        return describe_design(self.mechanism) if self.mechanism else ""

    @property
    def deniability(self) -> str:
        return deniability_sentence(self.mechanism) if self.mechanism else ""

    @property
    def columns_json(self) -> str:
        assert self.mechanism is not None
        return json.dumps(self.mechanism.matrix.T.tolist())

    @property
    def options(self) -> list[tuple[int, str]]:
        return [(o.code, o.label) for o in self.question.options]


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
    def total_deniability(self) -> str:
        return total_deniability_sentence(self.epsilon)

    @property
    def randomized(self) -> list[QuestionView]:
        return [q for q in self.questions if q.randomized]

    @property
    def direct(self) -> list[QuestionView]:
        return [q for q in self.questions if not q.randomized]


def survey_page(survey: Survey) -> SurveyPage:
    views = [QuestionView(q, q.mechanism()) for q in survey.questions]
    return SurveyPage(survey, views, survey.total_epsilon())


def option_label(label: str) -> str:
    return label[:1].upper() + label[1:]
