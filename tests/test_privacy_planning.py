"""Planning, deniability and composition."""

import math
import time

import numpy as np
import pytest
from scipy.stats import binom

from survey.privacy import (
    CoinFlip,
    GeneralizedRR,
    Warner,
    design_effect,
    estimate,
    margin_of_error,
    mechanism_posterior_bounds,
    posterior_bounds,
    sample_size,
    total_epsilon,
)


def _expected_half_width(mechanism, n, share, category=0, level=0.95):
    """Σ_x Binom(x; n, λ)·(high − low)/2 over every count, through Estimate.ci itself."""
    a, b = mechanism.affine_coefficients(category)
    other = (category + 1) % mechanism.k
    counts = np.zeros((n + 1, mechanism.k), dtype=int)
    counts[:, category] = np.arange(n + 1)
    counts[:, other] = n - np.arange(n + 1)
    low, high = estimate(mechanism, counts).ci(level)
    pmf = binom.pmf(np.arange(n + 1), n, a * share + b)
    return float(pmf @ (high[:, category] - low[:, category])) / 2


@pytest.mark.parametrize(
    "mechanism, n, share, category",
    [
        (CoinFlip(0.5, 0.5), 40, 0.5, 0),
        (CoinFlip(0.5, 0.5), 25, 0.02, 0),
        (GeneralizedRR(5, epsilon=1), 60, 0.1, 0),
        (GeneralizedRR(2, epsilon=4), 30, 0.0, 1),
        (Warner(0.3), 50, 0.7, 0),
    ],
)
def test_margin_is_the_expected_half_width_of_the_shown_interval(mechanism, n, share, category):
    expected = _expected_half_width(mechanism, n, share, category)
    assert margin_of_error(mechanism, n, share, category=category) == pytest.approx(expected, rel=1e-12)


def test_margin_differs_from_the_large_sample_formula_where_the_interval_is_clipped():
    m = CoinFlip(0.5, 0.5)
    # the former figure, z·sqrt(λ(1 − λ)/n)/a, at the seed's n = 1000 and θ = 0.5
    wald = 1.959964 * math.sqrt(0.25 / 1000) / 0.5
    assert margin_of_error(m, 1000) == pytest.approx(0.061830, abs=5e-6)
    assert margin_of_error(m, 1000) < wald
    # near θ = 0 half the interval is cut off at 0: the large-sample figure overstates it a lot
    lam = 0.25 + 0.01 / 2
    assert margin_of_error(m, 200, share=0.01) < 0.75 * 1.959964 * math.sqrt(lam * (1 - lam) / 200) / 0.5
    # and at large n they agree
    g = GeneralizedRR(5, epsilon=1)
    p, q = g.truth_probability, (1 - g.truth_probability) / 4
    lam = (p - q) * 0.1 + q
    wald = 1.959964 * math.sqrt(lam * (1 - lam) / 10**6) / (p - q)
    assert margin_of_error(g, 10**6, share=0.1) == pytest.approx(wald, rel=1e-5)


def test_margin_is_fast_at_a_hundred_million():
    started = time.perf_counter()
    value = margin_of_error(CoinFlip(0.5, 0.5), 100_000_000)
    assert time.perf_counter() - started < 0.5
    assert value == pytest.approx(1.959964 * math.sqrt(0.25 / 1e8) / 0.5, rel=1e-6)


def test_sample_size_is_the_smallest_n_with_the_margin():
    m = Warner(0.75)
    n = sample_size(m, 0.05)
    assert margin_of_error(m, n) <= 0.05 < margin_of_error(m, n - 1)
    assert sample_size(m, 0.05, share=0.1) < n
    # the seed survey: 1,537 by the large-sample formula, 1,532 for the interval actually shown
    assert sample_size(CoinFlip(0.5, 0.5), 0.05) == 1532
    # small n, where every n can be checked
    g = GeneralizedRR(4, epsilon=0.5)
    widths = [margin_of_error(g, k, share=0.2) for k in range(1, 1200)]
    for margin in (0.45, 0.3, 0.2):
        smallest = next(k for k, w in enumerate(widths, start=1) if w <= margin)
        assert sample_size(g, margin, share=0.2) == smallest


@pytest.mark.parametrize(
    "mechanism",
    [CoinFlip(0.5, 0.5), GeneralizedRR(10, epsilon=0.1), CoinFlip.from_epsilon(1e-6), GeneralizedRR(3, epsilon=8)],
)
def test_sample_size_answers_every_margin_the_spec_accepts(mechanism):
    for margin in (0.001, 0.0123, 0.05, 0.2, 0.41, 0.75, 0.999):
        n = sample_size(mechanism, margin)
        assert isinstance(n, int) and 1 <= n < 2**64
        if n < 2**53:
            assert margin_of_error(mechanism, n) <= margin


def test_design_effect():
    assert design_effect(CoinFlip(0.5, 0.5)) == pytest.approx(4.0)
    # more privacy costs more respondents
    assert design_effect(Warner(0.6)) > design_effect(Warner(0.75)) > design_effect(Warner(0.95)) > 1
    assert design_effect(CoinFlip(0.5, 0.5), share=0.0) == math.inf


def test_planning_input_errors():
    with pytest.raises(ValueError, match="positive whole number"):
        margin_of_error(CoinFlip(), 0)
    with pytest.raises(ValueError, match="target margin"):
        sample_size(CoinFlip(), 0)
    with pytest.raises(ValueError, match="expected share"):
        margin_of_error(CoinFlip(), 100, share=1.5)


def test_posterior_bounds_check_values():
    assert posterior_bounds(math.log(3), 0.5) == pytest.approx((0.25, 0.75))
    assert posterior_bounds(1.1, 0.5)[1] == pytest.approx(0.75, abs=0.01)
    assert posterior_bounds(5, 0.1)[1] == pytest.approx(0.94, abs=0.005)
    assert posterior_bounds(math.inf, 0.3) == (0.0, 1.0)
    assert posterior_bounds(2, 0.0) == (0.0, 0.0)
    with pytest.raises(ValueError):
        posterior_bounds(1, 1.5)


def test_mechanism_bounds_exact_and_within_epsilon_bound():
    sym = CoinFlip(0.5, 0.5)
    assert mechanism_posterior_bounds(sym, 0.5) == pytest.approx(posterior_bounds(sym.epsilon, 0.5))
    skew = CoinFlip(0.5, 0.8)  # "yes" reports are mostly forced: a yes says little
    low, high = mechanism_posterior_bounds(skew, 0.5)
    elow, ehigh = posterior_bounds(skew.epsilon, 0.5)
    assert elow <= low + 1e-12 and high <= ehigh + 1e-12 and high < ehigh - 0.1
    g = GeneralizedRR(4, epsilon=1)
    assert mechanism_posterior_bounds(g, 0.5, 2)[1] == pytest.approx(posterior_bounds(1, 0.5)[1])


def test_composition_adds():
    total = total_epsilon([CoinFlip(0.5, 0.5), GeneralizedRR(4, epsilon=1), 0.5])
    assert total == pytest.approx(math.log(3) + 1.5)
    assert total_epsilon([]) == 0.0
    assert total_epsilon([CoinFlip(0.5, 1.0), 1.0]) == math.inf
    with pytest.raises(ValueError):
        total_epsilon([-1])
