"""What one submission writes, declared once: its row, its answers, and what each tally counts.

Before, the rule "which tallies a submission adds to" was written four times (a PostgreSQL
statement, SQLite statements, Python for a released batch, and the recount), and the four had to be
kept in step by hand. Here it is written once, as SQLAlchemy Core over a relation ``reported`` (one
row per reported value: ``submission_id, question_id, value, day, randomized, paired``, and
``shard`` in PostgreSQL's one-submission statement) and a
relation ``submitted`` (one row per submission: ``submission_id, survey_id``). Every writer and the
recount are generated from :data:`TALLIES` by giving those two relations a different source:

- one new submission on PostgreSQL: the statement's parameters (arrays, unnested), hung on the new
  submission's row, all in one statement (:func:`postgresql_submission`), so one round trip;
- one new submission on SQLite: the same parameters as a JSON array, in one statement per table and
  one transaction (:func:`sqlite_submission`);
- (one new submission adds at once only to the tallies not marked ``deferred``: the submission
  tally, whose count tells the submission whether closing automatically is due for a check. It lists
  itself in ``pending_submissions`` instead of adding to the answer, day and pair tallies, and the
  fold adds a batch of listed submissions at a time, from the stored answers, like the recount:
  :mod:`survey.domain.responses.pending`; every reader adds the listed ones, :func:`with_listed`);
- a released batch of held submissions (:mod:`survey.domain.responses.mixing`): the batch's answers and new
  ids as parameters, like one submission's, in one statement on PostgreSQL (:func:`batch_statements`);
- the recount (``flask recount``, :func:`survey.domain.responses.tallies.tally_mismatches`): the stored
  answers of a whole survey (:func:`stored`), grouped and compared with the tallies, or inserted in
  their place (``--fix``); and the submissions a release takes back, to take them out of the dated
  tallies before they are released again under one date.

The statements a submission sends are compiled once, to text for the driver: SQLAlchemy's execution
layer would add about two thirds to the CPU the app spends on a submission's write
(benchmarks/write_path.md).

What a question feeds is read through :func:`what_it_feeds` alone, so that a registry of question
kinds can answer it later without any writer changing.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import (
    ARRAY,
    JSON,
    BigInteger,
    Boolean,
    ColumnElement,
    Date,
    FromClause,
    Integer,
    Select,
    SmallInteger,
    String,
    Table,
    and_,
    any_,
    bindparam,
    case,
    cast,
    column,
    delete,
    false,
    func,
    literal,
    literal_column,
    or_,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import Label

from survey.domain.models import (
    DECLINED,
    TALLY_SHARDS,
    Answer,
    AnswerTally,
    DayTally,
    HeldSubmission,
    PairTally,
    PendingSubmission,
    Question,
    RespondentCode,
    Submission,
    SubmissionReceipt,
    SubmissionTally,
    Survey,
)
from survey.domain.surveys.kinds import KIND_LIST, kind_of
from survey.privacy.numeric import GRID_STEPS

# -- what a question feeds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Feeds:
    """What a question's answers add to besides the answer tallies: the day tallies (``randomized``)
    and the pair tallies: a pair of one submission's answers is counted when both questions can be
    ``paired`` and at least one is ``randomized``."""

    randomized: bool
    paired: bool
    #: Its answer is a randomized number's report code, which may name the shard its cells are
    #: counted in (:func:`_shard_of`).
    coded: bool = False


class HasKind(Protocol):
    kind: str


def what_it_feeds(question: HasKind) -> Feeds:
    """Which tallies the answers to ``question`` (a :class:`~survey.domain.models.Question` or a
    submission form's field) feed. The one place the writers and the recount learn it from."""
    kind = kind_of(question.kind)
    return Feeds(randomized=kind.randomized, paired=kind.paired, coded=kind.randomized_number)


#: Of a question nobody knows any more (deleted meanwhile): nothing beyond its answer tally.
NOTHING_MORE = Feeds(False, False)


# -- the tallies -------------------------------------------------------------------------------------


Rows = Callable[[FromClause, FromClause], Select]


@dataclass(frozen=True)
class Tally:
    """One running tally: its table, the columns that key a cell (besides ``shard``), and the rows
    one source adds to it, as ``SELECT <keys>, count`` over ``reported`` and ``submitted``, grouped by
    the keys and in key order (every writer adds rows in key order, so two never wait in a circle)."""

    name: str
    #: What ``flask recount`` calls its cells when they differ.
    label: str
    table: Table
    keys: tuple[str, ...]
    rows: Rows
    #: The column that ties a cell to its survey: ``question_id`` (one of its questions) or ``survey_id``.
    survey_column: str = "question_id"
    #: The positions, among the keys, of each (question, value) whose value may be a randomized
    #: number's report code, which then names its shard (:func:`_shard_of`).
    coded: tuple[tuple[int, int], ...] = ()
    #: One new submission's writers leave this tally to the fold: they list the submission in
    #: ``pending_submissions`` instead (:mod:`survey.domain.responses.pending`), and its readers add
    #: what the listed submissions would add (:func:`with_listed`).
    deferred: bool = False
    #: Its rows join a submission's answers with one another (the pairs): readers of the listed
    #: submissions then work out each one's rows from its own answers alone (:func:`_late_postgresql`).
    joins_answers: bool = False

    @property
    def dated(self) -> bool:
        """Whether a cell names the day of its submissions (a batch released with one date moves there)."""
        return "day" in self.keys

    def of_survey(self, survey_id: int) -> ColumnElement[bool]:
        """The condition that selects the survey's cells of this tally."""
        column = self.table.c[self.survey_column]
        if self.survey_column == "survey_id":
            return column == survey_id
        return column.in_(select(Question.id).where(Question.survey_id == survey_id).scalar_subquery())

    def kept(self) -> Select:
        """``SELECT <keys>, sum(count)``: the tally as stored, summed over its shards (add a
        condition such as :meth:`of_survey`)."""
        keys = [self.table.c[k] for k in self.keys]
        return select(*keys, func.sum(self.table.c["count"])).group_by(*keys)

    def counted(self, reported: FromClause, submitted: FromClause) -> Select:
        """``SELECT <keys>, n``: what the source adds, per cell."""
        return self.rows(reported, submitted)

    def with_shard(
        self, reported: FromClause, submitted: FromClause, shard: ColumnElement[int], one: bool = False
    ) -> Select:
        """``SELECT <keys>, shard, n``: the rows an insert into the table takes. With ``one`` (the
        source is one submission, so each cell comes once) n is 1 and nothing is grouped."""
        rows = self.rows(reported, submitted)
        keys, n = list(rows.selected_columns)[:-1], list(rows.selected_columns)[-1]
        if one:
            rows, n = rows.group_by(None), literal(1, Integer).label("n")
        coded = [(_bare(keys[q]), _bare(keys[v])) for q, v in self.coded]
        shard = _shard_of(coded, shard, one)
        return rows.with_only_columns(*keys, shard.label("shard"), n, maintain_column_froms=True)


def _bare(key: Any) -> Any:
    """A selected key without its label (a label names a column; inside an expression, its value)."""
    return key.element if isinstance(key, Label) else key


#: Report codes of a randomized number from this far from zero up (and below its grid's top end)
#: name their shard: every other value (a yes/no's or an option's code, a number's grid ends) is
#: below it or is that end, so the kind of its question is not even looked up.
CODED_FROM = 64
_CODED_FROM = literal_column(str(CODED_FROM))
_SHARDS = literal_column(str(TALLY_SHARDS))


def _shard_of(coded: list[tuple[Any, Any]], shard: ColumnElement[int], one: bool = False) -> ColumnElement[int]:
    """The shard a cell is counted in: the one its randomized number's report code names
    (``code mod TALLY_SHARDS``), else ``shard`` (the submission's, drawn at random).

    Why: a cell of a randomized number is one of 2,001 report codes (times a group, for a pair), so
    concurrent submissions already spread over thousands of rows, and a random shard as well
    multiplied the rows a reader sums by 16 (120,000 pair rows for one number by a 4-way question at
    a million submissions, and growing with the submissions until every code had met every shard:
    benchmarks/number_scale.md). One row per code keeps them at the number of cells. The codes where
    reports pile up stay sharded: the grid's two ends (Duchi's only reports, and the hybrid's when it
    draws Duchi's) and a direct question's small numbers are never coded; codes beyond the grid
    (Laplace's tails) are. Every reader sums over shards, so where a cell was counted never
    changes what it holds.

    Where one submission is written on PostgreSQL (``one``), the path every respondent takes, each
    answer comes with its shard worked out by :func:`code_shard` (``reported.shard``): the rule in
    SQL, the question's kind looked up in each row, cost a sixth to a quarter of a millisecond a
    submission (benchmarks/number_tally_shards.md). Elsewhere (SQLite, a released batch, an import,
    the recount) the rows are grouped by question and value, and the rule is applied in SQL."""
    if not coded:
        return shard
    if one:
        first = coded[0][0].table
        if len(coded) == 1:
            return first.c.shard
        # A pair: a randomized number pairs only with questions asked directly, so at most one of the
        # two answers names a shard, and the other's is the submission's: a + b − submission's is the
        # named one if there is one, else the submission's.
        return first.c.shard + coded[1][0].table.c.shard - shard
    whens = [
        (
            and_(func.abs(value) >= _CODED_FROM, value != literal_column(str(GRID_STEPS)), _is_report(question)),
            (value % _SHARDS + _SHARDS) % _SHARDS,
        )
        for question, value in coded
    ]
    return case(*whens, else_=shard)


def code_shard(value: int, coded: bool, shard: int) -> int:
    """:func:`_shard_of`'s rule for one answer: the shard its report code names if ``coded`` (a
    randomized number's) and inside the grid, else the submission's ``shard``."""
    if coded and abs(value) >= CODED_FROM and value != GRID_STEPS:
        return value % TALLY_SHARDS
    return shard


def _answers(reported: FromClause, submitted: FromClause) -> Select:
    r = reported.c
    keys = (r.question_id, r.value)
    return select(*keys, func.count().label("n")).group_by(*keys).order_by(*keys)


#: A declined answer's value (:data:`survey.domain.models.DECLINED`), written into the statements as
#: a constant (they are compiled to text once). Only randomized questions can be declined.
_DECLINED = literal_column(str(DECLINED))


def _answered(reported: Any) -> ColumnElement[bool]:
    """Not a decline: a declined question feeds its answer tally (the count of declines) and nothing
    else, so the day and pair tallies hold reports only (a randomized question's values are codes,
    never negative; a direct question's value is never taken for a decline)."""
    return or_(~reported.c.randomized, reported.c.value != _DECLINED)


def _days(reported: FromClause, submitted: FromClause) -> Select:
    r = reported.c
    keys = (r.question_id, r.value, r.day)
    return (
        select(*keys, func.count().label("n")).where(r.randomized, _answered(reported)).group_by(*keys).order_by(*keys)
    )


#: The kinds whose answer is a randomized number's report code (one of 2,001): paired with questions
#: asked directly (a mean by group), never with another randomized question, whose pair would have
#: thousands of cells that no analysis reads.
_REPORT_KINDS = tuple(k.id for k in KIND_LIST if k.randomized_number)


def _is_report(question_id: ColumnElement[int]) -> ColumnElement[bool]:
    # the kinds written into the statement (constants of the registry): a submission's statements
    # are compiled to text once, where an expanding IN parameter cannot go
    kinds = or_(*(Question.kind == literal_column(f"'{kind}'") for kind in _REPORT_KINDS))
    return select(Question.id).where(Question.id == question_id, kinds).exists()


def _pairs(reported: FromClause, submitted: FromClause) -> Select:
    a, b = reported.alias("a"), reported.alias("b")
    keys = (a.c.question_id, a.c.value, b.c.question_id.label("other_id"), b.c.value.label("other_value"))
    grouped = (a.c.question_id, a.c.value, b.c.question_id, b.c.value)
    return (
        select(*keys, func.count().label("n"))
        .select_from(a.join(b, and_(b.c.submission_id == a.c.submission_id, b.c.question_id > a.c.question_id)))
        .where(
            a.c.paired,
            b.c.paired,
            _answered(a),
            _answered(b),
            or_(a.c.randomized, b.c.randomized),
            # two randomized questions pair only when neither is a randomized number (the lookup of
            # the kind is made for those pairs alone)
            or_(~a.c.randomized, ~b.c.randomized, and_(~_is_report(a.c.question_id), ~_is_report(b.c.question_id))),
        )
        .group_by(*grouped)
        .order_by(*grouped)
    )


def _submissions(reported: FromClause, submitted: FromClause) -> Select:
    s = submitted.c
    return select(s.survey_id, func.count().label("n")).group_by(s.survey_id).order_by(s.survey_id)


#: Every running tally a submission adds to. A new tally is one more entry here: the writers of both
#: databases, a released batch and the recount all follow.
TALLIES: tuple[Tally, ...] = (
    Tally(
        "answers", "answers", AnswerTally.__table__, ("question_id", "value"), _answers, coded=((0, 1),), deferred=True
    ),
    Tally(
        "pairs",
        "pairs of answers",
        PairTally.__table__,
        ("question_id", "value", "other_id", "other_value"),
        _pairs,
        coded=((0, 1), (2, 3)),
        deferred=True,
        joins_answers=True,
    ),
    Tally(
        "days",
        "answers per day",
        DayTally.__table__,
        ("question_id", "value", "day"),
        _days,
        coded=((0, 1),),
        deferred=True,
    ),
    Tally("submissions", "submissions", SubmissionTally.__table__, ("survey_id",), _submissions, "survey_id"),
)
TALLY = {t.name: t for t in TALLIES}
#: The tallies one new submission adds to at once, and those it leaves to the fold.
AT_ONCE = tuple(t for t in TALLIES if not t.deferred)
DEFERRED = tuple(t for t in TALLIES if t.deferred)


def upsert(
    dialect: str,
    tally: Tally,
    reported: FromClause,
    submitted: FromClause,
    shard: ColumnElement[int],
    one: bool = False,
) -> Any:
    """``INSERT INTO <tally> SELECT ... ON CONFLICT (<keys>, shard) DO UPDATE SET count = count + n``
    in ``dialect``'s own INSERT (both have ON CONFLICT); ``one``: see :meth:`Tally.with_shard`."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    rows = tally.with_shard(reported, submitted, shard, one)
    if dialect == "sqlite":
        # SQLite reads "ON CONFLICT" after a join's ON as part of the join unless a WHERE comes between
        rows = rows.where(true())
    statement = insert(tally.table).from_select([*tally.keys, "shard", "count"], rows)
    return statement.on_conflict_do_update(
        index_elements=[*tally.keys, "shard"], set_={"count": tally.table.c.count + statement.excluded["count"]}
    )


# -- sources ---------------------------------------------------------------------------------------


def _answers_fed(feeds: Mapping[int, Feeds]) -> Select:
    """Stored answers as rows of ``reported``: each with its submission's day and what its question
    feeds (``feeds``; a question missing from it feeds only its answer tally). Add the condition."""
    randomized = sorted(q for q, f in feeds.items() if f.randomized)
    paired = sorted(q for q, f in feeds.items() if f.paired)
    return select(
        Answer.submission_id,
        Answer.question_id,
        Answer.value,
        Submission.submitted_on.label("day"),
        Answer.question_id.in_(randomized).label("randomized"),
        Answer.question_id.in_(paired).label("paired"),
    ).join(Submission, Submission.id == Answer.submission_id)


def stored(
    feeds: Mapping[int, Feeds],
    survey_id: int | None = None,
    submission_ids: Iterable[int] | None = None,
    import_id: int | None = None,
) -> tuple[FromClause, FromClause]:
    """``reported`` and ``submitted`` from the stored answers: of survey ``survey_id`` (the recount),
    of the submissions ``submission_ids`` (those a release takes back), or of the upload ``import_id``
    (:mod:`survey.domain.responses.imports`). ``feeds`` maps question ids to what they feed
    (:func:`what_it_feeds`); a question missing from it feeds only its answer tally."""
    if import_id is not None:
        which = Submission.import_id == import_id
    elif submission_ids is None:
        which = Submission.survey_id == survey_id
    else:
        which = Submission.id.in_(list(submission_ids))
    reported = _answers_fed(feeds).where(which).subquery("reported")
    submitted = select(Submission.id.label("submission_id"), Submission.survey_id).where(which).subquery("submitted")
    return reported, submitted


def pending(feeds: Mapping[int, Feeds]) -> tuple[FromClause, FromClause]:
    """On SQLite: ``reported`` and ``submitted`` of the submissions listed in ``pending_submissions``
    (not yet in the deferred tallies), their answers to the questions of ``feeds`` alone: what a
    reader of a deferred tally adds to the stored cells. (PostgreSQL: :func:`_late_postgresql`.)

    SQLite has no LATERAL, and given an index on the question it read every answer of the survey's
    questions and looked each up in the list (a read of the counts grew with the survey: 21 ms at
    20,000 submissions with nothing listed, benchmarks/fold_readers.md). ``question_id + 0`` is no
    column an index can serve, so the list drives the lookup."""
    listed_ids = select(PendingSubmission.submission_id)
    reported = (
        _answers_fed(feeds)
        .where((Answer.question_id + 0).in_(sorted(feeds)), Answer.submission_id.in_(listed_ids))
        .subquery("reported")
    )
    submitted = (
        select(Submission.id.label("submission_id"), Submission.survey_id)
        .join(PendingSubmission, PendingSubmission.submission_id == Submission.id)
        .subquery("submitted")
    )
    return reported, submitted


def _late_postgresql(tally: Tally, feeds: Mapping[int, Feeds]) -> Select:
    """``SELECT <keys>, n``: what the listed submissions add to ``tally`` through their answers to
    the questions of ``feeds``, on PostgreSQL, linear in the listed submissions whatever the planner
    thinks of the list. The list is gathered once, in the statement's snapshot, and planned at the
    size migration 0026 declares; each listed submission's answers are looked up by its id (a
    ``LATERAL`` join). A tally that joins a submission's answers with one another (the pairs) is
    worked out per submission, from its own answers alone, then summed: with the list's statistics
    taken while it was empty, the self-join of every listed answer was planned as a nested loop, and
    a read of a pair with 1,000 listed took 3.3 s (benchmarks/fold_readers.md). The others group the
    listed answers at once (the same per submission cost a read of the day counts half as much
    again)."""
    listed = _as_listed(select(PendingSubmission.submission_id), "listed")
    mine = _answers_fed(feeds).where(
        Answer.question_id.in_(sorted(feeds)), Answer.submission_id == listed.c.submission_id
    )
    # (no deferred tally reads ``submitted``: given for the signature of the tally's rows)
    submitted = (
        select(Submission.id.label("submission_id"), Submission.survey_id)
        .where(Submission.id == listed.c.submission_id)
        .correlate(listed)
        .subquery("submitted")
    )
    if not tally.joins_answers:
        found = mine.offset(0).lateral("each")  # (OFFSET 0: kept a lookup per submission, see postgresql_fold)
        reported = select(*found.c).select_from(listed).join(found, true()).subquery("reported")
        return tally.counted(reported, submitted)
    per = tally.counted(mine.correlate(listed).subquery("reported"), submitted).correlate(listed).lateral("per")
    keys = [per.c[k] for k in tally.keys]
    return (
        select(*keys, cast(func.sum(per.c.n), BigInteger).label("n"))
        .select_from(listed)
        .join(per, true())
        .group_by(*keys)
    )


def _as_listed(ids: Select, alias: str) -> FromClause:
    """``FROM listed_ids(ARRAY(ids)) AS alias(submission_id)``: the ids ``ids`` selects, gathered once
    in the calling statement (its snapshot), in a table whose size the planner takes as about
    1,000 (migration 0026), not from the list's statistics."""
    gathered = func.array(ids.scalar_subquery())
    return func.listed_ids(gathered).table_valued("submission_id").render_derived(name=alias)


def with_listed(
    tally: Tally, where: ColumnElement[bool], feeds: Mapping[int, Feeds], dialect: str = "postgresql"
) -> Select:
    """``SELECT <keys>, n``: ``tally``'s stored cells that ``where`` selects, summed over shards, plus
    what the submissions listed for the fold add to it through their answers to the questions of
    ``feeds``, in one statement, so from one snapshot: a submission is in exactly one of the two. Every
    reader of a deferred tally reads it this way (``where`` and ``feeds`` naming the same questions)."""
    keys = [tally.table.c[k] for k in tally.keys]
    kept = select(*keys, tally.table.c["count"].label("n")).where(where)
    if dialect == "postgresql":
        late = _late_postgresql(tally, feeds).subquery("late")
    else:
        late = tally.counted(*pending(feeds)).subquery("late")
    cells = union_all(kept, select(*late.c)).subquery("cells")
    keys = [cells.c[k] for k in tally.keys]
    return select(*keys, cast(func.sum(cells.c.n), BigInteger).label("n")).group_by(*keys)


def question_cells(tally: Tally, questions: Iterable[Any], dialect: str = "postgresql") -> Select:
    """``SELECT <keys>, n``: ``tally``'s cells of ``questions`` (each a
    :class:`~survey.domain.models.Question`; the answer or day tallies, keyed by question first) with
    the submissions not yet folded (:func:`with_listed`)."""
    feeds = {q.id: what_it_feeds(q) for q in questions}
    return with_listed(tally, tally.table.c.question_id.in_(sorted(feeds)), feeds, dialect)


def pair_cells(low: Any, high: Any, dialect: str = "postgresql") -> Select:
    """``SELECT value, other_value, n``: how many submissions reported each pair of values to the
    questions ``low`` and ``high`` (``low.id < high.id``; each a :class:`~survey.domain.models.Question`),
    from the pair tallies summed over shards, plus the pairs of the submissions not yet folded into
    them (:func:`with_listed`)."""
    table = PairTally.__table__
    feeds = {low.id: what_it_feeds(low), high.id: what_it_feeds(high)}
    where = and_(table.c.question_id == low.id, table.c.other_id == high.id)
    cells = with_listed(TALLY["pairs"], where, feeds, dialect).subquery("pairs")
    return select(cells.c.value, cells.c.other_value, cells.c.n)


def _check_at() -> ColumnElement[Any]:
    """``check_at``: for a survey set to close by itself, its count of stored submissions with this
    one, when that count has reached ``auto_close_due``; NULL otherwise (and always when the setting
    is off, without reading the count). The count is the submission tally's, summed over its shards,
    as the statement's snapshot sees it: a few index rows, not a count of the submissions. So a
    submission learns in its own statement whether the survey's precision is due for a check, and
    the check (survey.domain.results.live.close_if_precise) runs only then, not after every one."""
    stored = (
        select(func.coalesce(func.sum(SubmissionTally.count), 0))
        .where(SubmissionTally.survey_id == Survey.id)
        .scalar_subquery()
    )
    counted = stored + 1
    # nested CASEs: the count is read only when the setting is on (CASE evaluates in order)
    return case((Survey.auto_close, case((counted >= Survey.auto_close_due, counted))))


#: The survey accepts submissions on ``day`` by ``access``: the rule of
#: :func:`survey.domain.models.accepting_on`, in SQL (tests/test_tallies.py checks that the two agree).
#: Its ``check_at``: :func:`_check_at`.
def _accepting(day: ColumnElement[dt.date]) -> Select:
    return select(Survey.id, _check_at().label("check_at")).where(
        Survey.id == bindparam("survey_id", type_=Integer),
        Survey.slug == bindparam("slug", type_=String),
        Survey.access == bindparam("access", type_=String),
        Survey.status == "open",
        or_(Survey.opens_on.is_(None), Survey.opens_on <= day),
        or_(Survey.closes_on.is_(None), Survey.closes_on >= day),
    )


@functools.cache
def accepting_statement() -> Select:
    """``SELECT id, check_at FROM surveys WHERE <accepting>``: one row if the survey accepts."""
    return _accepting(bindparam("day", type_=Date))


def _receipt_insert(dialect: str, source: FromClause, day: ColumnElement[dt.date]) -> Any:
    """Insert the key's receipt for each row of ``source`` (``id``: the survey), unless received."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert(SubmissionReceipt)
        .from_select(
            ["survey_id", "key_hash", "received_on"],
            select(source.c.id, bindparam("receipt", type_=String), day).where(true()),
        )
        .on_conflict_do_nothing(index_elements=["survey_id", "key_hash"])
        .returning(SubmissionReceipt.survey_id.label("id"))
    )


@functools.cache
def receipt_statement(dialect: str) -> Any:
    """Insert the receipt ``receipt`` of survey ``survey_id`` on ``day``; returns a row if it was new."""
    source = select(bindparam("survey_id", type_=Integer).label("id")).subquery("given")
    return _receipt_insert(dialect, source, bindparam("day", type_=Date))


def submission_params(
    values: Mapping[int, int], feeds: Mapping[int, Feeds], dialect: str, **given: Any
) -> dict[str, Any]:
    """The parameters of one submission's statements besides ``given`` (``survey_id``, ``day``,
    ``shard``...): its values in question order with what each feeds, as arrays for PostgreSQL
    (:func:`postgresql_submission`), as one JSON array ``reported`` for SQLite."""
    ordered = sorted(values.items())
    fed = [feeds.get(q, NOTHING_MORE) for q, _ in ordered]
    if dialect == "sqlite":  # for the driver as it is: a day is its ISO text there
        reported = [[q, v, f.randomized, f.paired] for (q, v), f in zip(ordered, fed, strict=True)]
        day = given.get("day")
        return {**given, "reported": json.dumps(reported), "day": day.isoformat() if day else day}
    return {
        **given,
        "questions": [q for q, _ in ordered],
        "values": [v for _, v in ordered],
        "randomized": [f.randomized for f in fed],
        "paired": [f.paired for f in fed],
        "shards": [code_shard(v, f.coded, given["shard"]) for (_, v), f in zip(ordered, fed, strict=True)],
    }


def array_literal(items: Iterable[int | bool]) -> str:
    """PostgreSQL's text form of an array of whole numbers or truth values (``{3,-1,0}``,
    ``{t,f}``), which a compiled statement casts (``::INTEGER[]``)."""
    return "{" + ",".join(("t" if item else "f") if isinstance(item, bool) else str(int(item)) for item in items) + "}"


@dataclass(frozen=True)
class Compiled:
    """A statement compiled once for psycopg: its text (``%(name)s`` placeholders) and the values
    of the constants the declaration holds (``'open'``, ``true``...), to send with the parameters."""

    sql: str
    constants: dict[str, Any]
    #: The parameters declared as arrays: sent as PostgreSQL's text (:func:`array_literal`), since
    #: psycopg adapts a Python list element by element in Python (a submission's five arrays: 37 µs
    #: of CPU against 10 µs as text; benchmarks/scale.md, "Ingest").
    arrays: frozenset[str] = frozenset()

    def params(self, given: Mapping[str, Any]) -> dict[str, Any]:
        params = {**self.constants, **given}
        for name in self.arrays:
            value = params.get(name)
            if isinstance(value, list | tuple):
                params[name] = array_literal(value)
        return params


def _compile(statement: Any, dialect: Any = None) -> Compiled:
    compiled = statement.compile(dialect=dialect or postgresql.psycopg.dialect())
    constants = {name: bind.effective_value for bind, name in compiled.bind_names.items() if not bind.required}
    arrays = frozenset(name for bind, name in compiled.bind_names.items() if isinstance(bind.type, ARRAY))
    return Compiled(str(compiled), constants, arrays)


# -- PostgreSQL: one statement per submission ------------------------------------------------------

#: The arrays a submission's answers come in on PostgreSQL (:func:`submission_params`): the
#: parameter, the column it becomes, its element type.
_ANSWER_ARRAYS = [
    ("questions", "question_id", Integer),
    ("values", "value", Integer),
    ("randomized", "randomized", Boolean),
    ("paired", "paired", Boolean),
    ("shards", "shard", SmallInteger),
]


def _unnested(name: str, arrays: list[tuple[str, str, Any]]) -> FromClause:
    """``unnest(:parameter, ...) AS name(column, ...)``: the array parameters side by side, one row
    per position, so that any number of rows comes in one statement of the same text."""
    return (
        func.unnest(*(bindparam(parameter, type_=ARRAY(type_)) for parameter, _, type_ in arrays))
        .table_valued(*(column(column_name, type_) for _, column_name, type_ in arrays), name=name)
        .render_derived()
    )


@functools.cache
def postgresql_submission(with_receipt: bool) -> Compiled:
    """:func:`postgresql_submission_statement`, compiled once for psycopg's own cursor."""
    return _compile(postgresql_submission_statement(with_receipt))


def postgresql_submission_statement(with_receipt: bool) -> Select:
    """One statement, so one round trip and atomic on its own: data-modifying CTEs check that the
    survey accepts, insert the key's receipt (if any: on a key already received, nothing more),
    the submission, its answers and every tally of :data:`AT_ONCE`, and list it for the fold of the
    :data:`DEFERRED` ones. Everything hangs on the new
    submission's row: if any check fails, nothing is written, and no row comes back; otherwise one
    row, ``check_at`` (:func:`_check_at`). The same text for any number of answers (they come as arrays)."""
    day = bindparam("day", type_=Date)
    shard = bindparam("shard", type_=SmallInteger)
    accepting = _accepting(day).cte("accepting")
    source: FromClause = accepting
    if with_receipt:
        source = _receipt_insert("postgresql", accepting, day).cte("receipt")
    new_submission = (
        postgresql.insert(Submission)
        .from_select(["survey_id", "submitted_on"], select(source.c.id, day))
        .returning(Submission.id, Submission.survey_id)
        .cte("new_submission")
    )
    given = _unnested("given", _ANSWER_ARRAYS)
    reported = (
        select(
            new_submission.c.id.label("submission_id"),
            given.c.question_id,
            given.c.value,
            day.label("day"),
            given.c.randomized,
            given.c.paired,
            given.c.shard,
        )
        .select_from(new_submission.join(given, true()))
        .cte("reported")
    )
    submitted = new_submission  # (its ``survey_id`` is all the submission tally reads)
    answers = postgresql.insert(Answer).from_select(
        ["submission_id", "question_id", "value"],
        select(reported.c.submission_id, reported.c.question_id, reported.c.value),
    )
    writes = [answers.cte("new_answers")]
    writes += [upsert("postgresql", t, reported, submitted, shard, one=True).cte(f"counted_{t.name}") for t in AT_ONCE]
    if DEFERRED:
        writes.append(list_pending("postgresql", select(new_submission.c.id)).cte("listed"))
    return select(accepting.c.check_at).select_from(new_submission.join(accepting, true())).add_cte(*writes)


@functools.cache
def postgresql_fold() -> Compiled:
    """The fold on PostgreSQL (:mod:`survey.domain.responses.pending`), one statement compiled
    once: unlist up to ``batch`` listed submissions (the lowest ids that no other fold holds: ``FOR
    UPDATE SKIP LOCKED``), add their stored answers' pairs to every :data:`DEFERRED` tally in shard
    ``shard``, and return how many it took. What each answer feeds is read from its question's kind
    in SQL (what :func:`what_it_feeds` reads in Python); each taken submission's answers are looked
    up by its id (a ``LATERAL`` join: planned on a guess of the list's size, a join read the whole
    index of ``answers`` on every fold, and the fold slowed as the table grew). No list of ids or
    questions travels: a
    fold of hundreds of submissions built with them cost its worker more CPU in Python (SQLAlchemy's
    expanding IN, psycopg's parsing of thousands of placeholders) than the pairs it saved."""
    # the batch chosen once (an array), and what follows planned for about 1,000 of them (migration
    # 0026): with statistics taken while the list was empty, ``IN (SELECT ... FOR UPDATE SKIP
    # LOCKED)`` probed the whole list once per row of the batch
    chosen = (
        select(PendingSubmission.submission_id)
        .order_by(PendingSubmission.submission_id)
        .limit(bindparam("batch", type_=Integer))
        .with_for_update(skip_locked=True)
    )
    deleted = (
        delete(PendingSubmission)
        .where(PendingSubmission.submission_id == any_(func.array(chosen.scalar_subquery())))
        .returning(PendingSubmission.submission_id)
        .cte("deleted")
    )
    taken = select(_as_listed(select(deleted.c.submission_id), "taken_ids")).cte("taken")
    each = (
        select(Answer.submission_id, Answer.question_id, Answer.value, Submission.submitted_on.label("day"))
        .join(Submission, Submission.id == Answer.submission_id)
        .where(Answer.submission_id == taken.c.submission_id)
        .offset(0)  # (so that PostgreSQL keeps it a lookup per submission instead of flattening it into a join)
        .lateral("each")
    )
    # (each kind's questions read once per fold, then looked up in memory: PostgreSQL's hashed subplan)
    randomized = select(Question.id).where(_kind_is(k.id for k in KIND_LIST if k.randomized))
    paired = select(Question.id).where(_kind_is(k.id for k in KIND_LIST if k.paired))
    reported = (
        select(
            *each.c,
            each.c.question_id.in_(randomized).label("randomized"),
            each.c.question_id.in_(paired).label("paired"),
        )
        .select_from(taken)
        .join(each, true())
        .cte("reported")
    )
    submitted = (
        select(taken.c.submission_id, Submission.survey_id)
        .join(Submission, Submission.id == taken.c.submission_id)
        .cte("submitted")
    )
    shard = bindparam("shard", type_=SmallInteger)
    writes = [upsert("postgresql", t, reported, submitted, shard).cte(f"counted_{t.name}") for t in DEFERRED]
    return _compile(select(func.count()).select_from(taken).add_cte(*writes))


def _kind_is(kinds: Iterable[str]) -> ColumnElement[bool]:
    """``questions.kind`` is one of ``kinds``, the kinds written into the statement as constants."""
    alternatives = [Question.kind == literal_column(f"'{kind}'") for kind in kinds]
    return or_(*alternatives) if alternatives else false()


@functools.cache
def postgresql_hold(with_receipt: bool) -> Compiled:
    """Claim the code, insert the receipt (if any) and the held row in one statement; it returns how
    many the survey holds now, this one included, or 0 if nothing was held (the survey does not
    accept, the code is not usable, or the key was received: then the caller rolls back, since a
    claim may have been made before the receipt was refused)."""
    day = bindparam("day", type_=Date)
    accepting = _accepting(day).cte("accepting")
    claimed = (
        update(RespondentCode)
        .where(
            RespondentCode.survey_id == select(accepting.c.id).scalar_subquery(),
            RespondentCode.code == bindparam("code", type_=String),
            RespondentCode.used.is_(False),
        )
        .values(used=True)
        .returning(RespondentCode.survey_id.label("id"))
        .cte("claimed")
    )
    source: FromClause = claimed
    if with_receipt:
        source = _receipt_insert("postgresql", claimed, day).cte("receipt")
    held = (
        postgresql.insert(HeldSubmission)
        .from_select(["survey_id", "held_on", "answers"], select(source.c.id, day, bindparam("answers", type_=JSON)))
        .returning(HeldSubmission.survey_id)
        .cte("held")
    )
    before = select(func.count()).where(HeldSubmission.survey_id == bindparam("survey_id", type_=Integer))
    statement = select(
        case((func.count() == 0, literal(0)), else_=func.count() + before.scalar_subquery())
    ).select_from(held)
    return _compile(statement)


# -- SQLite: one statement per table, in one transaction -------------------------------------------


@dataclass(frozen=True)
class SQLiteSubmission:
    """The statements of one submission on SQLite: ``insert`` (if the survey accepts; returns the new
    id and ``check_at``), then ``writes`` (its answers and each tally) with ``submission_id``.
    Compiled once (``:name`` placeholders, for the driver as it is): SQLAlchemy would otherwise work
    out each statement's cache key on every submission, about 0.7 ms for the six of them."""

    insert: Compiled
    writes: tuple[Compiled, ...]


@functools.cache
def sqlite_submission() -> SQLiteSubmission:
    """:func:`sqlite_submission_statements`, compiled once."""
    insert, *writes = sqlite_submission_statements()
    dialect = sqlite.dialect(paramstyle="named")
    return SQLiteSubmission(_compile(insert, dialect), tuple(_compile(w, dialect) for w in writes))


def sqlite_submission_statements() -> tuple[Any, ...]:
    """The insert of the submission (if the survey accepts), then the insert of its answers, one
    upsert per tally of :data:`AT_ONCE` and its listing for the fold, the answers read from one
    JSON array (``reported``)."""
    day = bindparam("day", type_=Date)
    accepting = _accepting(day).subquery("accepting")
    insert = (
        sqlite.insert(Submission)
        .from_select(["survey_id", "submitted_on"], select(accepting.c.id, day))
        .returning(
            Submission.id,
            select(_check_at()).where(Survey.id == bindparam("survey_id", type_=Integer)).scalar_subquery(),
        )
    )
    each = func.json_each(bindparam("reported", type_=String)).table_valued("value", name="given")
    submission_id = bindparam("submission_id", type_=Integer)
    reported = select(
        submission_id.label("submission_id"),
        func.json_extract(each.c.value, "$[0]").label("question_id"),
        func.json_extract(each.c.value, "$[1]").label("value"),
        day.label("day"),
        func.json_extract(each.c.value, "$[2]").label("randomized"),
        func.json_extract(each.c.value, "$[3]").label("paired"),
    ).subquery("reported")
    submitted = select(
        submission_id.label("submission_id"), bindparam("survey_id", type_=Integer).label("survey_id")
    ).subquery("submitted")
    answers = sqlite.insert(Answer).from_select(
        ["submission_id", "question_id", "value"],
        select(reported.c.submission_id, reported.c.question_id, reported.c.value),
    )
    shard = bindparam("shard", type_=SmallInteger)
    listed = (list_pending("sqlite", select(submission_id)),) if DEFERRED else ()
    return (insert, answers, *(upsert("sqlite", t, reported, submitted, shard) for t in AT_ONCE), *listed)


def list_pending(dialect: str, ids: Select) -> Any:
    """List the submissions ``ids`` for the fold of the deferred tallies. On a conflict nothing: an
    id listed already is listed (SQLite may give a deleted submission's id to a new one)."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert(PendingSubmission)
        .from_select(["submission_id"], ids.where(true()))
        .on_conflict_do_nothing(index_elements=["submission_id"])
    )


# -- a released batch: many submissions at once ----------------------------------------------------


def batch_params(
    released: list[tuple[int, list[tuple[int, int]], bool]], feeds: Mapping[int, Feeds], dialect: str, **given: Any
) -> dict[str, Any]:
    """The parameters of :func:`batch_statements` for the submissions of a released batch: (id,
    answers, whether newly released) each; ``given`` holds ``survey_id``, ``day`` and ``shard``."""
    rows = [
        (submission_id, q, v, feeds.get(q, NOTHING_MORE), fresh)
        for submission_id, answers, fresh in released
        for q, v in answers
    ]
    fresh_ids = [submission_id for submission_id, _, fresh in released if fresh]
    if dialect == "sqlite":
        day = given.get("day")
        return {
            **given,
            "day": day.isoformat() if day else day,
            "reported": json.dumps([[s, q, v, f.randomized, f.paired, fresh] for s, q, v, f, fresh in rows]),
            "released": json.dumps(fresh_ids),
        }
    return {
        **given,
        "submissions": [r[0] for r in rows],
        "questions": [r[1] for r in rows],
        "values": [r[2] for r in rows],
        "randomized": [r[3].randomized for r in rows],
        "paired": [r[3].paired for r in rows],
        "shards": [given["shard"]] * len(rows),  # (a batch's rows are grouped: the kind is looked up)
        "fresh": [r[4] for r in rows],
        "released": fresh_ids,
    }


@functools.cache
def batch_statements(dialect: str) -> tuple[Compiled, ...]:
    """Add a released batch to every tally of :data:`TALLIES`, from the parameters
    (:func:`batch_params`): the newly released submissions to every tally, and those taken back to
    be released again with them (re-dated) to the dated tallies alone, since their other tallies
    counted them already. On PostgreSQL one statement; on SQLite one per tally (in the release's
    transaction). Compiled once, for the driver as it is."""
    day = bindparam("day", type_=Date)
    shard = bindparam("shard", type_=SmallInteger)
    survey_id = bindparam("survey_id", type_=Integer)
    if dialect == "postgresql":
        given = _unnested(
            "given",
            [("submissions", "submission_id", Integer), *_ANSWER_ARRAYS, ("fresh", "fresh", Boolean)],
        )
        g = given.c
        reported = select(
            g.submission_id, g.question_id, g.value, day.label("day"), g.randomized, g.paired, g.fresh
        ).cte("reported")
        fresh = select(*reported.c).where(reported.c.fresh).cte("fresh")
        ids = _unnested("released", [("released", "submission_id", Integer)])
        submitted = select(ids.c.submission_id, survey_id.label("survey_id")).cte("submitted")
        writes = [
            upsert(dialect, t, reported if t.dated else fresh, submitted, shard).cte(f"counted_{t.name}")
            for t in TALLIES
        ]
        return (_compile(select(func.count()).select_from(submitted).add_cte(*writes)),)
    each = func.json_each(bindparam("reported", type_=String)).table_valued("value", name="given")
    reported = select(
        func.json_extract(each.c.value, "$[0]").label("submission_id"),
        func.json_extract(each.c.value, "$[1]").label("question_id"),
        func.json_extract(each.c.value, "$[2]").label("value"),
        day.label("day"),
        func.json_extract(each.c.value, "$[3]").label("randomized"),
        func.json_extract(each.c.value, "$[4]").label("paired"),
        func.json_extract(each.c.value, "$[5]").label("fresh"),
    )
    fresh = reported.where(func.json_extract(each.c.value, "$[5]")).subquery("reported")
    ids = func.json_each(bindparam("released", type_=String)).table_valued("value", name="released")
    submitted = select(ids.c.value.label("submission_id"), survey_id.label("survey_id")).subquery("submitted")
    named = sqlite.dialect(paramstyle="named")
    return tuple(
        _compile(upsert(dialect, t, reported.subquery("reported") if t.dated else fresh, submitted, shard), named)
        for t in TALLIES
    )
