"""The statistics of the ε audit (benchmarks/epsilon_audit.py), with fixed numbers and no browser."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from survey.privacy import CoinFlip, ForcedResponse, GeneralizedRR, Warner

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "epsilon_audit.py"
_spec = importlib.util.spec_from_file_location("epsilon_audit", PATH)
audit = sys.modules.setdefault("epsilon_audit", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(audit)


def expected_counts(matrix: np.ndarray, n: int) -> np.ndarray:
    """Counts exactly at their expectations (rounded), n per true answer."""
    return np.rint(np.asarray(matrix) * n).astype(np.int64)


def test_clopper_pearson_matches_known_values():
    # the exact 95% two-sided interval for 5 of 10 is (0.1871, 0.8129): one-sided bounds at 2.5% each
    assert audit.clopper_pearson_lower(5, 10, 0.025) == pytest.approx(0.187086, abs=1e-6)
    assert audit.clopper_pearson_upper(5, 10, 0.025) == pytest.approx(0.812914, abs=1e-6)
    # closed forms at the edges: upper for 0 successes is 1 − α^(1/n), lower for n successes is α^(1/n)
    assert audit.clopper_pearson_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100), rel=1e-9)
    assert audit.clopper_pearson_lower(100, 100, 0.05) == pytest.approx(0.05 ** (1 / 100), rel=1e-9)
    assert audit.clopper_pearson_lower(0, 100, 0.05) == 0.0
    assert audit.clopper_pearson_upper(100, 100, 0.05) == 1.0
    for bad in ((11, 10), (-1, 10), (0, 0)):
        with pytest.raises(ValueError):
            audit.clopper_pearson_lower(*bad, 0.05)


@pytest.mark.parametrize(
    "mechanism, ratios",
    [
        (CoinFlip(0.5, 0.5), 4),
        (CoinFlip(0.8, 0.2), 4),
        (Warner(0.3), 4),
        (GeneralizedRR(5, epsilon=1.0), 100),
        (GeneralizedRR(5, epsilon=4.0), 100),
        (ForcedResponse([0.1, 0.15, 0.05]), 18),
    ],
)
def test_counts_at_their_expectations_give_a_bound_just_below_epsilon(mechanism, ratios):
    eps = mechanism.epsilon
    result = audit.epsilon_lower_bound(expected_counts(mechanism.matrix, 200_000), mechanism.matrix)
    assert result.point == pytest.approx(eps, abs=2e-3)
    assert eps - 0.2 < result.lower < eps
    assert result.ratios == ratios
    assert result.alpha_each == pytest.approx(0.01 / ratios / 2)  # Bonferroni over the ratios, halved per ratio
    assert result.impossible == 0


def test_seed_design_bound_in_numbers():
    # CoinFlip(0.5, 0.5): 150,000 of 200,000 true "yes" report "yes", 50,000 of true "no" do: ε = ln 3
    counts = np.array([[150_000, 50_000], [50_000, 150_000]])
    result = audit.epsilon_lower_bound(counts, CoinFlip(0.5, 0.5).matrix)
    assert result.point == pytest.approx(math.log(3), abs=1e-12)
    low = audit.clopper_pearson_lower(150_000, 200_000, 0.01 / 8)
    high = audit.clopper_pearson_upper(50_000, 200_000, 0.01 / 8)
    assert result.lower == pytest.approx(math.log(low / high), abs=1e-12)
    assert 1.07 < result.lower < math.log(3)


@pytest.mark.parametrize("mechanism", [CoinFlip(0.5, 0.5), GeneralizedRR(5, epsilon=1.0), Warner(0.75)])
def test_a_sampler_biased_towards_the_truth_gives_a_bound_above_epsilon(mechanism):
    q = mechanism.matrix
    biased = np.column_stack([audit.biased_column(list(q[:, t]), t) for t in range(mechanism.k)])
    np.testing.assert_allclose(biased.sum(axis=0), 1.0)
    np.testing.assert_allclose(np.diag(biased), np.diag(q) + 0.10)
    result = audit.epsilon_lower_bound(expected_counts(biased, 200_000), q)
    assert result.lower > mechanism.epsilon + 0.1


def test_one_sided_design_examines_only_finite_ratios_and_counts_impossible_draws():
    q = CoinFlip(0.6, 1.0).matrix  # a true "yes" never reports "no"
    assert q[1, 0] == 0
    clean = audit.epsilon_lower_bound(expected_counts(q, 10_000), q)
    assert clean.ratios == 2 and clean.impossible == 0 and math.isfinite(clean.lower)
    leaky = expected_counts(q, 10_000)
    leaky[1, 0], leaky[0, 0] = 3, leaky[0, 0] - 3
    assert audit.epsilon_lower_bound(leaky, q).impossible == 3


def test_zero_counts_give_infinite_point_but_finite_bound():
    q = GeneralizedRR(2, epsilon=2.0).matrix
    counts = np.array([[1000, 0], [0, 1000]])
    result = audit.epsilon_lower_bound(counts, q)
    assert math.isinf(result.point)
    assert math.isfinite(result.lower) and result.lower > 2.0


def test_the_bound_covers_the_true_epsilon():
    """Simulated honest samplers: the lower bound exceeds the true ε in far fewer than 1% of runs."""
    rng = np.random.default_rng(20261122)
    mechanism = CoinFlip(0.5, 0.5)
    q, n = mechanism.matrix, 20_000
    over = 0
    for _ in range(400):
        counts = np.column_stack([rng.multinomial(n, q[:, t]) for t in range(2)])
        over += audit.epsilon_lower_bound(counts, q).lower > mechanism.epsilon
    assert over <= 4


@pytest.mark.parametrize(
    "counts, matrix",
    [
        (np.zeros((2, 2)), np.eye(2)),  # no draws
        (np.ones((2, 3)), np.ones((2, 2)) / 2),  # shapes differ
        (np.array([[-1, 1], [2, 1]]), np.ones((2, 2)) / 2),  # negative count
    ],
)
def test_bad_input_is_refused(counts, matrix):
    with pytest.raises(ValueError):
        audit.epsilon_lower_bound(counts, matrix)


def test_false_alarm_bound_counts_only_the_ratios_at_epsilon():
    # symmetric yes/no: 2 of the 4 ratios are at +ε, so an honest sampler fails with probability ≤ 1% · 2/4
    assert audit.false_alarm_bound(CoinFlip(0.5, 0.5).matrix) == pytest.approx(0.005)
    # GRR with 5 options: the 20 ratios (report t; true t vs u) of the 100 are at ε
    assert audit.false_alarm_bound(GeneralizedRR(5, epsilon=1.0).matrix) == pytest.approx(0.002)
    # an asymmetric coin flip has one ratio at ε; a one-sided design cannot fail falsely
    assert audit.false_alarm_bound(CoinFlip(0.6, 0.3).matrix) == pytest.approx(0.0025)
    assert audit.false_alarm_bound(CoinFlip(0.6, 1.0).matrix) == 0.0
