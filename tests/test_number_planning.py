"""Planning a number question (survey.privacy.number_planning): the planned half-width against the
mean half-width of simulated surveys at the spread it plans for, and the sample size it implies."""

from __future__ import annotations

import numpy as np
import pytest

from survey.privacy.bounded import mean_interval
from survey.privacy.number_planning import code_probabilities, number_margin, number_sample_size
from survey.privacy.numeric import GRID_STEPS, DuchiNumber, HybridNumber, LaplaceNumber, PiecewiseNumber

MECHANISMS = [
    HybridNumber(1.0, 0, 100),
    HybridNumber(4.0, 0, 100),
    PiecewiseNumber(2.0, 0, 100),
    DuchiNumber(1.0, 0, 100),
]


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: f"{m.design}-{m.epsilon:g}")
@pytest.mark.parametrize("t", [-1.0, -0.3, 0.0, 0.8, 1.0])
def test_code_probabilities_sum_to_one_and_keep_the_mean(mechanism, t: float) -> None:
    p = code_probabilities(mechanism, t)
    assert p.shape == (GRID_STEPS + 1,) and (p >= 0).all()
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    # randomized rounding keeps the expectation: the codes' mean is the true value, in units
    assert float(p @ mechanism.value_of(np.arange(GRID_STEPS + 1))) == pytest.approx(
        float(mechanism.middle + mechanism.half * t), abs=1e-3
    )


def test_code_probabilities_match_draws() -> None:
    mechanism = HybridNumber(2.0, 0, 10)
    rng = np.random.default_rng(23)
    codes = mechanism.randomize(np.full(400_000, 7.0), rng)
    p = code_probabilities(mechanism, float(mechanism.normalize(7.0)))
    edges = np.linspace(0, GRID_STEPS + 1, 21).round().astype(int)
    counted = np.histogram(codes, bins=edges)[0] / codes.size
    expected = np.add.reduceat(p, edges[:-1])
    tolerance = 4.5 * np.sqrt(expected * (1 - expected) / codes.size) + 1e-9
    assert (np.abs(counted - expected) <= tolerance).all(), (counted, expected)


@pytest.mark.parametrize(
    "mechanism",
    [None, HybridNumber(1.0, 0, 100), HybridNumber(4.0, 0, 100), DuchiNumber(2.0, 0, 100)],
    ids=["direct", "hybrid-1", "hybrid-4", "duchi-2"],
)
@pytest.mark.parametrize("n", [100, 1000])
def test_the_planned_half_width_is_the_simulated_one(mechanism, n: int) -> None:
    """At the spread it plans for (half the answers at each end), the planned half-width is within
    3% of the mean half-width over 300 simulated surveys (their own spread: below 1%)."""
    rng = np.random.default_rng(n)
    widths = []
    for _ in range(300):
        truth = np.where(rng.random(n) < 0.5, 0.0, 100.0)
        if mechanism is None:
            values, counts = np.unique(truth, return_counts=True)
            widths.append(mean_interval(values, counts, 0, 100).half_width)
        else:
            codes, counts = np.unique(mechanism.randomize(truth, rng), return_counts=True)
            widths.append(mechanism.estimate(dict(zip(codes.tolist(), counts.tolist(), strict=True))).half_width)
    planned = number_margin(n, 0, 100, mechanism=mechanism)
    assert planned == pytest.approx(float(np.mean(widths)), rel=0.03), (planned, np.mean(widths))


def test_the_sample_size_is_the_fewest_answers_that_reach_the_margin() -> None:
    mechanism = HybridNumber(2.0, 0, 100)
    n = number_sample_size(5.0, 0, 100, mechanism=mechanism)
    assert number_margin(n, 0, 100, mechanism=mechanism) <= 5.0 < number_margin(n - 1, 0, 100, mechanism=mechanism)
    direct = number_sample_size(5.0, 0, 100)
    assert direct < n  # randomizing costs answers
    laplace = number_sample_size(5.0, 0, 100, mechanism=LaplaceNumber(2.0, 0, 100))
    assert number_margin(laplace, 0, 100, mechanism=LaplaceNumber(2.0, 0, 100)) <= 5.0
    # half the range or more: one answer asked directly (its interval stays in the range); searched
    # when randomized (the reports reach past the range, and so may an interval on few of them)
    assert number_sample_size(60, 0, 100) == 1
    for randomized in (mechanism, LaplaceNumber(2.0, 0, 100)):
        wide = number_sample_size(50, 0, 100, mechanism=randomized)
        assert wide > 1 and number_margin(wide, 0, 100, mechanism=randomized) <= 50
    # past 2^30 answers, the 1/√n law from there: exact for Laplace, whose half-width is z·σ/√n
    tiny = LaplaceNumber(0.05, 0, 100)
    huge = number_sample_size(0.001, 0, 100, mechanism=tiny)
    assert huge > 2**30
    assert number_margin(huge, 0, 100, mechanism=tiny) <= 0.001 < number_margin(huge - 1, 0, 100, mechanism=tiny)
    with pytest.raises(ValueError, match="margin"):
        number_sample_size(0, 0, 100)
    with pytest.raises(ValueError, match="no code probabilities"):
        code_probabilities(LaplaceNumber(1.0), 0.0)
