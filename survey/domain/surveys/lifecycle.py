"""A survey's life: draft → open → closed (and reopened) → archived, plus duplicating, dates and the
survey's address.

Opening freezes the designs: from then on respondents' reports exist under each question's
matrix, and estimates must never mix reports made under different matrices. Texts may still be
corrected; to change a design, duplicate the survey.

Only the owner may throw work away or put it out of sight: delete a draft (nothing was answered
yet, so nothing but the draft is lost), or archive a closed survey (it leaves the survey lists,
keeps its answers and results, and accepts nothing; restoring it makes it closed again).

Closing and reopening are each one conditional UPDATE (``... WHERE status = 'open'``), so what
decided a change is checked again by the database at the moment it is written. Several workers
that each saw a survey become precise enough used to write its close (seven within 109 ms), and a
close decided before an organizer's reopen was written after it, closing the survey against the
organizer's action; now the first close wins, the others change nothing, and closing by itself
(:func:`close_automatically`) also requires the setting that a reopen switches off.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, object_session

from survey.domain import validation
from survey.domain.accounts.access import OWNER, role_of
from survey.domain.accounts.sharing import copy_team
from survey.domain.errors import Conflict, DomainError, Forbidden
from survey.domain.models import ACCESS_MODES, Survey, User
from survey.domain.responses.tallies import submission_count
from survey.domain.surveys.arms import check_groups
from survey.domain.surveys.content_translations import missing
from survey.domain.surveys.specs import create_survey_from_spec, question_place, survey_to_spec
from survey.domain.validation import parse_json, within_cap

SLUG = ("slug",)
#: How many missing translations the publish page names one by one.
GAPS_NAMED = 10


def publish_refusals(survey: Survey) -> list[Conflict]:
    """Why ``survey`` cannot be published now (empty when it can): the publish page shows them before
    the organizer confirms, and :func:`publish` refuses with the first."""
    if survey.status != "draft":
        return [Conflict("survey.publish_not_draft", state=survey.status)]
    problems = []
    if not survey.questions:
        problems.append(Conflict("survey.publish_no_questions"))
    try:
        check_groups(survey.questions, question_place)
    except DomainError as error:
        problems.append(Conflict("survey.publish_split_ballot", reason=str(error)))
    total = survey.total_epsilon()
    if not within_cap(total, survey.epsilon_cap):
        shown = "∞" if math.isinf(total) else f"{total:.2f}"
        problems.append(Conflict("survey.publish_above_cap", total=shown, cap=survey.epsilon_cap))
    # every text in every language the survey has: a respondent's page is in one language (the first
    # few named; a 200-question survey could lack thousands, which the translations page marks)
    gaps = missing(survey)
    problems.extend(gap.refusal() for gap in gaps[:GAPS_NAMED])
    if len(gaps) > GAPS_NAMED:
        problems.append(Conflict("survey.publish_translation_more", count=len(gaps) - GAPS_NAMED))
    return problems


def publish(survey: Survey) -> None:
    """Open a draft for submissions, freezing every design."""
    problems = publish_refusals(survey)
    if problems:
        raise problems[0]
    survey.status = "open"


def _change_if(session: Session, survey_id: int, where: list[ColumnElement[bool]], **values: Any) -> bool:
    """``UPDATE surveys SET values WHERE id = survey_id AND where``; whether it changed the row. The
    survey in the session, if any, is brought up to date (its columns are read back)."""
    result = session.execute(
        update(Survey).where(Survey.id == survey_id, *where).values(**values),
        execution_options={"synchronize_session": "fetch"},
    )
    return result.rowcount == 1  # type: ignore[attr-defined]


def _transition(survey: Survey, refusal: str, expected: str, **values: Any) -> None:
    """Set ``values`` if the survey's status is ``expected``, as read and as stored when written;
    otherwise :class:`Conflict` with the code ``refusal`` (and the status it has)."""
    if survey.status != expected:
        raise Conflict(refusal, state=survey.status)
    session = object_session(survey)
    if session is None:  # a survey not stored yet: nobody else can see it
        for name, value in values.items():
            setattr(survey, name, value)
        return
    if not _change_if(session, survey.id, [Survey.status == expected], **values):
        session.refresh(survey)  # changed meanwhile by someone else: say what it is now
        raise Conflict(refusal, state=survey.status)


def close(survey: Survey) -> None:
    """Stop accepting answers, if the survey is still open when this is written."""
    _transition(survey, "survey.close_not_open", "open", status="closed")


def close_automatically(session: Session, survey_id: int) -> bool:
    """Close the survey if, at the moment this is written, it is open and set to close by itself;
    whether it did. Of several workers that decided to close it, one does; a reopen in between
    (which switches the setting off) stands."""
    return _change_if(session, survey_id, [Survey.status == "open", Survey.auto_close.is_(True)], status="closed")


def claim_precision_check(session: Session, survey_id: int, seen: int, due: int) -> bool:
    """Take the check of the survey's precision that falls due at ``seen`` submissions, by moving the
    next one to ``due``; whether this call took it. One conditional UPDATE, so of the workers whose
    submissions all found the check due at once, one checks and the others go on (the survey must
    still be open and set to close by itself)."""
    return _change_if(
        session,
        survey_id,
        [Survey.status == "open", Survey.auto_close.is_(True), Survey.auto_close_due <= seen],
        auto_close_due=due,
    )


def schedule_precision_check(session: Session, survey_id: int, due: int, claimed: int | None = None) -> None:
    """Check the survey's precision next at ``due`` submissions; with ``claimed``, only if the next
    check is still the one a claim set (another worker may have claimed and set a later one since)."""
    where = [] if claimed is None else [Survey.auto_close_due == claimed]
    _change_if(session, survey_id, where, auto_close_due=due)


def reopen(survey: Survey) -> None:
    """Accept answers again. Closing by itself is switched off: a survey that closed because it was
    precise enough would otherwise close again at the next answer."""
    _transition(
        survey,
        "survey.reopen_not_closed",
        "closed",
        status="open",
        auto_close=False,
    )


def _check_owner(survey: Survey, actor: User, what: str) -> None:
    if role_of(actor, survey) != OWNER:
        raise Forbidden("survey.owner_only", what=what)


def archive(survey: Survey, actor: User) -> None:
    """Put a closed survey out of the lists (owner only); its answers and results stay as they are."""
    _check_owner(survey, actor, "archive it")
    if survey.status != "closed":
        raise Conflict("survey.archive_not_closed", state=survey.status)
    survey.status = "archived"


def unarchive(survey: Survey, actor: User) -> None:
    """Bring an archived survey back to the lists, closed (owner only)."""
    _check_owner(survey, actor, "restore it")
    if survey.status != "archived":
        raise Conflict("survey.restore_not_archived", state=survey.status)
    survey.status = "closed"


def delete_draft(session: Session, survey: Survey, actor: User) -> str:
    """Delete a draft with its questions, invitation codes and team (owner only); its title.

    A draft never accepted an answer; the check on the stored count is a second lock, so that no
    survey with answers can be deleted whatever its state says.
    """
    _check_owner(survey, actor, "delete it")
    if not survey.is_draft:
        raise Conflict("survey.delete_not_draft", state=survey.status)
    if submission_count(session, survey):
        raise Conflict("survey.delete_has_answers")
    title = survey.title
    session.delete(survey)
    return title


def slug_problem(session: Session, slug: str, survey: Survey | None = None) -> str | None:
    """Why ``slug`` cannot be the address of ``survey``, as an error code (None when it can).

    Whose survey holds a taken address is not said, nor whether it is a draft: only that it is
    taken, which any attempt to use it would show anyway.
    """
    if not validation.is_slug(slug):
        return "survey.slug_malformed"
    holder = session.scalar(select(Survey.id).where(Survey.slug == slug))
    if holder is not None and (survey is None or holder != survey.id):
        return "survey.slug_taken"
    return None


def set_slug(session: Session, survey: Survey, slug: str) -> None:
    """Give a draft the address ``slug`` (``/s/<slug>``). A published survey keeps its address:
    its link has been sent, and changing it would break every copy."""
    if not survey.is_draft:
        raise Conflict("survey.slug_published")
    slug = (slug or "").strip().lower()
    problem = slug_problem(session, slug, survey)
    if problem:
        raise DomainError(problem, path=SLUG)
    survey.slug = slug
    try:
        with session.begin_nested():  # another organizer may have taken it a moment ago
            session.flush()
    except IntegrityError:
        raise DomainError("survey.slug_taken", path=SLUG) from None


def set_dates(survey: Survey, opens_on: dt.date | None, closes_on: dt.date | None) -> None:
    if opens_on and closes_on and closes_on < opens_on:
        raise DomainError("survey.dates_reversed", path=("closes_on",))
    survey.opens_on, survey.closes_on = opens_on, closes_on


def set_access(survey: Survey, mode: str) -> None:
    """Who may answer: anyone with the link, or only holders of single-use invitation codes.

    Allowed in every state, so an organizer can tighten or loosen access while a survey runs;
    codes already used stay used.
    """
    if mode not in ACCESS_MODES:
        raise DomainError("survey.access_unknown", path=("access",), modes=", ".join(ACCESS_MODES))
    survey.access = mode


def duplicate(session: Session, survey: Survey, owner: User, *, keep_team: bool = False) -> Survey:
    """A new draft with the same questions, options and designs: the way to change a frozen design.

    With ``keep_team`` the copy is shared with the original's owner and members (see
    :func:`survey.domain.accounts.sharing.copy_team`), so duplicating does not lock the rest of the team out.
    A survey stored before today's rules might not pass them: that is a :class:`Conflict`.
    """
    spec = survey_to_spec(survey)
    spec["title"] = f"{survey.title} (copy)"[:200]
    spec["status"] = "draft"
    try:
        copy = create_survey_from_spec(session, spec, owner=owner)
    except DomainError as error:
        raise Conflict("survey.copy_failed", reason=str(error)) from None
    if keep_team:
        copy_team(survey, copy)
    return copy


def import_draft(session: Session, document: str | bytes, owner: User) -> Survey:
    """A new draft from a JSON spec document, read strictly (:func:`survey.domain.validation.parse_json`)
    and validated whole by :func:`create_survey_from_spec`.

    Whatever ``status`` the document names, the survey starts as a draft: its owner reviews it in
    the builder before publishing freezes the designs. The caller commits; on a
    :class:`DomainError` nothing was added.
    """
    if not (document.strip() if isinstance(document, str) else document.strip(b" \t\r\n")):
        raise DomainError("spec.empty")
    spec = parse_json(document, "the spec")
    if isinstance(spec, dict):
        spec = {**spec, "status": "draft"}
    return create_survey_from_spec(session, spec, owner=owner)
