"""The betting interval for a bounded mean (survey.privacy.bounded): its coverage computed exactly,
not simulated, where the answers take two or three values, for one look and for every look."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from survey.privacy.bounded import bet_grid, mean_interval

LEVEL = 0.95


def _two_point_ends(n: int, tuned_for: int | None = None) -> list[tuple[float, float]]:
    """The interval after ``k`` answers at the top of [0, 1] and ``n − k`` at the bottom."""
    return [
        (r.low, r.high)
        for r in (mean_interval([0.0, 1.0], [n - k, k], 0, 1, LEVEL, tuned_for=tuned_for) for k in range(n + 1))
    ]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 20, 30, 50])
def test_two_point_coverage_is_at_least_the_level_exactly(n: int) -> None:
    ends = _two_point_ends(n)
    lows = np.array([e[0] for e in ends])
    highs = np.array([e[1] for e in ends])
    for p in np.linspace(0.0005, 0.9995, 400):
        mass = stats.binom.pmf(np.arange(n + 1), n, p)
        covered = float(mass[(lows <= p) & (p <= highs)].sum())
        assert covered >= LEVEL - 1e-12, (n, p, covered)


def test_three_point_coverage_is_at_least_the_level_exactly() -> None:
    n, support = 10, np.array([0.0, 0.3, 1.0])
    outcomes = [(a, b, n - a - b) for a in range(n + 1) for b in range(n + 1 - a)]
    ends = {o: mean_interval(support, o, 0, 1, LEVEL) for o in outcomes}
    for p0, p1 in itertools.product(np.linspace(0.02, 0.96, 15), repeat=2):
        if p0 + p1 >= 0.999:
            continue
        p = np.array([p0, p1, 1 - p0 - p1])
        mean = float(support @ p)
        covered = sum(stats.multinomial.pmf(o, n, p) for o, r in ends.items() if r.low <= mean <= r.high)
        assert covered >= LEVEL - 1e-12, (p, covered)


def test_every_look_is_covered_exactly_with_probability_at_least_the_level() -> None:
    """Continuous monitoring of two-point answers: the chance that the interval, recomputed after
    every answer up to N, ever misses the mean, summed exactly over all paths (a dynamic program
    over the count of top answers)."""
    horizon, tuned_for = 60, 60
    ends = [_two_point_ends(n, tuned_for) for n in range(1, horizon + 1)]
    for p in (0.02, 0.1, 0.3, 0.5, 0.8, 0.97):
        alive = np.array([1.0])  # P(count = k and never missed yet), k = 0..n
        for n in range(1, horizon + 1):
            grown = np.zeros(n + 1)
            grown[:-1] += alive * (1 - p)
            grown[1:] += alive * p
            covered = np.array([lo <= p <= hi for lo, hi in ends[n - 1]])
            alive = grown * covered
        ever_missed = 1 - alive.sum()
        assert ever_missed <= 1 - LEVEL + 1e-12, (p, ever_missed)


def test_check_values_and_symmetry() -> None:
    r = mean_interval([0, 1, 2, 10], [50, 20, 10, 5], low=0, high=10)
    assert (r.n, r.estimate) == (85, pytest.approx(90 / 85))
    assert (r.low, r.high) == (pytest.approx(0.518913936, abs=1e-8), pytest.approx(2.220690527, abs=1e-8))
    mirrored = mean_interval([10, 9, 8, 0], [50, 20, 10, 5], low=0, high=10)
    assert mirrored.low == pytest.approx(10 - r.high, abs=1e-9) and mirrored.high == pytest.approx(10 - r.low, abs=1e-9)
    # twenty answers of 0 in [0, 100]: the upper end is within 1% of the best any valid interval can
    # give, the two-point bound 100·(1 − 0.025^(1/20))
    zeros = mean_interval([0], [20], 0, 100)
    assert zeros.low == 0 and zeros.high == pytest.approx(100 * (1 - 0.025 ** (1 / 20)), rel=0.01)
    assert zeros.high >= 100 * (1 - 0.025 ** (1 / 20))


def test_the_interval_narrows_like_one_over_root_n_and_never_leaves_the_range() -> None:
    rng = np.random.default_rng(5)
    widths = []
    for n in (100, 400, 1600, 6400):
        values, counts = np.unique(rng.integers(0, 11, n), return_counts=True)
        r = mean_interval(values, counts, 0, 10)
        assert 0 <= r.low <= r.estimate <= r.high <= 10
        widths.append(r.high - r.low)
    ratios = [widths[i] / widths[i + 1] for i in range(3)]
    assert all(1.8 < q < 2.2 for q in ratios), ratios


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="range"):
        mean_interval([1], [1], 5, 5)
    with pytest.raises(ValueError, match="lie in the range"):
        mean_interval([11], [1], 0, 10)
    with pytest.raises(ValueError, match="no answers"):
        mean_interval([1], [0], 0, 10)
    with pytest.raises(ValueError, match="same length"):
        mean_interval([1, 2], [1], 0, 10)
    with pytest.raises(ValueError, match="at least one"):
        bet_grid(0)
    assert math.isclose(bet_grid(100)[1] / bet_grid(100)[0], 1.45)


def test_many_distinct_values_are_bounded_on_cells_and_the_interval_only_widens(monkeypatch) -> None:
    """Above CELLS distinct values the log-wealth is bounded from below by chords on cells (cost
    independent of the number of distinct values): the interval contains the exact one and differs
    from it by less than a millionth of the range."""
    import survey.privacy.bounded as bounded

    rng = np.random.default_rng(8)
    values, counts = np.unique(np.round(rng.lognormal(8, 1.5, 100_000)).clip(0, 10**6), return_counts=True)
    assert values.size > bounded.CELLS
    celled = mean_interval(values, counts, 0, 10**6)
    monkeypatch.setattr(bounded, "CELLS", values.size)
    exact = mean_interval(values, counts, 0, 10**6)
    assert celled.low <= exact.low and exact.high <= celled.high
    assert exact.low - celled.low < 1e-6 * 10**6 and celled.high - exact.high < 1e-6 * 10**6
    assert celled.estimate == pytest.approx(exact.estimate, rel=1e-12)


def test_a_breakdown_covers_every_group_at_once() -> None:
    """Three groups of two-value answers: the chance that some group's interval misses, summed
    exactly over each group's binomial (independent groups), is at most 1 − level."""
    from survey.privacy.bounded import mean_breakdown

    sizes, shares = (12, 20, 7), (0.1, 0.5, 0.85)
    covered_all = 1.0
    for n, p in zip(sizes, shares, strict=True):
        ends = [
            mean_breakdown({"g": ([0.0, 1.0], [n - k, k]), "other": ([0.0], [1]), "third": ([1.0], [1])}, 0, 1).groups[
                "g"
            ]
            for k in range(n + 1)
        ]
        mass = stats.binom.pmf(np.arange(n + 1), n, p)
        covered_all *= float(sum(m for m, e in zip(mass, ends, strict=True) if e.low <= p <= e.high))
    assert covered_all >= LEVEL - 1e-12
    breakdown = mean_breakdown({"a": ([1, 2], [3, 4]), "none": ([1], [0])}, 0, 10)
    assert list(breakdown.groups) == ["a"] and breakdown.to_dict()["groups"][0]["group"] == "a"
    assert breakdown.groups["a"].level == LEVEL  # one group answered: no Bonferroni split
