"""Recording one respondent's submission: check every reported value, then write it in one go.

Values arrive already randomized by the respondent's browser. Each is checked against the frozen
design (a known question, a code inside its domain, each question at most once, required questions
present, the survey open); anything wrong refuses the whole submission and writes nothing.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import TextClause, bindparam, func, select, text
from sqlalchemy.orm import Session, scoped_session

from .invitations import USED_MESSAGE, InvitationError, check_code, claim, normalize
from .models import TALLY_SHARDS, Option, Question, Survey, accepting_on, today


class SubmissionError(ValueError):
    """A submission that was refused; ``status`` is the HTTP status a view should answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _code(value: Any, key: str, k: int) -> int:
    if isinstance(value, bool):
        raise SubmissionError(f"question {key!r}: the answer must be an option code, not {value!r}")
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}", value.strip()):
        value = int(value.strip())
    if not isinstance(value, int):
        raise SubmissionError(f"question {key!r}: the answer must be an option code 0 to {k - 1}, got {value!r}")
    if not 0 <= value < k:
        raise SubmissionError(f"question {key!r}: {value} is not one of its option codes 0 to {k - 1}")
    return value


@dataclass(frozen=True)
class Field:
    """What checking one answer needs to know of its question."""

    id: int
    key: str
    required: bool
    options: int


@dataclass(frozen=True)
class Intake:
    """A survey as the submission path sees it: its state and its questions, read in one query."""

    survey_id: int
    slug: str
    status: str
    opens_on: dt.date | None
    closes_on: dt.date | None
    access: str
    fields: tuple[Field, ...]

    def check_accepting(self) -> None:
        """Raise SubmissionError (409) unless the survey accepts submissions today."""
        accepting, reason = accepting_on(self.status, self.opens_on, self.closes_on, today())
        if not accepting:
            raise SubmissionError(reason, status=409)


#: Built once: constructing a select() costs more than running it through the compiled cache.
_INTAKE = (
    select(
        Survey.id,
        Survey.status,
        Survey.opens_on,
        Survey.closes_on,
        Survey.access,
        Question.id,
        Question.key,
        Question.required,
        func.count(Option.id),
    )
    .outerjoin(Question, Question.survey_id == Survey.id)
    .outerjoin(Option, Option.question_id == Question.id)
    .where(Survey.slug == bindparam("slug"))
    .group_by(Survey.id, Question.id)
    .order_by(Question.position)
)


def load_intake(session: Session, slug: str) -> Intake | None:
    """The survey ``slug`` with its questions and their numbers of options; None if there is no such
    survey or it is a draft (which respondents cannot see).

    One query, where loading the Survey with its Question and Option objects takes four: this is the
    path that runs once per respondent. On PostgreSQL the session's connection is switched to
    autocommit first (when nothing else has used it in this request), so that this read and the
    single statement that stores the submission need no BEGIN and COMMIT round trips.
    """
    current = session() if isinstance(session, scoped_session) else session
    if current.get_bind().dialect.name == "postgresql" and not current.in_transaction():
        connection = current.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
    else:
        connection = current.connection()
    rows = connection.execute(_INTAKE, {"slug": slug}).all()
    if not rows or rows[0][1] == "draft":
        return None
    survey_id, status, opens_on, closes_on, access = rows[0][:5]
    fields = tuple(Field(*row[5:]) for row in rows if row[5] is not None)
    return Intake(survey_id, slug, status, opens_on, closes_on, access, fields)


def validate_answers(fields: tuple[Field, ...], answers: Mapping[str, Any]) -> dict[int, int]:
    """Map question id → reported code, or raise SubmissionError naming the first problem."""
    if not isinstance(answers, Mapping):
        raise SubmissionError("answers must be an object mapping question keys to option codes")
    known = {f.key for f in fields}
    unknown = sorted(key for key in answers if key not in known)
    if unknown:
        raise SubmissionError(f"unknown question {unknown[0]!r}: this survey has no such question")
    values: dict[int, int] = {}
    for field in fields:
        raw = answers.get(field.key)
        if raw is None or raw == "":
            if field.required:
                raise SubmissionError(f"question {field.key!r} is required: please answer it")
            continue
        values[field.id] = _code(raw, field.key, field.options)
    if not values:
        raise SubmissionError("the submission has no answers")
    return values


def record_submission(
    session: Session, intake: Intake, answers: Mapping[str, Any], invitation: str | None = None
) -> None:
    """Validate and store one submission atomically; commit on success.

    The submission, its answers and the running tallies (see :mod:`survey.tallies`) are written
    together: by one statement on PostgreSQL, by four in one transaction on SQLite, whatever the
    number of questions. For a survey by invitation, ``invitation`` is claimed in that same
    statement or transaction, so a code is used up exactly when a submission is stored. Nothing
    links the two afterwards.
    """
    intake.check_accepting()
    values = validate_answers(intake.fields, answers)
    try:
        code = None
        if intake.access == "invitation":
            check_code(session, intake.survey_id, invitation)
            code = normalize(invitation)
        if not write_submission(session, intake.survey_id, today(), values, claim_code=code):
            raise InvitationError(USED_MESSAGE)
        session.commit()
    except InvitationError as error:
        session.rollback()
        raise SubmissionError(error.message, error.status) from None
    except Exception:
        session.rollback()
        raise


def write_submission(
    session: Session, survey_id: int, day: dt.date, values: Mapping[int, int], claim_code: str | None = None
) -> bool:
    """Insert one checked submission (question id → code) and count it, in the caller's transaction.

    With ``claim_code``, the submission is stored only if that unused invitation code of the survey
    could be marked used (atomically: of two submissions racing with one code, one gets it); returns
    whether it was stored. A shard of the tallies is drawn at random (``TALLY_SHARDS``) and rows are
    written in question order, so concurrent submissions seldom wait for one another and never
    deadlock.
    """
    params: dict[str, Any] = {"survey_id": survey_id, "day": day, "shard": secrets.randbelow(TALLY_SHARDS)}
    for i, (question_id, code) in enumerate(sorted(values.items())):
        params[f"q{i}"], params[f"v{i}"] = question_id, code
    connection = session.connection()
    dialect = connection.dialect.name
    if dialect == "postgresql":
        params["code"] = claim_code
        stored = connection.execute(_postgresql_write(len(values), claim_code is not None), params).first()
        return stored is not None
    if dialect != "sqlite":  # pragma: no cover - the app supports these two
        raise RuntimeError(f"submissions need PostgreSQL or SQLite, not {dialect}")
    if claim_code is not None and not claim(session, survey_id, claim_code):
        return False
    insert_submission, insert_answers, count_answers, count_submission = _sqlite_writes(len(values))
    params["submission_id"] = connection.execute(insert_submission, params).scalar_one()
    for statement in (insert_answers, count_answers, count_submission):
        connection.execute(statement, params)
    return True


def _rows(template: str, n: int) -> str:
    return ", ".join(template.format(i=i) for i in range(n))


_COUNT_CONFLICT = "ON CONFLICT (question_id, value, shard) DO UPDATE SET count = answer_tallies.count + 1"
_COUNT_SUBMISSION_CONFLICT = "ON CONFLICT (survey_id, shard) DO UPDATE SET count = submission_tallies.count + 1"


@functools.cache
def _postgresql_write(n: int, claiming: bool) -> TextClause:
    """One statement, so one round trip and atomic on its own: data-modifying CTEs claim the code
    (if any), insert the submission and its answers, and add to both tallies. Everything hangs on
    the new submission's row, so when the claim fails nothing at all is written."""
    reported = _rows("(CAST(:q{i} AS INTEGER), CAST(:v{i} AS INTEGER))", n)
    if claiming:
        claim_and_insert = """claimed AS (
    UPDATE invitations SET used = true
    WHERE survey_id = :survey_id AND code = :code AND used = false RETURNING id
), new_submission AS (
    INSERT INTO submissions (survey_id, submitted_on) SELECT :survey_id, CAST(:day AS DATE) FROM claimed RETURNING id
)"""
    else:
        claim_and_insert = """new_submission AS (
    INSERT INTO submissions (survey_id, submitted_on) VALUES (:survey_id, :day) RETURNING id
)"""
    return text(
        f"""WITH {claim_and_insert}, reported (question_id, value) AS (
    VALUES {reported}
), new_answers AS (
    INSERT INTO answers (submission_id, question_id, value)
    SELECT new_submission.id, reported.question_id, reported.value FROM new_submission, reported
), counted AS (
    INSERT INTO answer_tallies (question_id, value, shard, count)
    SELECT reported.question_id, reported.value, CAST(:shard AS SMALLINT), 1 FROM new_submission, reported
    {_COUNT_CONFLICT}
)
INSERT INTO submission_tallies (survey_id, shard, count)
SELECT :survey_id, CAST(:shard AS SMALLINT), 1 FROM new_submission
{_COUNT_SUBMISSION_CONFLICT}
RETURNING 1"""
    )


@functools.cache
def _sqlite_writes(n: int) -> tuple[TextClause, ...]:
    return (
        text("INSERT INTO submissions (survey_id, submitted_on) VALUES (:survey_id, :day) RETURNING id"),
        text(
            "INSERT INTO answers (submission_id, question_id, value) VALUES "
            + _rows("(:submission_id, :q{i}, :v{i})", n)
        ),
        text(
            "INSERT INTO answer_tallies (question_id, value, shard, count) VALUES "
            + _rows("(:q{i}, :v{i}, :shard, 1)", n)
            + " "
            + _COUNT_CONFLICT
        ),
        text(
            "INSERT INTO submission_tallies (survey_id, shard, count) VALUES (:survey_id, :shard, 1) "
            + _COUNT_SUBMISSION_CONFLICT
        ),
    )
