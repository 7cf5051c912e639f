"""A randomized number's tallies counted one row per report code: existing rows gathered.

Revision ID: 0023
Revises: 0022

From this revision a cell whose value is a randomized number's report code (inside its grid, at
least 64 from zero, not the grid's top end 2,000) is counted in the shard its code names, ``code
mod 16``, instead of the submission's random shard (survey.domain.responses.writes, ``_shard_of``).
Here the cells counted before are gathered the same way: each such cell's rows, up to one per
shard, become one row holding their sum. Every reader sums over shards, so what the tallies hold
does not change; a number's tallies become up to 16 times fewer rows to read
(benchmarks/number_scale.md). The downgrade leaves them gathered: a gathered cell is a valid cell
of the earlier revision too.
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

SHARDS = 16
#: The rule of survey.domain.responses.writes, as it stood when this revision was written.
CODED_FROM = 64
GRID_TOP = 2000
NUMBER_KINDS = ("rr_number",)


def _coded(value: str, question: str) -> str:
    kinds = ", ".join(f"'{k}'" for k in NUMBER_KINDS)
    return (
        f"(abs({value}) >= {CODED_FROM} AND {value} <> {GRID_TOP} AND "
        f"EXISTS (SELECT 1 FROM questions q WHERE q.id = {question} AND q.kind IN ({kinds})))"
    )


def _gather(table: str, keys: list[str], shard_of: str, where: str) -> None:
    """Replace the rows of ``table`` matching ``where`` by one row per cell (``keys``) in the shard
    ``shard_of`` names, holding the cell's sum."""
    connection = op.get_bind()
    columns = ", ".join(keys)
    cells = connection.execute(
        sa.text(f"SELECT {columns}, {shard_of} AS shard, sum(count) FROM {table} WHERE {where} GROUP BY {columns}")
    ).all()
    if not cells:
        return
    connection.execute(sa.text(f"DELETE FROM {table} WHERE {where}"))
    names = [*keys, "shard", "count"]
    insert = sa.text(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})")
    connection.execute(insert, [dict(zip(names, cell, strict=True)) for cell in cells])


def _shard(value: str) -> str:
    return f"((({value}) % {SHARDS}) + {SHARDS}) % {SHARDS}"


def upgrade():
    coded = _coded("value", "question_id")
    _gather("answer_tallies", ["question_id", "value"], _shard("value"), coded)
    _gather("day_tallies", ["question_id", "value", "day"], _shard("value"), coded)
    other = _coded("other_value", "other_id")
    shard = f"CASE WHEN {coded} THEN {_shard('value')} ELSE {_shard('other_value')} END"
    _gather("pair_tallies", ["question_id", "value", "other_id", "other_value"], shard, f"({coded} OR {other})")


def downgrade():
    pass
