"""Planning, deniability and composition."""

import math

import pytest

from survey.privacy import (
    CoinFlip,
    GeneralizedRR,
    Warner,
    design_effect,
    margin_of_error,
    mechanism_posterior_bounds,
    posterior_bounds,
    sample_size,
    total_epsilon,
)


def test_margin_matches_closed_form():
    m = CoinFlip(0.5, 0.5)
    # λ = 1/4 + 0.3/2 = 0.4, a = 1/2
    expected = 1.959964 * math.sqrt(0.4 * 0.6 / 1000) / 0.5
    assert margin_of_error(m, 1000, share=0.3) == pytest.approx(expected, rel=1e-6)
    g = GeneralizedRR(5, epsilon=1)
    p, q = g.truth_probability, (1 - g.truth_probability) / 4
    lam = (p - q) * 0.1 + q
    expected = 1.959964 * math.sqrt(lam * (1 - lam) / 400) / (p - q)
    assert margin_of_error(g, 400, share=0.1) == pytest.approx(expected, rel=1e-6)


def test_sample_size_inverts_margin():
    m = Warner(0.75)
    n = sample_size(m, 0.05)
    assert margin_of_error(m, n) <= 0.05 < margin_of_error(m, n - 1)
    assert sample_size(m, 0.05, share=0.1) < n


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
