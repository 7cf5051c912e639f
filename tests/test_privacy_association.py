"""Associations between two randomized answers, checked against code written independently here."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize
from scipy.special import expit, logit
from scipy.stats import chi2, chi2_contingency

from survey.privacy import (
    CoinFlip,
    GeneralizedRR,
    Mechanism,
    Warner,
    association,
    estimate,
    product_mechanism,
)

SEED = CoinFlip(0.5, 0.5)


def _simulate(mech_a, mech_b, table, n, seed):
    """Per respondent: true pairs from ``table``, each answer randomized by its own mechanism."""
    rng = np.random.default_rng(seed)
    k_a, k_b = np.shape(table)
    cells = rng.choice(k_a * k_b, size=n, p=np.ravel(table))
    truth_a, truth_b = np.divmod(cells, k_b)
    reported_a = mech_a.randomize(truth_a, rng)
    reported_b = mech_b.randomize(truth_b, rng)
    counts = np.zeros((k_a, k_b), dtype=int)
    np.add.at(counts, (reported_a, reported_b), 1)
    return reported_a, reported_b, counts


def _em(mech_a, mech_b, reported_a, reported_b, iterations=200_000, tol=1e-14):
    """Plain EM on the per-respondent likelihood: π ← mean over respondents of P(truth pair | reports)."""
    k_a, k_b = mech_a.k, mech_b.k
    like = mech_a.matrix[reported_a][:, :, None] * mech_b.matrix[reported_b][:, None, :]  # n × k_a × k_b
    like = like.reshape(len(reported_a), -1)
    pi = np.full(k_a * k_b, 1.0 / (k_a * k_b))
    for _ in range(iterations):
        posterior = like * pi
        posterior /= posterior.sum(axis=1, keepdims=True)
        new = posterior.mean(axis=0)
        if np.abs(new - pi).max() < tol:
            return new
        pi = new
    return pi


def test_product_mechanism_index_order_matches_the_flattened_table():
    a, b = CoinFlip(0.6, 0.3), GeneralizedRR(3, epsilon=1.2, labels=["x", "y", "z"])
    pair = product_mechanism(a, b)
    assert pair.labels[1 * 3 + 2] == "no|z"
    for i in range(2):
        for j in range(3):
            for s in range(2):
                for t in range(3):
                    assert pair.matrix[i * 3 + j, s * 3 + t] == pytest.approx(a.matrix[i, s] * b.matrix[j, t])
    assert pair.epsilon == pytest.approx(a.epsilon + b.epsilon)
    # the table of reports tabulated per respondent is what the product predicts
    table = np.array([[0.1, 0.2, 0.05], [0.3, 0.15, 0.2]])
    _, _, counts = _simulate(a, b, table, 200_000, seed=1)
    expected = 200_000 * (pair.matrix @ table.ravel())
    statistic = float(((counts.ravel() - expected) ** 2 / expected).sum())
    assert chi2.sf(statistic, 5) > 0.001


@pytest.mark.parametrize(
    ("mech_a", "mech_b", "table", "n", "seed", "boundary"),
    [
        (SEED, Warner(0.2), [[0.3, 0.1], [0.2, 0.4]], 2000, 7, False),  # the MLE inside the simplex
        (GeneralizedRR(2, epsilon=2), SEED, [[0.35, 0.0], [0.15, 0.5]], 1500, 9, True),  # and on its boundary
        (GeneralizedRR(3, epsilon=2), CoinFlip(0.7, 0.3), [[0.2, 0.1], [0.05, 0.3], [0.25, 0.1]], 1200, 9, False),
    ],
)
def test_joint_distribution_agrees_with_an_independent_em(mech_a, mech_b, table, n, seed, boundary):
    reported_a, reported_b, counts = _simulate(mech_a, mech_b, table, n, seed)
    result = association(mech_a, mech_b, counts)
    if boundary:  # the unbiased estimate has a negative cell: the MLE is on a face of the simplex
        assert result.joint.unbiased.min() < 0 and result.joint.proportions.min() == 0
    independent = _em(mech_a, mech_b, reported_a, reported_b)
    np.testing.assert_allclose(result.joint.proportions, independent, atol=1e-6)
    np.testing.assert_allclose(result.table.ravel(), independent, atol=1e-6)
    # and the joint estimate is plain `estimate` on the product mechanism
    plain = estimate(product_mechanism(mech_a, mech_b), counts.ravel())
    np.testing.assert_array_equal(result.joint.unbiased, plain.unbiased)
    np.testing.assert_array_equal(result.joint.proportions, plain.proportions)


def _profile_by_parameters(q, w, n, fix, start_value, edge, level=0.95):
    """The profile-likelihood end on one side, written from scratch: tables (pB, P(A|B), P(A|not B)).

    ``fix(value, free)`` returns (pB, P1, P0) with the measure held at ``value`` and two free
    parameters on the logit scale; the profile maximizes over them (Nelder–Mead from a grid of
    starts); the end is where it falls χ²₁/2 below the maximum (brentq).
    """

    def profile(value):
        def negative(z):
            pb, p1, p0 = fix(value, z)
            pi = np.array([pb * p1, (1 - pb) * p0, pb * (1 - p1), (1 - pb) * (1 - p0)])
            return -(w @ np.log(q @ pi))

        starts = [np.array([u, v]) for u in (-2.0, 0.0, 2.0) for v in (-2.0, 0.0, 2.0)]
        options = {"xatol": 1e-10, "fatol": 1e-14, "maxiter": 4000}
        return -min(minimize(negative, s, method="Nelder-Mead", options=options).fun for s in starts)

    top = profile(start_value)
    target = top - chi2.ppf(level, 1) / 2 / n
    if profile(edge) >= target:
        return edge
    return brentq(lambda v: profile(v) - target, start_value, edge, xtol=1e-11)


def test_odds_ratio_and_conditional_share_intervals_are_the_profile_likelihood():
    mech_a, mech_b = Warner(0.2), GeneralizedRR(2, epsilon=1)
    _, _, counts = _simulate(mech_a, mech_b, [[0.25, 0.15], [0.2, 0.4]], 1000, seed=12)
    result = association(mech_a, mech_b, counts)
    q = product_mechanism(mech_a, mech_b).matrix
    w = counts.ravel() / counts.sum()

    def by_log_odds_ratio(value, z):
        pb, p0 = expit(z)
        return pb, expit(logit(p0) + value), p0

    measure = result.odds_ratio
    point = math.log(measure.estimate)
    low = _profile_by_parameters(q, w, 1000, by_log_odds_ratio, point, point - 12)
    high = _profile_by_parameters(q, w, 1000, by_log_odds_ratio, point, point + 12)
    assert math.log(measure.low) == pytest.approx(low, abs=1e-6)
    assert math.log(measure.high) == pytest.approx(high, abs=1e-6)

    def by_p_a_given_b(value, z):
        pb, p0 = expit(z)
        return pb, value, p0

    measure = result.p_a_given_b
    assert measure.low == pytest.approx(
        _profile_by_parameters(q, w, 1000, by_p_a_given_b, measure.estimate, 0.0), abs=1e-6
    )
    assert measure.high == pytest.approx(
        _profile_by_parameters(q, w, 1000, by_p_a_given_b, measure.estimate, 1.0), abs=1e-6
    )
    assert measure.method == "profile-likelihood"


def test_phi_interval_is_the_range_of_phi_over_the_likelihood_region():
    """The profile interval of φ is {φ(π) : ℓ(π) ≥ ℓ̂ − χ²₁/2}: found here by SLSQP from many starts."""
    mech_a, mech_b = SEED, Warner(0.8)
    _, _, counts = _simulate(mech_a, mech_b, [[0.3, 0.1], [0.15, 0.45]], 800, seed=13)
    result = association(mech_a, mech_b, counts)
    q = product_mechanism(mech_a, mech_b).matrix
    w = counts.ravel() / counts.sum()
    loglik = lambda p: w @ np.log(q @ p)  # noqa: E731
    target = loglik(result.joint.proportions) - chi2.ppf(0.95, 1) / (2 * counts.sum())

    def phi(p):
        a, b = p[0] + p[1], p[0] + p[2]
        return (p[0] * p[3] - p[1] * p[2]) / math.sqrt(a * (1 - a) * b * (1 - b))

    ends = []
    for sign in (-1, 1):
        best = -math.inf
        for start in np.random.default_rng(0).dirichlet(np.ones(4), size=8) * 0.2 + result.joint.proportions * 0.8:
            found = minimize(
                lambda p, s=sign: -s * phi(np.clip(p, 1e-12, 1)),
                start,
                method="SLSQP",
                bounds=[(0, 1)] * 4,
                constraints=[
                    {"type": "eq", "fun": lambda p: p.sum() - 1},
                    {"type": "ineq", "fun": lambda p: (loglik(np.clip(p, 1e-300, 1)) - target) * 1e3},
                ],
                options={"ftol": 1e-15, "maxiter": 1000},
            )
            if found.success:
                best = max(best, sign * phi(found.x))
        ends.append(sign * best)
    assert result.phi.low == pytest.approx(ends[0], abs=1e-6)
    assert result.phi.high == pytest.approx(ends[1], abs=1e-6)


def test_a_zero_cell_gives_an_unbounded_odds_ratio_not_nan():
    # nobody who reported "no" to A reported "yes" to B, far below the design's floor: π(no, yes) = 0
    result = association(SEED, SEED, [[300, 200], [0, 500]])
    assert result.table[1, 0] == 0.0
    measure = result.odds_ratio
    assert measure.estimate == math.inf and measure.high == math.inf
    assert 1 < measure.low < math.inf
    assert result.p_a_given_b.high == 1.0 and result.p_a_given_b.estimate == 1.0
    for m in result.measures().values():
        assert not math.isnan(m.low) and not math.isnan(m.high)
    as_json = result.to_dict()["measures"]["odds_ratio"]
    assert as_json["ci_high"] is None and as_json["high_unbounded"] and as_json["estimate"] is None


def test_an_answer_nobody_may_give_leaves_the_odds_ratio_undetermined():
    # B's reports at the design's floor: the data are consistent with nobody answering B "yes"
    result = association(SEED, SEED, [[10, 30], [20, 60]])
    assert (result.odds_ratio.low, result.odds_ratio.high) == (0.0, math.inf)
    assert "not determined" in result.odds_ratio.note
    assert (result.p_a_given_b.low, result.p_a_given_b.high) == (0.0, 1.0)
    for m in result.measures().values():
        assert not math.isnan(m.low) and not math.isnan(m.high)
        assert m.low <= m.high


def test_intervals_hold_their_estimates_and_stay_in_range():
    rng = np.random.default_rng(21)
    for trial in range(12):
        mech_a = (SEED, Warner(0.3), GeneralizedRR(2, epsilon=2))[trial % 3]
        mech_b = (GeneralizedRR(2, epsilon=1), SEED)[trial % 2]
        table = rng.dirichlet(np.ones(4)).reshape(2, 2)
        _, _, counts = _simulate(mech_a, mech_b, table, int(rng.choice([80, 400, 3000])), seed=100 + trial)
        found = association(mech_a, mech_b, counts).measures()
        for name, m in found.items():
            bottom, top = {"odds_ratio": (0, math.inf), "phi": (-1, 1)}.get(name, (0, 1))
            assert bottom <= m.low <= m.high <= top
            if not math.isnan(m.estimate):
                assert m.low - 1e-9 <= m.estimate <= m.high + 1e-9
        # wider at a higher level
        result = association(mech_a, mech_b, counts)
        wide = result.measures(0.99)["phi"]
        assert wide.low <= result.phi.low + 1e-9 and wide.high >= result.phi.high - 1e-9


def test_independence_test_and_more_than_two_options():
    mech_a, mech_b = GeneralizedRR(3, epsilon=2), SEED
    _, _, counts = _simulate(mech_a, mech_b, [[0.2, 0.1], [0.05, 0.3], [0.25, 0.1]], 900, seed=4)
    result = association(mech_a, mech_b, counts)
    assert result.independence_p_value == pytest.approx(chi2_contingency(counts, correction=False)[1])
    assert result.odds_ratio is None and result.measures() is None and result.phi is None
    table = result.table
    expected = np.outer(table.sum(axis=1), table.sum(axis=0))
    v = math.sqrt(((table - expected) ** 2 / expected).sum() / 1)
    assert result.cramers_v == pytest.approx(v)
    high = result.joint.ci()[1]
    assert len(result.to_dict()["cells"]) == 6 and result.to_dict()["cells"][5]["ci_high"] == high[5]
    # for two yes/no questions Cramér's V is |φ|
    two = association(SEED, Warner(0.8), [[300, 100], [150, 450]])
    assert two.cramers_v == pytest.approx(abs(two.phi.estimate))


def test_labels_containing_the_separator_stay_distinct():
    a = Mechanism([[0.8, 0.2], [0.2, 0.8]], labels=["a|b", "a"])
    b = Mechanism([[0.7, 0.3], [0.3, 0.7]], labels=["c", "b|c"])
    assert len(set(product_mechanism(a, b).labels)) == 4


def test_input_errors():
    with pytest.raises(ValueError, match="2 × 2"):
        association(SEED, SEED, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="whole numbers"):
        association(SEED, SEED, [[1, 2], [3, -4]])
    with pytest.raises(ValueError, match="no responses"):
        association(SEED, SEED, [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="Mechanism"):
        association(SEED, "warner", [[1, 2], [3, 4]])
