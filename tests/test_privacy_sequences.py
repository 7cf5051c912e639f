"""Live intervals (confidence sequences) and the anytime-valid test: check values and properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special
from scipy.stats import beta as beta_distribution

from survey.privacy import (
    CoinFlip,
    ForcedResponse,
    GeneralizedRR,
    Mechanism,
    MixturePrior,
    UnrelatedQuestion,
    Warner,
    anytime_test,
    confidence_sequence,
    estimate,
    log_mixture_martingale,
    wilson_interval,
)
from survey.privacy.sequences import _rate_interval

DEFAULT = MixturePrior.tuned(1000, 0.95)
PRIORS = [DEFAULT, MixturePrior.tuned(100, 0.9), MixturePrior(20.0, centre=0.3), MixturePrior(0.5)]
CUSTOM = Mechanism([[0.8, 0.1, 0.2], [0.1, 0.7, 0.2], [0.1, 0.2, 0.6]])


def prior_parameters(prior, rate):
    centre = rate if prior.centre is None else prior.centre
    return prior.concentration * centre, prior.concentration * (1.0 - centre)


def mixture_by_integration(s, t, rate, prior):
    """M_t(λ) = ∫ (λ'/λ)^S ((1 − λ')/(1 − λ))^(t − S) dBeta(λ'), by quadrature."""
    a0, b0 = prior_parameters(prior, rate)

    def integrand(x):
        return math.exp(
            beta_distribution.logpdf(x, a0, b0) + s * math.log(x / rate) + (t - s) * math.log((1 - x) / (1 - rate))
        )

    mode = s / t if t else rate
    inner = [mode] if 0.0 < mode < 1.0 else None
    value, _ = integrate.quad(integrand, 0.0, 1.0, points=inner, limit=400, epsabs=0, epsrel=1e-10)
    return value


def mixture_by_prediction(reports, rate, prior):
    """The same martingale built one report at a time from the beta posterior's predictive probability."""
    a0, b0 = prior_parameters(prior, rate)
    log_m, hits = 0.0, 0
    for i, x in enumerate(reports):
        predictive = (a0 + hits) / (a0 + b0 + i)
        log_m += math.log(predictive / rate) if x else math.log((1 - predictive) / (1 - rate))
        hits += x
    return log_m


# -- the martingale ------------------------------------------------------------------------------------


def test_martingale_check_values_against_direct_evaluation():
    # the default prior: Beta(κλ, κ(1 − λ)) with κ = 1000/(2 ln 20 + ln(1 + 2 ln 20)) − 1
    log20 = math.log(20)
    assert DEFAULT.concentration == pytest.approx(1000 / (2 * log20 + math.log1p(2 * log20)) - 1, rel=1e-12)
    assert DEFAULT.concentration == pytest.approx(125.0056, abs=1e-4)
    assert float(log_mixture_martingale(40, 100, 0.3)) == pytest.approx(0.699630, abs=1e-6)
    for prior in PRIORS:
        for s, t, rate in ((40, 100, 0.3), (3, 10, 0.5), (0, 25, 0.2), (250, 1000, 0.27), (1, 3, 0.6)):
            direct = math.log(mixture_by_integration(s, t, rate, prior))
            assert float(log_mixture_martingale(s, t, rate, prior)) == pytest.approx(direct, abs=1e-9)


def test_martingale_is_the_product_of_predictive_ratios_in_any_order():
    rng = np.random.default_rng(3)
    reports = rng.random(300) < 0.35
    for prior in PRIORS:
        forward = mixture_by_prediction(reports, 0.3, prior)
        backward = mixture_by_prediction(reports[::-1], 0.3, prior)
        assert forward == pytest.approx(backward, abs=1e-9)
        assert float(log_mixture_martingale(int(reports.sum()), 300, 0.3, prior)) == pytest.approx(forward, abs=1e-9)


@pytest.mark.parametrize("prior", PRIORS)
def test_martingale_property_exactly(prior):
    """E[M_{t+1} | S_t] = M_t under the rate tested: the two possible next reports, weighted."""
    for s, t, rate in ((0, 0, 0.3), (4, 10, 0.3), (400, 1000, 0.45), (2, 50, 0.05)):
        now = math.exp(float(log_mixture_martingale(s, t, rate, prior)))
        hit = math.exp(float(log_mixture_martingale(s + 1, t + 1, rate, prior)))
        miss = math.exp(float(log_mixture_martingale(s, t + 1, rate, prior)))
        assert rate * hit + (1 - rate) * miss == pytest.approx(now, rel=1e-10)


def test_mixture_never_exceeds_one_at_the_observed_rate():
    """M_t(λ̂) ≤ 1: the mixture of likelihoods is at most the largest likelihood."""
    t = np.arange(2, 3000)
    s = (t * 0.37).astype(int)
    s = np.clip(s, 1, t - 1)
    for prior in PRIORS:
        assert np.all(log_mixture_martingale(s, t, s / t, prior) <= 1e-12)


def test_martingale_input_errors():
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        log_mixture_martingale(1, 10, 0.0)
    with pytest.raises(ValueError, match="between 0 and the number"):
        log_mixture_martingale(11, 10, 0.5)
    with pytest.raises(ValueError, match="concentration"):
        MixturePrior(0.0)
    with pytest.raises(ValueError, match="centre"):
        MixturePrior(5.0, centre=1.0)


# -- the interval of rates ----------------------------------------------------------------------------


@pytest.mark.parametrize("prior", PRIORS)
def test_interval_ends_are_the_boundary(prior):
    """Each end solves log M = log(1/α); an end is 0 (or 1) exactly when the martingale stays below it."""
    threshold = math.log(20)
    t = np.array([1, 2, 10, 10, 100, 1000, 1000, 1000, 10**6, 10**6])
    s = np.array([0, 1, 1, 9, 37, 0, 2, 999, 3, 500_000])
    low, high = _rate_interval(s, t, threshold, prior)
    open_end = 1 if prior.centre is None else 0
    for lo, hi, si, ti in zip(low, high, s, t, strict=True):
        assert lo <= si / ti <= hi
        if si <= open_end:
            assert lo == 0.0
        else:
            assert float(log_mixture_martingale(si, ti, lo, prior)) == pytest.approx(threshold, abs=1e-5)
            # the outside end: rounding never narrows the interval
            assert float(log_mixture_martingale(si, ti, lo, prior)) >= threshold - 1e-8
        if ti - si <= open_end:
            assert hi == 1.0
        elif hi < 1.0:  # a root within 1e-16 of 1 rounds to 1, which only widens the interval
            assert float(log_mixture_martingale(si, ti, hi, prior)) == pytest.approx(threshold, abs=1e-5)


def test_centred_prior_leaves_zero_in_the_set_after_a_single_report():
    # the limit of log M_t(λ) as λ → 0 with S = 1 is log(κ/(κ + t − 1)) < 0 < log(1/α)
    kappa = DEFAULT.concentration
    assert float(log_mixture_martingale(1, 1000, 1e-12)) == pytest.approx(math.log(kappa / (kappa + 999)), abs=1e-6)
    low, _ = _rate_interval(np.array([1]), np.array([1000]), math.log(20), DEFAULT)
    assert low[0] == 0.0


def test_set_shrinks_as_t_grows():
    """At a fixed observed share, the interval at a larger t lies inside the one at a smaller t."""
    for prior in PRIORS:
        for share in (0.0, 0.05, 0.3, 0.5, 0.8, 1.0):
            t = np.arange(20, 20_001, 20)
            s = np.round(share * t)
            low, high = _rate_interval(s, t, math.log(20), prior)
            assert np.all(np.diff(low) >= -1e-12) and np.all(np.diff(high) <= 1e-12)
            assert high[-1] - low[-1] < high[0] - low[0]
    # and in shares, through a design
    mech = CoinFlip.from_epsilon(1.0)
    t = np.array([100, 1000, 10_000, 100_000])
    counts = np.stack([0.4 * t, 0.6 * t], axis=1)
    live = confidence_sequence(mech, counts)
    assert np.all(np.diff(live.low[:, 0]) >= 0) and np.all(np.diff(live.high[:, 0]) <= 0)


# -- the live interval ---------------------------------------------------------------------------------


def test_check_values_seed_survey():
    live = confidence_sequence(CoinFlip(0.5, 0.5), [400, 600])
    assert live.low[0] == pytest.approx(0.20721, abs=1e-5)
    assert live.high[0] == pytest.approx(0.39498, abs=1e-5)
    # it is wider than the fixed-n interval [0.2401, 0.3614], by about the 1.55 the default prior costs at n = 1000
    fixed_low, fixed_high = estimate(CoinFlip(0.5, 0.5), [400, 600]).ci()
    assert live.low[0] < fixed_low[0] and live.high[0] > fixed_high[0]
    assert 1.5 < (live.high[0] - live.low[0]) / (fixed_high[0] - fixed_low[0]) < 1.6
    assert live.t == 1000 and live.level == 0.95 and not live.simultaneous
    assert live.methods == ("mixture-cs-mapped", "mixture-cs-mapped")
    assert live.prior == DEFAULT
    # the "no" interval mirrors the "yes" one
    assert live.low[1] == pytest.approx(1 - live.high[0], abs=1e-12)
    assert live.high[1] == pytest.approx(1 - live.low[0], abs=1e-12)
    assert live.half_width[0] == pytest.approx((live.high[0] - live.low[0]) / 2)


def test_width_against_wilson_is_smallest_near_the_tuned_size():
    """Live ÷ Wilson at λ̂ = 1/2: about 1.55 at the size the prior is tuned for, more elsewhere."""
    ratios = {}
    for n in (100, 1000, 10_000):
        low, high = _rate_interval(np.array([n // 2]), np.array([n]), math.log(20), DEFAULT)
        w_low, w_high = wilson_interval(n // 2, n)
        ratios[n] = float((high - low)[0] / (w_high - w_low))
    assert ratios[1000] == pytest.approx(1.549, abs=0.002)
    assert ratios[100] > ratios[1000] < ratios[10_000]


DESIGNS = [
    CoinFlip(0.5, 0.5),
    CoinFlip.from_epsilon(2.0, 0.2),
    CoinFlip(0.5, 1.0),  # one-sided: a report rate can reach 1
    Warner(0.3),  # a < 0 for "yes"
    UnrelatedQuestion(0.7, 0.1),
    GeneralizedRR(5, epsilon=1.0),
    GeneralizedRR(3, epsilon=4.0),
    ForcedResponse([0.1, 0.05, 0.05]),
    Mechanism(np.eye(3)),  # no randomization at all
]


@settings(max_examples=300, deadline=None)
@given(
    design=st.sampled_from(DESIGNS),
    data=st.data(),
    level=st.sampled_from([0.8, 0.95, 0.999]),
    simultaneous=st.booleans(),
    prior=st.sampled_from([None, 30.0, 5000.0, MixturePrior(3.0, centre=0.5)]),
)
def test_contains_the_clipped_point_estimate(design, data, level, simultaneous, prior):
    total = data.draw(st.integers(1, 20_000))
    cuts = sorted(data.draw(st.lists(st.integers(0, total), min_size=design.k - 1, max_size=design.k - 1)))
    counts = np.diff([0, *cuts, total])
    live = confidence_sequence(design, counts, level, simultaneous, prior)
    point = np.clip(estimate(design, counts).unbiased, 0.0, 1.0)
    assert np.all(live.low <= point + 1e-12) and np.all(point - 1e-12 <= live.high)
    assert np.all((0.0 <= live.low) & (live.low <= live.high) & (live.high <= 1.0))


def test_rates_the_design_cannot_produce_give_the_clipped_estimate():
    # CoinFlip(1/2, 1/2) reports "yes" at a rate between 1/4 and 3/4; 100 of 1000 is far below
    live = confidence_sequence(CoinFlip(0.5, 0.5), [100, 900])
    assert (live.low[0], live.high[0]) == (0.0, 0.0)
    assert (live.low[1], live.high[1]) == (1.0, 1.0)
    # nearer the edge the interval reaches into the possible rates and is cut at 0
    live = confidence_sequence(CoinFlip(0.5, 0.5), [235, 765])
    assert live.low[0] == 0.0 < live.high[0]


def test_no_reports_gives_everything():
    live = confidence_sequence(GeneralizedRR(4, epsilon=1.0), [0, 0, 0, 0])
    assert np.all(live.low == 0.0) and np.all(live.high == 1.0) and live.t == 0
    live = confidence_sequence(CUSTOM, [0, 0, 0])
    assert np.all(live.low == 0.0) and np.all(live.high == 1.0)


def test_simultaneous_is_bonferroni():
    mech = GeneralizedRR(5, epsilon=1.0)
    counts = [300, 250, 150, 200, 100]
    joint = confidence_sequence(mech, counts, 0.95, simultaneous=True)
    piece = confidence_sequence(mech, counts, 1 - 0.05 / 5)
    np.testing.assert_allclose(joint.low, piece.low, atol=1e-14)
    np.testing.assert_allclose(joint.high, piece.high, atol=1e-14)
    assert joint.methods == ("bonferroni-mixture-cs-mapped",) * 5
    assert joint.prior == MixturePrior.tuned(1000, 0.99)
    # two categories: one interval determines the other, nothing is divided
    binary = confidence_sequence(Warner(0.8), [400, 600], simultaneous=True)
    single = confidence_sequence(Warner(0.8), [400, 600])
    np.testing.assert_array_equal(binary.low, single.low)
    assert binary.methods == ("mixture-cs-mapped", "mixture-cs-mapped")


def test_stacked_counts_equal_one_at_a_time():
    mech = GeneralizedRR(3, epsilon=2.0)
    rng = np.random.default_rng(5)
    counts = rng.multinomial(500, [0.5, 0.3, 0.2], size=(4, 3))
    stacked = confidence_sequence(mech, counts)
    assert stacked.low.shape == (4, 3, 3) and stacked.t.shape == (4, 3)
    for index in np.ndindex(4, 3):
        one = confidence_sequence(mech, counts[index])
        np.testing.assert_array_equal(stacked.low[index], one.low)
        np.testing.assert_array_equal(stacked.high[index], one.high)


def test_estimate_cs_is_the_same_and_prior_may_be_a_size():
    counts = [120, 80, 50]
    mech = GeneralizedRR(3, epsilon=1.5)
    via_estimate = estimate(mech, counts).cs(0.9, prior=2000)
    direct = confidence_sequence(mech, counts, 0.9, prior=MixturePrior.tuned(2000, 0.9))
    np.testing.assert_array_equal(via_estimate.low, direct.low)
    assert via_estimate.prior.respondents == 2000.0


def test_custom_matrix_gets_the_projected_interval():
    counts = [300, 400, 300]
    live = confidence_sequence(CUSTOM, counts)
    assert live.methods == ("mixture-cs-projected",) * 3
    unbiased = estimate(CUSTOM, counts).unbiased
    assert np.all(unbiased > 0)  # inside the simplex, so the box holds it
    assert np.all((live.low <= unbiased) & (unbiased <= live.high))
    # the box is built from live intervals of every reported share at 1 − α/k
    prior = MixturePrior.tuned(1000, 1 - 0.05 / 3)
    lam_low, lam_high = _rate_interval(np.array(counts), np.array(1000), math.log(60), prior)
    assert live.prior == prior
    for v in range(3):
        for end in (live.low[v], live.high[v]):
            # at each end some population with that share has every reported share within the box
            assert 0.0 <= end <= 1.0
    reported = CUSTOM.matrix @ unbiased
    assert np.all((lam_low <= reported) & (reported <= lam_high))
    # and it is simultaneous already: asking for it changes nothing
    joint = confidence_sequence(CUSTOM, counts, simultaneous=True)
    np.testing.assert_array_equal(joint.low, live.low)


def test_to_dict_and_repr():
    live = confidence_sequence(CoinFlip(0.5, 0.5), [400, 600])
    d = live.to_dict()
    assert d["t"] == 1000 and d["level"] == 0.95 and d["prior"]["respondents"] == 1000.0
    assert d["categories"][0]["label"] == "yes" and d["categories"][0]["method"] == "mixture-cs-mapped"
    first = d["categories"][0]
    assert first["half_width"] == pytest.approx((first["high"] - first["low"]) / 2)
    assert "yes: [0.207, 0.395]" in repr(live)
    stacked = confidence_sequence(CoinFlip(0.5, 0.5), [[400, 600], [1, 2]])
    with pytest.raises(ValueError, match="one survey"):
        stacked.to_dict()


def test_input_errors():
    mech = CoinFlip(0.5, 0.5)
    with pytest.raises(ValueError, match="expected 2 counts"):
        confidence_sequence(mech, [1, 2, 3])
    with pytest.raises(ValueError, match="non-negative"):
        confidence_sequence(mech, [-1, 2])
    with pytest.raises(ValueError, match="whole"):
        confidence_sequence(mech, [1.5, 2])
    with pytest.raises(ValueError, match="level"):
        confidence_sequence(mech, [1, 2], level=1.0)
    with pytest.raises(ValueError, match="prior must be"):
        confidence_sequence(mech, [1, 2], prior="wide")
    with pytest.raises(ValueError, match="Mechanism"):
        confidence_sequence([[0.5, 0.5], [0.5, 0.5]], [1, 2])


def test_watched_after_every_report_it_rarely_misses():
    """A small simulation (the benchmark runs 40,000 streams of 10,000): ever missing well under 5% + error."""
    rng = np.random.default_rng(20261123)
    mech = CoinFlip.from_epsilon(1.0)
    a, b = mech.affine_coefficients(0)
    rate = a * 0.2 + b
    s = np.cumsum(rng.random((400, 2000)) < rate, axis=1)
    t = np.arange(1, 2001)
    live_misses = (log_mixture_martingale(s, t, rate) >= math.log(20)).any(axis=1).mean()
    z = 1.959963984540054
    wilson_misses = ((s - t * rate) ** 2 > z * z * t * rate * (1 - rate)).any(axis=1).mean()
    assert live_misses <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 400)
    assert wilson_misses > 0.3


# -- the anytime-valid test ----------------------------------------------------------------------------


def test_anytime_test_check_values():
    result = anytime_test(CoinFlip(0.5, 0.5), [400, 600], threshold=0.2)
    assert result.e_value == pytest.approx(77.377, rel=1e-4)
    assert result.p_value == pytest.approx(1 / result.e_value)
    assert (result.t, result.reported, result.label, result.alternative) == (1000, 400, "yes", "greater")
    # tuned as one-sided mixtures are: for 1,000 respondents at 1 − 2α
    assert result.prior == MixturePrior.tuned(1000, 0.9)
    # by direct integration over the alternatives λ' > λ₀ = 0.35
    kappa, lam0 = result.prior.concentration, 0.35
    a0, b0 = kappa * lam0, kappa * (1 - lam0)

    def integrand(x):
        return math.exp(
            beta_distribution.logpdf(x, a0, b0) + 400 * math.log(x / lam0) + 600 * math.log((1 - x) / (1 - lam0))
        )

    direct = integrate.quad(integrand, lam0, 1, points=[0.4], limit=400, epsrel=1e-11)[0]
    direct /= special.betaincc(a0, b0, lam0)
    assert result.e_value == pytest.approx(direct, rel=1e-7)
    # the other direction: the data are on the null's side, so the e-value is small and p is 1
    less = anytime_test(CoinFlip(0.5, 0.5), [400, 600], threshold=0.2, alternative="less")
    assert less.e_value < 1 and less.p_value == 1.0


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_one_sided_e_value_is_a_supermartingale_under_the_whole_null(alternative):
    """E[E_{t+1} | S_t] ≤ E_t for every rate on the null's side, exactly (two possible next reports)."""
    mech = GeneralizedRR(2, epsilon=1.0)
    a, b = mech.affine_coefficients(0)
    threshold = 0.3
    lam0 = a * threshold + b
    null_shares = [0.0, 0.1, 0.29, 0.3] if alternative == "greater" else [0.3, 0.31, 0.6, 1.0]
    for s, t in ((0, 0), (3, 10), (40, 100), (70, 100), (500, 1000)):
        now = anytime_test(mech, [s, t - s], threshold, alternative=alternative).e_value
        hit = anytime_test(mech, [s + 1, t - s], threshold, alternative=alternative).e_value
        miss = anytime_test(mech, [s, t + 1 - s], threshold, alternative=alternative).e_value
        for share in null_shares:
            rate = a * share + b
            assert rate * hit + (1 - rate) * miss <= now * (1 + 1e-9)
        # at the boundary of the null it is a martingale
        assert lam0 * hit + (1 - lam0) * miss == pytest.approx(now, rel=1e-9)


def test_two_sided_test_and_the_live_interval_agree():
    """With the same prior, p ≤ 0.05 exactly when the threshold is outside the 95% live interval."""
    mech = CoinFlip.from_epsilon(1.0)
    counts = [420, 580]
    live = confidence_sequence(mech, counts)
    for threshold in np.linspace(0.0, 1.0, 201):
        result = anytime_test(mech, counts, threshold, alternative="two-sided")
        assert result.prior == live.prior
        inside = live.low[0] < threshold < live.high[0]
        if abs(threshold - live.low[0]) > 1e-6 and abs(threshold - live.high[0]) > 1e-6:
            assert (result.p_value > 0.05) == inside


def test_anytime_test_follows_the_share_when_the_design_turns_it_around():
    # Warner with p = 0.3 reports "yes" less often the more people truly say yes (a < 0)
    mech = Warner(0.3)
    counts = [300, 700]  # rate 0.3 of "yes" reports: share (0.3 − 0.7)/(−0.4) = 1.0
    assert anytime_test(mech, counts, 0.5, alternative="greater").p_value < 1e-6
    assert anytime_test(mech, counts, 0.5, alternative="less").p_value == 1.0


def test_anytime_test_errors():
    mech = CoinFlip(0.5, 0.5)
    with pytest.raises(ValueError, match="alternative"):
        anytime_test(mech, [1, 2], 0.2, alternative="bigger")
    with pytest.raises(ValueError, match="between 0 and 1"):
        anytime_test(mech, [1, 2], 1.5)
    with pytest.raises(ValueError, match="category"):
        anytime_test(mech, [1, 2], 0.2, category=2)
    with pytest.raises(ValueError, match="not available"):
        anytime_test(CUSTOM, [1, 2, 3], 0.2)
    with pytest.raises(ValueError, match="certain"):
        anytime_test(CoinFlip(0.5, 1.0), [5, 0], 1.0)
    with pytest.raises(ValueError, match="one survey"):
        anytime_test(mech, [[1, 2], [3, 4]], 0.2)
    with pytest.raises(ValueError, match="no weight on the alternative"):
        anytime_test(mech, [1, 2], 0.9, prior=MixturePrior(5000.0, centre=0.01))
    assert anytime_test(mech, [0, 0], 0.2).e_value == pytest.approx(1.0)
