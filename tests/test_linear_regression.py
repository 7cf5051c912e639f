"""Linear regression of a number on direct covariates (survey.privacy.linear): the figures of R's
``lm`` and ``sandwich::vcovHC`` on the same data, and unbiased on randomized reports."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from survey.privacy.linear import linear_regression
from survey.privacy.numeric import HybridNumber, PiecewiseNumber

#: R 4.2.2, sandwich 3.0-2: ``m <- lm(y ~ g1 + g2 + age, data = d)``, ``coef(m)`` and
#: ``sqrt(diag(vcovHC(m, type = t)))`` on the 120 rows of :func:`_rows` written to a CSV.
R_COEFFICIENTS = [2.620896836364, 2.414425700000, -0.925380500000, 0.102685935101]
R_STANDARD_ERRORS = {
    "HC0": [1.961728637402, 1.108549684799, 1.515250157558, 0.052530754832],
    "HC1": [1.995264889545, 1.127500624819, 1.541153746043, 0.053428781504],
    "HC2": [2.001720513316, 1.127655340170, 1.541340127453, 0.053612933815],
    "HC3": [2.042573157391, 1.147123585874, 1.567925997818, 0.054718497019],
}


def _rows() -> list[tuple[int, int, int, float]]:
    """Deterministic heteroskedastic data (no random generator, so R reads the very same rows)."""
    rows = []
    for i in range(120):
        g = i % 3
        age = 18 + 4 * ((i * 7) % 10)
        noise = (1 + g) * 4 * math.sin(i * 1.7) + round(math.cos(i * 0.3) * 3)
        y = 3 + 2 * (g == 1) - 1.5 * (g == 2) + 0.1 * age + noise
        rows.append((int(g == 1), int(g == 2), age, round(y, 6)))
    return rows


def _patterns(rows) -> tuple[list, list, list, list]:
    grouped: dict[tuple, list[float]] = defaultdict(list)
    for *x, y in rows:
        grouped[tuple(x)].append(y)
    x = list(grouped)
    return (
        x,
        [len(grouped[p]) for p in x],
        [sum(grouped[p]) for p in x],
        [sum(v * v for v in grouped[p]) for p in x],
    )


@pytest.mark.parametrize("cov_type", sorted(R_STANDARD_ERRORS))
def test_the_figures_of_r_lm_and_sandwich(cov_type: str) -> None:
    x, counts, sums, squares = _patterns(_rows())
    assert len(x) == 30  # the fit runs on 30 patterns of four respondents each
    fit = linear_regression(x, counts, sums, squares, names=["g1", "g2", "age"], cov_type=cov_type)
    assert fit.names == ("const", "g1", "g2", "age") and fit.n == 120 and fit.df_resid == 116
    np.testing.assert_allclose(fit.params, R_COEFFICIENTS, rtol=1e-9)
    np.testing.assert_allclose(fit.bse, R_STANDARD_ERRORS[cov_type], rtol=1e-9)


def test_one_row_per_respondent_gives_the_same_fit() -> None:
    rows = _rows()
    pooled = linear_regression(*_patterns(rows))
    single = linear_regression([r[:3] for r in rows], [1] * 120, [r[3] for r in rows], [r[3] ** 2 for r in rows])
    np.testing.assert_allclose(pooled.params, single.params, rtol=1e-10)
    np.testing.assert_allclose(pooled.bse, single.bse, rtol=1e-10)


@pytest.mark.parametrize(
    "mechanism", [HybridNumber(1.0, 0, 100), PiecewiseNumber(4.0, 0, 100)], ids=["hybrid-1", "piecewise-4"]
)
def test_randomized_reports_estimate_the_true_coefficients(mechanism) -> None:
    """The reports' regression recovers the true numbers' coefficients, within 4.5 of its own
    standard errors (HC3), on 20,000 simulated respondents at a fixed seed."""
    rng = np.random.default_rng(41)
    n = 20_000
    group = rng.integers(0, 3, n)
    smoker = rng.integers(0, 2, n)
    truth = np.clip(10 + 15 * (group == 1) + 30 * (group == 2) - 5 * smoker + rng.normal(0, 8, n), 0, 100)
    reports = mechanism.value_of(mechanism.randomize(truth, rng))
    x = np.stack([group == 1, group == 2, smoker], axis=1).astype(float)
    exact = linear_regression(x, np.ones(n), truth, truth**2)
    fit = linear_regression(x, np.ones(n), reports, reports**2)
    assert (np.abs(fit.params - exact.params) < 4.5 * fit.bse).all(), (fit.params, exact.params, fit.bse)
    lows, highs = fit.conf_int().T
    assert (lows < fit.params).all() and (fit.params < highs).all()
    assert fit.to_dict()["coefficients"][0]["name"] == "const"


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="collinear"):
        linear_regression([[1], [1]], [5, 5], [10, 12], [30, 40])
    with pytest.raises(ValueError, match="more than"):
        linear_regression([[0], [1]], [1, 1], [1, 2], [1, 4])
    with pytest.raises(ValueError, match="cov_type"):
        linear_regression([[0], [1]], [3, 3], [1, 2], [1, 4], cov_type="HC9")
    with pytest.raises(ValueError, match="one entry per pattern"):
        linear_regression([[0], [1]], [3], [1, 2], [1, 4])
