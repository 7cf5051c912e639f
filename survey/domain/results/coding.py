"""The codes a researcher sees: yes = 1 and no = 0, whatever the server stores.

Inside the app a yes/no question's options are numbered in the order they are listed, yes = 0 and
no = 1: that is the row and column of its design matrix, what the respondent's browser sends and what
the answers table holds. A researcher expects the opposite (``mean(cannabis)`` in R should be the
share reporting *yes*), so every file, API and form a researcher reads codes from goes through this
module, and the codebook's matrices are given in the same coding. Other questions keep their codes:
a choice question's options are numbered ``0 .. k-1`` in the order listed, and a number question's
value is the number itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from survey.domain.errors import DomainError
from survey.domain.models import Question


def researcher_code(question: Question, stored: int) -> int:
    """The code a researcher sees for the stored ``stored`` (its kind says whether they differ:
    :attr:`survey.domain.surveys.kinds.Kind.reversed_codes`)."""
    return question.kind_entry.researcher_code(stored)


def stored_code(question: Question, code: int) -> int:
    """The stored code of the researcher's ``code`` (the recoding is its own inverse)."""
    return researcher_code(question, code)


def stored_order(question: Question) -> list[int]:
    """The stored codes in the order of the researcher's codes: ``[1, 0]`` for yes/no (no first)."""
    return [stored_code(question, code) for code in range(len(question.options))]


def researcher_options(question: Question) -> list[dict[str, Any]]:
    """``[{"code": ..., "label": ...}]`` in the researcher's code order."""
    labels = question.labels
    return [{"code": code, "label": labels[stored]} for code, stored in enumerate(stored_order(question))]


def researcher_matrix(question: Question, matrix: Sequence[Sequence[float]]) -> list[list[float]]:
    """A design matrix (rows reported, columns true) with rows and columns in the researcher's codes."""
    order = stored_order(question)
    return [[float(matrix[r][t]) for t in order] for r in order]


def parse_category(question: Question, category: int | str | None) -> int:
    """The stored code of the category a researcher named by its code; the question's first listed
    option (yes, for a yes/no question) when none is given."""
    if category in (None, ""):
        return 0
    try:
        code = int(category)
    except (TypeError, ValueError):
        code = -1
    if not 0 <= code < len(question.options):
        codes = ", ".join(f"{o['code']} = {o['label']}" for o in researcher_options(question))
        raise DomainError("analysis.category_unknown", path=("category",), key=question.key, codes=codes)
    return stored_code(question, code)
