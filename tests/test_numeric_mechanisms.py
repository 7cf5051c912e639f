"""The number mechanisms (survey.privacy.numeric): unbiased, with the variance their formulas say,
ε-LDP by their densities (and no better: the bound is attained), and sampled as defined.

Simulations use fixed seeds, so each check is a check value; the tolerances are several standard
errors of the simulated figure, stated beside each.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from survey.privacy.numeric import (
    GRID_STEPS,
    HYBRID_THRESHOLD,
    NUMBER_MECHANISMS,
    DuchiNumber,
    HybridNumber,
    LaplaceNumber,
    PiecewiseNumber,
    default_number_mechanism,
    number_mechanism_from_dict,
)

EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
TRUE_VALUES = (-1.0, -0.4, 0.0, 0.3, 1.0)
DRAWS = 200_000


@pytest.mark.parametrize("design", sorted(NUMBER_MECHANISMS))
@pytest.mark.parametrize("epsilon", (0.5, 1.0, 4.0))
def test_reports_are_unbiased_with_the_variance_of_the_formula(design: str, epsilon: float) -> None:
    mechanism = NUMBER_MECHANISMS[design](epsilon)
    rng = np.random.default_rng(20261128)
    for t in TRUE_VALUES:
        y = mechanism.sample(np.full(DRAWS, t), rng)
        variance = float(mechanism.variance(t))
        # the mean's standard error is √(Var/n); 4.5 of them is a 1-in-150,000 miss per check
        assert abs(y.mean() - t) < 4.5 * math.sqrt(variance / DRAWS), (design, epsilon, t)
        # the sample variance's standard error is Var·√((κ − 1)/n), κ ≤ 6 for these laws
        assert abs(y.var() / variance - 1) < 4.5 * math.sqrt(5 / DRAWS), (design, epsilon, t, y.var(), variance)
        if math.isfinite(mechanism.bound):
            assert np.abs(y).max() <= mechanism.bound + 1e-12


def _density_ratio(mechanism, reports: np.ndarray, values: np.ndarray) -> float:
    densities = np.array([mechanism.density(reports, t) for t in values])  # [t, y]
    inside = densities.max(axis=0) > 0
    densities = densities[:, inside]
    assert (densities.min(axis=0) > 0).all(), "a report possible under one value must be possible under all"
    return float((densities.max(axis=0) / densities.min(axis=0)).max())


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_continuous_mechanisms_are_exactly_epsilon_private(epsilon: float) -> None:
    values = np.linspace(-1, 1, 201)
    for mechanism in (LaplaceNumber(epsilon), PiecewiseNumber(epsilon)):
        span = mechanism.bound if math.isfinite(mechanism.bound) else 1 + 20 * mechanism.scale
        reports = np.linspace(-span, span, 4001)
        ratio = _density_ratio(mechanism, reports, values)
        assert ratio <= math.exp(epsilon) * (1 + 1e-9), (mechanism.design, ratio)
        assert ratio >= math.exp(epsilon) * (1 - 1e-6), (mechanism.design, ratio, "ε claimed is not attained")


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_two_point_and_hybrid_mechanisms_are_exactly_epsilon_private(epsilon: float) -> None:
    duchi = DuchiNumber(epsilon)
    high = duchi.probability_high(np.array([-1.0, 1.0]))
    assert high[1] / high[0] == pytest.approx(math.exp(epsilon), rel=1e-12)
    assert (1 - high[0]) / (1 - high[1]) == pytest.approx(math.exp(epsilon), rel=1e-12)
    # the hybrid's law is a fixed mixture of the two, so each part (the atoms at ±C of Duchi's and
    # the piecewise density) has its ratio bounded by e^ε, and the mixture with it
    hybrid = HybridNumber(epsilon)
    assert hybrid.piecewise_share == (0.0 if epsilon <= HYBRID_THRESHOLD else pytest.approx(1 - math.exp(-epsilon / 2)))
    assert duchi.bound <= hybrid.bound


def test_the_threshold_is_the_closed_form_of_wang_et_al() -> None:
    root = 405 * math.sqrt(241)
    closed = math.log((-5 + 2 * np.cbrt(6353 - root) + 2 * np.cbrt(6353 + root)) / 27)
    assert HYBRID_THRESHOLD == pytest.approx(closed, abs=1e-9)
    assert HYBRID_THRESHOLD == pytest.approx(0.6093525, abs=1e-7)


def _piecewise_cdf(mechanism: PiecewiseNumber, y: np.ndarray, t: float) -> np.ndarray:
    c, high, low = mechanism.bound, mechanism.inside_density, mechanism.outside_density
    assert high == pytest.approx(low * math.exp(mechanism.epsilon), rel=1e-12)
    left, right = (float(v) for v in mechanism.window(t))
    y = np.clip(y, -c, c)
    below = low * (np.minimum(y, left) + c)
    inside = high * np.clip(y - left, 0, right - left)
    above = low * np.clip(y - right, 0, None)
    return below + inside + above


@pytest.mark.parametrize("epsilon", (0.5, 2.0, 6.0))
def test_the_piecewise_sampler_draws_its_density(epsilon: float) -> None:
    mechanism = PiecewiseNumber(epsilon)
    rng = np.random.default_rng(7)
    for t in (-1.0, -0.25, 0.0, 0.6, 1.0):
        assert _piecewise_cdf(mechanism, np.array([mechanism.bound]), t)[0] == pytest.approx(1.0)
        draws = mechanism.sample(np.full(20_000, t), rng)
        result = stats.kstest(draws, lambda y, t=t: _piecewise_cdf(mechanism, y, t))
        assert result.pvalue > 1e-3, (epsilon, t, result)


@pytest.mark.parametrize("epsilon", (0.5, 1.0, 4.0))
def test_the_hybrid_reports_mix_its_parts_in_the_stated_shares(epsilon: float) -> None:
    hybrid = HybridNumber(epsilon)
    rng = np.random.default_rng(11)
    draws = hybrid.sample(np.full(DRAWS, 0.5), rng)
    atoms = np.isclose(np.abs(draws), hybrid.duchi.bound, rtol=0, atol=1e-12).mean()
    expected = 1 - hybrid.piecewise_share
    assert abs(atoms - expected) < 4.5 * math.sqrt(expected * (1 - expected) / DRAWS + 1e-12)


def test_the_default_has_the_smallest_worst_case_variance_at_every_epsilon() -> None:
    for epsilon in np.geomspace(0.05, 12, 60):
        default = default_number_mechanism(float(epsilon))
        best = min(m(float(epsilon)).worst_variance for m in NUMBER_MECHANISMS.values())
        assert default.worst_variance <= best * (1 + 1e-12)
        assert default.design == "hybrid"
    # Wang et al. 2019's worst case for the hybrid, in closed form, at ε above the threshold
    for epsilon in (1.0, 2.0, 4.0, 8.0):
        e = math.exp(epsilon / 2)
        closed = (e + 3) / (3 * e * (e - 1)) + (math.exp(epsilon) + 1) ** 2 / (e * (math.exp(epsilon) - 1) ** 2)
        assert HybridNumber(epsilon).worst_variance == pytest.approx(closed, rel=1e-12)
        assert HybridNumber(epsilon).variance(0.0) == pytest.approx(HybridNumber(epsilon).variance(1.0), rel=1e-12)


def test_codes_in_the_question_units_and_their_domain() -> None:
    mechanism = PiecewiseNumber(2.0, 0, 100)
    rng = np.random.default_rng(3)
    codes = mechanism.randomize(np.array([-5, 0, 40, 100, 250]), rng)
    assert all(mechanism.reports.contains(int(c)) for c in codes)
    assert not mechanism.reports.contains(GRID_STEPS + 1) and not mechanism.reports.contains(True)
    low, high = mechanism.value_of([0, GRID_STEPS])
    assert low == pytest.approx(50 - 50 * mechanism.bound) and high == pytest.approx(50 + 50 * mechanism.bound)
    # clamped: a true 250 in [0, 100] is reported as a true 100 would be
    assert mechanism.normalize([250, -5]).tolist() == [1.0, -1.0]
    # Duchi's two reports are the grid's two ends, exactly
    duchi = DuchiNumber(1.0, 0, 10)
    assert set(duchi.randomize(rng.uniform(0, 10, 1000), rng).tolist()) == {0, GRID_STEPS}
    laplace = LaplaceNumber(1.0, 0, 100)
    assert laplace.reports.contains(-5000) and laplace.reports.contains(GRID_STEPS + 5000)
    assert laplace.value_of(0) == 0 and laplace.value_of(GRID_STEPS) == pytest.approx(100)


@pytest.mark.parametrize("design", sorted(NUMBER_MECHANISMS))
def test_the_mean_of_the_codes_is_unbiased_and_its_interval_covers(design: str) -> None:
    """Rounding to the grid keeps the expectation: over many reports the mean of the codes' values
    is the mean of the clamped true numbers, within 4.5 standard errors."""
    mechanism = NUMBER_MECHANISMS[design](2.0, 0, 100)
    rng = np.random.default_rng(17)
    truth = np.minimum(np.round(np.exp(rng.normal(1.5, 1.0, 100_000))), 100)
    codes = mechanism.randomize(truth, rng)
    values = mechanism.value_of(codes)
    se = 50 * math.sqrt(mechanism.worst_variance / truth.size)
    assert abs(values.mean() - truth.mean()) < 4.5 * se
    # the rounding adds at most step²/4 to each report's variance (in [-1, 1] units)
    unrounded = mechanism.draw(mechanism.normalize(truth), rng.random((truth.size, mechanism.uniforms)))
    assert (values / 50 - 1).var() <= unrounded.var() * (1 + 4.5 * math.sqrt(5 / truth.size)) + mechanism.step**2 / 4
    counted = dict(zip(*np.unique(codes, return_counts=True), strict=True))
    result = mechanism.estimate({int(k): int(v) for k, v in counted.items()})
    assert result.n == truth.size and result.estimate == pytest.approx(values.mean())
    assert result.low <= truth.mean() <= result.high
    assert result.method == ("normal" if design == "laplace" else "betting")


def test_each_draw_is_its_inverse_cdf() -> None:
    """Fixed uniforms give fixed reports: the arithmetic the browser must match."""
    piecewise = PiecewiseNumber(2.0)
    c = piecewise.bound
    left, right = (float(v) for v in piecewise.window(0.5))
    before = piecewise.outside_density * (left + c)
    assert float(piecewise.draw(0.5, [0.0])) == pytest.approx(-c)
    assert float(piecewise.draw(0.5, [before])) == pytest.approx(left)
    assert float(piecewise.draw(0.5, [before + piecewise.inside_density * (c - 1)])) == pytest.approx(right)
    assert float(piecewise.draw(0.5, [1 - 1e-16])) == pytest.approx(c)
    duchi = DuchiNumber(1.0)
    p = float(duchi.probability_high(0.2))
    assert float(duchi.draw(0.2, [p - 1e-9])) == duchi.bound and float(duchi.draw(0.2, [p])) == -duchi.bound
    laplace = LaplaceNumber(2.0)
    assert float(laplace.draw(0.3, [0.5])) == pytest.approx(0.3)
    assert float(laplace.draw(0.3, [0.75])) == pytest.approx(0.3 + math.log(2))  # the upper quartile, b = 1
    assert math.isfinite(float(laplace.draw(0.3, [0.0])))
    hybrid = HybridNumber(4.0)
    a = hybrid.piecewise_share
    assert float(hybrid.draw(0.1, [a - 1e-9, 0.3])) == float(hybrid.piecewise.draw(0.1, [0.3]))
    assert float(hybrid.draw(0.1, [a, 0.3])) == float(hybrid.duchi.draw(0.1, [0.3]))
    # rounding: a report a quarter of a step above a grid point goes up with probability 1/4
    y = piecewise.origin + 7.25 * piecewise.step
    assert piecewise.to_code(y, 0.2499).item() == 8 and piecewise.to_code(y, 0.2501).item() == 7


def test_mechanisms_round_trip_and_refuse_bad_parameters() -> None:
    for design in NUMBER_MECHANISMS:
        spec = {"design": design, "epsilon": 1.5, "low": 0.0, "high": 30.0}
        mechanism = number_mechanism_from_dict(spec)
        assert mechanism.to_dict() == spec
        sampler = mechanism.sampler()
        assert sampler["sampler"] == design and (sampler["low"], sampler["high"]) == (0.0, 30.0)
        assert sampler["origin"] == mechanism.origin and sampler["step"] == mechanism.step
    for bad in (0, -1, math.inf, math.nan, "x"):
        with pytest.raises(ValueError, match="epsilon"):
            HybridNumber(bad)
    with pytest.raises(ValueError, match="unknown number mechanism"):
        number_mechanism_from_dict({"design": "staircase", "epsilon": 1})
    with pytest.raises(ValueError, match="low < high"):
        PiecewiseNumber(1.0, 5, 5)
