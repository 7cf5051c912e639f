"""Randomizing with one's own coins or die: the same design, drawn by the respondent instead of the page.

Some respondents trust a coin in their hand more than a program they cannot watch, and some studies
run on paper or by telephone. A design can then be carried out physically when it is a forced
response: with chance ``τ`` the respondent gives the true answer, and with chance ``f_r`` reports
option ``r`` whatever the truth (``τ + Σ f_r = 1``), so that the matrix is
``M[r][t] = τ·[r = t] + f_r``. Coin flips are of this form, and so is Warner's design (``τ = 2p − 1``,
``f = 1 − p`` for both answers), and forced response itself. The chances must then be made by a
device a respondent has:

- **two coins** (or one tossed twice), counting heads: none (¼), one (½), two (¼); the chances
  must be quarters, and the "one head" outcome, half the chances, must fall in one group;
- **a die**: faces 1 to 6, each ⅙; the chances must be sixths.

Two coins are preferred where both work (more people have a coin). The report is what the
respondent then answers; the page sends it as it is, and estimation and ε are the design's own,
unchanged: the matrix is the same, only who draws from it differs.

    >>> from survey.privacy import CoinFlip
    >>> physical_procedure(CoinFlip(0.5, 0.5))
    Procedure(device='coins', truth=(1,), forced=((0,), (2,)))
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

__all__ = ["COINS", "DIE", "Procedure", "forced_form", "physical_procedure"]

COINS, DIE = "coins", "die"
#: Two coins: the number of heads → its chance in quarters.
COIN_OUTCOMES = {0: 1, 1: 2, 2: 1}
FACES = (1, 2, 3, 4, 5, 6)
_TOLERANCE = 1e-9
#: More options than this are not offered physically (a die has six faces; two coins three outcomes).
MOST_OPTIONS = 5


@dataclass(frozen=True)
class Procedure:
    """How to randomize by hand: the ``device``, the outcomes (numbers of heads, or faces) on which
    to give the true answer, and, per option code, those on which to answer that option whatever
    the truth (empty for an option never forced)."""

    device: str
    truth: tuple[int, ...]
    forced: tuple[tuple[int, ...], ...]


def forced_form(matrix: np.ndarray) -> tuple[float, np.ndarray] | None:
    """``(τ, f)`` when ``matrix`` (rows: reports, columns: true answers) is a forced response
    ``τ·I + f·1ᵀ``, else None."""
    m = np.asarray(matrix, dtype=float)
    k = m.shape[0]
    if m.shape != (k, k) or k < 2:
        return None
    forced = np.array([min(m[r][t] for t in range(k) if t != r) for r in range(k)])
    off = m - forced[:, None]
    np.fill_diagonal(off, 0.0)
    if np.abs(off).max() > _TOLERANCE:
        return None
    truths = np.diag(m) - forced
    if np.ptp(truths) > _TOLERANCE or truths[0] < -_TOLERANCE:
        return None
    return float(truths[0]), forced


def _units(chances: list[float], whole: int) -> list[int] | None:
    units = [round(c * whole) for c in chances]
    if any(abs(u - c * whole) > 1e-6 for u, c in zip(units, chances, strict=True)) or sum(units) != whole:
        return None
    return units


def _coins(units: list[int]) -> list[tuple[int, ...]] | None:
    """Outcomes (numbers of heads) per group, for group sizes in quarters; None if "one head" (two
    quarters) would have to be split."""
    groups = len(units)
    for assignment in itertools.product(range(groups), repeat=len(COIN_OUTCOMES)):
        sizes = [0] * groups
        for heads, group in zip(COIN_OUTCOMES, assignment, strict=True):
            sizes[group] += COIN_OUTCOMES[heads]
        if sizes == units:
            return [tuple(h for h, g in zip(COIN_OUTCOMES, assignment, strict=True) if g == i) for i in range(groups)]
    return None


def physical_procedure(mechanism: object) -> Procedure | None:
    """The coins or die that carry out ``mechanism`` (a matrix design), or None when it is not a
    forced response whose chances are quarters or sixths."""
    matrix = getattr(mechanism, "matrix", None)
    if matrix is None:
        return None
    form = forced_form(matrix)
    if form is None or len(form[1]) > MOST_OPTIONS:
        return None
    truth, forced = form
    chances = [truth, *forced.tolist()]
    units = _units(chances, 4)
    if units is not None and (groups := _coins(units)) is not None:
        return Procedure(COINS, groups[0], tuple(groups[1:]))
    units = _units(chances, 6)
    if units is None:
        return None
    # the forced answers first, in option order, then the truth on the faces left
    faces: list[tuple[int, ...]] = []
    start = 0
    for size in units[1:]:
        faces.append(FACES[start : start + size])
        start += size
    return Procedure(DIE, FACES[start:], tuple(faces))
