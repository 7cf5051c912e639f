"""Respondent codes: single-use codes that admit one submission each (the access mode
whose public name is ``invitation``; see :class:`survey.domain.models.RespondentCode`).

A code is claimed by one conditional UPDATE (``... SET used = true WHERE code = ? AND used = false``)
in the same transaction (on PostgreSQL, the same statement) as the submission it admits: two
submissions racing with one code cannot both succeed, on SQLite (one writer at a time) or
PostgreSQL (the row lock makes the second UPDATE re-read the row and match nothing).
The code row keeps no time and no submission id, and the submission keeps no code.

Organizers may revoke a code that was not used yet (a lost paper invitation, a person who should
not answer after all): the code is then ``revoked`` and also ``used``, so the claim above refuses it
without knowing about revoking, and a respondent who tries it is told it was withdrawn.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from survey.domain.errors import Conflict, DomainError, Forbidden, NotFound
from survey.domain.models import RespondentCode, Survey
from survey.domain.results.csvfile import CsvTable

#: No 0/O, 1/I/L: codes are sometimes typed from paper.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 12  # 31^12 ≈ 7.9e17: unguessable at any rate a server would allow
MAX_CODES_PER_REQUEST = 10_000


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def generate_codes(session: Session, survey: Survey, count: int) -> list[str]:
    """Add ``count`` fresh codes to ``survey`` (the caller commits)."""
    if not 1 <= count <= MAX_CODES_PER_REQUEST:
        raise DomainError("code.count_out_of_range", path=("count",), most=MAX_CODES_PER_REQUEST)
    codes = [new_code() for _ in range(count)]
    session.add_all(RespondentCode(survey_id=survey.id, code=code) for code in codes)
    return codes


def normalize(code: str | None) -> str:
    return (code or "").strip().upper().replace("-", "").replace(" ", "")


def shown(code: str) -> str:
    """A code as people read and type it: in groups of four (``ABCD-EFGH-JKMN``); :func:`normalize`
    takes the dashes out again, so either way of typing it works."""
    return "-".join(code[i : i + 4] for i in range(0, len(code), 4))


#: Where a refused code is, in a submission.
INVITATION = ("invitation",)


def well_formed(code: str) -> bool:
    """Whether a normalized code could be one (letters and digits, at most 40): anything else is not
    known without asking the database (and could not be sent to it: a lone surrogate, a NUL)."""
    return code.isascii() and code.isalnum() and len(code) <= 40


def check_code(session: Session, survey_id: int, code: str | None) -> None:
    """Raise :class:`Forbidden` (403) with a message a respondent can read unless ``code`` is usable now."""
    code = normalize(code)
    if not code:
        raise Forbidden("code.missing", path=INVITATION)
    row = None
    if well_formed(code):
        row = session.scalar(select(RespondentCode).where(RespondentCode.code == code))
    if row is None:
        raise Forbidden(
            "code.unknown",
            path=INVITATION,
        )
    if row.survey_id != survey_id:
        raise Forbidden("code.other_survey", path=INVITATION)
    if row.revoked:
        raise Forbidden("code.revoked", path=INVITATION)
    if row.used:
        raise Forbidden("code.used", path=INVITATION)


def claim(session: Session, survey_id: int, code: str | None) -> bool:
    """Mark ``code`` used, atomically, in the caller's transaction; whether it was still unused.

    (On PostgreSQL the submission path claims inside its single write statement instead; see
    :func:`survey.domain.responses.submissions.write_submission`.)
    """
    result = session.execute(
        update(RespondentCode)
        .where(
            RespondentCode.survey_id == survey_id,
            RespondentCode.code == normalize(code),
            RespondentCode.used.is_(False),
        )
        .values(used=True)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


@dataclass(frozen=True)
class CodeCounts:
    total: int
    used: int
    revoked: int = 0

    @property
    def unused(self) -> int:
        return self.total - self.used - self.revoked


def code_counts(session: Session, survey: Survey) -> CodeCounts:
    """How many codes the survey has, how many were used and how many revoked, counted by the database."""
    rows = session.execute(
        select(RespondentCode.used, RespondentCode.revoked, func.count())
        .where(RespondentCode.survey_id == survey.id)
        .group_by(RespondentCode.used, RespondentCode.revoked)
    )
    counts = {(bool(used), bool(revoked)): count for used, revoked, count in rows}
    return CodeCounts(
        total=sum(counts.values()),
        used=counts.get((True, False), 0),
        revoked=sum(count for (_, revoked), count in counts.items() if revoked),
    )


#: Codes listed on one page of the management page.
CODES_PER_PAGE = 100
#: Codes on one printed sheet set (the print page pages through more).
CODES_PER_PRINT = 500


@dataclass(frozen=True)
class CodeRow:
    """One code as the organizers see it: the code and its state, never what it admitted."""

    code: str
    state: str  # "unused", "used" or "revoked"

    @property
    def shown(self) -> str:
        return shown(self.code)


def _state(used: bool, revoked: bool) -> str:
    return "revoked" if revoked else ("used" if used else "unused")


def code_rows(
    session: Session, survey: Survey, *, page: int = 1, per_page: int = CODES_PER_PAGE, unused_only: bool = False
) -> list[CodeRow]:
    """One page (from 1) of the survey's codes, in the order they were made."""
    query = select(RespondentCode.code, RespondentCode.used, RespondentCode.revoked).where(
        RespondentCode.survey_id == survey.id
    )
    if unused_only:
        query = query.where(RespondentCode.used.is_(False))
    query = query.order_by(RespondentCode.id).offset((max(page, 1) - 1) * per_page).limit(per_page)
    return [CodeRow(code, _state(used, revoked)) for code, used, revoked in session.execute(query)]


def revoke(session: Session, survey: Survey, code: str | None) -> str:
    """Withdraw an unused code of ``survey``; it admits nobody from now on. Returns the code.

    One conditional UPDATE, like the claim: a code claimed by a submission a moment earlier is not
    revoked, and the organizer is told it was used.
    """
    code = normalize(code)
    row = session.scalar(
        select(RespondentCode).where(RespondentCode.survey_id == survey.id, RespondentCode.code == code)
    )
    if row is None:
        raise NotFound("code.not_found", path=("code",))
    result = session.execute(
        update(RespondentCode)
        .where(RespondentCode.id == row.id, RespondentCode.used.is_(False))
        .values(used=True, revoked=True)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:
        session.refresh(row)
        if row.revoked:
            raise Conflict("code.revoked_already", path=("code",), code=shown(code))
        raise Conflict(
            "code.used_not_revocable",
            path=("code",),
            code=shown(code),
        )
    return code


def revoke_unused(session: Session, survey: Survey) -> int:
    """Withdraw every unused code of ``survey``; how many were withdrawn."""
    result = session.execute(
        update(RespondentCode)
        .where(RespondentCode.survey_id == survey.id, RespondentCode.used.is_(False))
        .values(used=True, revoked=True)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount


def codes_csv(session: Session, survey: Survey, link_for: Callable[[str], str]) -> Iterator[str]:
    """The survey's codes as CSV lines ``code,link,used,revoked``, streamed in the order they were made.

    ``link_for`` turns a code into the respondent's link (the view knows the host; this module does
    not). The rows carry no time, because the codes have none. Written through
    :class:`survey.domain.results.csvfile.CsvTable`, like every CSV, so no cell can run as a spreadsheet formula.
    """
    table = CsvTable([("code", "text"), ("link", "text"), ("used", "text"), ("revoked", "text")])
    yield table.header()
    rows = session.execute(
        select(RespondentCode.code, RespondentCode.used, RespondentCode.revoked)
        .where(RespondentCode.survey_id == survey.id)
        .order_by(RespondentCode.id)
        .execution_options(yield_per=1000)
    )
    for code, used, revoked in rows:
        yield table.row([code, link_for(code), "yes" if used and not revoked else "no", "yes" if revoked else "no"])
