"""Mechanisms: their matrices, ε from the matrix, validation and sampling."""

import json
import math

import numpy as np
import pytest
from scipy.stats import chisquare

from survey.privacy import (
    CoinFlip,
    ForcedResponse,
    GeneralizedRR,
    Mechanism,
    UnrelatedQuestion,
    Warner,
    epsilon_of_matrix,
    mechanism_from_dict,
)


def test_seed_coin_flip_is_ln3():
    m = CoinFlip(0.5, 0.5)
    assert m.epsilon == pytest.approx(math.log(3), abs=1e-12)
    assert m.matrix.tolist() == [[0.75, 0.25], [0.25, 0.75]]
    assert m.labels == ("yes", "no")
    # Kasy: P(yes) = 1/4 + θ/2
    theta = 0.3
    assert (m.matrix @ [theta, 1 - theta])[0] == pytest.approx(0.25 + theta / 2)


def test_coin_flip_matrix_and_parameters():
    m = CoinFlip(0.6, 0.3)
    p, f = 0.6, 0.3
    expected = [[p + (1 - p) * f, (1 - p) * f], [(1 - p) * (1 - f), p + (1 - p) * (1 - f)]]
    np.testing.assert_allclose(m.matrix, expected)
    assert m.truth_probability == 0.6 and m.yes_probability == 0.3
    np.testing.assert_allclose(m.truth_probabilities, [p + (1 - p) * f, p + (1 - p) * (1 - f)])


def test_grr_check_value():
    m = GeneralizedRR(4, epsilon=1)
    assert m.truth_probability == pytest.approx(0.47537, abs=5e-6)
    assert m.epsilon == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(m.matrix.sum(axis=0), 1.0)


@pytest.mark.parametrize("p", [0.55, 0.6, 0.75, 0.9, 0.99, 0.3, 0.05])
def test_binary_closed_form_agrees_with_matrix(p):
    assert Warner(p).epsilon == pytest.approx(abs(math.log(p / (1 - p))), rel=1e-12)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8, 0.999])
def test_coin_flip_closed_form_with_fair_second_coin(p):
    assert CoinFlip(p, 0.5).epsilon == pytest.approx(math.log((1 + p) / (1 - p)), rel=1e-12)


@pytest.mark.parametrize("k", [2, 3, 5, 12])
@pytest.mark.parametrize("eps", [0.1, 1.0, math.log(3), 4.0, 30.0])
def test_grr_closed_forms_agree(k, eps):
    by_eps = GeneralizedRR(k, epsilon=eps)
    assert by_eps.epsilon == pytest.approx(eps, rel=1e-9)
    p = by_eps.truth_probability
    # 1 − p cancels catastrophically at large ε; the matrix itself stays exact (checked above)
    assert math.log(p * (k - 1) / (1 - p)) == pytest.approx(eps, rel=1e-9 if eps < 20 else 1e-3)
    by_p = GeneralizedRR(k, truth_probability=p)
    np.testing.assert_allclose(by_p.matrix, by_eps.matrix, atol=1e-15)
    assert by_p.epsilon == pytest.approx(eps, rel=1e-9 if eps < 20 else 1e-3)


def test_one_sided_designs_have_infinite_epsilon():
    m = CoinFlip(0.5, 1.0)  # only ever forces "yes": a "no" is always true
    assert math.isinf(m.epsilon) and m.one_sided and not m.is_identity
    assert math.isinf(ForcedResponse([0.2, 0.0, 0.1]).epsilon)
    ident = GeneralizedRR(3, truth_probability=1.0)
    assert math.isinf(ident.epsilon) and ident.is_identity and not ident.one_sided


def test_unrelated_question_and_forced_response_matrices():
    uq = UnrelatedQuestion(0.7, 1 / 12)
    np.testing.assert_allclose(uq.matrix, CoinFlip(0.7, 1 / 12).matrix)
    fr = ForcedResponse([0.1, 0.05, 0.15], labels=["a", "b", "c"])
    np.testing.assert_allclose(fr.matrix, 0.7 * np.eye(3) + np.outer([0.1, 0.05, 0.15], np.ones(3)))
    assert fr.truth_probability == pytest.approx(0.7)
    assert fr.epsilon == pytest.approx(math.log((0.7 + 0.05) / 0.05))  # the least-forced row


def test_custom_matrix_epsilon_is_worst_row():
    m = Mechanism([[0.8, 0.1, 0.2], [0.1, 0.7, 0.2], [0.1, 0.2, 0.6]], labels="abc")
    assert m.epsilon == pytest.approx(max(math.log(8), math.log(7), math.log(6)))
    assert epsilon_of_matrix([[0.5, 0.0], [0.5, 1.0]]) == math.inf


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: CoinFlip(1.2, 0.5), "truth_probability must be between 0 and 1"),
        (lambda: CoinFlip(0.5, -0.1), "yes_probability must be between 0 and 1"),
        (lambda: CoinFlip(0.0, 0.5), "truth_probability must be above 0"),
        (lambda: CoinFlip("x", 0.5), "truth_probability must be a number"),
        (lambda: CoinFlip(math.nan, 0.5), "truth_probability must be between"),
        (lambda: Warner(0.5), "p must differ from 1/2"),
        (lambda: Warner(1.5), "p must be between 0 and 1"),
        (lambda: GeneralizedRR(1, epsilon=1), "k must be at least 2"),
        (lambda: GeneralizedRR(3, epsilon=0), "epsilon must be greater than 0"),
        (lambda: GeneralizedRR(3, epsilon=-1), "epsilon must be greater than 0"),
        (lambda: GeneralizedRR(3), "exactly one of epsilon and truth_probability"),
        (lambda: GeneralizedRR(3, epsilon=1, truth_probability=0.5), "exactly one"),
        (lambda: GeneralizedRR(4, truth_probability=0.25), "above 1/k"),
        (lambda: GeneralizedRR(3, epsilon=1, labels=["a", "b"]), "2 labels for a 3-category"),
        (lambda: Mechanism([[0.5, 0.5], [0.6, 0.5]]), "column 0 .* sums to 1.1"),
        (lambda: Mechanism([[0.5, 0.5], [0.5, 0.5]]), "singular"),
        (lambda: Mechanism([[1.2, 0.0], [-0.2, 1.0]]), "must lie in \\[0, 1\\]"),
        (lambda: Mechanism([[1.0]]), "at least 2 categories"),
        (lambda: Mechanism([[0.5, 0.5, 0.0], [0.5, 0.5, 1.0]]), "must be square"),
        (lambda: Mechanism([[0.5, 0.5], [0.5, 0.5]], labels=["a", "a"]), "singular|distinct"),
        (lambda: Mechanism([[0.9, 0.1], [0.1, 0.9]], labels=["a", "a"]), "distinct"),
        (lambda: ForcedResponse([0.5, 0.6]), "leave a chance of answering truthfully"),
    ],
)
def test_invalid_parameters_say_what_is_wrong(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize(
    "mechanism",
    [
        CoinFlip(0.5, 0.5),
        CoinFlip(0.7, 0.2),
        UnrelatedQuestion(0.6, 0.1),
        Warner(0.75),
        GeneralizedRR(["never", "once", "monthly", "weekly"], epsilon=1.5),
        GeneralizedRR(3, truth_probability=0.8),
        ForcedResponse([0.1, 0.1, 0.05]),
        Mechanism([[0.8, 0.1, 0.2], [0.1, 0.7, 0.2], [0.1, 0.2, 0.6]], labels="abc"),
    ],
)
def test_round_trip_through_json(mechanism):
    spec = json.loads(json.dumps(mechanism.to_dict()))
    rebuilt = mechanism_from_dict(spec)
    assert type(rebuilt) is type(mechanism)
    assert rebuilt == mechanism
    assert rebuilt.epsilon == pytest.approx(mechanism.epsilon)


def test_stored_matrix_must_agree_with_parameters():
    spec = CoinFlip(0.5, 0.5).to_dict()
    spec["matrix"] = [[0.8, 0.25], [0.2, 0.75]]
    with pytest.raises(ValueError, match="does not match"):
        mechanism_from_dict(spec)
    with pytest.raises(ValueError, match="unknown design"):
        mechanism_from_dict({"design": "laplace"})


def test_matrix_is_read_only():
    with pytest.raises(ValueError):
        CoinFlip(0.5, 0.5).matrix[0, 0] = 1.0


@pytest.mark.parametrize(
    "mechanism", [CoinFlip(0.5, 0.5), CoinFlip(0.3, 0.8), Warner(0.2), GeneralizedRR(5, epsilon=1)]
)
def test_randomize_follows_the_column(mechanism):
    rng = np.random.default_rng(20261122)
    for true in range(mechanism.k):
        reports = mechanism.randomize(np.full(50_000, true), rng)
        observed = np.bincount(reports, minlength=mechanism.k)
        expected = mechanism.matrix[:, true] * reports.size
        keep = expected > 0
        assert observed[~keep].sum() == 0
        assert chisquare(observed[keep], expected[keep]).pvalue > 1e-4


def test_randomize_rejects_unknown_answers():
    with pytest.raises(ValueError, match="category indices"):
        CoinFlip().randomize([0, 2])


@pytest.mark.parametrize("eps", [0.1, 0.5, math.log(3), 2.0, 5.0])
@pytest.mark.parametrize("f", [0.5, 0.3, 0.8, 0.05])
def test_coin_flip_from_epsilon_inverts_the_matrix_epsilon(eps, f):
    m = CoinFlip.from_epsilon(eps, f)
    assert m.yes_probability == f
    assert m.epsilon == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("eps", [0.1, math.log(3), 3.0])
def test_warner_from_epsilon(eps):
    assert Warner.from_epsilon(eps).epsilon == pytest.approx(eps, rel=1e-12)
    assert Warner.from_epsilon(eps).p > 0.5


def test_from_epsilon_never_overflows():
    assert CoinFlip.from_epsilon(700.0).truth_probability == 1.0
    assert CoinFlip.from_epsilon(800.0, 0.3).truth_probability == 1.0
    with pytest.raises(ValueError, match="singular"):  # ε so small the reports say nothing
        CoinFlip.from_epsilon(1e-12)


def test_from_epsilon_errors():
    with pytest.raises(ValueError, match="only one answer is protected"):
        CoinFlip.from_epsilon(1.0, 1.0)
    with pytest.raises(ValueError, match="greater than 0"):
        Warner.from_epsilon(0)
    with pytest.raises(ValueError, match="finite"):
        CoinFlip.from_epsilon(math.inf)
