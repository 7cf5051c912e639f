"""The browser's number sampler (static/js/respond/numbers.js) against the mechanisms it implements
(survey.privacy.numeric): the same codes from the same random words, and, with the browser's own
crypto randomness, codes distributed as the mechanism says (20,000 draws per true value)."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from survey.privacy.number_planning import code_probabilities
from survey.privacy.numeric import GRID_STEPS, DuchiNumber, HybridNumber, LaplaceNumber, PiecewiseNumber

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "static/js/respond/randomizer.js", ROOT / "static/js/respond/numbers.js"]
TRUE_VALUES = [-5.0, 0.0, 13.0, 50.0, 99.5, 100.0, 250.0]
MECHANISMS = [
    HybridNumber(0.5, 0, 100),  # below the threshold: Duchi's alone
    HybridNumber(1.0, 0, 100),
    HybridNumber(4.0, 0, 100),
    PiecewiseNumber(2.0, 0, 100),
    DuchiNumber(1.0, 0, 100),
    LaplaceNumber(1.0, 0, 100),
]
#: The chance that an honest sampler fails one of the distribution tests below, all of them
#: together (a union bound over every bin's exact test): never, in practice, every run.
FALSE_ALARM = 1e-9

#: codes for one true value from the given words (base64 of little-endian 32-bit words), two words
#: per uniform, instead of crypto.getRandomValues
SEEDED_REPORTS = """([sampler, x, draws, encoded]) => {
  const bytes = Uint8Array.from(atob(encoded), c => c.charCodeAt(0));
  const view = new DataView(bytes.buffer);
  let next = 0;
  const source = n => {
    const w = new Uint32Array(n);
    for (let i = 0; i < n; i++, next++) w[i] = view.getUint32(4 * next, true);
    return w;
  };
  return SurveyNumbers.reports(sampler, x, draws, source);
}"""


@pytest.fixture(scope="module")
def sampler_page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_content("<!doctype html><title>sampler</title>")
    for script in SCRIPTS:
        page.add_script_tag(path=str(script))
    yield page
    context.close()


def _reference_codes(mechanism, x: float, words: np.ndarray) -> list[int]:
    high, low = words.reshape(-1, 2).T
    u = (((high >> 5) * 2**26 + (low >> 6)) / 2**53).reshape(-1, mechanism.uniforms + 1)
    t = np.full(u.shape[0], float(mechanism.normalize(x)))
    return mechanism.to_code(mechanism.draw(t, u[:, :-1]), u[:, -1]).tolist()


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: f"{m.design}-{m.epsilon:g}")
def test_the_page_draws_the_reference_codes_from_the_same_words(sampler_page, mechanism) -> None:
    rng = np.random.default_rng(29)
    draws = 2000
    for x in TRUE_VALUES:
        words = rng.integers(0, 2**32, size=2 * (mechanism.uniforms + 1) * draws, dtype=np.uint64)
        encoded = base64.b64encode(words.astype("<u4").tobytes()).decode()
        codes = sampler_page.evaluate(SEEDED_REPORTS, [mechanism.sampler(), x, draws, encoded])
        assert codes == _reference_codes(mechanism, x, words), (mechanism, x)


def _bin_probabilities(mechanism, t: float, edges: np.ndarray) -> np.ndarray:
    """P(code in [edges[i], edges[i+1] − 1]): the exact code probabilities
    (survey.privacy.number_planning, checked against draws in tests/test_number_planning.py), summed."""
    return np.add.reduceat(code_probabilities(mechanism, t), edges[:-1])


@pytest.mark.parametrize(
    "mechanism", [m for m in MECHANISMS if m.design != "laplace"], ids=lambda m: f"{m.design}-{m.epsilon:g}"
)
def test_the_page_codes_follow_the_mechanism_with_crypto_randomness(sampler_page, mechanism) -> None:
    draws, bins = 20_000, 25
    edges = np.linspace(0, GRID_STEPS + 1, bins + 1).round().astype(int)
    tests = len(MECHANISMS) * 5 * bins
    for x in (0.0, 25.0, 50.0, 75.0, 100.0):
        codes = np.array(
            sampler_page.evaluate("([s, x, n]) => SurveyNumbers.reports(s, x, n)", [mechanism.sampler(), x, draws])
        )
        assert ((codes >= 0) & (codes <= GRID_STEPS)).all()
        expected = _bin_probabilities(mechanism, float(mechanism.normalize(x)), edges)
        assert expected.sum() == pytest.approx(1.0, abs=1e-6)
        counted = np.histogram(codes, bins=edges)[0]
        for k, p in zip(counted, expected, strict=True):
            if p <= 1e-12:
                assert k == 0, (mechanism, x, "a code the mechanism cannot send")
                continue
            pvalue = stats.binomtest(int(k), draws, min(float(p), 1.0)).pvalue
            assert pvalue > FALSE_ALARM / tests, (mechanism, x, k, p * draws)


def test_laplace_codes_have_the_laplace_quartiles(sampler_page) -> None:
    mechanism = LaplaceNumber(1.0, 0, 100)
    draws = 20_000
    codes = np.array(
        sampler_page.evaluate("([s, x, n]) => SurveyNumbers.reports(s, x, n)", [mechanism.sampler(), 30.0, draws])
    )
    y = mechanism.origin + mechanism.step * codes  # in [-1, 1] units, centred on t = -0.4
    below = int((y < -0.4).sum())
    assert stats.binomtest(below, draws, 0.5).pvalue > FALSE_ALARM
    below_quartile = int((y < -0.4 - mechanism.scale * np.log(2)).sum())
    assert stats.binomtest(below_quartile, draws, 0.25).pvalue > FALSE_ALARM


def test_the_page_refuses_what_it_does_not_know(sampler_page) -> None:
    attempt = "([s, x]) => { try { SurveyNumbers.report(s, x); } catch (e) { return e.message; } }"
    error = sampler_page.evaluate(attempt, [{"sampler": "staircase", "low": 0, "high": 1}, 0.5])
    assert "unknown number sampler" in error
    error = sampler_page.evaluate(attempt, [{"sampler": "duchi", "low": 0, "high": 1, "bound": 2}, None])
    assert "finite" in error


@pytest.mark.parametrize(
    "mechanism",
    [HybridNumber(2.0, 0.5, 2.5), PiecewiseNumber(1.0, -0.25, 0.75), DuchiNumber(1.0, 0.5, 2.5)],
    ids=lambda m: f"{m.design}-{m.low:g}-{m.high:g}",
)
def test_a_range_with_decimal_ends_draws_the_reference_codes(sampler_page, mechanism) -> None:
    """A randomized number's range may end between whole numbers (0.5 to 2.5 hours): the page maps
    decimal answers to the same codes as the server's mechanism, clamping outside the range."""
    rng = np.random.default_rng(31)
    draws = 1000
    for x in (mechanism.low - 0.1, mechanism.low, 0.6, 1.37, mechanism.high - 0.01, mechanism.high + 3.3):
        words = rng.integers(0, 2**32, size=2 * (mechanism.uniforms + 1) * draws, dtype=np.uint64)
        encoded = base64.b64encode(words.astype("<u4").tobytes()).decode()
        codes = sampler_page.evaluate(SEEDED_REPORTS, [mechanism.sampler(), x, draws, encoded])
        assert codes == _reference_codes(mechanism, x, words), (mechanism, x)
