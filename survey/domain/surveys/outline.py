"""A survey's outline: its questions without their options, for pages that list them.

Reading ``survey.questions`` brings every question's options and design with it (the relationships
load eagerly, so that pages which show them send three queries in all). For a survey of 200 questions
of 50 options that is 10,000 option objects, a few tenths of a second of a worker's time on each
request, even where a page shows no option (an analysis form lists keys and texts; the build page
shows a few options per question). These read what such pages need in one query each.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session, lazyload, selectinload
from sqlalchemy.orm.attributes import set_committed_value

from survey.domain.models import Design, Option, Question, Survey


def question_list(session: Session, survey: Survey, *, designs: bool = False) -> list[Question]:
    """The survey's questions in order, their options left unread until asked for (and their designs
    too, unless ``designs``). A design's matrix is left unread as well: the pages that list designs show
    their names, parameters and ε, and 200 stored 50 × 50 matrices took half of the build page's time to
    decode (0.23 of 0.52 s); :meth:`Design.mechanism` reads it when asked."""
    design = selectinload(Question.design).defer(Design.matrix) if designs else lazyload(Question.design)
    query = (
        select(Question)
        .where(Question.survey_id == survey.id)
        .order_by(Question.position)
        .options(lazyload(Question.options), design)
    )
    return list(session.scalars(query))


def option_counts(session: Session, survey: Survey) -> dict[int, int]:
    """How many options each of the survey's questions has (by question id)."""
    rows = session.execute(
        select(Option.question_id, func.count())
        .join(Question, Question.id == Option.question_id)
        .where(Question.survey_id == survey.id)
        .group_by(Option.question_id)
    )
    return {question_id: int(count) for question_id, count in rows}


def first_labels(session: Session, survey: Survey, shown: int) -> dict[int, list[str]]:
    """The labels of each question's first ``shown`` options (by question id), in order."""
    rows = session.execute(
        select(Option.question_id, Option.label)
        .join(Question, Question.id == Option.question_id)
        .where(Question.survey_id == survey.id, Option.code < shown)
        .order_by(Option.question_id, Option.code)
    )
    labels: dict[int, list[str]] = {}
    for question_id, label in rows:
        labels.setdefault(question_id, []).append(label)
    return labels


def with_options(session: Session, questions: list[Question]) -> list[Question]:
    """``questions`` (from :func:`question_list`) with their options read in one query for all, for a
    page that shows the options of some of them (an analysis form's answer select): reading each
    question's options as it is asked for would send a statement per question."""
    found: dict[int, list[Option]] = {q.id: [] for q in questions}
    if found:
        query = select(Option).where(Option.question_id.in_(list(found))).order_by(Option.question_id, Option.code)
        for option in session.scalars(query):
            found[option.question_id].append(option)
    for question in questions:
        set_committed_value(question, "options", found[question.id])
    return questions
