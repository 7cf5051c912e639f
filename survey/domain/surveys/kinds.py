"""The registry of question kinds: everything the rest of the app knows about each kind of question.

One frozen :class:`Kind` per kind, beside the registry of designs (:mod:`survey.privacy.designs`):
its id (the spec's ``kind`` and the stored ``Question.kind``), its name shown to people, where its
options come from, how its answer is checked, stored and coded for researchers, whether it is
randomized, whether its answers are paired with other questions' (the pair tallies, associations,
comparisons), what its result is, and what the builder and the respondent's page show for it.

Before this registry the kind was a string that twenty files compared, held together by rules
nobody wrote down (randomized ⇔ has options ⇔ a square matrix ⇔ counted per code; a number is asked
directly and never paired). Here those rules are fields of one entry, so code elsewhere asks a
question of the kind (``kind_of(q.kind).randomized``) instead of naming it, and adding a kind is one
entry in :data:`KIND_LIST` (docs/architecture.md, "Adding a kind"). tests/test_kinds.py fails when
code outside this module compares a kind's name.

    >>> [k.id for k in KIND_LIST if k.randomized]
    ['yes_no', 'choice', 'rr_number']
    >>> kind_of("number").check("42", "drinks", low=0, high=100)
    42
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from survey.domain.errors import DomainError
from survey.privacy.designs import DESIGNS

__all__ = [
    "ANSWERS",
    "CODE",
    "DIRECT_KINDS",
    "FIXED",
    "KINDS",
    "KIND_LIST",
    "LISTED",
    "NAMES",
    "NONE",
    "NUMBER",
    "NUMBERS",
    "PAIRED_KINDS",
    "RANDOMIZED_KINDS",
    "REGISTRY",
    "REPORT",
    "SHARES",
    "Kind",
    "builder_blocks",
    "builder_designs",
    "builder_kinds",
    "check_code",
    "check_number",
    "check_report",
    "find_kind",
    "kind_of",
    "kinds_where",
]

#: How an answer is stored (``Answer.value``): the code of an option (its row and column in the
#: design's matrix), the number answered itself, or the code of a randomized number's report (a
#: point of its mechanism's report grid: :mod:`survey.privacy.numeric`), checked against the
#: mechanism's domain of reports, not the question's range.
CODE, NUMBER, REPORT = "code", "number", "report"
AnswerType = Literal["code", "number", "report"]

#: Where a kind's options come from: fixed by the kind (yes and no), listed by the organizer, none.
FIXED, LISTED, NONE = "fixed", "listed", "none"
OptionSource = Literal["fixed", "listed", "none"]

#: What a question's result is: estimated shares of its options (through the design's matrix when
#: randomized, the identity otherwise), or a summary of the numbers answered (mean, quartiles).
SHARES, NUMBERS = "shares", "numbers"
ResultType = Literal["shares", "numbers"]

#: Where a question's answers go in JSON (the submission's ``answers`` object).
ANSWERS = ("answers",)


def check_code(value: Any, key: str, k: int) -> int:
    """An option code 0 .. k-1 (typed digits accepted); a DomainError saying what is wrong otherwise."""
    where = (*ANSWERS, key)
    if isinstance(value, bool):
        raise DomainError("answer.not_option_code", path=where, key=key, value=value)
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}", value.strip()):
        value = int(value.strip())
    if not isinstance(value, int):
        raise DomainError("answer.option_code_not_whole", path=where, key=key, highest=k - 1, value=value)
    if not 0 <= value < k:
        raise DomainError("answer.option_code_out_of_range", path=where, key=key, value=value, highest=k - 1)
    return value


def check_number(value: Any, key: str, low: int, high: int) -> int:
    """A whole number from ``low`` to ``high`` (typed digits accepted); a DomainError otherwise."""
    where = (*ANSWERS, key)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,10}", value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise DomainError("answer.number_not_whole", path=where, key=key, low=low, high=high, value=value)
    if not low <= value <= high:
        raise DomainError("answer.number_out_of_range", path=where, key=key, low=low, high=high, value=value)
    return value


def check_report(value: Any, key: str, reports: Any) -> int:
    """A report code inside ``reports`` (a mechanism's domain of reports, with ``low`` and ``high``;
    typed digits accepted); a DomainError otherwise."""
    where = (*ANSWERS, key)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,10}", value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise DomainError("answer.report_not_whole", path=where, key=key, value=value)
    if reports is None or not reports.contains(value):
        low, high = (reports.low, reports.high) if reports is not None else (0, 0)
        raise DomainError("answer.report_out_of_range", path=where, key=key, value=value, low=low, high=high)
    return value


@dataclass(frozen=True)
class Kind:
    """One kind of question: what it is called, what its answer is, and where it goes.

    The exports follow from these fields rather than from the kind's name: a kind whose ``result``
    is :data:`SHARES` has one row per option in the estimates CSV, its options (in researcher codes)
    and design in the codebook, value labels (nominal) in the .sav/.dta files and a matrix in the
    R script; one whose result is :data:`NUMBERS` has one row (its mean), its range in the codebook,
    no value labels (scale) and ``number = TRUE`` in the R script. A randomized kind with a range
    (:attr:`randomized_number`) reports a code of its mechanism's grid, exported in the question's
    units (the mechanism's ``value_of``).
    """

    id: str
    #: Its name wherever a person reads it (the build page, the results page).
    name: str
    #: The builder's radio button for it: a little more than the name, to choose by.
    choice: str
    #: Randomized in the respondent's browser by a design (:mod:`survey.privacy.designs`); the
    #: other kinds are asked directly and sent as answered.
    randomized: bool
    #: Where its options come from (:data:`FIXED`, :data:`LISTED` or :data:`NONE`).
    options: OptionSource
    #: How its answer is checked and stored (:data:`CODE`, :data:`NUMBER` or :data:`REPORT`).
    answer: AnswerType
    #: Whether its answers enter the pair tallies with other questions' (associations and comparisons).
    #: A randomized number's report codes are paired with the questions asked directly only (its mean
    #: by group); :func:`survey.domain.responses.writes._pairs` says so.
    paired: bool
    #: What its result is (:data:`SHARES` or :data:`NUMBERS`).
    result: ResultType
    #: The options of a kind whose options are :data:`FIXED`, in stored code order.
    labels: tuple[str, ...] = ()
    #: Whether a researcher reads its codes reversed (yes = 1, no = 0 where yes is stored 0):
    #: :mod:`survey.domain.results.coding`.
    reversed_codes: bool = False
    #: What the codebook adds to the description of its column, after the option code.
    coding_note: str = ""
    #: How the respondent's page lays out its options ("row": side by side; "": as many fit).
    layout: str = ""
    #: The macro of templates/respond/_answers.html that draws its answer on the respondent's page.
    template: str = "options"
    #: Whether the builder's form offers it (its inputs and live preview exist there); a kind it does
    #: not offer yet is made through a spec (the import, the demo, duplicating a survey).
    in_builder: bool = True

    @property
    def has_options(self) -> bool:
        """Whether its answer is one of a list of options (the rest have a range)."""
        return self.options != NONE

    @property
    def listed(self) -> bool:
        """Whether the organizer lists its options (else the kind fixes them, or it has none)."""
        return self.options == LISTED

    @property
    def ranged(self) -> bool:
        """Whether it has a range (its ``minimum`` and ``maximum``): a number typed by the respondent,
        sent as typed (:data:`NUMBER`) or randomized into a report code (:data:`REPORT`). Its answers
        are tallied per value (or code), not per option."""
        return self.answer in (NUMBER, REPORT)

    @property
    def randomized_number(self) -> bool:
        """Whether its answer is a number randomized in the browser by a number mechanism
        (:mod:`survey.privacy.numeric`): the page carries that mechanism's sampler, the answer is a
        report code, and the mean is estimated from the tallies of codes."""
        return self.answer == REPORT

    @property
    def builder_inputs(self) -> frozenset[str]:
        """The blocks of the builder's question form that apply to it (templates/organize/question.html):
        ``options`` (the organizer lists them), ``range``, ``privacy`` (its design) and
        ``direct-note`` (a word that it is not protected)."""
        inputs = {"privacy" if self.randomized else "direct-note"}
        if self.options == LISTED:
            inputs.add("options")
        if self.ranged:
            inputs.add("range")
        return frozenset(inputs)

    def check(
        self,
        value: Any,
        key: str,
        *,
        k: int = 0,
        low: int | None = None,
        high: int | None = None,
        reports: Any = None,
    ) -> int:
        """The value to store for the answer ``value`` to question ``key`` (of ``k`` options, of the
        range ``low`` .. ``high``, or a report code in ``reports``, its mechanism's domain of reports),
        or a DomainError saying what is wrong."""
        if self.randomized_number:
            return check_report(value, key, reports)
        if self.ranged:
            assert low is not None and high is not None, f"a {self.id} question has a range"
            return check_number(value, key, low, high)
        return check_code(value, key, k)

    def researcher_code(self, stored: int) -> int:
        """The code a researcher sees for the stored code ``stored`` (its own inverse)."""
        return 1 - stored if self.reversed_codes else stored

    def neutral_labels(self, k: int) -> list[str]:
        """Labels to build a design with when the options do not matter (the builder's preview, the
        planning figures): its own where the kind fixes them, else "option 1" .. "option k"."""
        if self.options == FIXED:
            return list(self.labels)
        return [f"option {i + 1}" for i in range(k)]

    def option_count(self, listed: int) -> int:
        """How many options a question of this kind has when the organizer listed ``listed``."""
        if self.options == FIXED:
            return len(self.labels)
        return listed if self.options == LISTED else 0


KIND_LIST: tuple[Kind, ...] = (
    Kind(
        id="yes_no",
        name="Yes / no",
        choice="Yes / no",
        randomized=True,
        options=FIXED,
        labels=("yes", "no"),
        answer=CODE,
        paired=True,
        result=SHARES,
        reversed_codes=True,
        coding_note=" (1 = yes, 0 = no)",
        layout="row",
    ),
    Kind(
        id="choice",
        name="Choice",
        choice="Choice between options",
        randomized=True,
        options=LISTED,
        answer=CODE,
        paired=True,
        result=SHARES,
    ),
    Kind(
        id="direct",
        name="Asked directly",
        choice="Asked directly (not protected)",
        randomized=False,
        options=LISTED,
        answer=CODE,
        paired=True,
        result=SHARES,
    ),
    Kind(
        id="number",
        name="Number, asked directly",
        choice="A whole number, asked directly (not protected)",
        randomized=False,
        options=NONE,
        answer=NUMBER,
        paired=False,
        result=NUMBERS,
        template="number",
    ),
    Kind(
        id="rr_number",
        name="Number, randomized",
        choice="A number, protected by randomization",
        randomized=True,
        options=NONE,
        answer=REPORT,
        paired=True,
        result=NUMBERS,
        template="number",
    ),
)

#: id → kind, in the order the builder offers them.
REGISTRY: dict[str, Kind] = {kind.id: kind for kind in KIND_LIST}
KINDS: tuple[str, ...] = tuple(REGISTRY)
#: Kinds asked plainly (not randomized, not protected).
DIRECT_KINDS: tuple[str, ...] = tuple(k.id for k in KIND_LIST if not k.randomized)
RANDOMIZED_KINDS: tuple[str, ...] = tuple(k.id for k in KIND_LIST if k.randomized)
#: Kinds whose answers enter the pair tallies.
PAIRED_KINDS: tuple[str, ...] = tuple(k.id for k in KIND_LIST if k.paired)


def kind_of(kind: str) -> Kind:
    """The registry's entry for the kind called ``kind`` (a KeyError for a kind that does not exist:
    the spec and the builder refuse those before anything is stored)."""
    return REGISTRY[kind]


def find_kind(kind: Any) -> Kind | None:
    """The entry for ``kind`` if it names one (a form may post anything), else None."""
    return REGISTRY.get(kind) if isinstance(kind, str) else None


#: id → the name people read, for templates.
NAMES: dict[str, str] = {k.id: k.name for k in KIND_LIST}


def kinds_where(test: Callable[[Kind], bool], kinds: Iterable[Kind] = KIND_LIST) -> list[str]:
    """The ids of the kinds for which ``test(kind)`` holds, in registry order."""
    return [k.id for k in kinds if test(k)]


def builder_blocks() -> dict[str, str]:
    """Block of the builder's question form → the kinds it is shown for, space-separated (what the
    form's ``data-show-for-kind`` attributes hold)."""
    blocks = ("options", "range", "privacy", "direct-note")
    return {block: " ".join(kinds_where(lambda k, b=block: b in k.builder_inputs)) for block in blocks}


def builder_designs() -> dict[str, Any]:
    """The designs the builder's form offers: those serving a kind it offers (:attr:`Kind.in_builder`)
    that it can make (:attr:`~survey.privacy.designs.Design.in_builder`), id → design, in registry order."""
    return {
        d.id: d
        for d in DESIGNS.values()
        if d.in_builder and any(REGISTRY[k].in_builder for k in d.kinds if k in REGISTRY)
    }


def builder_kinds() -> dict[str, dict[str, Any]]:
    """What the builder's script needs of each kind: whether it is randomized, how many options it
    has when they are not listed (None: count the organizer's list), and whether it has a range
    (the preview is then sent the range instead of a number of options)."""
    return {
        k.id: {
            "randomized": k.randomized,
            "options": None if k.options == LISTED else len(k.labels),
            "ranged": k.ranged,
        }
        for k in KIND_LIST
    }
