"""Non-compliance models from two arms (survey.privacy.noncompliance): RRreg's figures where its
closed form holds, the constrained maximum where it does not, and profile intervals that say what
they are."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from survey.privacy.noncompliance import _loglik, cheating_detection, stochastic_lie_detector

#: RRreg 0.7.5 (R 4.2.2): ``RRuni(response, model, p, group, MLest = TRUE)`` on response vectors with
#: ``yes[g]`` ones among ``n[g]`` answers of arm g. CDM: pi, piSE, beta, betaSE, gamma; SLD: pi, piSE,
#: t, tSE. RRreg divides by n − 1 in its standard errors, we by n: they differ by under 1e-4 here.
RRREG = [
    (
        "CDM",
        [300, 560],
        [1000, 1000],
        [0.2, 0.6],
        {"pi": (0.17, 0.0231221676), "beta": (0.65, 0.0534355252), "gamma": (0.18, None)},
    ),
    (
        "CDM",
        [123, 410],
        [500, 800],
        [0.3, 0.7],
        {"pi": (0.046125, 0.0362526893), "beta": (0.66625, 0.0654029328), "gamma": (0.287625, None)},
    ),
    ("SLD", [300, 560], [1000, 1000], [0.8, 0.4], {"pi": (0.35, 0.0534355252), "t": (0.4857142857, 0.0341664763)}),
    ("SLD", [210, 333], [700, 650], [0.7, 0.3], {"pi": (0.4692307692, 0.0654505440), "t": (0.3, 0.0369389526)}),
    # outside the closed form's range: RRreg's maximum likelihood (optim) puts π at 1
    ("SLD", [600, 420], [1000, 1000], [0.8, 0.4], {"pi": (0.99999999, None), "t": (0.5099999985, None)}),
]
FITS = {"CDM": cheating_detection, "SLD": stochastic_lie_detector}


@pytest.mark.parametrize("model, yes, n, p, expected", RRREG)
def test_rrreg_figures(model, yes, n, p, expected) -> None:
    fit = FITS[model](yes, n, p)
    for name, (estimate, se) in expected.items():
        assert fit.estimates[name] == pytest.approx(estimate, abs=1e-4), name
        if se is not None:
            assert fit.standard_errors[name] == pytest.approx(se, abs=1e-4), name


def _brute_maximum(yes, n, c, steps=2001):
    """The largest log-likelihood on a fine grid of the triangle u, v ≥ 0, u + v ≤ 1."""
    u, v = np.meshgrid(np.linspace(0, 1, steps), np.linspace(0, 1, steps))
    inside = u + v <= 1
    u, v = u[inside], v[inside]
    total = np.zeros(u.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        for y, m, cc in zip(yes, n, c, strict=True):
            rate = np.clip(u + v * cc, 0, 1)
            total += np.where(y > 0, y * np.log(rate), 0) + np.where(m - y > 0, (m - y) * np.log1p(-rate), 0)
    return float(np.nanmax(total))


@pytest.mark.parametrize(
    "yes, n, p",
    [([300, 250], [1000, 1000], [0.2, 0.6]), ([50, 60], [200, 300], [0.1, 0.9]), ([190, 199], [200, 200], [0.3, 0.6])],
)
def test_outside_the_closed_form_the_fit_is_the_constrained_maximum(yes, n, p) -> None:
    """RRreg 0.7.5 returns the closed form with β = −0.125 for the first case (its CDM fallback to
    maximum likelihood fails); the fit here is the maximum over the parameter space, checked against
    a grid of the triangle."""
    fit = cheating_detection(yes, n, p)
    assert fit.boundary
    assert all(0 <= v <= 1 for v in fit.estimates.values())
    assert sum(fit.estimates.values()) == pytest.approx(1.0)
    assert fit.loglik >= _brute_maximum(yes, n, p) - 1e-9
    assert all(math.isnan(se) for se in fit.standard_errors.values())


@pytest.mark.parametrize("model", ["CDM", "SLD"])
def test_profile_intervals_end_where_the_likelihood_ratio_reaches_chi_square(model) -> None:
    yes, n = [300, 560], [1000, 1000]
    p = [0.2, 0.6] if model == "CDM" else [0.8, 0.4]
    fit = FITS[model](yes, n, p)
    cutoff = stats.chi2.ppf(0.95, 1)
    for name, (low, high) in fit.intervals.items():
        estimate = fit.estimates[name]
        assert 0 <= low < estimate < high <= 1
        # near a large sample's maximum the profile interval is close to the Wald interval
        wald = 1.96 * fit.standard_errors[name]
        assert (high - low) / 2 == pytest.approx(wald, rel=0.1), name
    # the ends of π's interval: the best fit with π fixed there is χ²₁(0.95)/2 below the maximum
    if model == "CDM":
        for end in fit.intervals["pi"]:
            best = max(
                _loglik(end, v, np.array(yes, float), np.array(n, float), np.array(p))
                for v in np.linspace(0, 1 - end, 20001)
            )
            assert 2 * (fit.loglik - best) == pytest.approx(cutoff, abs=1e-3)


def test_the_profile_interval_covers_at_the_level_over_simulated_surveys() -> None:
    """300 simulated two-arm surveys (fixed seed) of the CDM with π = 0.2, β = 0.6, γ = 0.2: each
    parameter's interval covers it in 0.95 ± 0.04 of them (three standard errors: 0.038). The
    benchmark of the validation designs measures it to ±0.01."""
    rng = np.random.default_rng(99)
    truth = {"pi": 0.2, "beta": 0.6, "gamma": 0.2}
    p, n = np.array([0.2, 0.7]), np.array([600, 600])
    hits = dict.fromkeys(truth, 0)
    surveys = 300
    for _ in range(surveys):
        yes = rng.binomial(n, truth["pi"] + truth["beta"] * p)
        fit = cheating_detection(yes, n, p)
        for name, value in truth.items():
            low, high = fit.intervals[name]
            hits[name] += low <= value <= high
    for name, count in hits.items():
        assert abs(count / surveys - 0.95) <= 0.04, (name, count / surveys)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="differ"):
        cheating_detection([10, 20], [100, 100], [0.5, 0.5])
    with pytest.raises(ValueError, match="two arms"):
        cheating_detection([10], [100], [0.5])
    with pytest.raises(ValueError, match="0 <= yes <= n"):
        stochastic_lie_detector([120, 20], [100, 100], [0.2, 0.7])
    fit = cheating_detection([300, 560], [1000, 1000], [0.2, 0.6])
    assert fit.to_dict()["parameters"]["pi"]["ci_low"] == fit.intervals["pi"][0]


@pytest.mark.parametrize(
    "model, p, truth, parameter",
    [
        ("CDM", [0.2, 0.7], {"pi": 0.2, "beta": 0.6}, "pi"),
        ("CDM", [0.2, 0.7], {"pi": 0.2, "beta": 0.6}, "gamma"),
        ("SLD", [0.8, 0.3], {"pi": 0.3, "t": 0.8}, "pi"),
        ("SLD", [0.8, 0.3], {"pi": 0.3, "t": 0.8}, "t"),
    ],
)
def test_the_planned_size_gives_the_margin(model, p, truth, parameter) -> None:
    """At the planned size and exactly the expected counts, the fitted interval's half-width is the
    margin within 10% (the delta method against the profile likelihood)."""
    from survey.privacy.noncompliance import noncompliance_sample_size

    n = noncompliance_sample_size(model, p, truth, 0.05, parameter)
    arms = np.array([n // 2, n // 2])
    if model == "CDM":
        rates = truth["pi"] + truth["beta"] * np.array(p)
    else:
        rates = truth["pi"] * truth["t"] + (1 - truth["pi"]) * (1 - np.array(p))
    fit = FITS[model](np.round(rates * arms).astype(int), arms, p)
    low, high = fit.intervals[parameter]
    assert (high - low) / 2 == pytest.approx(0.05, rel=0.1), (n, low, high)
    assert noncompliance_sample_size(model, p, truth, 0.025, parameter) == pytest.approx(4 * n, rel=0.01)
