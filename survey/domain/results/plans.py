"""How PostgreSQL is asked to run the one query of an analysis that reads every answer.

A regression counts its covariate patterns by joining one question's answers to another's on the
submission (:func:`survey.domain.results.analysis.pattern_counts`). With the index
``(question_id, submission_id, value)`` (migration 0016) each question's answers come out of the
index alone, in submission order, so the join is a merge of sorted streams: one pass over each
question's answers, no hash table, no sort. PostgreSQL's planner, misjudging how many submissions
match, chose instead a hash join of two questions followed by a million index probes per further
covariate (34 s against 3.5 s on the same busy machine, 1,000,000 submissions; ``benchmarks/scale.md``).
So for that query alone, hash and nested-loop joins (and JIT, which spent 135 ms compiling a plan
that runs once) are switched off; the settings are put back when it ends, so nothing else in the
request is planned differently. SQLite has its own planner and is left alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import text
from sqlalchemy.orm import Session

#: Settings for a join of sorted index scans (each set for the transaction, and reset after).
MERGE_JOIN_SETTINGS = ("enable_hashjoin", "enable_nestloop", "jit")


@contextlib.contextmanager
def merge_joins(session: Session) -> Iterator[None]:
    """Within the block, PostgreSQL joins by merging (see the module's docstring)."""
    if session.get_bind().dialect.name != "postgresql":
        yield
        return
    for name in MERGE_JOIN_SETTINGS:
        session.execute(text(f"SET LOCAL {name} = off"))
    try:
        yield
    finally:
        for name in MERGE_JOIN_SETTINGS:
            session.execute(text(f"RESET {name}"))
