"""The registry of question kinds (survey/domain/surveys/kinds.py) is the one place that knows kinds by name.

The kind used to be a string twenty files compared; the rules that held it together (randomized ⇔
has options ⇔ a square matrix; a number is asked directly and never paired) were written nowhere.
These tests keep it that way: code outside the registry asks a kind what it is, and fails here when
it compares a kind's name instead; and the registry's entries keep the rules the rest relies on.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from survey.domain.errors import DomainError
from survey.domain.surveys.kinds import (
    CODE,
    FIXED,
    KIND_LIST,
    KINDS,
    LISTED,
    NAMES,
    NONE,
    NUMBER,
    NUMBERS,
    REPORT,
    SHARES,
    builder_blocks,
    kind_of,
)
from survey.privacy import BoundedNumbers, Codes, CoinFlip, GeneralizedRR, Mechanism, Randomizer
from survey.privacy.designs import DESIGNS
from survey.privacy.designs import KINDS as DESIGN_KINDS

ROOT = Path(__file__).resolve().parent.parent
REGISTRY_FILE = ROOT / "survey" / "domain" / "surveys" / "kinds.py"

#: Comparisons with a kind's name that are still allowed, each with the reason, as
#: (file, the comparison as ast.unparse writes it). Keep it short; empty it when you can.


def _strings(node: ast.AST) -> set[str]:
    """The string constants ``node`` is, or holds as a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def kind_name_branches(source: str, names: set[str]) -> list[tuple[int, str]]:
    """Where ``source`` branches on one of the kind ``names``: a comparison (==, !=, in, not in) with
    the name or a collection holding it, SQLAlchemy's ``.in_``/``.not_in`` of such a collection, a
    ``case`` on the name, or a table keyed by two or more kinds' names (``{"yes_no": ..., ...}``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        named: set[str] = set()
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                named |= _strings(operand)
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("in_", "not_in")
        ):
            for argument in node.args:
                named |= _strings(argument)
        elif isinstance(node, ast.MatchValue):
            named |= _strings(node.value)
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if len(keys & names) >= 2:
                named |= keys
        if named & names:
            found.append((getattr(node, "lineno", 0), ast.unparse(node)))
    return found


def test_the_scan_finds_each_way_of_branching_on_a_kind_name():
    names = set(KINDS)
    source = """
if question.kind == "yes_no": pass
if "choice" != kind: pass
ok = kind in ("direct", "number")
rows = select(Question).where(Question.kind.not_in(["number"]))
match kind:
    case "choice": pass
LABELS = {"yes_no": "Yes / no", "choice": "Choice"}
fine = {"type": "number"} and kind == "breakdown" and kind_of(kind).randomized
"""
    assert sorted(line for line, _ in kind_name_branches(source, names)) == [2, 3, 4, 5, 7, 8]


def test_no_python_outside_the_registry_branches_on_a_kind_name():
    names = set(KINDS)
    found = []
    for path in sorted((ROOT / "survey").rglob("*.py")):
        if path == REGISTRY_FILE:
            continue
        where = str(path.relative_to(ROOT))
        for line, code in kind_name_branches(path.read_text(encoding="utf-8"), names):
            found.append(f"{where}:{line}: {code}")
    assert not found, "ask the kind (survey.domain.surveys.kinds) instead of comparing its name:\n" + "\n".join(found)


def _page_comparisons(text: str, names: set[str]) -> list[str]:
    """Comparisons with a quoted kind name in a template or script (``q.kind != "yes_no"``,
    ``kind === "choice"``, ``in ("yes_no", ...)``), and ``data-show-for-kind`` lists written by
    hand; not ``typeof x === "number"``, which is about JavaScript's types."""
    quoted = "|".join(re.escape(name) for name in sorted(names))
    text = re.sub(r"typeof\s+[\w.\[\]]+\s*[!=]==?\s*[\"'][^\"']*[\"']", "", text)
    patterns = [
        rf"[\w.\]\[)]+\s*(?:==|!=|===|!==)\s*[\"'](?:{quoted})[\"']",
        rf"[\"'](?:{quoted})[\"']\s*(?:==|!=|===|!==)",
        rf"\bin\s*[(\[][^)\]]*[\"'](?:{quoted})[\"']",
        rf"data-show-for-kind=\"[^\"{{]*\b(?:{quoted})\b",
    ]
    found = [match.group(0) for pattern in patterns for match in re.finditer(pattern, text)]
    return found


def test_the_page_scan_finds_comparisons_with_kind_names():
    names = set(KINDS)
    text = """{% if q.kind != "yes_no" %}{% elif kind in ("choice", "x") %}
    if (kind === "choice") {} if ('direct' == k) {} <div data-show-for-kind="yes_no choice">
    if (typeof p !== "number" || typeof a.b === 'number') {} <div data-show-for-kind="{{ show_for.options }}">"""
    assert len(_page_comparisons(text, names)) == 5


def test_no_template_or_script_branches_on_a_kind_name():
    names = set(KINDS)
    files = [*sorted((ROOT / "templates").rglob("*.html")), *sorted((ROOT / "static" / "js").rglob("*.js"))]
    found = [
        f"{path.relative_to(ROOT)}: {comparison}"
        for path in files
        if not path.name.endswith(".min.js")
        for comparison in _page_comparisons(path.read_text(encoding="utf-8"), names)
    ]
    assert not found, "take what the page needs from the kind registry:\n" + "\n".join(found)


# -- the registry's entries ------------------------------------------------------------------------


def test_each_kind_has_one_name_and_the_names_differ():
    assert list(NAMES) == list(KINDS) == [k.id for k in KIND_LIST]
    assert len(set(NAMES.values())) == len(NAMES)


def test_the_randomized_kinds_are_the_kinds_the_designs_serve():
    assert {k.id for k in KIND_LIST if k.randomized} == set(DESIGN_KINDS)
    assert {kind for d in DESIGNS.values() for kind in d.kinds} == set(DESIGN_KINDS)


@pytest.mark.parametrize("kind", KIND_LIST, ids=lambda k: k.id)
def test_each_kind_keeps_the_rules_the_rest_of_the_app_relies_on(kind):
    # a randomized answer is an option code (a row and column of its design's matrix), or, for a
    # randomized number, a report code of its design's number mechanism; a report code is nothing else
    if kind.randomized:
        assert (kind.has_options and kind.answer == CODE and kind.result == SHARES) or (
            kind.ranged and kind.answer == REPORT and kind.result == NUMBERS
        )
    assert kind.randomized_number == (kind.answer == REPORT) == (kind.randomized and kind.ranged)
    # an answer is either a code among options or a number in a range, never both
    assert kind.has_options == (kind.answer == CODE) == (not kind.ranged)
    assert (kind.options == NONE) == (kind.answer in (NUMBER, REPORT)) == (kind.result == NUMBERS)
    # a number asked directly is never paired (too many values to group by); a randomized number is,
    # with the questions asked directly (its mean by group)
    assert not (kind.ranged and kind.paired) or kind.randomized_number
    assert (kind.options == FIXED) == bool(kind.labels)
    assert kind.template in ("options", "number") and (kind.template == "number") == kind.ranged
    assert {"privacy", "direct-note"} & kind.builder_inputs == {"privacy" if kind.randomized else "direct-note"}
    assert ("options" in kind.builder_inputs) == (kind.options == LISTED)


def test_the_builder_blocks_name_the_kinds_that_show_them():
    blocks = builder_blocks()
    for kind in KIND_LIST:
        for block, shown_for in blocks.items():
            assert (kind.id in shown_for.split()) == (block in kind.builder_inputs)


def test_a_kind_checks_an_answer_as_it_is_stored():
    assert kind_of("choice").check(" 2 ", "q", k=3) == 2
    assert kind_of("number").check("-5", "age", low=-10, high=10) == -5
    with pytest.raises(DomainError, match="not one of its option codes 0 to 2"):
        kind_of("direct").check(3, "q", k=3)
    with pytest.raises(DomainError, match="a whole number from 0 to 10"):
        kind_of("number").check(11, "q", low=0, high=10)
    with pytest.raises(DomainError, match="option code, not True"):
        kind_of("yes_no").check(True, "q", k=2)
    # a randomized number's answer is a report code in its mechanism's domain, not in the range
    codes = DESIGNS["hybrid"].reports
    assert kind_of("rr_number").check(" 1500 ", "drinks", low=0, high=30, reports=codes) == 1500
    with pytest.raises(DomainError, match="not a report this question's randomization can send"):
        kind_of("rr_number").check(2001, "drinks", low=0, high=3000, reports=codes)
    with pytest.raises(DomainError, match="the code of a randomized report"):
        kind_of("rr_number").check(12.5, "drinks", low=0, high=30, reports=codes)


def test_researcher_codes_reverse_only_where_the_kind_says():
    for kind in KIND_LIST:
        codes = [kind.researcher_code(c) for c in range(2)]
        assert codes == ([1, 0] if kind.reversed_codes else [0, 1])


# -- the general mechanism interface ------------------------------------------------------------------


def test_the_matrix_mechanism_is_one_implementation_of_the_interface():
    for mechanism in (
        CoinFlip(0.5, 0.5),
        GeneralizedRR(["a", "b", "c"], epsilon=1.0),
        Mechanism([[0.8, 0.1], [0.2, 0.9]]),
    ):
        assert isinstance(mechanism, Randomizer)
        assert mechanism.reports == Codes(mechanism.k)
        sampler = mechanism.sampler()
        assert sampler["sampler"] == "columns"
        assert sampler["columns"] == mechanism.matrix.T.tolist()  # columns[t]: the report's distribution given t
        counts = [30] * mechanism.k
        hooked = mechanism.estimate(counts).proportions  # the estimator hook is the matrix estimator: Q⁻¹
        assert hooked == pytest.approx(mechanism.inverse @ np.array(counts) / sum(counts))


def test_the_interface_asks_nothing_of_a_matrix():
    """What the page, the browser and the checks may ask of any mechanism: a mechanism whose reports
    are numbers, or a design of arms, has all of it without a matrix."""
    members = {name for name in vars(Randomizer) if not name.startswith("_")}
    assert members == {"epsilon", "reports", "sampler", "estimate"}
    numbers = BoundedNumbers(0, 120)
    assert numbers.contains(0) and numbers.contains(120) and not numbers.contains(121)
    assert not numbers.contains(2.5) and BoundedNumbers(0, 1, whole=False).contains(0.5)
    assert not numbers.contains(True) and not numbers.contains(float("nan"))
    assert Codes(3).contains(2) and not Codes(3).contains(3) and not Codes(3).contains(False)
