"""Breakdowns by group: each group is `estimate` on its own counts; differences, tests, small groups."""

import math

import numpy as np
import pytest
from scipy.stats import beta, binom, chi2_contingency, norm

from survey.privacy import (
    CoinFlip,
    GeneralizedRR,
    Mechanism,
    Warner,
    breakdown,
    compare_groups,
    difference_interval,
    estimate,
    few_respondents_threshold,
    margin_of_error,
)

SEED = CoinFlip(0.5, 0.5)


def _floored_wilson(x, n, level):
    """Written out here from the definitions: Wilson's interval, widened to Clopper–Pearson at 1 − 1.4α."""
    z = norm.ppf(0.5 + level / 2)
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low, high = (0.0 if x == 0 else centre - half), (1.0 if x == n else centre + half)
    tail = 1.4 * (1 - level) / 2
    cp_low = 0.0 if x == 0 else beta.ppf(tail, x, n - x + 1)
    cp_high = 1.0 if x == n else beta.ppf(1 - tail, x + 1, n - x)
    return min(low, cp_low), max(high, cp_high)


def _newcombe(x_a, n_a, x_b, n_b, level):
    l_a, u_a = _floored_wilson(x_a, n_a, level)
    l_b, u_b = _floored_wilson(x_b, n_b, level)
    p_a, p_b = x_a / n_a, x_b / n_b
    d = p_a - p_b
    return d - math.sqrt((p_a - l_a) ** 2 + (u_b - p_b) ** 2), d + math.sqrt((u_a - p_a) ** 2 + (p_b - l_b) ** 2)


def test_each_group_is_estimate_on_its_own_counts():
    mech = GeneralizedRR(3, epsilon=1.5, labels=["a", "b", "c"])
    groups = {"18-29": [40, 25, 15], "30-49": [120, 90, 60], "50+": [12, 20, 30]}
    result = breakdown(mech, groups, level=0.9, category=2)
    for row in result.rows:
        own = estimate(mech, groups[row.label])
        np.testing.assert_array_equal(row.estimate.proportions, own.proportions)
        np.testing.assert_array_equal(row.estimate.unbiased, own.unbiased)
        low, high = own.ci(0.9)
        assert (row.share, row.low, row.high) == (own.proportions[2], low[2], high[2])
        assert row.n == sum(groups[row.label])
    total = estimate(mech, np.sum(list(groups.values()), axis=0))
    np.testing.assert_array_equal(result.total.proportions, total.proportions)
    comparison = compare_groups(mech, groups["18-29"], groups["50+"], category=2)
    np.testing.assert_array_equal(comparison.estimate_a.proportions, estimate(mech, groups["18-29"]).proportions)
    np.testing.assert_array_equal(comparison.estimate_b.proportions, estimate(mech, groups["50+"]).proportions)


def test_difference_interval_is_newcombes_from_the_floored_wilson_intervals():
    rng = np.random.default_rng(3)
    for _ in range(40):
        n_a, n_b = rng.integers(5, 400, size=2)
        x_a, x_b = rng.integers(0, n_a + 1), rng.integers(0, n_b + 1)
        level = rng.choice([0.8, 0.9, 0.95, 0.99])
        low, high = _newcombe(x_a, n_a, x_b, n_b, level)
        ours = difference_interval(x_a, n_a, x_b, n_b, a=1.0, level=level)
        np.testing.assert_allclose(ours, np.clip((low, high), -1, 1), atol=1e-12)
        # mapped through the design: divided by a, the ends swapped when a < 0
        ours = difference_interval(x_a, n_a, x_b, n_b, a=-0.6, level=level)
        np.testing.assert_allclose(ours, np.clip((high / -0.6, low / -0.6), -1, 1), atol=1e-12)


def test_seed_check_values_and_the_difference_of_the_shown_shares():
    result = compare_groups(SEED, [60, 40], [40, 60])
    assert (result.share_a, result.share_b) == pytest.approx((0.7, 0.3))
    assert result.difference == pytest.approx(0.4) == result.unbiased_difference
    low, high = _newcombe(60, 100, 40, 100, 0.95)
    assert (result.low, result.high) == pytest.approx((low / 0.5, high / 0.5), abs=1e-12)
    assert result.interval_method == "newcombe-wilson-floor-mapped"
    assert result.significant and result.p_value < 0.05
    assert result.to_dict()["ci_low"] == result.low


def test_warner_below_one_half_keeps_the_direction_of_the_difference():
    # p = 0.2: a "yes" report mostly means a true "no"; more "yes" reports means fewer true "yes"
    mech = Warner(0.2)
    result = compare_groups(mech, [30, 70], [60, 40])
    assert result.share_a > result.share_b
    assert 0 < result.low <= result.difference <= result.high


def test_p_value_is_the_inverted_interval():
    rng = np.random.default_rng(5)
    for _ in range(60):
        n_a, n_b = rng.integers(3, 300, size=2)
        counts_a = [int(rng.integers(0, n_a + 1))]
        counts_b = [int(rng.integers(0, n_b + 1))]
        counts_a.append(n_a - counts_a[0])
        counts_b.append(n_b - counts_b[0])
        result = compare_groups(SEED, counts_a, counts_b)
        for level in (0.9, 0.95, 0.99):
            low, high = result.ci(level)
            assert (result.p_value < 1 - level) == (not low <= 0 <= high)
        if 1e-4 < result.p_value < 0.71 and result.unbiased_difference != 0:
            # at level 1 − p the interval ends exactly at 0 (for p well above rounding of 1 − p)
            low, high = result.ci(1 - result.p_value)
            assert min(abs(low), abs(high)) < 1e-9
    # the p-value of a zero difference is 1, of an overwhelming one 0
    assert compare_groups(SEED, [50, 50], [50, 50]).p_value == 1.0
    assert compare_groups(SEED, [900_000, 100_000], [100_000, 900_000]).p_value == 0.0


def test_exact_coverage_of_the_difference_at_small_groups():
    """Coverage as a double binomial sum (no simulation), where it is most at risk: 30 per group."""
    n = 30
    x = np.arange(n + 1.0)
    low, high = difference_interval(x[:, None], n, x[None, :], n, a=0.5)
    for theta_a, theta_b in ((0.0, 0.0), (0.1, 0.1), (0.5, 0.5), (0.1, 0.4), (0.0, 0.9)):
        pmf_a = binom.pmf(x, n, 0.25 + 0.5 * theta_a)
        pmf_b = binom.pmf(x, n, 0.25 + 0.5 * theta_b)
        held = (low <= theta_a - theta_b) & (theta_a - theta_b <= high)
        coverage = pmf_a @ held @ pmf_b
        assert coverage >= 0.93, (theta_a, theta_b, coverage)


def test_a_custom_matrix_uses_the_delta_method():
    mech = Mechanism([[0.7, 0.2, 0.1], [0.2, 0.6, 0.3], [0.1, 0.2, 0.6]], labels=["x", "y", "z"])
    assert mech.affine_coefficients(1) is None
    a, b = [50, 30, 20], [20, 30, 50]
    result = compare_groups(mech, a, b, category=1)
    ea, eb = estimate(mech, a), estimate(mech, b)
    se = math.hypot(ea.standard_errors[1], eb.standard_errors[1])
    centre = ea.unbiased[1] - eb.unbiased[1]
    assert result.interval_method == "delta-wald"
    assert (result.low, result.high) == pytest.approx((centre - 1.959964 * se, centre + 1.959964 * se), abs=1e-6)
    assert result.p_value == pytest.approx(2 * norm.sf(abs(centre) / se))


def test_few_respondents_threshold_is_where_the_expected_half_width_reaches_a_quarter():
    for mech, category in ((SEED, 0), (Warner(0.2), 0), (GeneralizedRR(4, epsilon=1), 2), (CoinFlip(0.6, 0.2), 0)):
        n = few_respondents_threshold(mech, category)
        a, b = mech.affine_coefficients(category)
        worst = min(max((0.5 - b) / a, 0.0), 1.0)
        assert margin_of_error(mech, n, worst, category=category) <= 0.25
        assert margin_of_error(mech, n - 1, worst, category=category) > 0.25
    assert few_respondents_threshold(SEED) == 57
    result = compare_groups(SEED, [20, 20], [300, 300])
    assert result.few_a and not result.few_b and result.wide_below == 57


def test_breakdown_against_the_rest_and_against_a_reference():
    groups = [("week 1", [80, 120]), ("week 2", [70, 130]), ("week 3", [140, 60]), ("week 4", [0, 0])]
    result = breakdown(SEED, groups)
    rest = np.array([70, 130]) + np.array([140, 60])
    expected = compare_groups(SEED, [80, 120], rest)
    first = result["week 1"]
    assert first.comparison.p_value == expected.p_value
    assert (first.comparison.low, first.comparison.high) == (expected.low, expected.high)
    assert result["week 4"].estimate is None and result["week 4"].comparison is None and result["week 4"].few
    # Holm over the three comparisons
    p = sorted(row.comparison.p_value for row in result.rows[:3])
    adjusted = sorted(row.adjusted_p_value for row in result.rows[:3])
    assert adjusted[0] == pytest.approx(min(1, 3 * p[0]))
    # the omnibus test is Pearson's chi-square on the reported counts of the non-empty groups
    table = np.array([g[1] for g in groups[:3]])
    assert result.homogeneity_p_value == pytest.approx(chi2_contingency(table, correction=False)[1])
    against = breakdown(SEED, groups, reference="week 1")
    assert against["week 1"].comparison is None
    direct = compare_groups(SEED, [140, 60], [80, 120])
    assert against["week 3"].comparison.difference == direct.difference
    assert against["week 3"].comparison.p_value == direct.p_value
    assert against.to_dict()["groups"][2]["comparison"]["p_value"] == direct.p_value


def test_input_errors():
    with pytest.raises(ValueError, match="no responses"):
        compare_groups(SEED, [0, 0], [5, 5])
    with pytest.raises(ValueError, match="expected 2 counts"):
        compare_groups(SEED, [1, 2, 3], [5, 5])
    with pytest.raises(ValueError, match="category"):
        compare_groups(SEED, [1, 2], [5, 5], category=2)
    with pytest.raises(ValueError, match="method"):
        compare_groups(SEED, [1, 2], [5, 5], method="bootstrap")
    with pytest.raises(ValueError, match="distinct"):
        breakdown(SEED, [("a", [1, 2]), ("a", [3, 4])])
    with pytest.raises(ValueError, match="reference"):
        breakdown(SEED, {"a": [1, 2]}, reference="b")
    with pytest.raises(ValueError, match="whole numbers"):
        breakdown(SEED, {"a": [1.5, 2]})
    with pytest.raises(ValueError, match="no responses"):
        breakdown(SEED, {"a": [0, 0]})
    with pytest.raises(ValueError, match="slope"):
        difference_interval(1, 2, 1, 2, a=0.0)


def test_a_million_respondents_costs_what_a_hundred_do():
    result = compare_groups(SEED, [260_000, 740_000], [250_000, 750_000])
    assert result.high - result.low < 0.01
    assert result.p_value < 1e-10


def test_the_interval_holds_the_difference_the_page_shows():
    # group b reported "yes" below the seed design's floor of 25%: its share is shown as 0 (clipped)
    result = compare_groups(SEED, [30, 70], [10, 90])
    assert result.share_b == 0.0 and result.unbiased_difference == pytest.approx(0.4)
    newcombe_low, newcombe_high = difference_interval(30, 100, 10, 100, a=0.5)
    assert newcombe_low > result.difference  # Newcombe's interval alone would leave out what is shown
    assert (result.low, result.high) == (result.difference, newcombe_high)
    # both groups beyond the range, shown as the same share: no difference can be claimed
    both = compare_groups(SEED, [5, 95], [20, 80])
    assert both.difference == 0.0 and both.p_value == 1.0 and both.low <= 0.0 <= both.high
