"""Logistic regression of a randomized outcome, checked against a plain EM on the per-respondent likelihood."""

import math
import time

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import norm

from survey.privacy import CoinFlip, GeneralizedRR, Mechanism, Warner, estimate, rr_logistic

SEED = CoinFlip(0.5, 0.5)


def _respondents(mech, category, n, seed, beta, covariates):
    """Per respondent: covariates, a true answer from the logistic model, a report randomized by ``mech``."""
    rng = np.random.default_rng(seed)
    columns = []
    if "age" in covariates:
        columns.append(rng.integers(16, 100, size=n).astype(float))
    if "department" in covariates:
        department = rng.integers(0, 3, size=n)
        columns += [(department == 1).astype(float), (department == 2).astype(float)]
    x = np.column_stack(columns)
    design = np.column_stack([np.ones(n), x])
    true_yes = rng.random(n) < expit(design @ beta)
    # a true "no" is one of the other options, any of them: the category's report rate is the same
    others = np.delete(np.arange(mech.k), category)
    truth = np.where(true_yes, category, rng.choice(others, size=n))
    reports = (mech.randomize(truth, rng) == category).astype(float)
    return x, reports


def _aggregate(x, reports):
    """Each distinct (pattern, report) once, with its count: what the survey's tallies give."""
    rows, counts = np.unique(np.column_stack([x, reports]), axis=0, return_counts=True)
    return rows[:, :-1], rows[:, -1], counts


def _em(mech, category, x, reports, tol=1e-12):
    """Plain EM on the per-respondent likelihood, each M-step a logistic fit (Newton to convergence)."""
    a, b = mech.affine_coefficients(category)
    design = np.column_stack([np.ones(len(reports)), x])
    yes_if_true = np.where(reports == 1, a + b, 1 - a - b)  # P(this report | true yes)
    yes_if_false = np.where(reports == 1, b, 1 - b)  # P(this report | true no)
    beta = np.zeros(design.shape[1])
    for _ in range(100_000):
        p = expit(design @ beta)
        posterior = p * yes_if_true / (p * yes_if_true + (1 - p) * yes_if_false)
        new = beta.copy()
        for _ in range(100):  # the M-step: logistic regression of the posterior on x
            q = expit(design @ new)
            step = np.linalg.solve((design.T * (q * (1 - q))) @ design, design.T @ (posterior - q))
            new += step
            if np.abs(step).max() < 1e-14:
                break
        if np.abs(new - beta).max() < tol:
            return new
        beta = new
    raise AssertionError("EM did not converge")


def _loglik(mech, category, x, reports, beta):
    a, b = mech.affine_coefficients(category)
    mu = b + a * expit(np.column_stack([np.ones(len(reports)), x]) @ beta)
    return float(np.sum(reports * np.log(mu) + (1 - reports) * np.log(1 - mu)))


CASES = [
    # design, outcome category, respondents, seed, true β (intercept first), covariates
    (SEED, 0, 1500, 1, [-2.5, 0.04, 0.8, -0.5], ("age", "department")),
    (Warner(0.2), 0, 1000, 2, [1.0, -0.03], ("age",)),  # a < 0: a "yes" report leans towards a true "no"
    (GeneralizedRR(3, epsilon=2), 1, 1200, 3, [-0.5, 1.0, -1.0], ("department",)),  # a choice question's option
]


@pytest.mark.parametrize(("mech", "category", "n", "seed", "beta", "covariates"), CASES)
def test_coefficients_agree_with_an_independent_em(mech, category, n, seed, beta, covariates):
    x, reports = _respondents(mech, category, n, seed, np.array(beta), covariates)
    independent = _em(mech, category, x, reports)
    rows, row_reports, counts = _aggregate(x, reports)
    fit = rr_logistic(mech, rows, row_reports, counts, category=category)
    assert fit.converged and fit.reason == ""
    np.testing.assert_allclose(fit.params, independent, atol=1e-6)
    assert fit.n == n and fit.n_patterns == len(np.unique(x, axis=0))
    assert fit.loglik == pytest.approx(_loglik(mech, category, x, reports, independent), abs=1e-8)
    # one row per respondent gives the same fit
    direct = rr_logistic(mech, x, reports, category=category)
    np.testing.assert_allclose(direct.params, fit.params, atol=1e-9)
    np.testing.assert_allclose(direct.bse, fit.bse, rtol=1e-7)


@pytest.mark.parametrize(("mech", "category", "n", "seed", "beta", "covariates"), CASES[:2])
def test_standard_errors_are_the_observed_information(mech, category, n, seed, beta, covariates):
    x, reports = _respondents(mech, category, n, seed, np.array(beta), covariates)
    fit = rr_logistic(mech, *_aggregate(x, reports), category=category)
    # the Hessian of the per-respondent log-likelihood by central differences, scaled per coefficient
    p = fit.params.size
    h = 1e-4 / np.maximum(np.abs(np.column_stack([np.ones(len(reports)), x])).max(axis=0), 1.0)
    hessian = np.empty((p, p))
    for i in range(p):
        for j in range(p):
            ei, ej = np.eye(p)[i] * h[i], np.eye(p)[j] * h[j]
            f = lambda d: _loglik(mech, category, x, reports, fit.params + d)  # noqa: E731
            hessian[i, j] = (f(ei + ej) - f(ei - ej) - f(ej - ei) + f(-ei - ej)) / (4 * h[i] * h[j])
    np.testing.assert_allclose(fit.bse, np.sqrt(np.diag(np.linalg.inv(-hessian))), rtol=1e-4)
    assert fit.information == "observed"
    high = fit.conf_int(0.9)[:, 1]
    np.testing.assert_allclose(high - fit.params, norm.ppf(0.95) * fit.bse)
    ratios = fit.odds_ratios()
    np.testing.assert_allclose(ratios, np.exp(np.column_stack([fit.params, fit.conf_int()])))
    np.testing.assert_allclose(fit.pvalues, 2 * norm.sf(np.abs(fit.params / fit.bse)))
    statistic, df, pvalue = fit.wald_test([1])
    assert (statistic, df, pvalue) == pytest.approx((fit.zvalues[1] ** 2, 1, fit.pvalues[1]))


def test_a_saturated_model_predicts_each_groups_own_estimate():
    """One categorical covariate: the fitted true share of each group is `estimate` on its counts."""
    groups = {0: [45, 105], 1: [90, 60], 2: [30, 50]}  # reported (yes, no) per department
    rows, reports, weights = [], [], []
    for g, (yes, no) in groups.items():
        rows += [[g == 1, g == 2]] * 2
        reports += [1, 0]
        weights += [yes, no]
    fit = rr_logistic(SEED, np.array(rows, dtype=float), reports, weights, names=["dept1", "dept2"])
    share, low, high = fit.predict([[0, 0], [1, 0], [0, 1]])
    for g, counts in groups.items():
        assert share[g] == pytest.approx(estimate(SEED, counts).proportions[0], abs=1e-9)
        assert low[g] < share[g] < high[g]
    # the intercept-only model is one debiased share: the likelihood-ratio test against it
    overall = (45 + 90 + 30) / 380
    mu = min(max(overall, 0.25), 0.75)
    llnull = (45 + 90 + 30) * math.log(mu) + (105 + 60 + 50) * math.log(1 - mu)
    assert fit.llnull == pytest.approx(llnull)
    assert fit.llr == pytest.approx(2 * (fit.loglik - llnull))
    assert "dept1" in fit.summary() and "converged" in fit.summary()
    as_json = fit.to_dict()
    assert [c["name"] for c in as_json["coefficients"]] == ["const", "dept1", "dept2"]
    assert as_json["coefficients"][1]["ci_high"] == pytest.approx(fit.conf_int()[1, 1])
    assert repr(fit).startswith("RRLogisticResult(const=")


def test_weights_are_counts():
    x, reports = _respondents(SEED, 0, 600, 5, np.array([-1.0, 0.02]), ("age",))
    rows, row_reports, counts = _aggregate(x, reports)
    once = rr_logistic(SEED, rows, row_reports, counts)
    thousand = rr_logistic(SEED, rows, row_reports, counts * 1000)
    np.testing.assert_allclose(thousand.params, once.params, atol=1e-9)
    np.testing.assert_allclose(thousand.bse, once.bse / math.sqrt(1000), rtol=1e-6)
    # rows of weight 0 are ignored
    padded = rr_logistic(SEED, np.vstack([rows, [[500.0]]]), np.append(row_reports, 1), np.append(counts, 0))
    np.testing.assert_allclose(padded.params, once.params)


def test_separation_is_reported_not_raised():
    # department 1: 30 respondents and not one "yes", below the 25% any population gives: θ → 0
    rows = [[0.0], [0.0], [1.0], [1.0]]
    fit = rr_logistic(SEED, rows, [1, 0, 1, 0], [100, 100, 0, 30], names=["dept1"])
    assert not fit.converged
    assert "separation" in fit.reason
    assert fit.params[1] < -10
    assert "NOT CONVERGED" in fit.summary() and "NOT CONVERGED" in repr(fit)


def test_covariates_that_identify_nothing_are_refused():
    x = np.column_stack([np.arange(10.0), np.ones(10)])
    with pytest.raises(ValueError, match=r"full column rank.*x2 is constant"):
        rr_logistic(SEED, x, np.tile([0, 1], 5))
    department = np.repeat(np.eye(3), 4, axis=0)  # an indicator for every option beside the intercept
    with pytest.raises(ValueError, match="combination"):
        rr_logistic(SEED, department, np.tile([0, 1], 6))
    # without the intercept the same indicators are fine
    assert rr_logistic(SEED, department, np.tile([0, 1], 6), intercept=False).params.size == 3


def test_input_errors():
    custom = Mechanism([[0.7, 0.2, 0.1], [0.2, 0.6, 0.3], [0.1, 0.2, 0.6]])
    with pytest.raises(ValueError, match="not affine"):
        rr_logistic(custom, [[1.0], [2.0]], [0, 1], category=1)
    with pytest.raises(ValueError, match="0 or 1"):
        rr_logistic(SEED, [[1.0], [2.0]], [0, 2])
    with pytest.raises(ValueError, match="must match"):
        rr_logistic(SEED, [[1.0], [2.0]], [0, 1, 1])
    with pytest.raises(ValueError, match="non-negative"):
        rr_logistic(SEED, [[1.0], [2.0]], [0, 1], [1, -1])
    with pytest.raises(ValueError, match="finite"):
        rr_logistic(SEED, [[1.0], [math.nan]], [0, 1])
    with pytest.raises(ValueError, match="no responses"):
        rr_logistic(SEED, [[1.0], [2.0]], [0, 1], [0, 0])
    with pytest.raises(ValueError, match="names"):
        rr_logistic(SEED, [[1.0], [2.0]], [0, 1], names=["a", "b"])
    with pytest.raises(ValueError, match="category"):
        rr_logistic(SEED, [[1.0], [2.0]], [0, 1], category=5)


def test_cost_follows_patterns_not_respondents():
    """A million respondents over 252 patterns (age 16–99 × three departments) fit in milliseconds."""
    rng = np.random.default_rng(8)
    mech = GeneralizedRR(3, epsilon=1)
    a, b = mech.affine_coefficients(0)
    ages, departments = np.meshgrid(np.arange(16, 100), np.arange(3), indexing="ij")
    x = np.column_stack([ages.ravel(), departments.ravel() == 1, departments.ravel() == 2]).astype(float)
    n = rng.multinomial(1_000_000, np.full(len(x), 1 / len(x)))
    beta = np.array([-2.0, 0.03, 0.5, -0.5])
    yes = rng.binomial(n, b + a * expit(np.column_stack([np.ones(len(x)), x]) @ beta))
    rows, reports, weights = np.vstack([x, x]), np.repeat([1, 0], len(x)), np.concatenate([yes, n - yes])
    start = time.perf_counter()
    fit = rr_logistic(mech, rows, reports, weights, names=["age", "dept1", "dept2"])
    assert time.perf_counter() - start < 0.5
    assert fit.converged and fit.n_patterns == 252
    assert np.all(np.abs(fit.params - beta) < 4 * fit.bse)
