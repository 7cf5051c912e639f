"""Single-use invitation codes.

A code is claimed by one conditional UPDATE (``... SET used = true WHERE code = ? AND used = false``)
in the same transaction (on PostgreSQL, the same statement) as the submission it admits: two
submissions racing with one code cannot both succeed, on SQLite (one writer at a time) or
PostgreSQL (the row lock makes the second UPDATE re-read the row and match nothing).
The code row keeps no time and no submission id, and the submission keeps no code.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from .csvfile import CsvTable
from .errors import DomainError, Forbidden
from .models import Invitation, Survey

#: No 0/O, 1/I/L: codes are sometimes typed from paper.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 12  # 31^12 ≈ 7.9e17: unguessable at any rate a server would allow
MAX_CODES_PER_REQUEST = 10_000


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def generate_codes(session: Session, survey: Survey, count: int) -> list[str]:
    """Add ``count`` fresh codes to ``survey`` (the caller commits)."""
    if not 1 <= count <= MAX_CODES_PER_REQUEST:
        raise DomainError(f"ask for 1 to {MAX_CODES_PER_REQUEST} codes at a time", path=("count",))
    codes = [new_code() for _ in range(count)]
    session.add_all(Invitation(survey_id=survey.id, code=code) for code in codes)
    return codes


def normalize(code: str | None) -> str:
    return (code or "").strip().upper().replace("-", "").replace(" ", "")


USED_MESSAGE = "This invitation code has already been used: each code admits one set of answers."
#: Where a refused code is, in a submission.
INVITATION = ("invitation",)


def check_code(session: Session, survey_id: int, code: str | None) -> None:
    """Raise :class:`Forbidden` (403) with a message a respondent can read unless ``code`` is usable now."""
    code = normalize(code)
    if not code:
        raise Forbidden(
            "This survey is by invitation only: open it with the link from your invitation.", path=INVITATION
        )
    row = None
    if code.isascii() and code.isalnum() and len(code) <= 40:
        row = session.scalar(select(Invitation).where(Invitation.code == code))
    if row is None:
        raise Forbidden("This invitation code is not known. Check that the link was copied whole.", path=INVITATION)
    if row.survey_id != survey_id:
        raise Forbidden("This invitation code is for a different survey.", path=INVITATION)
    if row.used:
        raise Forbidden(USED_MESSAGE, path=INVITATION)


def claim(session: Session, survey_id: int, code: str | None) -> bool:
    """Mark ``code`` used, atomically, in the caller's transaction; whether it was still unused.

    (On PostgreSQL the submission path claims inside its single write statement instead; see
    :func:`survey.domain.submissions.write_submission`.)
    """
    result = session.execute(
        update(Invitation)
        .where(Invitation.survey_id == survey_id, Invitation.code == normalize(code), Invitation.used.is_(False))
        .values(used=True)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


@dataclass(frozen=True)
class InvitationCounts:
    total: int
    used: int

    @property
    def unused(self) -> int:
        return self.total - self.used


def invitation_counts(session: Session, survey: Survey) -> InvitationCounts:
    """How many codes the survey has and how many were used, counted by the database."""
    rows = session.execute(
        select(Invitation.used, func.count()).where(Invitation.survey_id == survey.id).group_by(Invitation.used)
    )
    by_used = {bool(used): count for used, count in rows}
    return InvitationCounts(total=sum(by_used.values()), used=by_used.get(True, 0))


def invitations_csv(session: Session, survey: Survey, link_for: Callable[[str], str]) -> Iterator[str]:
    """The survey's codes as CSV lines ``code,link,used``, streamed in the order they were made.

    ``link_for`` turns a code into the respondent's link (the view knows the host; this module does
    not). The rows carry no time, because the codes have none. Written through
    :class:`survey.domain.csvfile.CsvTable`, like every CSV, so no cell can run as a spreadsheet formula.
    """
    table = CsvTable([("code", "text"), ("link", "text"), ("used", "text")])
    yield table.header()
    rows = session.execute(
        select(Invitation.code, Invitation.used)
        .where(Invitation.survey_id == survey.id)
        .order_by(Invitation.id)
        .execution_options(yield_per=1000)
    )
    for code, used in rows:
        yield table.row([code, link_for(code), "yes" if used else "no"])
