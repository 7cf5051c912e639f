"""Estimation: check values, the consistent estimate, intervals and input errors."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from survey.privacy import CoinFlip, GeneralizedRR, Mechanism, Warner, estimate, simplex_mle, wilson_interval


def wilson_interval_mapped(x, n, a, b):
    low, high = wilson_interval(x, n)
    return np.clip((np.atleast_1d(low) - b) / a, 0, 1), np.clip((np.atleast_1d(high) - b) / a, 0, 1)


def test_seed_check_values():
    result = estimate(CoinFlip(0.5, 0.5), [400, 600])
    assert result.n == 1000
    assert result.unbiased[0] == pytest.approx(0.30)
    assert result.proportions[0] == pytest.approx(0.30)
    assert result.standard_errors[0] == pytest.approx(0.0310, abs=5e-5)
    low, high = result.ci()
    assert low[0] == pytest.approx(0.2401, abs=5e-5)
    assert high[0] == pytest.approx(0.3614, abs=5e-5)
    # the "no" share is the mirror image
    assert low[1] == pytest.approx(1 - high[0]) and high[1] == pytest.approx(1 - low[0])
    assert result.interval_methods == ("wilson-floor-mapped", "wilson-floor-mapped")
    # the floor (a 93% Clopper–Pearson interval inside) does not touch a count like 400 of 1000
    assert low[0] == wilson_interval_mapped(400, 1000, 0.5, 0.25)[0][0]
    assert high[0] == wilson_interval_mapped(400, 1000, 0.5, 0.25)[1][0]


def test_standard_error_is_sampling_form():
    mech = GeneralizedRR(4, epsilon=1)
    counts = np.array([200, 300, 250, 250])
    result = estimate(mech, counts)
    assert np.all(result.unbiased > 0)
    lam = counts / counts.sum()
    p, q = mech.truth_probability, (1 - mech.truth_probability) / 3
    np.testing.assert_allclose(result.standard_errors, np.sqrt(lam * (1 - lam) / (1000 * (p - q) ** 2)))
    np.testing.assert_array_equal(result.fitted, result.observed)


def test_a_category_nobody_reported_keeps_a_standard_error():
    # the review's case: the plug-in at λ̂ = 0 gave SE exactly 0 beside an unbiased estimate of -0.4
    mech = GeneralizedRR(4, epsilon=1.258)
    result = estimate(mech, [3, 9, 0, 3])
    assert result.unbiased[2] < -0.3
    assert result.standard_errors[2] > 0.05
    # the covariance is evaluated at the reported shares the consistent estimate implies
    fitted = mech.matrix @ result.proportions
    np.testing.assert_allclose(result.fitted, fitted)
    p, q = mech.truth_probability, (1 - mech.truth_probability) / 3
    np.testing.assert_allclose(result.standard_errors, np.sqrt(fitted * (1 - fitted) / (15 * (p - q) ** 2)))
    assert fitted[2] >= q


def test_consistent_equals_unbiased_inside_the_simplex():
    result = estimate(GeneralizedRR(4, epsilon=2), [200, 300, 250, 250])
    assert np.all(result.unbiased > 0)
    np.testing.assert_array_equal(result.proportions, result.unbiased)


def test_binary_consistent_estimate_is_clipped():
    result = estimate(CoinFlip(0.5, 0.5), [200, 800])  # below the 25% floor: θ̂ = -0.1
    assert result.unbiased[0] == pytest.approx(-0.1)
    np.testing.assert_allclose(result.proportions, [0.0, 1.0])
    low, high = result.ci()
    assert low[0] == 0.0 and 0.0 <= high[0] < 0.05


def _loglik_max(matrix, counts):
    k = matrix.shape[1]
    fun = lambda z: -counts @ np.log(matrix @ (np.exp(z) / np.exp(z).sum()) + 1e-300)  # noqa: E731
    options = {"xatol": 1e-10, "fatol": 1e-12, "maxiter": 40000}
    starts = np.eye(k) * 0.9 + 0.1 / k
    best = min((minimize(fun, np.log(s), method="Nelder-Mead", options=options) for s in starts), key=lambda r: r.fun)
    return -best.fun


@pytest.mark.parametrize(
    "mechanism, counts",
    [
        (GeneralizedRR(5, epsilon=1), [3, 20, 10, 10, 7]),
        (GeneralizedRR(4, epsilon=0.5), [5, 30, 2, 13]),
        (Mechanism([[0.8, 0.1, 0.2], [0.1, 0.7, 0.2], [0.1, 0.2, 0.6]]), [2, 40, 30]),
    ],
)
def test_consistent_estimate_is_the_simplex_mle(mechanism, counts):
    result = estimate(mechanism, counts)
    assert np.any(result.unbiased < 0)
    p = result.proportions
    assert np.all(p >= 0) and p.sum() == pytest.approx(1.0)
    counts = np.asarray(counts, float)
    ours = counts @ np.log(mechanism.matrix @ p)
    assert ours >= _loglik_max(mechanism.matrix, counts) - 1e-7
    # KKT: the likelihood gradient is 1 on the support and at most 1 off it
    grad = (counts / (mechanism.matrix @ p)) @ mechanism.matrix / counts.sum()
    assert np.all(grad <= 1 + 1e-6)
    assert np.allclose(grad[p > 0], 1.0, atol=1e-6)


def test_intervals_inside_unit_and_simultaneous_wider():
    result = estimate(GeneralizedRR(5, epsilon=1), [30, 12, 5, 40, 13])
    low, high = result.ci()
    assert np.all((0 <= low) & (low <= high) & (high <= 1))
    slow, shigh = result.ci(simultaneous=True)
    assert np.all(slow <= low) and np.all(shigh >= high) and np.any(shigh - slow > high - low)
    # binary: one interval fixes the other, nothing to divide; the simultaneous promise ("at least
    # level") needs the exact pieces, though
    binary = estimate(Warner(0.8), [30, 70])
    np.testing.assert_array_equal(binary.ci(simultaneous=True)[0], binary.ci(method="exact")[0])
    assert binary.interval_method_names(simultaneous=True) == ("clopper-pearson-mapped",) * 2
    assert result.interval_method_names(simultaneous=True) == ("bonferroni-clopper-pearson-mapped",) * 5
    wider = binary.ci(level=0.99)
    assert wider[0][0] < binary.ci()[0][0]


def test_small_samples_give_wide_honest_intervals():
    result = estimate(CoinFlip(0.5, 0.5), [1, 0])
    low, high = result.ci()
    assert 0 <= low[0] < high[0] <= 1 and high[0] - low[0] > 0.5
    assert np.isfinite(result.standard_errors).all()


def test_custom_non_affine_gets_the_profile_likelihood_interval():
    mech = Mechanism([[0.8, 0.1, 0.2], [0.1, 0.7, 0.2], [0.1, 0.2, 0.6]])
    result = estimate(mech, [30, 40, 30])
    assert result.interval_methods == ("profile-likelihood",) * 3
    assert result.interval_method_names(method="wald") == ("delta-wald",) * 3
    assert result.interval_method_names(method="exact") == ("clopper-pearson-projected",) * 3
    # the delta method is still there when asked for, and the exact interval is wider
    wald_low, wald_high = result.ci(method="wald")
    exact_low, exact_high = result.ci(method="exact")
    low, high = result.ci()
    assert np.all(exact_high - exact_low > high - low)
    assert np.all(np.abs((wald_high - wald_low) - (high - low)) < 0.05)
    assert np.all(high - low > 0.1)
    assert np.all((low <= np.clip(result.unbiased, 0, 1)) & (np.clip(result.unbiased, 0, 1) <= high))
    assert np.all((0 <= low) & (high <= 1))
    # reports that no share can explain still get intervals inside [0, 1]
    low, high = estimate(mech, [0, 0, 100]).ci()
    assert np.all((0 <= low) & (low <= high) & (high <= 1)) and high[2] == 1.0


def test_stacked_counts_match_one_by_one():
    mech = GeneralizedRR(3, epsilon=1)
    counts = np.array([[10, 20, 30], [0, 5, 60], [40, 1, 1]])
    stacked = estimate(mech, counts)
    for i, row in enumerate(counts):
        single = estimate(mech, row)
        np.testing.assert_allclose(stacked.proportions[i], single.proportions, atol=1e-12)
        np.testing.assert_allclose(stacked.ci()[0][i], single.ci()[0], atol=1e-15)
        np.testing.assert_allclose(stacked.standard_errors[i], single.standard_errors)


def test_to_dict_is_json_ready():
    summary = estimate(CoinFlip(0.5, 0.5), [400, 600]).to_dict()
    assert summary["n"] == 1000 and summary["epsilon"] == pytest.approx(math.log(3))
    yes = summary["categories"][0]
    assert yes["label"] == "yes" and yes["reported"] == 400
    assert yes["ci_low"] == pytest.approx(0.2401, abs=5e-5)


@pytest.mark.parametrize(
    "counts, message",
    [
        ([0, 0], "no responses"),
        ([1, 2, 3], "expected 2 counts"),
        (5, "single number"),
        ([-1, 5], "non-negative"),
        ([1.5, 2], "whole numbers"),
        ([math.nan, 2], "non-negative"),
        (["a", "b"], "must be numbers"),
    ],
)
def test_bad_counts_raise(counts, message):
    with pytest.raises(ValueError, match=message):
        estimate(CoinFlip(0.5, 0.5), counts)


def test_simplex_mle_reaches_the_interior_solution():
    q = GeneralizedRR(3, epsilon=1).matrix
    lam = np.array([0.4, 0.33, 0.27])
    exact = np.linalg.solve(q, lam)
    assert np.all(exact > 0)
    np.testing.assert_allclose(simplex_mle(q, lam), exact, atol=1e-9)
