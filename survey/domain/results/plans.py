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

#: Settings for a join of sorted index scans (each set for the transaction, and restored after).
MERGE_JOIN_SETTINGS = ("enable_hashjoin", "enable_nestloop", "jit")


@contextlib.contextmanager
def merge_joins(session: Session) -> Iterator[None]:
    """Within the block, PostgreSQL joins by merging (see the module's docstring).

    After it, each setting gets back the value it had, for the rest of the transaction only
    (``set_config(..., true)``): a ``RESET`` would set the connection's own value, which a commit
    keeps, so that the connection's ``jit = off`` (survey.platform.connections) would be lost, and
    behind a transaction pooler another client's connection changed. A block that raises leaves them
    to the rollback, which undoes them (a statement in a failed transaction would hide the error)."""
    if session.get_bind().dialect.name != "postgresql":
        yield
        return
    names = {f"n{i}": name for i, name in enumerate(MERGE_JOIN_SETTINGS)}
    read = ", ".join(f"current_setting(:{key})" for key in names)
    before = dict(zip(names, session.execute(text(f"SELECT {read}"), names).one(), strict=True))
    for name in MERGE_JOIN_SETTINGS:
        session.execute(text(f"SET LOCAL {name} = off"))
    yield
    restore = ", ".join(f"set_config(:{key}, :v{key}, true)" for key in names)
    session.execute(text(f"SELECT {restore}"), {**names, **{f"v{key}": value for key, value in before.items()}})
