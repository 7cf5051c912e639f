"""Randomized minus direct (survey.privacy.arms): MOVER's arithmetic, coverage and the test's level
over simulated split-ballot surveys at a fixed seed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.privacy import CoinFlip, ForcedResponse
from survey.privacy.arms import mover_difference, randomized_minus_direct


def test_mover_is_the_formula() -> None:
    low, high = mover_difference(0.3, 0.2, 0.45, 0.1, 0.05, 0.2)
    assert low == pytest.approx(0.2 - math.hypot(0.1, 0.1))
    assert high == pytest.approx(0.2 + math.hypot(0.15, 0.05))
    assert mover_difference(1.0, 0.9, 1.0, 0.0, 0.0, 0.1) == (pytest.approx(1 - math.hypot(0.1, 0.1)), 1.0)


@pytest.mark.parametrize("mechanism", [CoinFlip(0.5, 0.5), ForcedResponse([0.2, 0.1])], ids=["coin", "forced"])
def test_the_interval_covers_and_the_test_keeps_its_level(mechanism) -> None:
    """600 simulated surveys of 500 per arm: the interval for the difference (truth: 0.25 honest
    under randomization against 0.15 said directly) covers in 0.95 ± 0.03 of them (three standard
    errors: 0.027); with no difference (0.15 in both), the one-sided test at 0.05 rejects in at most
    0.05 + 0.027 of them."""
    rng = np.random.default_rng(7)
    matrix = mechanism.matrix
    n = 500
    covered = rejected = 0
    surveys = 600
    for _ in range(surveys):
        for truth_r, truth_d, check in ((0.25, 0.15, "cover"), (0.15, 0.15, "null")):
            reported = rng.multinomial(n, matrix @ np.array([truth_r, 1 - truth_r]))
            yes = int(rng.binomial(n, truth_d))
            result = randomized_minus_direct(mechanism, reported, yes, n)
            if check == "cover":
                covered += result.low <= truth_r - truth_d <= result.high
            else:
                rejected += result.p_value < 0.05
    assert abs(covered / surveys - 0.95) <= 0.03, covered / surveys
    assert rejected / surveys <= 0.05 + 0.027, rejected / surveys


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="direct arm"):
        randomized_minus_direct(CoinFlip(0.5, 0.5), [10, 10], 5, 0)
    with pytest.raises(ValueError, match="no reports"):
        randomized_minus_direct(CoinFlip(0.5, 0.5), [0, 0], 5, 10)
    result = randomized_minus_direct(CoinFlip(0.5, 0.5), [400, 600], 120, 1000)
    assert result.to_dict()["difference"] == pytest.approx(0.18)
