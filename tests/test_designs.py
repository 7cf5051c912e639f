"""The registry of designs (survey/privacy/designs.py): each entry's parameters, ranges and builders
agree with the mechanisms of the privacy core, and the core names the parameter at fault."""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.privacy import ForcedResponse, GeneralizedRR, Mechanism, UnrelatedQuestion, Warner, mechanism_from_dict
from survey.privacy.designs import DESIGNS, EPSILON, design_name, designs_for, kinds_served
from survey.privacy.mechanisms import ParameterError

LEVELS = [0.1, 0.5, math.log(3), 2.0, 5.0]


def labels(kind: str, k: int = 4) -> list[str]:
    return ["yes", "no"] if kind == "yes_no" else [f"option {i + 1}" for i in range(k)]


def others(design, k: int) -> dict:
    """Valid values for the parameters given in every case (their defaults, or a middling value)."""
    return {p.name: "Is it?" if p.text else 0.3 if p.default is None else p.default for p in design.others}


#: The matrix designs, by the kinds they serve (the designs of numbers are tested below).
CASES = [(d, kind) for d in DESIGNS.values() if not d.numbers for kind in d.kinds]
#: Those an organizer may set by ε (a non-randomized design's ε follows from its unrelated question).
BY_EPSILON = [(d, kind) for d, kind in CASES if not d.combined]
NUMBER_DESIGNS = [d for d in DESIGNS.values() if d.numbers]
BOUNDS = (0, 30)


def test_every_kind_a_design_serves_is_offered_and_nothing_else():
    assert kinds_served() == {
        "yes_no": ["coin_flip", "warner", "unrelated_question", "grr", "crosswise", "triangular"],
        "choice": ["grr", "forced_response"],
        "rr_number": ["hybrid", "duchi", "piecewise", "laplace"],
    }
    assert designs_for("direct") == []
    assert design_name("grr") == DESIGNS["grr"].name and design_name("custom") == "Custom matrix"


@pytest.mark.parametrize("design, kind", BY_EPSILON, ids=[f"{d.id}-{kind}" for d, kind in BY_EPSILON])
@pytest.mark.parametrize("epsilon", LEVELS)
def test_set_by_epsilon_the_matrix_has_that_epsilon(design, kind, epsilon):
    names = labels(kind)
    privacy = design.from_level("epsilon", epsilon, others(design, len(names)), len(names))
    assert privacy["design"] == design.id and set(privacy) - {"design"} <= design.spec_fields
    mechanism = design.mechanism(privacy, names)
    assert mechanism.epsilon == pytest.approx(epsilon, rel=1e-9)
    assert mechanism.design == design.id and mechanism.labels == tuple(names)
    # what is stored (the mechanism's own parameters) rebuilds the very same matrix
    again = mechanism_from_dict(mechanism.to_dict())
    np.testing.assert_allclose(again.matrix, mechanism.matrix, rtol=0, atol=1e-15)


def test_a_non_randomized_design_is_not_set_by_epsilon():
    combined = [d for d, _ in CASES if d.combined]
    assert [d.id for d in combined] == ["crosswise", "triangular"]
    for design in combined:
        with pytest.raises(ParameterError) as caught:
            design.from_level("epsilon", 1.0, others(design, 2), 2)
        assert caught.value.parameter == "epsilon"


@pytest.mark.parametrize("design, kind", CASES, ids=[f"{d.id}-{kind}" for d, kind in CASES])
def test_set_by_the_level_parameter_it_is_stored_as_given(design, kind):
    names = labels(kind)
    value = [0.1] * len(names) if design.level.per_option else 0.8
    privacy = design.from_level(design.level.name, value, others(design, len(names)), len(names))
    assert privacy[design.level.name] == value
    assert design.mechanism(privacy, names).parameters[design.level.name] == pytest.approx(value)


def _outside(parameter) -> list[float]:
    values = [parameter.high + 0.01] if math.isfinite(parameter.high) else []
    values.append(parameter.low if parameter.low_open else parameter.low - 0.01)
    return values


@pytest.mark.parametrize("design, kind", CASES, ids=[f"{d.id}-{kind}" for d, kind in CASES])
def test_values_outside_a_parameters_range_are_refused_naming_it(design, kind):
    names = labels(kind)
    k = len(names)
    for parameter in design.parameters:
        if parameter.text:  # a question in words (the spec's own check refuses anything else)
            continue
        for bad in _outside(parameter):
            assert not parameter.contains(bad)
            given = others(design, k)
            if parameter is design.level:
                value = [bad] + [0.0] * (k - 1) if parameter.per_option else bad
                privacy = design.from_level(parameter.name, value, given, k)
            else:
                level = [0.1] * k if design.level.per_option else 0.8
                privacy = design.from_level(design.level.name, level, {**given, parameter.name: bad}, k)
            with pytest.raises(ParameterError) as caught:
                design.mechanism(privacy, names)
            assert caught.value.parameter == parameter.name, (parameter.name, bad, str(caught.value))


@pytest.mark.parametrize("epsilon", [-1.0, 0.0, math.nan, "many"])
def test_an_epsilon_that_is_no_level_is_refused_naming_epsilon(epsilon):
    assert not (isinstance(epsilon, float) and EPSILON.contains(epsilon))
    for design in DESIGNS.values():
        kind = design.kinds[-1]
        names = labels(kind)
        with pytest.raises(ParameterError) as caught:
            privacy = design.from_level("epsilon", epsilon, others(design, len(names)), len(names))
            design.mechanism(privacy, names, bounds=BOUNDS)
        assert caught.value.parameter == "epsilon", design.id


@pytest.mark.parametrize("design", NUMBER_DESIGNS, ids=lambda d: d.id)
@pytest.mark.parametrize("epsilon", LEVELS)
def test_a_design_of_numbers_is_its_mechanism_at_that_epsilon_on_the_range(design, epsilon):
    privacy = design.from_level("epsilon", epsilon, {}, 0)
    assert privacy == {"design": design.id, "epsilon": epsilon} and set(privacy) - {"design"} <= design.spec_fields
    mechanism = design.mechanism(privacy, bounds=BOUNDS)
    assert mechanism.design == design.id and mechanism.epsilon == epsilon
    assert (mechanism.low, mechanism.high) == BOUNDS
    # its reports' domain does not depend on ε or the range: the submission checks it by design
    assert mechanism.reports == design.reports
    for bad in _outside(design.level):
        with pytest.raises(ParameterError) as caught:
            design.mechanism({"epsilon": bad}, bounds=BOUNDS)
        assert caught.value.parameter == "epsilon"
    with pytest.raises(ValueError, match="range"):
        design.mechanism(privacy)


@pytest.mark.parametrize("tiny", [2.81e-230, 1e-300, 5e-324])
def test_a_tiny_epsilon_with_a_tiny_forcing_chance_is_refused_not_divided_by_zero(tiny):
    """Found by the fuzz test: ε = 2.81e-230 with a forced-yes chance of 2.81e-230 underflowed the
    coin's denominator to 0 and the builder answered 500 (ZeroDivisionError)."""
    for design_id, name in (("coin_flip", "yes_probability"), ("unrelated_question", "unrelated_yes_rate")):
        design = DESIGNS[design_id]
        with pytest.raises(ParameterError) as caught:
            privacy = design.from_level("epsilon", tiny, {**others(design, 2), name: tiny}, 2)
            design.mechanism(privacy, labels("yes_no"))
        assert caught.value.parameter == "epsilon", design_id
        assert "too small" in str(caught.value)


def test_forced_response_set_by_epsilon_forces_every_option_equally_and_is_grr():
    for k in (2, 3, 7):
        for epsilon in LEVELS:
            forced = ForcedResponse.from_epsilon(epsilon, k)
            c = forced.parameters["forced"]
            assert len(set(c)) == 1 and c[0] == pytest.approx(1 / (math.exp(epsilon) + k - 1))
            assert forced.epsilon == pytest.approx(epsilon, rel=1e-9)
            np.testing.assert_allclose(forced.matrix, GeneralizedRR(k, epsilon=epsilon).matrix, atol=1e-15)
    assert ForcedResponse.from_epsilon(700.0, 3).epsilon == pytest.approx(700.0, rel=1e-9)  # no overflow


def test_unrelated_question_set_by_epsilon_at_the_known_rate():
    for rate in (1 / 12, 0.3, 0.5, 0.9):
        for epsilon in LEVELS:
            design = UnrelatedQuestion.from_epsilon(epsilon, rate)
            assert design.epsilon == pytest.approx(epsilon, rel=1e-9)
            assert design.unrelated_yes_rate == rate
    with pytest.raises(ParameterError) as caught:
        UnrelatedQuestion.from_epsilon(1.0, 0.0)
    assert caught.value.parameter == "unrelated_yes_rate"


def test_a_forcing_probability_out_of_range_names_its_option():
    with pytest.raises(ParameterError) as caught:
        ForcedResponse([0.1, 1.5, 0.1])
    assert (caught.value.parameter, caught.value.index) == ("forced", 1)


@pytest.mark.parametrize(
    "mechanism, reveals",
    [
        (GeneralizedRR(3, truth_probability=1.0), True),
        (Warner(0.0), True),  # always the opposite answer: relabelled, not protected
        (Warner(1.0), True),
        (Mechanism([[0, 1, 0], [1, 0, 0], [0, 0, 1]]), True),
        (Warner(0.75), False),
        (ForcedResponse([0.0, 0.2, 0.1]), False),  # one-sided, but some reports are deniable
    ],
)
def test_a_design_that_reveals_every_answer_is_recognised(mechanism, reveals):
    assert mechanism.reveals_everything is reveals
