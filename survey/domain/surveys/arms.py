"""Split ballots: one sensitive question asked in two or more ways, each respondent assigned one at random.

A reviewer's first question of a randomized-response study is whether it drew out more honest
answers than asking plainly, and how many respondents did not follow the procedure. Both need the
sample split at random: some respondents asked directly and others through a design ("more is
better", Lensvelt-Mulders et al. 2005), or two designs with different probabilities, from which the
share who answer "no" whatever happens is estimated (Clark & Desharnais 1998; Moshagen, Musch &
Erdfelder 2012).

Here each way of asking is an ordinary question, an **arm**, with the name of its group and the
share of respondents who get it (``Question.arm_group``, ``Question.arm_share``). The arms of a group
are consecutive questions whose shares sum to 1. The respondent's browser draws one arm per group
(``crypto.getRandomValues``, memoized per browser like the reports: a reload cannot shop for an arm)
and shows only that one; the submission carries the answer to that arm alone, so the arm is stored
with the submission as *which* of the group's questions it answered, and each arm is tallied as the
question it is. Nothing else changes: every arm has its own estimate, exports and pair tallies, and a
group's analyses (survey.domain.results.arms) read the arms' tallies.

An arm is not sensitive (it is chance, not an answer), so it costs no privacy. A respondent answers
one arm of a group, so the group costs the ε of its worst arm, not the sum (:func:`composed`).

    >>> composed([(None, 1.0), ("drugs", 0.5), ("drugs", 2.0), (None, 0.25)])
    [1.0, 2.0, 0.25]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from survey.domain import validation
from survey.domain.validation import Place

__all__ = [
    "ARM_FIELDS",
    "Arm",
    "ArmGroup",
    "check_groups",
    "composed",
    "forced_yes",
    "groups_of",
    "noncompliance_pair",
    "parse_arm",
]

T = TypeVar("T")

#: What a question's ``arm`` object holds in a spec.
ARM_FIELDS = frozenset({"group", "share"})
#: How far a group's shares may be from summing to 1 (they are typed as decimals: 1/3 is 0.3333).
SHARE_TOLERANCE = 1e-3


class Armed(Protocol):
    key: str
    arm_group: str | None
    arm_share: float | None


@dataclass(frozen=True)
class Arm:
    """One question of a split ballot: its key and the share of respondents assigned to it."""

    key: str
    share: float


@dataclass(frozen=True)
class ArmGroup:
    """A split ballot: its name and its arms, in question order."""

    name: str
    arms: tuple[Arm, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.arms)


def parse_arm(raw: Any, place: Place) -> tuple[str, float] | None:
    """A question's ``arm`` object from a spec, ``{"group": name, "share": p}``, validated: the group's
    name is a key (like a question's) and the share a probability above 0 and below 1. None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise place.error("spec.arm_not_object", "arm")
    extra = sorted(set(raw) - ARM_FIELDS, key=str)
    if extra:
        error = place.error("spec.unknown_field", "arm", field=extra[0], allowed=", ".join(sorted(ARM_FIELDS)))
        error.path = (*error.path, extra[0])
        raise error
    group = raw.get("group")
    if not validation.is_key(group):
        raise place.error("spec.arm_group_malformed", "arm", "group")
    share = raw.get("share")
    if not validation.is_number(share) or not 0 < share < 1:
        raise place.error("spec.arm_share_invalid", "arm", "share", value=share)
    return group, float(share)


def groups_of(questions: Iterable[Armed]) -> list[ArmGroup]:
    """The split ballots among ``questions`` (in order), each with its arms in question order."""
    found: dict[str, list[Arm]] = {}
    for q in questions:
        if q.arm_group is not None:
            found.setdefault(q.arm_group, []).append(Arm(q.key, float(q.arm_share or 0.0)))
    return [ArmGroup(name, tuple(arms)) for name, arms in found.items()]


def check_groups(questions: Sequence[Armed], place_of: Any) -> None:
    """Refuse split ballots that cannot be asked: a group whose arms are not consecutive questions,
    a group of one arm, or shares that do not sum to 1. ``place_of(index, key)`` says where question
    ``index`` sits (a :class:`~survey.domain.validation.Place`), for the error's path and words."""
    last_index: dict[str, int] = {}
    for index, q in enumerate(questions):
        group = q.arm_group
        if group is None:
            continue
        if group in last_index and last_index[group] != index - 1:
            raise place_of(index, q.key).error("spec.arm_group_split", "arm", "group", group=group)
        last_index[group] = index
    for group in groups_of(questions):
        first = next(i for i, q in enumerate(questions) if q.arm_group == group.name)
        if len(group.arms) < 2:
            raise place_of(first, group.arms[0].key).error("spec.arm_group_alone", "arm", "group", group=group.name)
        total = math.fsum(a.share for a in group.arms)
        if abs(total - 1.0) > SHARE_TOLERANCE:
            raise place_of(first, group.arms[0].key).error(
                "spec.arm_shares_sum", "arm", "share", group=group.name, total=round(total, 6)
            )


#: How close to 1 a design's P(report "yes" | true "yes") must be for the non-compliance models.
CERTAIN = 1e-9


def forced_yes(question: Any, mechanism: Any) -> float | None:
    """For a randomized yes/no arm whose design makes every "yes" carrier report "yes" (a coin flip
    whose second coin always says "yes"), the chance a non-carrier is made to report "yes": the
    cheating detection model's p for that arm. None for any other question or design."""
    if mechanism is None or not question.is_randomized_option:
        return None
    if question.kind_entry.labels != ("yes", "no"):
        return None
    matrix = mechanism.matrix  # rows: reports, columns: true answers; code 0 is "yes"
    if abs(float(matrix[0][0]) - 1.0) > CERTAIN:
        return None
    return float(matrix[0][1])


def noncompliance_pair(arms: Iterable[tuple[T, Any]]) -> tuple[tuple[T, float], tuple[T, float]] | None:
    """The first two of ``arms`` (each ``(arm, its mechanism)``) the non-compliance models can be
    fitted on: yes/no arms whose designs make every "yes" carrier answer "yes" (:func:`forced_yes`)
    with different chances of a forced "yes"; each with that chance. None when there are no two."""
    # an arm is a question, or a result that holds one
    found = ((arm, forced_yes(getattr(arm, "question", arm), mechanism)) for arm, mechanism in arms)
    usable = [(arm, p) for arm, p in found if p is not None]
    return next(((x, y) for i, x in enumerate(usable) for y in usable[i + 1 :] if abs(x[1] - y[1]) > 1e-9), None)


def composed(items: Iterable[tuple[str | None, float]]) -> list[float]:
    """The ε each respondent spends, per question or per split ballot, in question order: a question
    outside any group counts its own ε; a group counts once, with its worst arm's ε (a respondent
    answers one arm). ``items`` are (group or None, ε) per randomized question."""
    out: list[float] = []
    where: dict[str, int] = {}
    for group, epsilon in items:
        if group is None:
            out.append(epsilon)
        elif group in where:
            out[where[group]] = max(out[where[group]], epsilon)
        else:
            where[group] = len(out)
            out.append(epsilon)
    return out
